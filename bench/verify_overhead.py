"""How much the verifier's harness adds to step time on a tight loop (target: under 2%).

Not a test: a benchmark to run by hand. Two side-by-side measurements of a small training loop:

1. in one process, blocks of steps alternate with the harness's hooks enabled and disabled
   (the optimizer step hook, backward loss capture, loader timing: trainlint.verify.harness's
   own _install); the ratio of the median per-step times of "on" and "off" blocks. Alternating
   small blocks in one process keeps other load on the machine out of the comparison;
2. (--process) whole processes, plain `python` vs `python -m trainlint.verify.harness`,
   alternating for --pairs rounds: includes everything the harness does, but on a shared
   machine its noise is usually larger than the overhead.

    python bench/verify_overhead.py [--blocks 100] [--block-steps 50] [--width 128]
                                    [--device cpu|cuda] [--attribute] [--runs 1]
                                    [--process --pairs 5 --steps 2000] [--against REV]
    python bench/verify_overhead.py --instructions [--short 20 --long 1020] [--top 0]
                                    [--simulate] [--against REV]

--attribute splits the in-process overhead by part (the step hook with and without its CUDA
event, loss capture at backward, the loader hooks) and adds an "off again" block, identical to
"off", whose reading is the noise floor of the comparison. --runs N repeats the in-process
comparison in N fresh processes and gives each row's median and range over them (one process's
reading depends on where its memory landed; see across_processes). --against REV compares this
checkout's harness with REV's (a temporary git worktree), processes alternating.

--instructions counts instead of timing (CPU only; needs valgrind): each row runs the loop in its
own process under cachegrind, its parts installed throughout as in a verify run, once for
--short and once for --long steps; the difference over the extra steps is the row's instructions
per step, with the start-up and the import cancelled out. Counts do not depend on other load on
the machine, and identical settings repeat to within a few instructions a step ("off again");
patching torch's classes alone moves them by up to ~0.3% (the "loader hooks" row: the loop never
calls those hooks). So they resolve what timing cannot: which part adds work, and where (--top N lists the functions
whose counts changed most with all parts). Instructions are not time (a cache miss costs more than
an add), so this complements the timed rows; it does not replace them. --simulate adds
cachegrind's simulated cache misses and branch mispredictions per step: a model's, not this
processor's, so a hint where the time that the instructions leave unexplained may go.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The trainlint whose harness is timed: this checkout's, or (in the children of --against) the
# other revision's worktree.
HARNESS_ROOT = os.environ.get("TRAINLINT_BENCH_ROOT", str(ROOT))
sys.path.insert(0, HARNESS_ROOT)

# The loop times itself (wall and CPU time) (after its own warm-up) and prints the mean step time in seconds.
LOOP = textwrap.dedent(
    """
    import sys, time, torch
    from torch import nn
    steps, width, device = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, width, device=device)
    y = torch.randn(32, 1, device=device)
    def step():
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    for _ in range(50):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    t, c = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    print("STEP", (time.perf_counter() - t) / steps, (time.process_time() - c) / steps)
    """
)


def run(script: Path, args: list[str], harnessed: bool, out_dir: str) -> tuple[float, float]:
    """(wall, CPU) seconds per step as the loop measured them."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    if harnessed:
        # More steps than the loop makes, so the loop ends by itself and times its whole run.
        env["TRAINLINT_VERIFY"] = json.dumps({
            "script": str(script), "steps": 10**9, "warmup": 1, "seed": 0,
            "out_dir": out_dir, "threads": int(env["OMP_NUM_THREADS"]),
        })
        cmd = [sys.executable, "-m", "trainlint.verify.harness", *args]
    else:
        cmd = [sys.executable, str(script), *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    wall, cpu = out.stdout.split("STEP")[-1].split()[:2]
    return float(wall), float(cpu)


def variants(attribute: bool, device: str) -> list[tuple[str, tuple[str, ...], bool]]:
    """(label, harness parts enabled, CUDA timing event recorded) for each kind of block."""
    all_parts = ("step", "backward", "loader")
    if not attribute:
        return [("off", (), False), ("on", all_parts, True)]
    rows = [
        ("off", (), False),
        # The same as "off": how far two identical settings read apart is the noise floor.
        ("off again", (), False),
        ("all", all_parts, True),
        ("step hook", ("step",), True),
        ("loss capture", ("backward",), False),
        ("loader hooks", ("loader",), False),
    ]
    if device == "cuda":
        rows.insert(4, ("step hook, no event", ("step",), False))
    return rows


def tight_loop(width: int, block_steps: int, device: str = "cpu"):
    """The benchmark's loop, in this process: returns (block, clock), where block() runs
    block_steps training steps and returns the time per step on clock. bench/verify_hook_shapes.py
    times the same loop."""
    import time

    import torch
    from torch import nn

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, width, device=device)
    y = torch.randn(32, 1, device=device)

    # On a CPU with one thread, this process's CPU time is the clock that other load on a shared
    # machine disturbs least; on a GPU, wall time with a sync at each block's ends.
    clock = time.perf_counter if device == "cuda" else time.process_time

    def block() -> float:
        if device == "cuda":
            torch.cuda.synchronize()
        t = clock()
        for _ in range(block_steps):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        if device == "cuda":
            torch.cuda.synchronize()
        return (clock() - t) / block_steps

    return block, clock


