"""`trainlint review`: changed lines from git, the review it builds, and posting it to a local
HTTP server that checks requests the way the GitHub API does."""

from __future__ import annotations

import re

import pytest
from _fake_github import FakeGitHub
from _integration_support import commit_all, diag, git, init_repo, result_of

from trainlint.diagnostics import Applicability
from trainlint.gitdiff import GitError, changed_files
from trainlint.github_api import GitHubClient, GitHubError
from trainlint.review import build_review, keep_changed, post_review

BASE_A = "".join(f"line{i} = {i}\n" for i in range(1, 11))


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = init_repo(tmp_path / "repo")
    (root / "a.py").write_text(BASE_A)
    (root / "b.py").write_text("".join(f"b{i} = {i}\n" for i in range(1, 21)))
    (root / "d.py").write_text("gone = 1\n")
    commit_all(root, "base")
    git(root, "checkout", "-q", "-b", "feature")
    monkeypatch.chdir(root)
    return root


def _feature_change(root):
    lines = BASE_A.splitlines(keepends=True)
    lines[4] = "line5 = 'changed'\n"
    lines += ["added11 = 11\n", "added12 = 12\n"]
    (root / "a.py").write_text("".join(lines))
    b = (root / "b.py").read_text().replace("b10 = 10\n", "b10 = 'ten'\n")
    (root / "b.py").unlink()
    (root / "c.py").write_text(b)
    (root / "d.py").unlink()
    return commit_all(root, "feature")


# -- changed lines -----------------------------------------------------------------------------


def test_changed_files_between_refs(repo):
    _feature_change(repo)
    changes = {c.path: c for c in changed_files(repo, "main", "feature")}
    assert set(changes) == {"a.py", "c.py"}  # the rename keeps only its edited line; deletions drop out
    a = changes["a.py"]
    assert a.added == {5, 11, 12}
    assert a.hunks == [(2, 12)]  # three lines of context, as GitHub's pull-request diff
    assert changes["c.py"].added == {10} and changes["c.py"].hunks == [(7, 13)]


def test_changed_files_uses_the_merge_base(repo):
    _feature_change(repo)
    git(repo, "checkout", "-q", "main")
    (repo / "e.py").write_text("only_on_main = 1\n")
    commit_all(repo, "main moves on")
    changes = {c.path for c in changed_files(repo, "main", "feature")}
    assert changes == {"a.py", "c.py"}  # e.py is main's change, not the pull request's


def test_changed_files_working_tree(repo):
    (repo / "a.py").write_text(BASE_A.replace("line2 = 2\n", "line2 = 'two'\n"))
    (repo / "new.py").write_text("x = 1\ny = 2\n")
    (repo / ".gitignore").write_text("ignored.py\n")
    (repo / "ignored.py").write_text("z = 3\n")
    changes = {c.path: c for c in changed_files(repo, "main", None)}
    assert set(changes) == {"a.py", "new.py", ".gitignore"}
    assert changes["a.py"].added == {2}
    assert changes["new.py"].added == {1, 2} and changes["new.py"].hunks == [(1, 2)]


def test_bad_ref_is_a_clear_error(repo):
    with pytest.raises(GitError, match="'nope' is not a commit"):
        changed_files(repo, "nope", None)


def test_outside_a_repository_the_error_says_so(tmp_path):
    # Not "'main' is not a commit": there is no repository to hold one.
    with pytest.raises(GitError, match="not a git repository"):
        changed_files(tmp_path, "main", None)


# -- building the review -----------------------------------------------------------------------

HEAD_SRC = (
    "import torch\n"                      # 1
    "loader = DataLoader(\n"              # 2  changed
    "    ds,\n"                           # 3
    ")\n"                                 # 4
    "old = DataLoader(ds)\n"              # 5  untouched
    "x = 1\n"                             # 6
    "y = 2\n"                             # 7
    "z = 3\n"                             # 8
    "w = 4\n"                             # 9
    "v = 5\n"                             # 10
    "u = 6\n"                             # 11
    "t = 7\n"                             # 12
    "late = DataLoader(ds, batch_size=8)\n"  # 13 added
)
BASE_SRC = HEAD_SRC.replace("loader = DataLoader(\n", "loader = DataLoader(  \n").replace(
    "late = DataLoader(ds, batch_size=8)\n", ""
)


