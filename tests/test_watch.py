"""`trainlint check --watch`: a real process that checks again when a file or its configuration
changes, and stops cleanly on Ctrl-C."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time

from trainlint.watch import snapshot

BAD = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\n"
GOOD = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4, prefetch_factor=4)\n"


def _lines(stream, into):
    for line in iter(stream.readline, ""):
        into.put(line)
    into.put(None)


def _until(lines, text, timeout=60):
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=deadline - time.monotonic())
        except queue.Empty:
            break
        if line is None:
            break
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"{text!r} not seen in {seen}")


def test_watch_checks_again_on_changes_and_stops_on_ctrl_c(tmp_path):
    (tmp_path / "train.py").write_text(BAD)
    proc = subprocess.Popen([sys.executable, "-m", "trainlint", "check", "--watch", "--no-cache", "--select", "TL104",
                             "train.py"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    lines = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True).start()
    try:
        _until(lines, "Found 1 error")
        time.sleep(0.1)
        (tmp_path / "train.py").write_text(GOOD)
        seen = _until(lines, "All checks passed!")
        assert any("File change detected: train.py" in line for line in seen), seen
        # A configuration change counts too: one that selects nothing that fires stays clean,
        # one that asks for a bigger prefetch brings the finding back.
        (tmp_path / "pyproject.toml").write_text("[tool.trainlint.TL104]\nmin-prefetch-factor = 8\n")
        _until(lines, "Found 1 error")
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.stdout.close()


def test_snapshot_sees_checked_files_and_configuration_above(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.trainlint]\n")
    src = tmp_path / "src"
    (src / ".venv").mkdir(parents=True)
    (src / "a.py").write_text("x = 1\n")
    (src / "nb.ipynb").write_text("{}")
    (src / "notes.txt").write_text("x")
    (src / ".venv" / "lib.py").write_text("x = 1\n")
    shot = snapshot([str(src)])
    assert str(src / "a.py") in shot and str(src / "nb.ipynb") in shot
    assert str(tmp_path / "pyproject.toml") in shot
    assert str(src / "notes.txt") not in shot and str(src / ".venv" / "lib.py") not in shot


def test_watch_with_fix_settles_after_its_own_writes(tmp_path):
    (tmp_path / "train.py").write_text(BAD)
    proc = subprocess.Popen([sys.executable, "-m", "trainlint", "check", "--watch", "--fix", "--no-cache", "--select",
                             "TL104", "train.py"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    lines = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True).start()
    try:
        _until(lines, "(1 fixed, 0 remaining)")
        _until(lines, "All checks passed!")  # the run after the fix's own write finds nothing
        assert (tmp_path / "train.py").read_text() == GOOD
        time.sleep(2)  # and then nothing more: no loop of runs
        assert lines.empty(), list(lines.queue)
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.stdout.close()