def same_round(times: dict[str, list[float]], label: str) -> tuple[float, float, float]:
    """The median of ``label``'s same-round ratios to "off", and the verifier's own statistic for
    A/B rounds: the 95% t-interval of their geometric mean (low, high)."""
    from trainlint.verify import stats

    pairs = [a / b for a, b in zip(times[label], times["off"])]
    return (statistics.median(pairs), *stats.rounds_interval(pairs))


def alternate(labels: list[str], rounds: int, run_block) -> dict[str, list[float]]:
    """run_block(label) for every label, each round, the order rotated each round so that no
    setting always follows the same other one; each label's block times, in round order."""
    times: dict[str, list[float]] = {label: [] for label in labels}
    for k in range(rounds):
        for label in labels[k % len(labels):] + labels[:k % len(labels)]:
            times[label].append(run_block(label))
    return times


def in_process(blocks: int, block_steps: int, width: int, device: str,
               attribute: bool) -> dict[str, float]:
    """Times the rows side by side; prints them and returns each row's median of same-round
    ratios to "off"."""
    from trainlint.verify import harness

    block, clock = tight_loop(width, block_steps, device)
    cfg = {"steps": 10**9, "warmup": 1, "seed": 0}
    state = harness._State(cfg)
    hooks = harness._install(cfg, state)

    def reset() -> None:
        # A verify run keeps warm-up + N steps of records; without this the bench would hold
        # tens of thousands of loss tensors and time the garbage collector walking them.
        for records in (state.losses, state.step_ends, state.step_marks, state.waits):
            records.clear()
        # The step timing events are reused, as a verify run's warm-up creates them once.
        state.spare_events.extend(state.cuda_events)
        state.cuda_events.clear()

    block()  # warm-up, hooks on: the first step creates the run's timing events
    reset()
    step_device = state.device  # the step hook records a CUDA event only when this is set
    hooks.disable()
    for _ in range(3):
        block()  # warm-up
    rows = variants(attribute, device)
    settings = {label: (parts, event) for label, parts, event in rows}

    def run_block(label: str) -> float:
        parts, event = settings[label]
        hooks.enable(parts)
        state.device = step_device if event else None
        t = block()
        reset()
        return t

    times = alternate(list(settings), blocks, run_block)
    hooks.disable()
    off = times["off"]
    base = statistics.median(off)
    print(f"in one process, {blocks} rounds of {len(rows)} blocks of {block_steps} steps, "
          f"width {width}, {device}, {clock.__name__}: off {base * 1e6:.1f} us/step")
    medians = {"off us/step": base * 1e6}
    for label, _, _ in rows[1:]:
        on = times[label]
        ratio = statistics.median(on) / base
        pair, low, high = same_round(times, label)
        medians[label] = pair
        extra = (statistics.median(on) - base) * 1e6
        name = "harness overhead (in-process)" if label == "on" else f"{label:>20}"
        print(f"{name}: {extra:+.1f} us/step; ratio of medians {ratio:.4f} "
              f"({(ratio - 1) * 100:+.2f}%), median of same-round ratios {pair:.4f} "
              f"({(pair - 1) * 100:+.2f}%), 95% interval {(low - 1) * 100:+.2f}% to "
              f"{(high - 1) * 100:+.2f}%")
    return medians


