"""The integrations through the `trainlint` command line."""

from __future__ import annotations

import json

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
