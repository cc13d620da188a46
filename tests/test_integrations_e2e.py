"""End to end through the real engine: formats validated against the schemas, baseline, add-noqa
and `trainlint review` (locally and posted to a local GitHub API stand-in)."""

from __future__ import annotations

import json
import re

import pytest
from _fake_github import FakeGitHub
from _integration_support import commit_all, git, init_repo, validator

api = pytest.importorskip("trainlint.api", reason="the engine (trainlint.api) is not on this branch yet")
from click.testing import CliRunner  # noqa: E402

from trainlint.baseline import apply_baseline, filter_new  # noqa: E402
from trainlint.noqa import add_noqa  # noqa: E402
from trainlint.reporters import render  # noqa: E402
from trainlint.review import review_command  # noqa: E402

TRAIN = """\
import torch
from torch.utils.data import DataLoader

loader = DataLoader(ds, batch_size=8, num_workers=2)
model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    x = x.cuda()
    loss = model(x).sum()
    loss.backward()
    opt.step()
"""


def test_formats_from_the_engine_validate(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN + "bad = DataLoader(ds)  # données\n")
    (tmp_path / "broken.py").write_text("loader = DataLoader(ds\ndef f(:\n")  # a trigger token, so it is parsed
    result = api.lint_paths(["train.py", "broken.py"])
    assert {d.code for d in result.diagnostics} >= {"TL101", "TL102"}
    assert result.errors
    validator("rdjson/DiagnosticResult.json").validate(json.loads(render("rdjson", result)))
    v = validator("rdjson/Diagnostic.json")
    for line in render("rdjsonl", result).splitlines():
        v.validate(json.loads(line))
    sarif = json.loads(render("sarif", result))
    validator("sarif-2.1.0.json").validate(sarif)
    rules = {r["id"]: r for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["TL101"]["name"] == "dataloader-no-workers" and rules["TL101"]["helpUri"].startswith("https://")
    assert rules["TL101"]["fullDescription"]["text"] != rules["TL101"]["shortDescription"]["text"]
    assert any("fixes" in r for r in sarif["runs"][0]["results"])
    annotations = render("github", result).splitlines()
    assert any(a.startswith("::error file=train.py,line=12,") and "title=TL101" in a for a in annotations)


def test_baseline_end_to_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN + "bad = DataLoader(ds)\n")
    first = api.lint_paths(["train.py"])
    shown, written = apply_baseline(first, "baseline.json")
    assert written == len(first.diagnostics) > 0 and shown.diagnostics == []
    # Move everything down and add one more loader: only the new loader's findings are new.
    (tmp_path / "train.py").write_text("# header\n\n" + TRAIN + "bad = DataLoader(ds)\nworse = DataLoader(ds2)\n")
    new = filter_new(api.lint_paths(["train.py"]), "baseline.json").diagnostics
    assert new and {d.start.row for d in new} == {15}


def test_add_noqa_end_to_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN.replace("num_workers=2)", "num_workers=2)  # noqa: E501") + "bad = DataLoader(ds)\n")
    result = api.lint_paths(["train.py"])
    count = add_noqa(result)
    assert count == len(result.diagnostics) > 0
    text = (tmp_path / "train.py").read_text()
    assert re.search(r"num_workers=2\)  # noqa: E501, TL1\d\d", text)
    assert api.lint_paths(["train.py"]).diagnostics == []


# -- review ------------------------------------------------------------------------------------


@pytest.fixture
def pr_repo(tmp_path, monkeypatch):
    root = init_repo(tmp_path / "proj")
    (root / "train.py").write_text(TRAIN)
    (root / "old.py").write_text("from torch.utils.data import DataLoader\nlegacy = DataLoader(ds)\n")
    base = commit_all(root, "base")
    git(root, "checkout", "-q", "-b", "feature")
    (root / "train.py").write_text(TRAIN.replace("loader = DataLoader(ds, batch_size=8, num_workers=2)",
                                                 "loader = DataLoader(ds, batch_size=16, num_workers=2)")
                                   + "extra = DataLoader(ds)\n")
    (root / "old.py").write_text("from torch.utils.data import DataLoader\nlegacy = DataLoader(ds)\nx = 1\n")
    head = commit_all(root, "feature")
    monkeypatch.chdir(root)
    for var in ("GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_TOKEN", "GITHUB_API_URL"):
        monkeypatch.delenv(var, raising=False)
    return root, base, head


