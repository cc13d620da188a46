"""What TL402 and TL404 share: the GPU generation the code targets (the `target-gpu` setting:
bfloat16 and TF32 need Ampere or newer) and whether a file is a test, which runs no training."""

from __future__ import annotations


BEFORE_AMPERE = ("pascal", "volta", "turing")


def target_gpu(ctx) -> str:
    return getattr(ctx.settings, "target_gpu", "any") or "any"


def is_test_file(path: str) -> bool:
    parts = path.replace("\\", "/").split("/")
    return parts[-1].startswith("test_") or parts[-1].endswith("_test.py") or "tests" in parts[:-1]
