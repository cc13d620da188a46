"""The integrations through the `trainlint` command line."""

from __future__ import annotations

import json
import os

import pytest
from _integration_support import validator

cli_module = pytest.importorskip("trainlint.cli", reason="the CLI is not on this branch yet")
from click.testing import CliRunner  # noqa: E402

cli = cli_module.cli
SRC = "from torch.utils.data import DataLoader\n\nloader = DataLoader(ds)\n"


def _has_option(name: str) -> bool:
    return any(name in p.opts for p in cli.commands["check"].params)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SRC)
    return tmp_path


@pytest.mark.parametrize("fmt", ["github", "sarif", "rdjson", "rdjsonl"])
def test_check_output_formats(project, fmt):
    out = CliRunner().invoke(cli, ["check", "train.py", "--output-format", fmt])
    assert out.exit_code == 1, out.output
    if fmt == "github":
        assert out.stdout.startswith("::error file=train.py,line=3,col=10,")
    elif fmt == "sarif":
        validator("sarif-2.1.0.json").validate(json.loads(out.stdout))
    elif fmt == "rdjson":
        validator("rdjson/DiagnosticResult.json").validate(json.loads(out.stdout))
    else:
        for line in out.stdout.splitlines():
            validator("rdjson/Diagnostic.json").validate(json.loads(line))


def test_review_is_a_subcommand():
    out = CliRunner().invoke(cli, ["review", "--help"])
    assert out.exit_code == 0 and "--base" in out.output and "--post" in out.output


def test_check_baseline(project):
    if not _has_option("--baseline"):
        pytest.skip("`check --baseline` is not wired into trainlint/cli.py yet")
    runner = CliRunner()
    first = runner.invoke(cli, ["check", "train.py", "--baseline", "bl.json"])
    assert first.exit_code == 0, first.output
    assert json.loads((project / "bl.json").read_text())["findings"]
    (project / "train.py").write_text("# moved\n" + SRC)
    assert runner.invoke(cli, ["check", "train.py", "--baseline", "bl.json"]).exit_code == 0
    (project / "train.py").write_text("# moved\n" + SRC + "more = DataLoader(ds2)\n")
    new = runner.invoke(cli, ["check", "train.py", "--baseline", "bl.json", "--output-format", "json"])
    assert new.exit_code == 1
    assert {d["location"]["row"] for d in json.loads(new.stdout)} == {5}
    (project / "bad.json").write_text("{")
    bad = runner.invoke(cli, ["check", "train.py", "--baseline", "bad.json"])
    assert bad.exit_code == 2 and "bad.json" in bad.output and "Traceback" not in bad.output


def test_check_add_noqa(project):
    if not _has_option("--add-noqa"):
        pytest.skip("`check --add-noqa` is not wired into trainlint/cli.py yet")
    runner = CliRunner()
    out = runner.invoke(cli, ["check", "train.py", "--add-noqa"])
    assert out.exit_code == 0, out.output
    assert "# noqa: TL1" in (project / "train.py").read_text()
    assert runner.invoke(cli, ["check", "train.py"]).exit_code == 0


def test_sarif_run_with_a_syntax_error_is_not_successful(project):
    # The unparsable file was only a notification while the run said executionSuccessful: true;
    # the exit code (2) and the other formats are unchanged.
    (project / "bad.py").write_text("print 'hi'\n")
    out = CliRunner().invoke(cli, ["check", "train.py", "bad.py", "--output-format", "sarif"])
    assert out.exit_code == 2, out.output
    doc = json.loads(out.stdout)
    validator("sarif-2.1.0.json").validate(doc)
    (invocation,) = doc["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False and invocation["toolExecutionNotifications"]
    assert doc["runs"][0]["results"]
    clean = CliRunner().invoke(cli, ["check", "train.py", "--output-format", "sarif"])
    assert json.loads(clean.stdout)["runs"][0]["invocations"][0]["executionSuccessful"] is True


def _git_project(root):
    import subprocess

    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "src").mkdir()
    (root / "src" / "train.py").write_text(SRC)
    return root


