"""The pre-commit hooks, run by the real `pre-commit` against this checkout.

`pre-commit try-repo` clones the repository (with uncommitted changes, if any) and installs
trainlint into a fresh virtualenv from it, which needs the package registry for libcst and
click. The hook environment is cached in one PRE_COMMIT_HOME for the whole module, so the
install happens once (about a minute on a cold cache).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _integration_support import REPO_ROOT, commit_all, init_repo

pytest.importorskip("trainlint.api", reason="the engine (trainlint.api) is not on this branch yet")

PRE_COMMIT = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))

CLEAN = """\
import torch
from torch.utils.data import DataLoader

loader = DataLoader(ds, batch_size=8, num_workers=2, pin_memory=True, prefetch_factor=4)
"""
BAD = """\
from torch.utils.data import DataLoader

loader = DataLoader(ds)
"""
FIXABLE = """\
import torch
from torch.utils.data import DataLoader

loader = DataLoader(ds, batch_size=8, num_workers=2, prefetch_factor=4)
model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    x = x.to("cuda")
    loss = model(x).sum()
    loss.backward()
    opt.step()
"""


def _toplevel() -> Path:
    out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=REPO_ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("this checkout is not a git repository; pre-commit try-repo needs one")
    return Path(out.stdout.strip())


@pytest.fixture(scope="module")
def precommit_home(tmp_path_factory):
    if not Path(PRE_COMMIT).exists():
        pytest.skip("pre-commit is not installed (pip install pre-commit, or the dev extra)")
    return tmp_path_factory.mktemp("pre-commit-home")


def _try_repo(project: Path, home: Path, hook: str, *files: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("PYTHONPATH", None)  # the hook must run the trainlint it installed, not this tree
    args = [PRE_COMMIT, "try-repo", str(_toplevel()), hook, "--color", "never"]
    args += ["--files", *files] if files else ["--all-files"]
    return subprocess.run(args, cwd=project, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_check_hook_passes_clean_and_fails_bad(tmp_path, precommit_home):
    project = init_repo(tmp_path / "project")
    (project / "clean.py").write_text(CLEAN)
    commit_all(project, "clean")
    ok = _try_repo(project, precommit_home, "trainlint")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "trainlint" in ok.stdout and "Passed" in ok.stdout

    (project / "bad.py").write_text(BAD)
    commit_all(project, "bad")
    bad = _try_repo(project, precommit_home, "trainlint")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout and "bad.py:3:10: TL101" in bad.stdout
    assert (project / "bad.py").read_text() == BAD  # the check hook never writes

    # pre-commit hands notebooks to the hook too (types_or: jupyter).
    (project / "bad.py").unlink()
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": BAD.splitlines(keepends=True)}
    (project / "explore.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                                                       "nbformat_minor": 5}, indent=1))
    commit_all(project, "notebook")
    notebook = _try_repo(project, precommit_home, "trainlint")
    assert notebook.returncode == 1 and "explore.ipynb:cell 1:3:10: TL101" in notebook.stdout, notebook.stdout


@pytest.mark.slow
def test_check_hook_honours_excludes_with_force_exclude(tmp_path, precommit_home):
    project = init_repo(tmp_path / "project")
    (project / "pyproject.toml").write_text('[tool.trainlint]\nextend-exclude = ["vendored"]\n')
    (project / "vendored").mkdir()
    (project / "vendored" / "bad.py").write_text(BAD)
    commit_all(project, "vendored bad file")
    out = _try_repo(project, precommit_home, "trainlint")
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow
def test_fix_hook_rewrites_the_file(tmp_path, precommit_home):
    project = init_repo(tmp_path / "project")
    (project / "train.py").write_text(FIXABLE)
    commit_all(project, "fixable")
    out = _try_repo(project, precommit_home, "trainlint-fix")
    # pre-commit fails a hook that modified files, so the user sees and stages the change.
    assert out.returncode == 1, out.stdout + out.stderr
    assert "files were modified by this hook" in out.stdout
    fixed = (project / "train.py").read_text()
    assert "pin_memory=True" in fixed and fixed != FIXABLE
    again = _try_repo(project, precommit_home, "trainlint-fix")
    assert again.returncode == 0, again.stdout + again.stderr


LEFTOVER = """\
from torch.utils.data import DataLoader

loader = DataLoader(ds, batch_size=8, num_workers=2)
evaluation = DataLoader(ds, batch_size=8)
"""


def _hooks_repo(tmp_path: Path) -> tuple[str, str]:
    """A copy of this checkout, uncommitted changes committed, to name in a config (`try-repo`
    cannot pass a hook `args`). Returns (path, revision)."""
    top = _toplevel()
    copy = tmp_path / "hooks-repo"
    subprocess.run(["git", "clone", "-q", str(top), str(copy)], check=True)
    changes = subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=top, capture_output=True, check=True).stdout
    if changes:
        subprocess.run(["git", "apply", "-"], cwd=copy, input=changes, check=True)
        subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "changes"],
                       cwd=copy, check=True)
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=copy, capture_output=True, text=True, check=True)
    return str(copy), rev.stdout.strip()


@pytest.mark.slow
def test_fix_hook_with_fix_only_lets_unfixable_findings_through(tmp_path, precommit_home):
    # docs/integrations.md: `args: [--fix-only]` on trainlint-fix fails only when it changed a file.
    repo, rev = _hooks_repo(tmp_path)
    project = init_repo(tmp_path / "project")
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {repo}\n  rev: {rev}\n  hooks:\n  - id: trainlint-fix\n    args: [--fix-only]\n")
    (project / "train.py").write_text(LEFTOVER)  # TL104 has a safe fix; TL101's is unsafe: it stays
    commit_all(project, "leftover")
    env = {**os.environ, "PRE_COMMIT_HOME": str(precommit_home), "PRE_COMMIT_COLOR": "never"}
    env.pop("PYTHONPATH", None)

    def run():
        return subprocess.run([PRE_COMMIT, "run", "--all-files", "--color", "never"], cwd=project, env=env,
                              capture_output=True, text=True, timeout=600)

    first = run()
    assert first.returncode == 1 and "files were modified by this hook" in first.stdout, first.stdout + first.stderr
    assert "prefetch_factor=4" in (project / "train.py").read_text()
    commit_all(project, "fixed")
    second = run()  # only TL101 is left: no fix to write, so the commit goes through
    assert second.returncode == 0, second.stdout + second.stderr
    assert "DataLoader(ds, batch_size=8)" in (project / "train.py").read_text()
