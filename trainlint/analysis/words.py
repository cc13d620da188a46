"""The words of an identifier or a string, which analyses and rules match against word lists.

One splitter, so that `use_cuda`, `"cuda:0"`, `log_metrics`, `addScalar` and `val_loader` are read
the same way wherever a rule asks what a name says.
"""

from __future__ import annotations

import re
from functools import lru_cache

# camelCase humps and runs of capitals (`HTTPServer` -> HTTP, Server), without digits (`gpu0` -> gpu)
_HUMPS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
# ... and with the digits in and after a lower-case run (`f1`, `top5`), which some word lists name
_HUMPS_WITH_DIGITS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
# whole runs of letters, humps joined (`DistributedDataParallel`, `GPUs`)
_RUNS = re.compile(r"[A-Za-z]+")


# (identifiers repeat within and across files: a file's names are split once each)
@lru_cache(maxsize=8192)
def words(text: str) -> frozenset[str]:
    """The lower-cased words of ``text``, in every form a word list may name one: split at
    non-letters and camelCase humps, with and without digits, and whole runs of letters.
    `DistributedDataParallel` -> distributed, data, parallel, distributeddataparallel;
    `"cuda:0"` -> cuda, 0; `GPUs` -> gp, us, gpus; `f1_score` -> f, f1, score.
    Extra forms only add matches for words a list names, so a caller asks ``words(x) & LIST``."""
    return frozenset(
        w.lower() for pattern in (_HUMPS, _HUMPS_WITH_DIGITS, _RUNS) for w in pattern.findall(text)
    )
