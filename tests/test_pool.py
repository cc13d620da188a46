"""trainlint.pool: every item answered once; a worker that dies costs only the item it was
computing; nothing is left running however the run ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from trainlint.pool import WorkerDied, can_fork, run_tasks

pytestmark = pytest.mark.skipif(not can_fork(), reason="forked workers are Linux-only")

CRASH = {7, 20, 21}  # items whose worker dies (20 and 21 follow each other in one list)


def square(n: int) -> tuple[int, int, int]:
    return n, n * n, os.getpid()


def dies_on_some(n: int) -> tuple[int, int, int]:
    if n in CRASH:
        os.kill(os.getpid(), signal.SIGKILL)
    return square(n)


def unpicklable_on_seven(n: int):
    if n == 7:
        return lambda: n  # the worker cannot send this back
    return square(n)


def lost(n: int, reason: str) -> tuple[int, str, None]:
    return n, reason, None


def children() -> set[int]:
    """This process's children, zombies included (from /proc: other tests' children are not
    ours to reap, so no waitpid(-1))."""
    me = str(os.getpid())
    found = set()
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me:  # state, then the parent's pid
            found.add(int(pid))
    return found


@pytest.fixture
def no_children_left():
    """Asserts after the test that every worker it started is gone and reaped."""
    before = children()
    yield
    assert children() <= before


@pytest.mark.parametrize("jobs", [1, 2, 3, 5])
def test_every_item_answered_once_by_other_processes(jobs, no_children_left):
    got = list(run_tasks(square, list(range(100)), jobs))
    assert sorted(r[0] for r in got) == list(range(100))
    assert all(r[1] == r[0] * r[0] for r in got)
    pids = {r[2] for r in got}
    assert os.getpid() not in pids and 1 <= len(pids) <= jobs


def test_a_dead_worker_costs_only_the_item_it_was_computing(no_children_left):
    got = list(run_tasks(dies_on_some, list(range(60)), 2, lost=lost))
    by_item = {}
    for r in got:
        assert r[0] not in by_item, f"item {r[0]} answered twice"
        by_item[r[0]] = r
    assert sorted(by_item) == list(range(60))
    for n in CRASH:
        assert by_item[n][1] == "was killed by SIGKILL"
    assert all(by_item[n][1] == n * n for n in by_item if n not in CRASH)


def test_a_worker_failing_outside_the_function_is_reported(capfd):
    got = {r[0]: r for r in run_tasks(unpicklable_on_seven, list(range(30)), 2, lost=lost)}
    assert sorted(got) == list(range(30))
    assert got[7][1] == "exited with status 70"
    assert "Traceback" in capfd.readouterr().err  # why, on the worker's stderr


def test_without_lost_a_death_is_an_error_and_nothing_keeps_running(no_children_left):
    with pytest.raises(WorkerDied, match="SIGKILL"):
        list(run_tasks(dies_on_some, list(range(60)), 2))


def test_a_caller_that_stops_early_leaves_no_worker_behind(no_children_left):
    results = run_tasks(square, list(range(1000)), 3)
    next(results)
    results.close()


def test_spawn_pool_where_fork_is_not_used():
    got = sorted(run_tasks(abs, [-3, -2, -1, 0, 1], 2, fork=False))
    assert got == [0, 1, 1, 2, 3]


def _start_run(tmp_path, task: str, items: int, prelude: str = ""):
    """A real process running `task` (the body of `def slow(n):`) over range(items) on two
    forked workers, in a session of its own; returns it and the marker in its command line."""
    marker = str(tmp_path / "marker-for-this-run")
    code = (
        "import sys, time, pathlib\n"
        "from trainlint.pool import run_tasks\n"
        f"{prelude}"
        "def slow(n):\n"
        f"{task}"
        "    return n\n"
        "print('started', flush=True)\n"
        f"for _ in run_tasks(slow, list(range({items})), 2):\n"
        "    pass\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, marker], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, text=True)
    assert proc.stdout.readline().strip() == "started"
    return proc, marker


def _running(marker: str) -> list[str]:
    """Processes (the run and its workers) still alive, found by the marker in their command line."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(pid)
        except OSError:
            pass
    return found


@pytest.mark.parametrize("delay", [0.0, 0.01, 0.5])
def test_ctrl_c_ends_the_run_and_its_workers(tmp_path, delay):
    """SIGINT reaches the whole process group: the workers ignore it (also one that comes while
    they are being forked), the parent ends them."""
    proc, marker = _start_run(tmp_path, "    time.sleep(0.05)\n", 10000)
    time.sleep(delay)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    assert err.count("KeyboardInterrupt") == 1  # the parent's only, not one per worker
    assert _running(marker) == []


def test_workers_of_a_parent_killed_alone_stop_after_the_item_in_hand(tmp_path):
    """`kill -9` of the run's own process (not its group): each worker finishes the item it is
    computing, cannot send it, and leaves quietly instead of going on with its list."""
    done = tmp_path / "done"
    done.mkdir()
    proc, marker = _start_run(tmp_path, "    time.sleep(0.2)\n    (done / str(n)).write_text('x')\n", 200,
                              prelude=f"done = pathlib.Path({str(done)!r})\n")
    time.sleep(0.5)
    proc.kill()  # the parent alone
    proc.wait()
    deadline = time.monotonic() + 10
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(marker) == []
    finished = len(list(done.iterdir()))
    assert finished < 20  # about 0.5 s of work on two workers, plus the items in hand; not the list
    assert "Traceback" not in proc.stderr.read()


def test_a_worker_is_forgotten_once_whatever_a_ctrl_c_interrupts():
    """A KeyboardInterrupt can land between the two books a worker is on (the worker map and the
    selector) or inside _forget; _stop_all then forgets it again. That must end the run with the
    interrupt, not with a KeyError from the selector (seen once under load)."""
    import selectors

    from trainlint.pool import _ForkedWorkers, _Worker

    pool = _ForkedWorkers(str, [], 1, None, None)
    task_r, task_w = os.pipe()
    result_r, result_w = os.pipe()
    half = _Worker(os.getpid(), task_w, result_r)
    pool.workers[result_r] = half  # on one book only: the interrupt came before the selector's
    pool._forget(half)
    assert pool.workers == {} and half.task_fd == half.result_fd == -1
    again_r, again_w = os.pipe()
    whole = _Worker(os.getpid(), -1, again_r)
    pool.workers[again_r] = whole
    pool.selector.register(again_r, selectors.EVENT_READ, whole)
    pool._forget(whole)
    pool._forget(whole)  # _stop_all after an interrupt inside the first
    assert pool.workers == {} and pool.selector.get_map() == {}
    pool.selector.close()
    for fd in (task_r, result_w, again_w):
        os.close(fd)
