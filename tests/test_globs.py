"""Exclude and per-file-ignore globs: the compiled matcher means what fnmatch on each pattern means."""

import fnmatch
import itertools

import pytest

from trainlint.config import DEFAULT_EXCLUDE, glob_matcher


def _by_fnmatch(rel: str, pattern: str) -> bool:
    # The definition: the path, or a folder above it, matches; a pattern without '/' also
    # matches any single path part.
    pattern = pattern.rstrip("/")
    if fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, pattern + "/*"):
        return True
    return "/" not in pattern and any(fnmatch.fnmatchcase(part, pattern) for part in rel.split("/"))


PATTERNS = ["build", "build/", "*.pyc", "tests/*", "src/gen/**", "docs/conf.py", "[._]venv*", "a?c",
            "vendor/*/old", "*_pb2.py", ".git", "notes.txt"]
PATHS = ["build", "build/x.py", "src/build/x.py", "rebuild/x.py", "x.pyc", "pkg/x.pyc", "tests/t.py",
         "tests/sub/t.py", "pkg/tests/t.py", "src/gen/a/b.py", "docs/conf.py", "docs/conf.pyi",
         ".venv/lib/x.py", "_venv2/x.py", "venv/x.py", "abc/x.py", "abbc/x.py", "vendor/lib/old/x.py",
         "vendor/old/x.py", "m_pb2.py", "pkg/m_pb2.py", ".git/config", "a/.github/x.py", "notes.txt"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_each_pattern_matches_as_fnmatch_does(pattern):
    matcher = glob_matcher((pattern,))
    for rel in PATHS:
        assert matcher(rel) == _by_fnmatch(rel, pattern), (pattern, rel)


def test_pattern_sets_match_when_any_pattern_does():
    for patterns in itertools.combinations(PATTERNS, 3):
        matcher = glob_matcher(patterns)
        for rel in PATHS:
            assert matcher(rel) == any(_by_fnmatch(rel, p) for p in patterns), (patterns, rel)


def test_default_excludes():
    matcher = glob_matcher(tuple(DEFAULT_EXCLUDE))
    assert matcher("pkg/.venv/lib/site.py") and matcher("build/lib/x.py")
    assert not matcher("src/trainer/train.py")
    assert glob_matcher(())("anything.py") is False