def test_review_prints_the_review(pr_repo):
    root, base, head = pr_repo
    out = CliRunner().invoke(review_command, ["--base", "main", "--head", "feature"])
    assert out.exit_code == 1, out.output
    review = json.loads(out.stdout)
    assert review["commit_id"] == head and review["event"] == "COMMENT"
    rows = sorted((c["path"], c["line"]) for c in review["comments"])
    # The edited line 4 and the added line 12; old.py's untouched legacy loader is not reviewed.
    assert {r for _, r in rows} == {4, 12} and {p for p, _ in rows} == {"train.py"}
    pin = next(c for c in review["comments"] if "TL102" in c["body"] and c["line"] == 4)
    assert "```suggestion\nloader = DataLoader(ds, batch_size=16, num_workers=2, pin_memory=True)\n```" in pin["body"]


def test_review_other_formats_and_exit_zero(pr_repo):
    out = CliRunner().invoke(review_command, ["--base", "main", "--head", "feature", "--output-format", "rdjson", "--exit-zero"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    validator("rdjson/DiagnosticResult.json").validate(doc)
    assert {d["location"]["range"]["start"]["line"] for d in doc["diagnostics"]} == {4, 12}
    codes = {d["code"]["value"] for d in doc["diagnostics"]}
    for args, expected in ((["--select", min(codes)], {min(codes)}), (["--ignore", ",".join(codes)], set())):
        narrowed = CliRunner().invoke(review_command, ["--base", "main", "--head", "feature", "--output-format",
                                                       "rdjson", *args])
        assert {d["code"]["value"] for d in json.loads(narrowed.stdout)["diagnostics"]} == expected
        assert narrowed.exit_code == (1 if expected else 0)
    bad = CliRunner().invoke(review_command, ["--base", "main", "--select", "XX9"])
    assert bad.exit_code == 2 and "unknown rule code" in bad.output


def test_review_config_takes_key_value_pairs_as_check_does(pr_repo):
    args = ["--base", "main", "--head", "feature", "--output-format", "rdjson"]
    every = {d["code"]["value"] for d in json.loads(CliRunner().invoke(review_command, args).stdout)["diagnostics"]}
    assert "TL102" in every
    out = CliRunner().invoke(review_command, [*args, "--config", "ignore = ['TL102']"])
    assert {d["code"]["value"] for d in json.loads(out.stdout)["diagnostics"]} == every - {"TL102"}
    bad = CliRunner().invoke(review_command, [*args, "--config", "ignore = 3"])
    assert bad.exit_code == 2 and "--config: invalid configuration: `ignore`" in bad.output


def test_review_posts_once_from_the_actions_environment(pr_repo, tmp_path, monkeypatch):
    root, base, head = pr_repo
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 42, "base": {"sha": base}, "head": {"sha": head}}}))
    with FakeGitHub("ghs_token", "octo/proj", 42, head, {"train.py": set(range(1, 13)), "old.py": {1, 2, 3}}) as gh:
        monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
        monkeypatch.setenv("GITHUB_REPOSITORY", "octo/proj")
        monkeypatch.setenv("GITHUB_TOKEN", "ghs_token")
        monkeypatch.setenv("GITHUB_API_URL", gh.url)
        first = CliRunner().invoke(review_command, ["--post", "--exit-zero"])
        assert first.exit_code == 0, first.output
        assert gh.rejections == [] and len(gh.reviews) == 1
        posted = gh.reviews[0]
        assert posted["commit_id"] == head and len(posted["comments"]) >= 2
        assert "posted" in first.stderr

        again = CliRunner().invoke(review_command, ["--post", "--exit-zero"])
        assert again.exit_code == 0, again.output
        assert len(gh.reviews) == 1 and "nothing new to post" in again.stderr


