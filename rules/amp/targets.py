"""What TL402 and TL404 share: the GPU generation the code targets (the `target-gpu` setting:
bfloat16 and TF32 need Ampere or newer). Both also leave test files alone (`ctx.is_test`)."""

from __future__ import annotations


BEFORE_AMPERE = ("pascal", "volta", "turing")


def target_gpu(ctx) -> str:
    return getattr(ctx.settings, "target_gpu", "any") or "any"