@contextlib.contextmanager
def harness_roots(against: str | None):
    """{label: checkout} of the harnesses to compare: this checkout, and a temporary worktree of
    the revision ``against`` when given (bench/ab.py's checkout)."""
    if against is None:
        yield {"this checkout": str(ROOT)}
        return
    from ab import checkout

    with checkout(against) as other:
        yield {"this checkout": str(ROOT), against: str(other)}


def child_env(root: str) -> dict[str, str]:
    """The environment of a child timing or counting ``root``'s harness."""
    env = dict(os.environ, TRAINLINT_BENCH_ROOT=root)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def across_processes(runs: int, argv: list[str], roots: dict[str, str]) -> None:
    """The in-process comparison in ``runs`` fresh processes per harness (alternating between
    the harnesses when there are two), and each row's median and range over them.

    Readings of the same row differ between processes by more than within one (the same row read
    +1.6% and +2.8% in two processes minutes apart, "off again" within 0.2% in both): each
    process lays out its memory anew, and so little code in so tight a loop is sensitive to
    where it lands. A claim rests on the median over processes, not on one; a comparison of two
    harnesses, on processes alternating between them.
    """
    readings: dict[str, list[dict[str, float]]] = {name: [] for name in roots}
    for k in range(runs):
        for name, root in roots.items():
            out = subprocess.run([sys.executable, __file__, *argv, "--runs", "1", "--json-line"],
                                 capture_output=True, text=True, check=True,
                                 env=child_env(root)).stdout
            got = json.loads(out.splitlines()[-1])
            readings[name].append(got)
            print(f"process {k + 1}, {name}: " + ", ".join(
                f"{label} {(v - 1) * 100:+.2f}%" for label, v in got.items()
                if label != "off us/step") + f" (off {got['off us/step']:.1f} us/step)",
                flush=True)
    for name, got in readings.items():
        print(f"{name}, over {runs} processes, median of same-round ratios per process:")
        for label in got[0]:
            if label == "off us/step":
                continue
            vals = sorted((r[label] - 1) * 100 for r in got)
            print(f"{label:>20}: median {statistics.median(vals):+.2f}%, "
                  f"range {vals[0]:+.2f}% to {vals[-1]:+.2f}%")


