"""Version gates: code that runs only on an older PyTorch (or when a newer API is missing).

`if TORCH_2_4: torch.amp.GradScaler(...) else: torch.cuda.amp.GradScaler(...)`, `if is_torch_version(">=",
"2.4.0"): from torch.amp import GradScaler else: from torch.cuda.amp import GradScaler`, and the
`except ImportError:` arm of a try-import are deliberate fallbacks; a rule that asks to move to the new
API has nothing to say about them (ultralytics, accelerate).
"""

from __future__ import annotations

import re

import libcst as cst

from trainlint.analysis.names import dotted
from trainlint.analysis.tree import TreeIndex

# TORCH_1_13, is_torch_version(...), torch.__version__, version.parse(...), check_version(...)
_VERSIONISH = re.compile(r"(^|[._])(torch_\d\w*|\w*version\w*)$", re.IGNORECASE)
_FALLBACK_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError"})


def is_version_test(index: TreeIndex, test: cst.BaseExpression) -> bool:
    for node in index.walk(test):
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = dotted(node)
            if name and _VERSIONISH.search(name):
                return True
        if isinstance(node, cst.Call) and dotted(node.func) == "hasattr":
            return True
    return False


def _negated(test: cst.BaseExpression) -> bool:
    """`not new_enough`, or an upper bound (`version < "2.4"`): the body is the old-version arm."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return True
    if isinstance(test, cst.Comparison):
        return any(isinstance(c.operator, (cst.LessThan, cst.LessThanEqual)) for c in test.comparisons)
    return False


def in_version_fallback(index: TreeIndex, node: cst.CSTNode) -> bool:
    """node runs only on the old-version arm of a version gate, or where an import failed."""
    child = node
    for anc in index.ancestors(node):
        if isinstance(anc, (cst.If, cst.IfExp)):
            orelse = anc.orelse
            if child is orelse and is_version_test(index, anc.test) and not _negated(anc.test):
                return True
            if child is anc.body and is_version_test(index, anc.test) and _negated(anc.test):
                return True
        elif isinstance(anc, cst.ExceptHandler) and anc.type is not None:
            names = {dotted(n) for n in index.walk(anc.type) if isinstance(n, (cst.Name, cst.Attribute))}
            if names & _FALLBACK_ERRORS:
                return True
        child = anc
    return False
