"""Worker processes for --jobs N: run a function over items in N forked workers.

run_tasks(func, items, jobs, initializer, lost) yields func(item) for every item, in the order
the workers finish them. The caller loads everything the function needs (libcst, the rules)
before calling, so each forked worker starts computing within a millisecond.

Why not multiprocessing.Pool:
- A worker that dies (a crash in a native extension such as libcst's parser, the out-of-memory
  killer) leaves Pool.imap_unordered waiting forever for the task it held. Here the parent sees
  that worker's result pipe close, yields lost(item, reason) for the one item it was computing,
  hands the items it had not started to a new worker, and the run goes on.
- Its imports and handler threads cost the parent about 15 ms before the first file is parsed,
  on the serial part of every --jobs run.

Protocol: per worker, a task pipe (parent -> worker: one pickled list of items per message) and
a result pipe (worker -> parent: one pickled result per item, in the list's order, so the parent
always knows which item a worker is computing). Messages are length-prefixed and read with
os.read on raw descriptors, so select() never misses a message held in a Python buffer. A worker
gets its next list once it has answered the whole previous one; it is then waiting to read, so
the parent's write never blocks on a worker busy writing results. Lists shrink as the work runs
out (a quarter of each worker's share of what is left, at most MAX_CHUNK), so the workers finish
together; a worker never holds a second list that another, idle worker could have taken.

Where fork is missing or unsafe (Windows, macOS), a multiprocessing spawn pool does the work,
without the crash handling.
"""

from __future__ import annotations

import os
import pickle
import selectors
import signal
import sys
from collections import deque
from typing import Callable, Iterator

MAX_CHUNK = 16
_HEADER = 8  # bytes of the length prefix


class WorkerDied(RuntimeError):
    pass


def can_fork() -> bool:
    # fork without exec is only safe on Linux here: macOS system libraries are not fork-safe.
    return hasattr(os, "fork") and sys.platform.startswith("linux")


def run_tasks(func: Callable, items: list, jobs: int, initializer: Callable[[], None] | None = None,
              lost: Callable[[object, str], object] | None = None, fork: bool | None = None) -> Iterator:
    """Yields func(item) for each item (any order), computed in `jobs` worker processes. When a
    worker dies, yields lost(item, reason) for the item it was computing (a result of func's shape,
    built by the caller) and goes on; lost=None raises WorkerDied instead.
    fork: None picks what the platform allows; False forces the spawn pool (tests)."""
    if can_fork() if fork is None else fork:
        yield from _ForkedWorkers(func, items, jobs, initializer, lost).results()
    else:
        yield from _spawned(func, items, jobs, initializer)