def count_child(parts: tuple[str, ...], steps: int, width: int) -> None:
    """The loop in this process with the given harness parts installed throughout (records kept,
    as in a verify run); what --instructions counts under cachegrind."""
    from trainlint.verify import harness

    block_steps = 10
    block, _ = tight_loop(width, block_steps)
    cfg = {"steps": 10**9, "warmup": 1, "seed": 0}
    hooks = harness._install(cfg, harness._State(cfg))
    hooks.enable(parts)
    for _ in range(5 + steps // block_steps):  # 50 warm-up steps, then the counted ones
        block()


def cachegrind_counts(path: str) -> tuple[dict[str, int], dict[str, int]]:
    """({event: total} and {function: instructions}) of a cachegrind output file; the events are
    Ir (instructions) and, with the simulations on, cache misses and mispredicted branches."""
    per_function: dict[str, int] = {}
    events: list[str] = []
    totals: dict[str, int] = {}
    function = "?"
    with open(path) as f:
        for line in f:
            if line.startswith("fn="):
                function = line[3:].strip()
            elif line[:1].isdigit():
                fields = line.split()
                if len(fields) >= 2:  # line number, then the events in order: Ir first
                    per_function[function] = per_function.get(function, 0) + int(fields[1])
            elif line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:"):
                totals = dict(zip(events, map(int, line.split()[1:])))
    return totals, per_function


# cachegrind's simulated events that --simulate prints besides instructions
SIMULATED = {"I1mr": "L1 instruction misses", "D1mr": "L1 data read misses",
             "DLmr": "last-level data read misses", "Bcm": "conditional branches mispredicted",
             "Bim": "indirect branches mispredicted"}


def instructions(short: int, long: int, width: int, top: int, roots: dict[str, str],
                 simulate: bool = False) -> None:
    """Instructions per step of each row and harness (see the module's docstring), counted
    under cachegrind; with ``simulate``, also its simulated cache misses and branch
    mispredictions (a model of a processor, not this one: a hint where time goes that the
    instructions do not account for)."""
    from concurrent.futures import ThreadPoolExecutor

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("--instructions needs valgrind (its cachegrind tool) on PATH")
    rows = variants(attribute=True, device="cpu")

    with tempfile.TemporaryDirectory() as tmp:
        def count(job: tuple[int, str, tuple[str, ...], int]) -> tuple[dict, dict]:
            index, name, parts, steps = job
            # (names of one length: the client's memory layout, and so its counts, stay alike)
            out = os.path.join(tmp, f"{index:03d}-{steps:06d}.out")
            env = dict(child_env(roots[name]), OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
            sims = ["--cache-sim=yes", "--branch-sim=yes"] if simulate else ["--cache-sim=no"]
            subprocess.run([valgrind, "--tool=cachegrind", *sims,
                            f"--cachegrind-out-file={out}", sys.executable, __file__,
                            "--count-child", ",".join(parts), str(steps), str(width)],
                           env=env, check=True, capture_output=True)
            return cachegrind_counts(out)

        keys = [(name, label, n) for name in roots for label, _, _ in rows for n in (short, long)]
        parts = {label: p for label, p, _ in rows}
        jobs = [(i, name, parts[label], n) for i, (name, label, n) in enumerate(keys)]
        # Counts do not depend on load, so the runs share the cores (each takes a minute or two:
        # importing torch under valgrind is most of it).
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            results = dict(zip(keys, pool.map(count, jobs)))

    extra = long - short

    def per_step(name: str, label: str, event: str = "Ir") -> float:
        a, b = results[(name, label, short)][0], results[(name, label, long)][0]
        return (b[event] - a[event]) / extra

    def functions(name: str, label: str) -> dict[str, float]:
        fa, fb = results[(name, label, short)][1], results[(name, label, long)][1]
        return {fn: (fb.get(fn, 0) - fa.get(fn, 0)) / extra for fn in set(fa) | set(fb)}

    print(f"instructions per step (cachegrind, steps {short} -> {long}, width {width})")
    for name in roots:
        base = per_step(name, "off")
        print(f"{name}: off {base:,.0f}")
        for label, _, _ in rows[1:]:
            n = per_step(name, label)
            print(f"{label:>20}: {n - base:+,.0f} instructions/step ({(n / base - 1) * 100:+.2f}%)")
            for event, what in SIMULATED.items() if simulate else ():
                off, on = per_step(name, "off", event), per_step(name, label, event)
                print(f"{'':>22}{on - off:+,.1f} {what}/step (off {off:,.1f})")
        if top:
            fns, base_fns = functions(name, "all"), functions(name, "off")
            change = {fn: fns.get(fn, 0) - base_fns.get(fn, 0) for fn in set(fns) | set(base_fns)}
            print(f"{name}: functions whose counts changed most with all parts "
                  f"(instructions/step):")
            for fn, d in sorted(change.items(), key=lambda kv: -abs(kv[1]))[:top]:
                print(f"{d:+10,.0f}  {fn[:100]}")


def main() -> None:
    if sys.argv[1:2] == ["--count-child"]:
        parts, steps, width = sys.argv[2:5]
        count_child(tuple(p for p in parts.split(",") if p), int(steps), int(width))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, default=100)
    p.add_argument("--block-steps", type=int, default=50)
    p.add_argument("--process", action="store_true", help="also compare whole processes")
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--device", default="cpu")
    p.add_argument("--attribute", action="store_true",
                   help="time each part of the harness alone, and an A/A control for the noise")
    p.add_argument("--runs", type=int, default=1,
                   help="repeat the in-process comparison in this many fresh processes")
    p.add_argument("--instructions", action="store_true",
                   help="count instructions per step under cachegrind instead of timing")
    p.add_argument("--short", type=int, default=20, help="--instructions: steps of the short run")
    p.add_argument("--long", type=int, default=1020, help="--instructions: steps of the long run")
    p.add_argument("--top", type=int, default=0,
                   help="--instructions: list the N functions whose counts changed most")
    p.add_argument("--simulate", action="store_true",
                   help="--instructions: also cachegrind's simulated cache misses and branch "
                        "mispredictions per step (slower)")
    p.add_argument("--against", metavar="REV",
                   help="with --runs or --instructions: also the harness of this git revision, "
                        "side by side (processes alternating)")
    p.add_argument("--json-line", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.instructions:
        if a.device != "cpu":
            p.error("--instructions counts the CPU loop only (valgrind cannot run CUDA code)")
        with harness_roots(a.against) as roots:
            instructions(a.short, a.long, a.width, a.top, roots, a.simulate)
        return
    if a.runs > 1 or a.against:
        with harness_roots(a.against) as roots:
            across_processes(a.runs, [
                "--blocks", str(a.blocks), "--block-steps", str(a.block_steps),
                "--width", str(a.width), "--device", a.device,
                *(["--attribute"] if a.attribute else [])], roots)
    else:
        medians = in_process(a.blocks, a.block_steps, a.width, a.device, a.attribute)
        if a.json_line:
            print(json.dumps(medians))
    if not a.process:
        return
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "tight_loop.py"
        script.write_text(LOOP)
        args = [str(a.steps), str(a.width), a.device]
        wall_r, cpu_r = [], []
        print(f"tight loop: {a.steps} steps, width {a.width}, {a.device}; plain vs harnessed")
        for k in range(a.pairs):
            plain = run(script, args, False, tmp)
            hooked = run(script, args, True, tmp)
            wall_r.append(hooked[0] / plain[0])
            cpu_r.append(hooked[1] / plain[1])
            print(f"  pair {k + 1}: wall {plain[0] * 1e6:7.1f} -> {hooked[0] * 1e6:7.1f} us/step "
                  f"(x{wall_r[-1]:.4f}); CPU {plain[1] * 1e6:7.1f} -> {hooked[1] * 1e6:7.1f} "
                  f"us/step (x{cpu_r[-1]:.4f})")
        # CPU time per step is the steadier number on a shared machine (other load lengthens wall
        # time, not this process's CPU time); on a GPU, wall time is what counts.
        for name, rs in (("wall", wall_r), ("CPU", cpu_r)):
            med = statistics.median(rs)
            print(f"harness overhead ({name} time): median ratio {med:.4f} "
                  f"({(med - 1) * 100:+.2f}%), range {min(rs):.4f}-{max(rs):.4f} "
                  f"over {a.pairs} pairs")

if __name__ == "__main__":
    main()
