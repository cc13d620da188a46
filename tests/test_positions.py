"""Offsets from generating only the statements that hold findings equal the whole-module ones."""

import glob
import os

import libcst as cst
import pytest

from _paths import ROOT
from trainlint.analysis.positions import Positions
from trainlint.analysis.tree import TreeIndex

SCRIPTS = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.py"), recursive=True))


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: os.path.relpath(p, ROOT))
def test_statement_positions_equal_module_positions(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    module = cst.parse_module(text)
    index = TreeIndex(module)
    full = Positions(module, text)
    calls = index.nodes(cst.Call)[::3] + index.nodes(cst.SimpleStatementLine)[::5]
    fast = Positions(module, text, calls, index.parent)
    for node in calls:
        assert fast.span(node) == full.span(node)
        assert fast.inclusive_span(node) == full.inclusive_span(node)


def test_duplicate_statements_fall_back_to_the_whole_module():
    text = "x = f(1)\ny = 2\nx = f(1)\n"
    module = cst.parse_module(text)
    index = TreeIndex(module)
    last = module.body[2]
    fast = Positions(module, text, [last], index.parent)
    assert fast.inclusive_span(last) == (15, 24)


def test_last_statement_without_newline():
    text = "x = f(1)\nx = f(1)"
    module = cst.parse_module(text)
    index = TreeIndex(module)
    last = module.body[1]
    fast = Positions(module, text, [last], index.parent)
    assert fast.span(last) == (9, 17)


# Texts where a statement's code also occurs elsewhere: an `elif` that reads like a later `if`,
# a line repeated at a deeper indentation, repeated loop bodies, CRLF, tabs, comments.
TRICKY = [
    "if a:\n    x()\nelif b:\n    y()\nif b:\n    y()\n",
    "def f():\n    x = 1\n    if c:\n        x = 1\n    return x\n",
    "for i in r:\n    loss.backward()\n    opt.step()\nfor i in r:\n    loss.backward()\n    opt.step()\n",
    "class A:\n    def f(self):\n        # note\n        g(1)\n\n        g(2)\n",
    "if a:\r\n    x()\r\nelse:\r\n    x()\r\n",
    "while t:\n\tif u:\n\t\tv(1)\n\tv(1)\n",
    "try:\n    h()\nexcept E:\n    h()\nfinally:\n    h()\n",
    "@dec(1)\ndef f(a,\n      b):\n    return a\n@dec(1)\ndef g(a,\n      b):\n    return a\n",
]


@pytest.mark.parametrize("text", TRICKY)
def test_each_node_placed_alone_matches_the_whole_module(text):
    module = cst.parse_module(text)
    index = TreeIndex(module)
    full = Positions(module, text)
    for node in full.syntactic:
        if node is module:
            continue
        fast = Positions(module, text, [node], index.parent)
        assert fast.span(node) == full.span(node), (type(node).__name__, text)
        assert fast.inclusive_span(node) == full.inclusive_span(node)