@pytest.mark.parametrize("fmt, prefix", [("github", "::error file=src/train.py,line=3,"),
                                         ("azure", "##vso[task.logissue type=error;sourcepath=src/train.py;")])
def test_line_formats_name_files_from_the_repository_root(tmp_path, monkeypatch, fmt, prefix):
    # Run from a subfolder (a job's `working-directory:`): `file=train.py` was relative to the
    # current folder, and the runner, which reads it from the repository root, annotated a file
    # that does not exist; SARIF and GitLab in the same run said src/train.py.
    _git_project(tmp_path)
    monkeypatch.chdir(tmp_path / "src")
    out = CliRunner().invoke(cli, ["check", "train.py", "--output-format", fmt])
    assert out.exit_code == 1, out.output
    assert out.stdout.startswith(prefix), out.stdout


@pytest.mark.parametrize("fmt", ["sarif", "gitlab", "github", "json"])
def test_a_symbolic_link_is_reported_under_its_own_name(tmp_path, monkeypatch, fmt):
    # SARIF and GitLab followed the link: a link to a file outside the checkout was reported at
    # that file's absolute path (file:///... in SARIF), one inside at its target's name, while the
    # other formats said the link's name.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shared_train.py").write_text(SRC)
    repo = _git_project(tmp_path / "repo")
    (repo / "links").mkdir()
    (repo / "links" / "ext.py").symlink_to(outside / "shared_train.py")
    (repo / "links" / "alias.py").symlink_to("../src/train.py")
    monkeypatch.chdir(repo)
    out = CliRunner().invoke(cli, ["check", "links", "--output-format", fmt])
    assert out.exit_code == 1, out.output
    if fmt == "sarif":
        data = json.loads(out.stdout)
        validator("sarif-2.1.0.json").validate(data)
        named = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                 for r in data["runs"][0]["results"]}
    elif fmt == "gitlab":
        named = {i["location"]["path"] for i in json.loads(out.stdout)}
    elif fmt == "github":
        named = {line.split("file=", 1)[1].split(",", 1)[0] for line in out.stdout.splitlines()}
    else:
        named = {os.path.relpath(d["filename"], repo) for d in json.loads(out.stdout)}
    assert named == {"links/ext.py", "links/alias.py"}


@pytest.mark.parametrize("fmt, key", [("sarif", "uri"), ("gitlab", "path")])
def test_standard_input_is_named_dash_in_every_format(tmp_path, monkeypatch, fmt, key):
    # `-` became `src/-` (a file under the current folder) in SARIF and GitLab; JSON and rdjson
    # said `-`.
    _git_project(tmp_path)
    monkeypatch.chdir(tmp_path / "src")
    out = CliRunner().invoke(cli, ["check", "-", "--output-format", fmt], input=SRC)
    assert out.exit_code == 1, out.output
    assert f'"{key}": "-"' in out.stdout and "src/-" not in out.stdout


def test_statistics_with_a_ci_format_from_the_configuration(project):
    # `output-format = "github"` in the configuration is for CI reports; `--statistics` typed by
    # hand stopped with a usage error (exit 2). A format given on the command line still must be
    # one statistics can print, as in Ruff.
    (project / "pyproject.toml").write_text('[tool.trainlint]\noutput-format = "github"\n')
    out = CliRunner().invoke(cli, ["check", "train.py", "--statistics"])
    assert out.exit_code == 1, out.output
    assert out.stdout == "    1\tTL101\tdataloader-no-workers\n"
    refused = CliRunner().invoke(cli, ["check", "train.py", "--statistics", "--output-format", "github"])
    assert refused.exit_code == 2


def test_json_has_the_cell_key_for_every_file(project):
    # Ruff's JSON writes `cell` (null outside notebooks) for every entry; a consumer reading
    # d["cell"] met a KeyError on a .py file.
    (project / "broken.py").write_text("def f(:\n")
    out = CliRunner().invoke(cli, ["check", "train.py", "broken.py", "--output-format", "json"])
    items = json.loads(out.stdout)
    assert len(items) == 2 and all("cell" in d and d["cell"] is None for d in items)