def test_review_user_errors_are_one_line(pr_repo, monkeypatch):
    out = CliRunner().invoke(review_command, ["--base", "no-such-ref"])
    assert out.exit_code == 2 and "'no-such-ref' is not a commit" in out.stderr and "Traceback" not in out.output
    out = CliRunner().invoke(review_command, [])
    assert out.exit_code == 2 and "--base REF is required" in out.output
    out = CliRunner().invoke(review_command, ["--base", "main", "--post"])
    assert out.exit_code == 2 and "GITHUB_TOKEN" in out.stderr
    monkeypatch.setenv("GITHUB_TOKEN", "x")
    out = CliRunner().invoke(review_command, ["--base", "main", "--post"])
    assert out.exit_code == 2 and "--repo OWNER/NAME" in out.stderr
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    out = CliRunner().invoke(review_command, ["--base", "main", "--post", "--repo", "o/r", "--pr", "1"])
    assert out.exit_code == 2 and "failed" in out.stderr and "Traceback" not in out.output


def test_suggestions_equal_the_fixes_on_the_fixtures():
    """Replacing a finding's lines with its suggestion gives exactly the text its fix gives."""
    from _integration_support import REPO_ROOT

    from trainlint.textpos import LineIndex, apply_edits, whole_line_replacement

    result = api.lint_paths([str(REPO_ROOT / "fixtures")])
    checked = 0
    for d in result.diagnostics:
        source = result.source_of(d.path)
        replacement = whole_line_replacement(source, d)
        if replacement is None:
            continue
        first, last, text = replacement
        index = LineIndex(source)
        by_lines = source[: index.line_start(first)] + text + source[index.line_end(last):]
        assert by_lines == apply_edits(source, d.fix.edits), (d.code, d.path, d.start)
        checked += 1
    if not checked:
        pytest.skip("no fixture finding has a fix within its own lines")


def test_review_post_without_head_reviews_the_commit_not_the_working_tree(pr_repo, monkeypatch):
    # Before: the working tree's lines were posted against HEAD's sha: two uncommitted lines
    # above a finding put its comment and one-click suggestion two lines off, and an untracked
    # file got comments GitHub refuses (one refused comment fails the whole review).
    root, base, head = pr_repo
    committed = json.loads(CliRunner().invoke(review_command, ["--base", "main", "--head", "feature"]).stdout)
    (root / "train.py").write_text("# header\n# another\n" + (root / "train.py").read_text())
    (root / "untracked.py").write_text("from torch.utils.data import DataLoader\nnew = DataLoader(ds)\n")
    with FakeGitHub("ghs_token", "octo/proj", 7, head, {"train.py": set(range(1, 13)), "old.py": {1, 2, 3}}) as gh:
        monkeypatch.setenv("GITHUB_TOKEN", "ghs_token")
        monkeypatch.setenv("GITHUB_API_URL", gh.url)
        out = CliRunner().invoke(review_command, ["--base", "main", "--post", "--repo", "octo/proj", "--pr", "7"])
        assert out.exit_code == 1, out.output
        assert gh.rejections == [] and len(gh.reviews) == 1
        posted = gh.reviews[0]
    assert posted["commit_id"] == head
    assert sorted((c["path"], c["line"], c["body"]) for c in posted["comments"]) == sorted(
        (c["path"], c["line"], c["body"]) for c in committed["comments"])
    assert "--post reviews HEAD as committed; the working tree's uncommitted changes are not part of it" in out.stderr


def test_review_exit_zero_covers_a_file_that_could_not_be_checked(pr_repo):
    # `check --exit-zero` exits 0 after unreadable files too; review exited 2, so the Action's
    # default (fail-on-findings: false, which passes --exit-zero) failed on any unparsable file.
    root, _, _ = pr_repo
    (root / "broken.py").write_text("def f(:\n")
    commit_all(root, "broken")
    out = CliRunner().invoke(review_command, ["--base", "main", "--head", "feature", "--exit-zero"])
    assert out.exit_code == 0, out.output
    assert "broken.py" in out.stderr
    assert CliRunner().invoke(review_command, ["--base", "main", "--head", "feature"]).exit_code == 2


def test_review_summary_counts_the_suggestions_the_comments_carry(pr_repo):
    # "N with a suggested fix" counted every finding with a fix, also those whose fix reaches
    # outside the commented lines (no suggestion block in the comment).
    review = json.loads(CliRunner().invoke(review_command, ["--base", "main", "--head", "feature"]).stdout)
    blocks = sum("suggestion\n" in c["body"] for c in review["comments"])
    assert f"({blocks} with a suggested change" in review["body"], review["body"]
