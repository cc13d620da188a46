"""A `--fix` run killed with SIGKILL part-way leaves every file wholly old or wholly new.

The writer puts the fixed text in a temporary file beside the original and renames it over the
original; a kill at any moment leaves either name pointing at a complete file. The test kills
the real CLI as soon as the first files have been rewritten, while most are still to do.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

N_FILES = 300
# Padding makes each file take a little while to lint, so the kill lands mid-run.
PADDING = "".join(f"def helper_{i}(x):\n    return [v * {i} for v in x if v]\n\n\n" for i in range(15))
ORIGINAL = ("import torch\nfrom torch.utils.data import DataLoader\n\n\n" + PADDING +
            "loader = DataLoader(ds, batch_size=32, num_workers=4)\n"
            "val_loader = DataLoader(val_ds, batch_size=32, num_workers=2)\n")
FIXED = ORIGINAL.replace("num_workers=4)", "num_workers=4, prefetch_factor=4)").replace(
    "num_workers=2)", "num_workers=2, prefetch_factor=4)")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_mid_fix_leaves_files_whole(tmp_path):
    folder = tmp_path / "proj"
    folder.mkdir()
    paths = []
    for i in range(N_FILES):
        path = folder / f"train_{i:03d}.py"
        path.write_text(ORIGINAL)
        paths.append(path)

    for attempt in range(3):
        # Two worker processes write files; the kill reaches all of them at once (the run's
        # process group, as `kill -9 -PGID` or a dying terminal session would).
        proc = subprocess.Popen(
            [sys.executable, "-m", "trainlint", "check", "--fix", "--select", "TL104", "--no-cache", "--jobs", "2",
             str(folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        deadline = time.monotonic() + 60
        # Kill as soon as the first file is new: the run is then certainly mid-way.
        while time.monotonic() < deadline and proc.poll() is None:
            if any(p.read_text() == FIXED for p in paths[:20]):
                break
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

        states = {"old": 0, "new": 0}
        for path in paths:
            data = path.read_text()
            assert data in (ORIGINAL, FIXED), f"{path.name} is neither the old nor the new text ({len(data)} chars)"
            states["old" if data == ORIGINAL else "new"] += 1
        leftovers = [n for n in os.listdir(folder) if not n.endswith(".py")]
        # A kill between creating the temporary file and renaming it may leave one temporary per
        # writing process behind (never under a .py name, so no later run checks it).
        assert len(leftovers) <= 2 and all(n.startswith(".trainlint-") for n in leftovers), leftovers
        if states["old"] and states["new"]:
            break  # really killed mid-way
        for path in paths:  # finished (or never started) before the kill: try again
            path.write_text(ORIGINAL)
    assert states["old"] and states["new"], f"could not kill the run mid-way: {states}"

    # A rerun finishes the job: every file new, nothing lost.
    done = subprocess.run([sys.executable, "-m", "trainlint", "check", "--fix", "--select", "TL104", "--no-cache",
                           str(folder)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert all(p.read_text() == FIXED for p in paths)