def _pr_repo(root):
    (root / "train.py").write_text(BASE_SRC)
    commit_all(root, "base train")
    base = git(root, "rev-parse", "HEAD").strip()
    (root / "train.py").write_text(HEAD_SRC)
    head = commit_all(root, "head train")
    return base, head


def _head_findings(path="train.py"):
    src = HEAD_SRC
    s = src.index("DataLoader(\n")
    e = src.index(")\n", s) + 1
    at = src.index("    ds,") + len("    ds,")
    multi = diag(src, path, "TL101", s, e, "DataLoader without num_workers",
                 edits=[(at, at, " num_workers=2,")], applicability=Applicability.UNSAFE, name="dataloader-no-workers")
    s2 = src.index("DataLoader(ds)")
    old = diag(src, path, "TL101", s2, s2 + 14, "DataLoader without num_workers", name="dataloader-no-workers")
    s3 = src.index("DataLoader(ds, batch_size=8)")
    e3 = s3 + len("DataLoader(ds, batch_size=8)")
    late = diag(src, path, "TL102", s3, e3, "add pin_memory=True",
                edits=[(e3 - 1, e3 - 1, ", pin_memory=True")], name="dataloader-no-pin-memory")
    return result_of({path: (src, [multi, old, late])})


def test_review_keeps_findings_on_changed_lines_with_suggestions(repo):
    _pr_repo(repo)
    changes = changed_files(repo, "HEAD~1", "HEAD")
    result = _head_findings()
    kept = keep_changed(result, changes, repo)
    assert [(k.diag.code, k.diag.start.row) for k in kept] == [("TL101", 2), ("TL102", 13)]
    review = build_review(result, kept, repo, "a" * 40)
    assert review["event"] == "COMMENT" and review["commit_id"] == "a" * 40
    assert "2 findings on lines this change adds or modifies" in review["body"]
    first, second = review["comments"]
    # The multi-line finding: the comment spans lines 2-4, and the suggestion replaces exactly them.
    assert (first["path"], first["start_line"], first["line"], first["side"]) == ("train.py", 2, 4, "RIGHT")
    block = re.search(r"```suggestion\n(.*?)\n```", first["body"], re.S).group(1)
    assert block == "loader = DataLoader(\n    ds, num_workers=2,\n)"
    assert len(block.splitlines()) == first["line"] - first["start_line"] + 1
    assert "unsafe" in first["body"]
    assert "start_line" not in second and second["line"] == 13
    assert "```suggestion\nlate = DataLoader(ds, batch_size=8, pin_memory=True)\n```" in second["body"]
    assert re.search(r"<!-- trainlint:finding [0-9a-f]{32} -->", second["body"])


def test_comment_outside_the_hunk_falls_back_to_one_line_without_suggestion(repo):
    # Line 2 changes, but the finding runs to line 9, past the hunk's context (lines 1-5).
    src = "a = 1\nloader = DataLoader(\n" + "".join(f"    x{i},\n" for i in range(6)) + ")\n" + "".join(f"q{i} = {i}\n" for i in range(10))
    (repo / "f.py").write_text(src.replace("loader", "loadr"))
    commit_all(repo, "base f")
    (repo / "f.py").write_text(src)
    commit_all(repo, "head f")
    s, e = src.index("DataLoader"), src.index(")\n") + 1
    result = result_of({"f.py": (src, [diag(src, "f.py", "TL101", s, e, edits=[(e - 1, e - 1, "num_workers=2")])])})
    kept = keep_changed(result, changed_files(repo, "HEAD~1", "HEAD"), repo)
    (comment,) = build_review(result, kept, repo, "b" * 40)["comments"]
    assert comment["line"] == 2 and "start_line" not in comment
    assert "```suggestion" not in comment["body"] and "Fix (safe" in comment["body"]


def test_suggestion_fence_outgrows_backticks_in_the_code(repo):
    src = "s = DataLoader(ds)  # ```odd```\n"
    (repo / "g.py").write_text("")
    commit_all(repo, "empty g")
    (repo / "g.py").write_text(src)
    commit_all(repo, "g")
    s = src.index("DataLoader")
    result = result_of({"g.py": (src, [diag(src, "g.py", "TL102", s, s + 14, edits=[(s + 13, s + 13, ", pin_memory=True")])])})
    (comment,) = build_review(result, keep_changed(result, changed_files(repo, "HEAD~1", "HEAD"), repo), repo, "c" * 40)["comments"]
    assert "````suggestion\ns = DataLoader(ds, pin_memory=True)  # ```odd```\n````" in comment["body"]


