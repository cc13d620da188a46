"""GPU-only parts of the verifier: CUDA-event step times, no per-step sync, the profiler breakdown.

They skip on machines without a CUDA GPU. bench/gpu_verify_check.sh runs them (and times the
whole verifier on a GPU fixture) in one short run on a GPU machine.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="needs a CUDA GPU (run bench/gpu_verify_check.sh on a GPU machine)",
)

from trainlint.verify.runner import RunSettings, Variant, run_once  # noqa: E402


def _settings(fixtures, **kw) -> RunSettings:
    base = dict(script=str(fixtures / "gpu_item_sync.py"), script_args=[], steps=10, warmup=3,
                nproc=None, threads=2)
    base.update(kw)
    return RunSettings(**base)


def test_step_times_come_from_cuda_events(fixtures, tmp_path):
    v = Variant("original", [], str(fixtures / "gpu_item_sync.py"))
    rec = run_once(_settings(fixtures), v, 0, tmp_path)
    assert rec.timing_source == "device"
    assert len(rec.step_s) == 10 and all(s > 0 for s in rec.step_s)
    assert all(math.isfinite(x) for x in rec.losses)


def test_harness_adds_no_per_step_sync(fixtures, tmp_path):
    # The fixed script runs its loop under set_sync_debug_mode("error"): a host wait inside a
    # step (an .item() in the harness, say) would raise and fail the run.
    v = Variant("fixed", [], str(fixtures / "gpu_item_sync_fixed.py"))
    rec = run_once(_settings(fixtures, script_args=["--sync-check"]), v, 0, tmp_path)
    assert rec.timing_source == "device"
    assert len(rec.losses) == 13


def test_losses_match_between_item_and_detach(fixtures, tmp_path):
    s = _settings(fixtures)
    a = run_once(s, Variant("original", [], str(fixtures / "gpu_item_sync.py")), 0, tmp_path)
    b = run_once(s, Variant("fixed", [], str(fixtures / "gpu_item_sync_fixed.py")), 0, tmp_path)
    assert a.losses == b.losses


def test_profiler_breakdown(fixtures, tmp_path):
    v = Variant("original", [], str(fixtures / "gpu_item_sync.py"))
    rec = run_once(_settings(fixtures), v, 0, tmp_path, profile_steps=3)
    p = rec.profile
    assert p is not None and p["steps"] == 3
    assert set(p["shares"]) == {"kernels", "memcpy", "communication", "data loader", "other"}
    assert p["shares"]["kernels"] > 0
    # nn.Linear runs GEMM kernels: some compute time must be recognised.
    assert 0 < p["compute_time_ratio"] <= 1
    assert p["top_compute_kernels"], p
