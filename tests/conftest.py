from _paths import ROOT, SHARED  # noqa: F401  (kept importable for older tests)
