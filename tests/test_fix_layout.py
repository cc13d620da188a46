"""How fixes lay out the arguments they add: in the call's own layout, no comment copied or moved
(the ecosystem diff once showed a comment above `drop_last=True` copied above each added keyword,
and `batch_size=n, \n    num_workers=...)` after a call whose closing parenthesis had a line of
its own), and statement deletions that leave no doubled blank line."""

import libcst as cst
import pytest

from trainlint.analysis.context import FileContext
from trainlint.api import fix_source


@pytest.mark.parametrize("code,expected", [
    ("f(a, b)", "f(a, b, p=X)"),
    ("f()", "f(p=X)"),
    ("f(a, b,)", "f(a, b, p=X,)"),
    # one argument per line, trailing comma: a line of its own; the comments stay where they were
    ("f(\n    a,\n    # about b\n    b,  # why\n    # before the parenthesis\n)",
     "f(\n    a,\n    # about b\n    b,  # why\n    p=X,\n    # before the parenthesis\n)"),
    ("f(\n    a,\n)", "f(\n    a,\n    p=X,\n)"),
    # arguments on one line of their own, the parenthesis on the next: ours on a new line
    ("f(\n    a, b\n)", "f(\n    a, b,\n    p=X\n)"),
    ("f(\n    a  # the data\n)", "f(\n    a,  # the data\n    p=X\n)"),
    # aligned with the opening parenthesis: ours aligned too
    ("f(a,\n  b)", "f(a,\n  b,\n  p=X)"),
    ("f(\n    a, b)", "f(\n    a, b, p=X)"),
])
def test_an_added_keyword_follows_the_calls_layout(code, expected):
    ctx = FileContext("t.py", code + "\n", cst.parse_module(code + "\n"), None)
    call = ctx.index.nodes(cst.Call)[0]
    assert cst.Module([]).code_for_node(ctx.with_keyword(call, "p", "X")) == expected


def test_a_wrapped_call_on_a_continuation_line_keeps_that_lines_indentation():
    source = (
        "from torch.utils.data import DataLoader\n"
        "def main(dataset, collator):\n"
        "    for idx, batch in enumerate(\n"
        "            DataLoader(dataset, collate_fn=collator, num_workers=16)):\n"
        "        pass\n")
    assert fix_source(source, select=["TL104"]).splitlines()[3:10] == [
        "            DataLoader(",
        "                dataset,",
        "                collate_fn=collator,",
        "                num_workers=16,",
        "                prefetch_factor=4,",
        "            )):",
        "        pass",
    ]


ATTENTION = """\
import torch.nn as nn


class Attn(nn.Module):
    def forward(self, q, k, v):
        q = q * 2

        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)

        x = (attn @ v).transpose(1, 2)
        return x
"""

SYNC = """\
import torch


def train(model, loader, opt):
    for batch in loader:
        # free memory before the forward

        torch.cuda.empty_cache()

        loss = model(batch)
        loss.backward()
        opt.step()
    for batch in loader:
        torch.cuda.synchronize()

        loss = model(batch)
        loss.backward()
        opt.step()
"""


def test_deleted_statements_leave_no_doubled_or_leading_blank_line():
    # TL601 deletes the score lines: the blank line above them and the one below do not both stay.
    fixed = fix_source(ATTENTION, select=["TL601"])
    assert "        q = q * 2\n\n        x = nn.functional.scaled_dot_product_attention(\n" in fixed
    # TL203 deletes a per-step sync: its comment stays, one blank line stays, and a block does not
    # start with a blank line.
    assert fix_source(SYNC, select=["TL203"]).splitlines()[4:14] == [
        "    for batch in loader:",
        "        # free memory before the forward",
        "",
        "        loss = model(batch)",
        "        loss.backward()",
        "        opt.step()",
        "    for batch in loader:",
        "        loss = model(batch)",
        "        loss.backward()",
        "        opt.step()",
    ]


def test_a_rewritten_save_call_has_no_blank_line_before_its_parenthesis():
    # TL501 lays the save out afresh; the closing parenthesis's own line in the original call
    # once came out as a line of spaces.
    source = (
        "import os\n\n\n"
        "def train(out, encoder, model, opt, loader):\n"
        "    for step, batch in enumerate(loader):\n"
        "        model(batch).backward()\n"
        "        opt.step()\n"
        "        encoder.save_pretrained(\n"
        "            os.path.join(out, 'encoder')\n"
        "        )\n")
    fixed = fix_source(source, select=["TL501"])
    assert not [line for line in fixed.splitlines() if line and not line.strip()]
    assert fixed.splitlines()[-6:] == [
        "        if step % 1000 == 0:",
        "            _trainlint_async_save(",
        "                encoder.save_pretrained,",
        "                os.path.join(out, 'encoder'),",
        "                state_dict=encoder.state_dict(),",
        "            )",
    ]


def test_a_long_conditional_argument_is_parenthesised_over_lines_of_its_own():
    # TL402's dtype choice is 94 characters: one argument per line alone left a 110-column line.
    source = (
        "import torch\n\n\n"
        "def train(model, loader, opt, args):\n"
        "    if args.fp16:\n"
        "        scaler = torch.cuda.amp.GradScaler()\n"
        "    for batch in loader:\n"
        "        with torch.cuda.amp.autocast():\n"
        "            loss = model(batch)\n"
        "        scaler.scale(loss).backward()\n"
        "        scaler.step(opt)\n"
        "        scaler.update()\n")
    lines = fix_source(source, select=["ALL"]).splitlines()
    assert max(len(line) for line in lines) <= 88
    start = lines.index("        with torch.amp.autocast(")
    assert lines[start:start + 9] == [
        "        with torch.amp.autocast(",
        '            "cuda",',
        "            dtype=(",
        "                torch.bfloat16",
        "                if torch.cuda.is_bf16_supported(including_emulation=False)",
        "                else torch.float16",
        "            ),",
        "        ):",
        "            loss = model(batch)",
    ]


def test_an_unused_import_removed_from_a_blocks_top_takes_no_blank_line_along():
    source = (
        "import torch\n\n\n"
        "def train(model, loader, opt, args):\n"
        "    if args.fp16:\n"
        "        from torch.cuda import amp\n\n"
        "        scaler = amp.GradScaler()\n"
        "    return scaler\n")
    assert fix_source(source, select=["TL401"]).splitlines()[3:7] == [
        "def train(model, loader, opt, args):",
        "    if args.fp16:",
        '        scaler = torch.amp.GradScaler("cuda")',
        "    return scaler",
    ]