# -- posting -----------------------------------------------------------------------------------


def test_post_review_then_rerun_does_not_duplicate(repo):
    base, head = _pr_repo(repo)
    changes = changed_files(repo, base, head)
    result = _head_findings()
    kept = keep_changed(result, changes, repo)
    with FakeGitHub("s3cret", "octo/proj", 7, head, {"train.py": set(range(1, 14))}) as gh:
        client = GitHubClient("s3cret", gh.url)
        posted, sent = post_review(client, "octo/proj", 7, result, kept, repo, head)
        assert gh.rejections == []
        assert posted["state"] == "COMMENTED" and len(gh.reviews) == 1 and len(gh.comments) == 2
        assert gh.reviews[0]["comments"][0]["start_line"] == 2

        # Same findings again: nothing is posted.
        posted, sent = post_review(client, "octo/proj", 7, result, kept, repo, head)
        assert posted is None and len(gh.reviews) == 1

        # The lines move (a new import on top) and a finding is added: only that one is posted.
        shifted = "import os\n" + HEAD_SRC + "more = DataLoader(ds)\n"
        (repo / "train.py").write_text(shifted)
        head2 = commit_all(repo, "shift")
        gh.head_sha = head2
        gh.commentable = {"train.py": set(range(1, 16))}
        result2 = result_of({"train.py": (shifted, [
            diag(shifted, "train.py", "TL101", m.start(), m.end(), "DataLoader without num_workers")
            for m in re.finditer(r"DataLoader\(ds\)", shifted)
        ] + [_shifted(d, shifted) for d in _head_findings().diagnostics if d.code != "TL101" or d.start.row == 2])})
        kept2 = keep_changed(result2, changed_files(repo, base, head2), repo)
        posted, sent = post_review(client, "octo/proj", 7, result2, kept2, repo, head2)
        assert gh.rejections == []
        assert [c["line"] for c in sent["comments"]] == [15]
        assert "already commented on" in sent["body"]
        assert len(gh.reviews) == 2 and len(gh.comments) == 3


def _shifted(d, shifted_src):
    """The same finding one line further down."""
    off = len("import os\n")
    edits = [(e.start + off, e.end + off, e.content) for e in d.fix.edits] if d.fix else None
    return diag(shifted_src, d.path, d.code, d.start_offset + off, d.end_offset + off, d.message,
                edits=edits, applicability=d.fix.applicability if d.fix else Applicability.SAFE, name=d.name)


def test_existing_comments_are_read_across_pages(repo):
    base, head = _pr_repo(repo)
    result = _head_findings()
    kept = keep_changed(result, changed_files(repo, base, head), repo)
    with FakeGitHub("t", "o/r", 1, head, {"train.py": set(range(1, 14))}) as gh:
        client = GitHubClient("t", gh.url)
        post_review(client, "o/r", 1, result, kept, repo, head)
        # Bury the posted comments behind 150 other people's comments.
        gh.comments[:0] = [{"id": i, "path": "x.py", "line": 1, "body": "lgtm"} for i in range(150)]
        posted, _ = post_review(client, "o/r", 1, result, kept, repo, head)
        assert posted is None
        assert sum(1 for m, p in gh.requests if m == "GET" and "page=2" in p) >= 1


def test_github_errors_are_reported_with_githubs_reason(repo):
    with FakeGitHub("right", "o/r", 1, "0" * 40, {}) as gh:
        with pytest.raises(GitHubError, match="HTTP 401 Bad credentials"):
            GitHubClient("wrong", gh.url).review_comments("o/r", 1)
        with pytest.raises(GitHubError, match="HTTP 422 Unprocessable Entity: commit_id is not part"):
            GitHubClient("right", gh.url).create_review("o/r", 1, {"commit_id": "1" * 40, "body": "x", "event": "COMMENT"})
        url = gh.url
    with pytest.raises(GitHubError, match="failed"):
        GitHubClient("right", url, timeout=2).review_comments("o/r", 1)
