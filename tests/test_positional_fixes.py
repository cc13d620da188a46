"""Fixes that set an argument the call may already pass by position (audit: a `drop_last=True`
added beside a positional drop_last raised "got multiple values for argument")."""

import inspect

import libcst as cst
import pytest

from trainlint.analysis.batches import POSITIONAL_PARAMETERS
from trainlint.analysis.context import FileContext
from trainlint.api import fix_source


def _ctx(code):
    return FileContext("t.py", code, cst.parse_module(code), None)


def test_dataloader_positional_parameters_are_torchs():
    torch_data = pytest.importorskip("torch.utils.data")
    params = list(inspect.signature(torch_data.DataLoader.__init__).parameters.values())[1:]
    positional = tuple(p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)
    assert positional == POSITIONAL_PARAMETERS


@pytest.mark.parametrize("code,position,expected", [
    ("f(a, b)", 1, "f(a, X)"),  # passed by position: replaced where it stands
    ("f(a, b)", 2, "f(a, b, p=X)"),  # not passed: a keyword
    ("f(a, p=b)", 1, "f(a, p=X)"),  # passed by keyword
    ("f(*a, b)", 1, "f(*a, b, p=X)"),  # `*a` hides which parameter b is: never edited in place
    ("f(a, b, **kw)", 1, "f(a, X, **kw)"),
    ("f(a, b)", None, "f(a, b, p=X)"),
])
def test_with_keyword_replaces_a_positional_argument(code, position, expected):
    ctx = _ctx(code + "\n")
    call = ctx.index.nodes(cst.Call)[0]
    assert cst.Module([]).code_for_node(ctx.with_keyword(call, "p", "X", position=position)) == expected


def _bind(sig: inspect.Signature, call: cst.Call, module: cst.Module) -> None:
    """Raises TypeError where Python would: the fixed call's arguments against the real signature."""
    args = [module.code_for_node(a.value) for a in call.args if a.keyword is None]
    kwargs = {a.keyword.value: module.code_for_node(a.value) for a in call.args if a.keyword is not None}
    sig.bind(None, *args, **kwargs)


@pytest.mark.parametrize("line", [
    "a = DataLoader(ds, 32, True, None, None, 2, None, True, False)",
    "a = DataLoader(ds, 4, True, None, None, 0)",
    "a = DataLoader(ds, 32, True, None, None, 4, None, False, True)",
    "a = DataLoader(ds, 32, True, None, None, 0, None, False, False)",
    "a = DataLoader(ds, 32, True, None, None, n, None, False, False, 0, None, None, None)",
])
def test_fixed_loader_binds_to_torchs_signature(line):
    torch_data = pytest.importorskip("torch.utils.data")
    code = ("import os\nfrom torch.utils.data import DataLoader\n" + line + "\n"
            "for e in range(2):\n    for x in a:\n        x = x.cuda()\n        loss = m(x)\n"
            "        loss.backward()\n        opt.step()\n")
    fixed = fix_source(code, select=["ALL"], unsafe_fixes=True)
    assert fixed != code
    module = cst.parse_module(fixed)
    sig = inspect.signature(torch_data.DataLoader.__init__)
    loaders = [c for c in FileContext("t.py", fixed, module, None).index.nodes(cst.Call)
               if isinstance(c.func, cst.Name) and c.func.value == "DataLoader"]
    assert len(loaders) == 1
    _bind(sig, loaders[0], module)


def test_tl108_follows_tl102s_positional_pin_memory():
    # TL102 writes pin_memory where the call passes it, by position; TL108 must read it there to
    # make the copies of the now pinned batches non-blocking.
    code = ("from torch.utils.data import DataLoader\n"
            "a = DataLoader(ds, 32, True, None, None, 2, None, False, True)\n"
            "for e in range(2):\n    for x in a:\n        x = x.cuda()\n        loss = m(x)\n"
            "        loss.backward()\n        opt.step()\n")
    # Safe fixes only: the None passed by position for collate_fn is the default collate.
    fixed = fix_source(code, select=["TL102", "TL108"], unsafe_fixes=False)
    assert "a = DataLoader(ds, 32, True, None, None, 2, None, True, True)\n" in fixed
    assert "x = x.cuda(non_blocking=True)\n" in fixed
