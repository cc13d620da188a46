"""How much the verifier's harness adds to step time on a tight loop (target: under 2%).

Not a test: a benchmark to run by hand. It runs a small training loop that times itself, once as
plain `python` and once under the harness (`python -m trainlint.verify.harness`, with every hook
installed: optimizer step hook, backward loss capture, loader timing), side by side, alternating
for --pairs rounds, and prints each round's ratio and their median.

    python bench/verify_overhead.py [--pairs 5] [--steps 2000] [--width 128] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The loop times itself (after its own warm-up) and prints the mean step time in seconds.
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
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
