"""The ecosystem check and the crash sweep on real code, bounded for CI.

By default (CI) this runs on two small packages of the pinned corpus, pytorch-tabnet and trainer
(about 9k lines), fetched once by pip with their pinned sha256 into $TRAINLINT_CORPUS (default
~/.cache/trainlint-corpus) and skipped when they cannot be fetched (no network). Set
TRAINLINT_CORPUS_FULL=1 to sweep every unpacked package of the corpus (training and speed sets:
4M lines, tens of minutes on two cores); scripts/sweep.py is the same check as a command.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile

import pytest

pytestmark = pytest.mark.corpus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "scripts")
CORPUS = os.environ.get("TRAINLINT_CORPUS", os.path.expanduser("~/.cache/trainlint-corpus"))
FULL = os.environ.get("TRAINLINT_CORPUS_FULL") == "1"
# The CI subset: (package, version, wheel, sha256), as pinned in shared/corpus/pins.tsv.
SMALL = [
    ("pytorch-tabnet", "4.1.0", "pytorch_tabnet-4.1.0-py3-none-any.whl",
     "70e8c9803f68f7cb26930d4cdb88857d1d98c745e0daf99d0f870fc70698515f"),
    ("trainer", "0.0.36", "trainer-0.0.36-py3-none-any.whl",
     "d986702c6d6d988e74a4f8da0f9c11a8c7d89274a11436957e91217a19b487a6"),
]


def _fetch(package: str, version: str, wheel: str, sha: str) -> str:
    """The unpacked folder of one pinned wheel (fetch.sh's layout), fetching it if needed."""
    out = os.path.join(CORPUS, "src", f"{package}-{version}")
    if os.path.exists(os.path.join(out, ".done")):
        return out
    archives = os.path.join(CORPUS, "archives")
    os.makedirs(archives, exist_ok=True)
    path = os.path.join(archives, wheel)
    if not os.path.exists(path):
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                               "--python-version", "3.11", "-d", archives, f"{package}=={version}"],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0 or not os.path.exists(path):
            pytest.skip(f"cannot fetch {package}=={version} for the corpus check: {proc.stderr.strip()[-300:]}")
    with open(path, "rb") as fh:
        got = hashlib.sha256(fh.read()).hexdigest()
    assert got == sha, f"{wheel}: sha256 {got}, pinned {sha}"
    with zipfile.ZipFile(path) as zf:
        zf.extractall(out)
    open(os.path.join(out, ".done"), "w").close()
    return out


@pytest.fixture(scope="module")
def packages() -> list[str]:
    if FULL:
        src = os.path.join(CORPUS, "src")
        if not os.path.isdir(src):
            pytest.skip(f"TRAINLINT_CORPUS_FULL=1 but no corpus under {src} (run shared/corpus/fetch.sh)")
        return sorted(os.listdir(src))
    return [os.path.basename(_fetch(*pin)) for pin in SMALL]


def _script(name: str, *args: str, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, name), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_sweep_lint_and_fix_is_clean(packages):
    """No internal error in lint mode (every analysis on every file); with --fix --unsafe-fixes on a
    copy every changed file parses and compiles, and a second run changes nothing."""
    args = ["--corpus", CORPUS, "--role", "all", "--packages", ",".join(packages), "--fix"]
    if not FULL:
        args.append("--deep")
    proc = _script("sweep.py", *args, timeout=7200 if FULL else 600)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    assert "sweep: clean" in proc.stdout


def test_ecosystem_snapshot_summary_and_diff(packages, tmp_path):
    snapshot = tmp_path / "snap.json"
    summary = tmp_path / "summary.md"
    proc = _script("ecosystem.py", "run", "--corpus", CORPUS, "--role", "all", "--packages", ",".join(packages),
                   "--out", str(snapshot), "--summary", str(summary), timeout=3600 if FULL else 600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(snapshot.read_text())
    assert set(data["packages"]) == set(packages)
    assert all(not os.path.isabs(f["path"]) for f in data["findings"])
    assert {"code", "package", "path", "line", "column", "message"} <= set(data["findings"][0])
    assert "| package | files | lines |" in summary.read_text()

    same = _script("ecosystem.py", "diff", str(snapshot), str(snapshot), timeout=60)
    assert same.returncode == 0 and "No changes in findings." in same.stdout

    # Drop one finding and invent one: the diff names both under their rules.
    changed = dict(data)
    dropped = data["findings"][0]
    invented = dict(dropped, code="TL999", line=dropped["line"] + 1, message="invented")
    changed["findings"] = data["findings"][1:] + [invented]
    other = tmp_path / "other.json"
    other.write_text(json.dumps(changed))
    diff = _script("ecosystem.py", "diff", str(snapshot), str(other), timeout=60)
    assert diff.returncode == 1
    assert f"{dropped['code']}:" in diff.stdout and "TL999: 0 -> 1 (+1 -0)" in diff.stdout
    assert f"- {dropped['package']}/{dropped['path']}:{dropped['line']}:" in diff.stdout
