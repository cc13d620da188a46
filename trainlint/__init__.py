"""trainlint: find and fix the patterns that leave GPUs idle in PyTorch training code."""

__version__ = "0.1.0"