def _spawned(func, items, jobs, initializer):
    import multiprocessing

    chunksize = max(1, min(MAX_CHUNK, len(items) // (jobs * 8)))
    with multiprocessing.get_context("spawn").Pool(jobs, initializer=initializer) as pool:
        yield from pool.imap_unordered(func, items, chunksize)


# -- messages ----------------------------------------------------------------------------------


def _frame(obj) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(_HEADER, "little") + data


def _read_exact(fd: int, n: int) -> bytes | None:
    """n bytes, or None at end of file before the first byte; EOFError if it ends midway."""
    parts = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            if parts:
                raise EOFError("message cut short")
            return None
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def _receive(fd: int):
    """The next message; EOFError when the other end is gone."""
    header = _read_exact(fd, _HEADER)
    data = None if header is None else _read_exact(fd, int.from_bytes(header, "little"))
    if data is None:
        raise EOFError("closed")
    return pickle.loads(data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# -- the worker side ---------------------------------------------------------------------------


def _worker_main(task_fd: int, result_fd: int, func, initializer) -> None:
    """Runs in the forked child; never returns."""
    status = 0
    try:
        # Ctrl-C reaches the whole process group; the parent alone decides, and ends the workers.
        # (SIGINT is still blocked from the fork; ignoring it drops one that came in between.)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        if initializer is not None:
            initializer()
        while True:
            try:
                chunk = _receive(task_fd)
            except EOFError:
                break  # the parent closed the pipe: no more work
            for item in chunk:
                _write_all(result_fd, _frame(func(item)))
    except BrokenPipeError:
        pass  # the parent is gone (`kill -9` of the run alone): stop after the file in hand, quietly
    except BaseException:  # noqa: BLE001 - reported on stderr; the parent sees the pipe close
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        status = 70
    # os._exit: the parent's atexit handlers, buffers and finalizers are not the worker's to run.
    os._exit(status)


# -- the parent side ---------------------------------------------------------------------------


class _Worker:
    def __init__(self, pid: int, task_fd: int, result_fd: int) -> None:
        self.pid = pid
        self.task_fd = task_fd  # -1 once closed (no more work for it: it exits)
        self.result_fd = result_fd  # -1 once forgotten
        self.chunk: list = []  # the items it holds, answered in this order
        self.answered = 0


class _ForkedWorkers:
    def __init__(self, func, items, jobs, initializer, lost) -> None:
        self.func = func
        self.initializer = initializer
        self.lost = lost
        self.jobs = jobs
        self.todo: deque = deque(items)
        self.workers: dict[int, _Worker] = {}  # by result descriptor
        self.selector = selectors.DefaultSelector()

    def results(self) -> Iterator:
        try:
            for _ in range(min(self.jobs, len(self.todo))):
                self._start_worker()
            while self.workers:
                for key, _events in self.selector.select():
                    worker = key.data
                    if self.workers.get(worker.result_fd) is worker:  # not ended earlier this round
                        yield from self._read(worker)
        finally:
            self._stop_all()

    def _start_worker(self) -> None:
        import gc

        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        # Frozen objects are out of the collector's sight, so the child's collections never write
        # to (and so copy) the pages it shares with the parent; the parent takes them back at once.
        gc.freeze()
        # Ctrl-C held back across the fork: the child ignores it before it may arrive (else a
        # worker could die of KeyboardInterrupt before its first line); the parent gets it after.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            pid = os.fork()
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            gc.unfreeze()
            for fd in (task_r, task_w, result_r, result_w):
                os.close(fd)
            raise
        if pid == 0:
            # Siblings' pipe ends stay with the parent: a worker holding another's task pipe open
            # would keep it from seeing its end (and exiting) until this one exits too.
            for other in self.workers.values():
                for fd in (other.task_fd, other.result_fd):
                    if fd >= 0:
                        os.close(fd)
            os.close(task_w)
            os.close(result_r)
            _worker_main(task_r, result_w, self.func, self.initializer)
        gc.unfreeze()
        os.close(task_r)
        os.close(result_w)
        worker = _Worker(pid, task_w, result_r)
        self.workers[result_r] = worker
        self.selector.register(result_r, selectors.EVENT_READ, worker)
        # Ctrl-C is let through only once the worker is on the books (both maps): a KeyboardInterrupt
        # between the two left _stop_all unregistering a pipe the selector never had (KeyError).
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        self._feed(worker)

    def _feed(self, worker: _Worker) -> None:
        """Its next list, or, with nothing left, the end of its task pipe (it exits)."""
        if not self.todo:
            self._close_tasks(worker)
            return
        # A quarter of each worker's share of what is left: long lists early (fewer messages),
        # single items at the end (nobody waits on another's last list).
        size = max(1, min(MAX_CHUNK, len(self.todo) // (self.jobs * 4)))
        worker.chunk = [self.todo.popleft() for _ in range(min(size, len(self.todo)))]
        worker.answered = 0
        try:
            _write_all(worker.task_fd, _frame(worker.chunk))
        except BrokenPipeError:
            pass  # it died; its result pipe reads as closed next

    def _close_tasks(self, worker: _Worker) -> None:
        if worker.task_fd >= 0:
            os.close(worker.task_fd)
            worker.task_fd = -1

    def _read(self, worker: _Worker) -> Iterator:
        try:
            result = _receive(worker.result_fd)
        except (EOFError, pickle.UnpicklingError, OSError):
            yield from self._ended(worker)
            return
        worker.answered += 1
        if worker.answered == len(worker.chunk):
            worker.chunk = []
            self._feed(worker)
        yield result

    def _ended(self, worker: _Worker) -> Iterator:
        """Its result pipe closed: it exited after its last answer, or died holding items."""
        reason = self._reap(worker)
        self._forget(worker)
        held = worker.chunk[worker.answered:]
        if not held:
            return
        crashed, rest = held[0], held[1:]
        self.todo.extendleft(reversed(rest))  # first in line, for a new worker
        if self.lost is None:
            raise WorkerDied(f"a worker process {reason}")
        if self.todo and len(self.workers) < self.jobs:
            self._start_worker()
        yield self.lost(crashed, reason)

    def _forget(self, worker: _Worker) -> None:
        """Drop its pipes and its entry. Safe to do twice: a Ctrl-C that lands in here sends
        _stop_all through it again (unregistering twice raised KeyError over the interrupt)."""
        self._close_tasks(worker)
        if worker.result_fd < 0:
            return
        if worker.result_fd in self.selector.get_map():
            self.selector.unregister(worker.result_fd)
        self.workers.pop(worker.result_fd, None)
        os.close(worker.result_fd)
        worker.result_fd = -1

    @staticmethod
    def _reap(worker: _Worker) -> str:
        _pid, status = os.waitpid(worker.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code >= 0:
            return f"exited with status {code}"
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"

    def _stop_all(self) -> None:
        """Ends the workers still running (the caller stopped early, Ctrl-C, an error)."""
        for worker in list(self.workers.values()):
            self._forget(worker)
            try:
                os.kill(worker.pid, signal.SIGTERM)
                os.waitpid(worker.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        self.selector.close()
