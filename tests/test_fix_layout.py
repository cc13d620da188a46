"""How fixes lay out the arguments they add: in the call's own layout, no comment copied or moved
(the ecosystem diff once showed a comment above `drop_last=True` copied above each added keyword,
and `batch_size=n, \n    num_workers=...)` after a call whose closing parenthesis had a line of
its own), and statement deletions that leave no doubled blank line."""

import libcst as cst
import pytest

from trainlint.analysis.context import FileContext
from trainlint.api import fix_source
from trainlint.layout import code, one_arg_per_line


@pytest.mark.parametrize("code,expected", [
    ("f(a, b)", "f(a, b, p=X)"),
    ("f()", "f(p=X)"),
    ("f(a, b,)", "f(a, b, p=X,)"),
    # one argument per line, trailing comma: a line of its own; the comments stay where they were
    ("f(\n    a,\n    # about b\n    b,  # why\n    # before the parenthesis\n)",
     "f(\n    a,\n    # about b\n    b,  # why\n    p=X,\n    # before the parenthesis\n)"),
    ("f(\n    a,\n)", "f(\n    a,\n    p=X,\n)"),
    # arguments on one line of their own, the parenthesis on the next (Black's layout when they fit
    # there): ours joins them, or all go one per line when that line gets too long (next test);
    # after a comment, ours takes a line of its own
    ("f(\n    a, b\n)", "f(\n    a, b, p=X\n)"),
    ("f(\n    a\n)", "f(\n    a, p=X\n)"),
    ("f(\n    a  # the data\n)", "f(\n    a,  # the data\n    p=X\n)"),
    # one per line without a trailing comma: ours on a line of its own too
    ("f(\n    a,\n    b\n)", "f(\n    a,\n    b,\n    p=X\n)"),
    # aligned with the opening parenthesis: ours aligned too
    ("f(a,\n  b)", "f(a,\n  b,\n  p=X)"),
    ("f(\n    a, b)", "f(\n    a, b, p=X)"),
])
def test_an_added_keyword_follows_the_calls_layout(code, expected):
    ctx = FileContext("t.py", code + "\n", cst.parse_module(code + "\n"), None)
    call = ctx.index.nodes(cst.Call)[0]
    assert cst.Module([]).code_for_node(ctx.with_keyword(call, "p", "X")) == expected


def test_arguments_sharing_a_line_go_one_per_line_when_an_added_one_does_not_fit():
    # bert_style_finetune's evaluation loader, as Black writes it: TL101 and TL104 left
    # `dataset, sampler=..., batch_size=batch_size,` and then one added keyword per line.
    source = (
        "def evaluate(dataset, bs):\n"
        "    loader = DataLoader(\n"
        "        dataset, sampler=SequentialSampler(dataset), batch_size=bs\n"
        "    )\n")
    ctx = FileContext("t.py", source, cst.parse_module(source), None)
    call = ctx.index.nodes(cst.Call)[0]
    assert ctx.render(ctx.with_keyword(call, "prefetch_factor", "4"), at=call) == (
        "DataLoader(\n"
        "        dataset, sampler=SequentialSampler(dataset), batch_size=bs, prefetch_factor=4\n"
        "    )")
    assert ctx.render(ctx.with_keyword(call, "num_workers", "min(8, os.cpu_count() or 1)"), at=call) == (
        "DataLoader(\n"
        "        dataset,\n"
        "        sampler=SequentialSampler(dataset),\n"
        "        batch_size=bs,\n"
        "        num_workers=min(8, os.cpu_count() or 1),\n"
        "    )")


def test_a_wrapped_call_on_a_continuation_line_keeps_that_lines_indentation():
    source = (
        "from torch.utils.data import DataLoader\n"
        "def main(dataset, collator):\n"
        "    for idx, batch in enumerate(\n"
        "            DataLoader(dataset, collate_fn=collator, num_workers=16)):\n"
        "        pass\n")
    assert fix_source(source, select=["TL104"]).splitlines()[3:7] == [
        "            DataLoader(",
        "                dataset, collate_fn=collator, num_workers=16, prefetch_factor=4",
        "            )):",
        "        pass",
    ]


def test_a_call_on_a_line_of_several_statements_is_not_split_at_its_brackets():
    # Split, the line's next statement followed the closing bracket (`); y = ...`): the author's
    # dense line stays one line.
    line = ("    x = b['x']; xx = x.to(dev); y_of_a_rather_long_name_for_this_line = x.sum(1); "
            "another_name_that_is_long = 1\n")
    source = ("import torch\nfrom torch.utils.data import DataLoader\n"
              "loader = DataLoader(ds, batch_size=4, num_workers=2, pin_memory=True)\n"
              "for b in loader:\n" + line + "    model(xx).backward()\n    opt.step()\n")
    fixed = fix_source(source, select=["TL108"])
    assert fixed == source.replace("x.to(dev)", "x.to(dev, non_blocking=True)")


def test_an_argument_added_to_a_call_laid_out_by_hand_starts_an_aligned_line_when_it_does_not_fit():
    # The fixtures' loaders, written with continuation lines aligned to the opening parenthesis:
    # a keyword that takes the last line past 88 starts a line of its own, aligned the same way.
    source = (
        "from torch.utils.data import DataLoader\n"
        "def main(ds, args):\n"
        "    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, drop_last=True,\n"
        "                        num_workers=args.workers, pin_memory=True)\n")
    assert fix_source(source, select=["TL104"]).splitlines()[2:] == [
        "    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, drop_last=True,",
        "                        num_workers=args.workers, pin_memory=True,",
        "                        prefetch_factor=4 if args.workers > 0 else None)",
    ]
    # One that fits joins the line, as before; so does one past the limit in a line that was already.
    fits = source.replace("args.workers", "8")
    assert fix_source(fits, select=["TL104"]).splitlines()[3] == (
        "                        num_workers=8, pin_memory=True, prefetch_factor=4)")
    long = source.replace("pin_memory=True", "pin_memory=True, collate_fn=pad_to_the_longest_sequence_of_the_batch")
    assert fix_source(long, select=["TL104"]).splitlines()[3].endswith(
        "pad_to_the_longest_sequence_of_the_batch, prefetch_factor=4 if args.workers > 0 else None)")


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
        "import os\n\nimport transformers\n\n\n"  # a transformers model's save_pretrained takes state_dict=
        "def train(out, model, opt, loader):\n"
        "    encoder = transformers.AutoModel.from_pretrained('e')\n"
        "    for step, batch in enumerate(loader):\n"
        "        model(batch).backward()\n"
        "        opt.step()\n"
        "        encoder.save_pretrained(\n"
        "            os.path.join(out, 'encoder')\n"
        "        )\n")
    fixed = fix_source(source, select=["TL501"])
    assert not [line for line in fixed.splitlines() if line and not line.strip()]
    # (the loop is no counted range: the save runs once more after it, as written, re-indented)
    assert fixed.splitlines()[-10:] == [
        "        if step % 1000 == 0:",
        "            _trainlint_async_save(",
        "                encoder.save_pretrained,",
        "                os.path.join(out, 'encoder'),",
        "                state_dict=encoder.state_dict(),",
        "            )",
        "    _trainlint_wait_for_save()",
        "    encoder.save_pretrained(",
        "        os.path.join(out, 'encoder')",
        "    )",
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


# Each expected layout is what Black leaves as it is (checked with black 26.10 when written): an
# argument still too long on its own line is split at its lowest-priority operators, else at the
# brackets that end it, and the pieces the same way.
@pytest.mark.parametrize("call,expected", [
    ("torch.amp.GradScaler(enabled=use_amp and not (torch.cuda.is_available() and "
     "torch.cuda.get_device_capability() >= (8, 0)))",
     # A sole argument takes no comma (Black's split at the brackets), which leaves room for it.
     "torch.amp.GradScaler(\n"
     "    enabled=use_amp\n"
     "    and not (torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0))\n"
     ")"),
    ("torch.amp.GradScaler(init_scale=8192, enabled=not torch.cuda.is_bf16_supported("
     "including_emulation=False, something_else_here=True))",
     "torch.amp.GradScaler(\n"
     "    init_scale=8192,\n"
     "    enabled=not torch.cuda.is_bf16_supported(\n"
     "        including_emulation=False, something_else_here=True\n"
     "    ),\n"
     ")"),
    ("DataLoader(dataset, prefetch_factor=compute_the_prefetch_factor(arguments.number_of_workers, "
     "arguments.batch_size_per_device, extra_argument_value))",
     "DataLoader(\n"
     "    dataset,\n"
     "    prefetch_factor=compute_the_prefetch_factor(\n"
     "        arguments.number_of_workers,\n"
     "        arguments.batch_size_per_device,\n"
     "        extra_argument_value,\n"
     "    ),\n"
     ")"),
    ("DataLoader(dataset, timeout=self.configuration.base_timeout_in_seconds + "
     "self.configuration.extra_timeout_seconds_for_slow_disks)",
     "DataLoader(\n"
     "    dataset,\n"
     "    timeout=self.configuration.base_timeout_in_seconds\n"
     "    + self.configuration.extra_timeout_seconds_for_slow_disks,\n"
     ")"),
    ("DataLoader(dataset, sampler=(first_sampler_of_the_dataset_for_this_rank or "
     "second_sampler_of_the_dataset_for_another))",
     "DataLoader(\n"
     "    dataset,\n"
     "    sampler=(\n"
     "        first_sampler_of_the_dataset_for_this_rank\n"
     "        or second_sampler_of_the_dataset_for_another\n"
     "    ),\n"
     ")"),
    # A collection literal split at its brackets goes one element per line, as Black explodes a
    # collection; inside a call's brackets it stays on the line of its own when it fits there.
    ("DataLoader(dataset, sampler=WeightedSampler([first_weight_of_the_classes_in_the_set_and_more_more, "
     "second_weight_of_it]))",
     "DataLoader(\n"
     "    dataset,\n"
     "    sampler=WeightedSampler(\n"
     "        [first_weight_of_the_classes_in_the_set_and_more_more, second_weight_of_it]\n"
     "    ),\n"
     ")"),
    ("DataLoader(dataset, sampler=[first_weight_of_the_classes_for_the_sampler_here_too_long, second_weight_of_it])",
     "DataLoader(\n"
     "    dataset,\n"
     "    sampler=[\n"
     "        first_weight_of_the_classes_for_the_sampler_here_too_long,\n"
     "        second_weight_of_it,\n"
     "    ],\n"
     ")"),
    # Nothing to split at: left long. Written over several lines by the user: left as it is.
    ("DataLoader(dataset, sampler=a_very_long_module_name.another_long_attribute.yet_another_attribute_name)",
     "DataLoader(\n"
     "    dataset,\n"
     "    sampler=a_very_long_module_name.another_long_attribute.yet_another_attribute_name,\n"
     ")"),
    ("DataLoader(dataset, sampler=make_the_sampler(first_argument_of_it,\n"
     "                                             second_argument_of_it, third_argument_of_it))",
     "DataLoader(\n"
     "    dataset,\n"
     "    sampler=make_the_sampler(first_argument_of_it,\n"
     "                                             second_argument_of_it, third_argument_of_it),\n"
     ")"),
])
def test_an_argument_too_long_for_its_own_line_is_split_as_black_splits_it(call, expected):
    node = cst.parse_expression(call)
    assert code(one_arg_per_line(node, "    ", "", 88 - 4 - 1)) == expected


def test_an_argument_a_fix_sets_on_a_line_of_its_own_is_split_to_fit():
    # The engine wraps a call it renders on one line; an argument added to (or replaced in) a call
    # already one argument per line is fitted where it stands.
    value = "4 if self.config.data_loader_settings['dataloader_num_workers'] > 0 else None"
    for source in ("f(\n    a,\n)", "f(\n    a,\n    prefetch_factor=1,\n)"):
        ctx = FileContext("t.py", source + "\n", cst.parse_module(source + "\n"), None)
        call = ctx.index.nodes(cst.Call)[0]
        assert code(ctx.with_keyword(call, "prefetch_factor", value)) == (
            "f(\n    a,\n    prefetch_factor=(\n"
            f"        {value}\n"
            "    ),\n)")


def test_a_call_edited_beside_an_inserted_line_is_wrapped():
    # TL402 inserts `amp_dtype = ...` above the scaler and edits its `enabled=`: written as one
    # rewrite of the whole statement, the engine did not see a call to wrap (102 columns).
    source = (
        "import torch\n"
        "from torch.cuda import amp\n\n\n"
        "def train(cuda, loader, model, opt):\n"
        "    scaler = amp.GradScaler(enabled=cuda)\n"
        "    for x in loader:\n"
        "        with amp.autocast(enabled=cuda):\n"
        "            loss = model(x)\n"
        "        scaler.scale(loss).backward()\n"
        "        scaler.step(opt)\n"
        "        scaler.update()\n")
    lines = fix_source(source, select=["TL4", "TL403"], unsafe_fixes=True).splitlines()
    assert max(len(line) for line in lines) <= 88
    start = lines.index("    scaler = torch.amp.GradScaler(")
    assert lines[start:start + 3] == [
        "    scaler = torch.amp.GradScaler(",
        '        "cuda", enabled=cuda and amp_dtype == torch.float16, init_scale=8192',
        "    )",
    ]


def test_fixes_of_one_line_take_turns():
    # Two TL108 fixes of one line each fitted the line as they found it, and together left 99
    # columns; the second now sees the first one's result.
    source = (
        "from torch.utils.data import DataLoader\n\n\n"
        "def train(dataset, model, opt):\n"
        "    loader = DataLoader(dataset, batch_size=32, pin_memory=True, num_workers=4, prefetch_factor=4)\n"
        "    for features, labels in loader:\n"
        "        features_gpu, labels_gpu = features.cuda(), labels.cuda()\n"
        "        loss = model(features_gpu, labels_gpu)\n"
        "        loss.backward()\n"
        "        opt.step()\n")
    lines = fix_source(source, select=["TL108"]).splitlines()
    assert lines[6:9] == [
        "        features_gpu, labels_gpu = features.cuda(non_blocking=True), labels.cuda(",
        "            non_blocking=True",
        "        )",
    ]


def test_a_method_chain_started_by_a_fix_is_laid_out_one_call_per_line():
    # timm's attention blocks: wrapping only the new call left `).transpose(1, 2).reshape(...)`
    # after its closing parenthesis, which Black lays out in parentheses, one method call per line.
    source = ATTENTION.replace("x = (attn @ v).transpose(1, 2)",
                               "x = (attn @ v).transpose(1, 2).reshape(batch_size, num_tokens, channels)")
    lines = fix_source(source, select=["TL601"]).splitlines()
    start = lines.index("        x = (")
    assert lines[start:start + 6] == [
        "        x = (",
        "            nn.functional.scaled_dot_product_attention(q, k, v, scale=self.scale)",
        "            .transpose(1, 2)",
        "            .reshape(batch_size, num_tokens, channels)",
        "        )",
        "        return x",
    ]


def test_deleting_statements_on_both_sides_of_a_blank_line_keeps_one():
    # timm's efficientformer: TL601 removed `attn = ...` lines above and below a blank line, and
    # the two blank lines around them were both kept.
    source = "def f(q):\n    a = 1\n\n    b = 2\n    c = 3\n\n    d = 4\n    return a\n"
    ctx = FileContext("t.py", source, cst.parse_module(source), None)
    body = ctx.index.nodes(cst.FunctionDef)[0].body.body
    replaced = dict(ctx.remove_statements(body[1:4]))
    assert "".join(replaced.get(stmt, ctx.render(stmt)) for stmt in body) == "    a = 1\n\n    return a\n"


def _accumulation_loop(depth_ifs: int) -> str:
    """A DDP gradient-accumulation loop under `depth_ifs` ifs (besides the epoch loop's own)."""
    head = "import torch.nn as nn\n\n\ndef train(model, loader, optimizer, args, epochs):\n" \
           "    model = nn.parallel.DistributedDataParallel(model)\n    for epoch in range(epochs):\n"
    ifs = "".join("    " * (2 + k) + f"if args.flag{k}:\n" for k in range(depth_ifs))
    pad = "    " * (2 + depth_ifs)
    body = (f"{pad}for i, batch in enumerate(loader):\n{pad}    loss = model(**batch).loss\n"
            f"{pad}    loss.backward()\n{pad}    if (i + 1) % args.gradient_accumulation_steps != 0:\n"
            f"{pad}        continue\n{pad}    optimizer.step()\n")
    return head + ifs + body


def test_tl301s_comment_fits_deep_loops():
    # Deep in nested loops the usual comment took more than 88 columns (simpletransformers' loops
    # at depth 16 with the longer wording it had): the short one is written there.
    lines = fix_source(_accumulation_loop(3), select=["TL301"]).splitlines()
    assert "                        # Sync gradients only on the micro-batch that steps." in lines
    assert max(len(line) for line in lines) <= 88
    # Where the usual one fits, it is written (at depth 16 now).
    lines = fix_source(_accumulation_loop(1), select=["TL301"]).splitlines()
    assert "                # Sync gradients only on the micro-batch before the optimizer step." in lines
    assert max(len(line) for line in lines) <= 88


def test_a_method_chain_in_the_authors_parentheses_is_laid_out_inside_them():
    # timm's crossvit and volo: `x = (\n    (attn @ v).transpose(1, 2).reshape(B, 1, C)\n)  # shapes`
    source = (
        "import torch.nn as nn\n\n\n"
        "class Attn(nn.Module):\n"
        "    def __init__(self, p):\n"
        "        super().__init__()\n"
        "        self.attn_drop = nn.Dropout(p)\n\n"
        "    def forward(self, q, k, v):\n"
        "        B, N, C = q.shape\n"
        "        attn = (q @ k.transpose(-2, -1)) * self.scale\n"
        "        attn = attn.softmax(dim=-1)\n"
        "        attn = self.attn_drop(attn)\n"
        "        x = (\n"
        "            (attn @ v).transpose(1, 2).reshape(B, 1, C)\n"
        "        )  # (BH1N @ BHN(C/H)) -> BH1(C/H) -> B1H(C/H) -> B1C\n"
        "        return x\n")
    lines = fix_source(source, select=["TL601"]).splitlines()
    start = lines.index("        x = (")
    assert lines[start:start + 12] == [
        "        x = (",
        "            nn.functional.scaled_dot_product_attention(",
        "                q,",
        "                k,",
        "                v,",
        "                dropout_p=self.attn_drop.p if self.training else 0.0,",
        "                scale=self.scale,",
        "            )",
        "            .transpose(1, 2)",
        "            .reshape(B, 1, C)",
        "        )  # (BH1N @ BHN(C/H)) -> BH1(C/H) -> B1H(C/H) -> B1C",
        "        return x",
    ]


def test_a_call_in_a_conditional_value_takes_the_conditional_along():
    # mosaicml's trainer: TL403's `init_scale=` wrapped only GradScaler's arguments, after
    # `... else GradScaler(`; Black puts the conditional in parentheses, split at if and else.
    source = (
        "import torch\n"
        "from torch.cuda.amp import GradScaler\n\n\n"
        "class Trainer:\n"
        "    def fit(self, precision):\n"
        "        if precision:\n"
        "            self.state.scaler = ClosureGradScaler() if self._use_closures() else GradScaler()\n")
    lines = fix_source(source, select=["TL403"]).splitlines()
    assert lines[7:12] == [
        "            self.state.scaler = (",
        "                ClosureGradScaler()",
        "                if self._use_closures()",
        "                else GradScaler(init_scale=8192)",
        "            )",
    ]


def test_a_call_fixed_inside_another_calls_argument_takes_that_call_along():
    # The enclosing call's arguments go one per line and the fixed call is split there, as Black
    # splits them; before, the fixed call was split inside the line (a hugged layout Black redoes).
    code = ("import os\nfrom trl import SFTConfig\n\n"
            "SFTTrainer(model, args=SFTConfig(output_dir='out', per_device_train_batch_size=8, bf16=True))\n"
            "trainer.train()\n")
    fixed = fix_source(code, select=["TL101"], path="train.py")
    assert fixed == ("import os\nfrom trl import SFTConfig\n\nSFTTrainer(\n    model,\n    args=SFTConfig(\n"
                     "        output_dir='out',\n        per_device_train_batch_size=8,\n        bf16=True,\n"
                     "        dataloader_num_workers=min(8, os.cpu_count() or 1),\n    ),\n)\ntrainer.train()\n")
    # A line that still fits keeps its layout.
    short = "from trl import SFTConfig\nT(m, a=SFTConfig('o'))\n"
    assert "\nT(m, a=SFTConfig('o', dataloader_num_workers=min(8, os.cpu_count() or 1)))\n" in fix_source(
        short, select=["TL101"], path="train.py")


def test_a_call_fixed_inside_another_calls_line_of_arguments_takes_that_call_along():
    # The enclosing call as Black writes it when its arguments fit a line of their own (the
    # author's Black, or a first round of fixes): once that line is too long, Black puts them one
    # per line and splits the fixed call there; before, the fixed call was split inside the line
    # (`model, DataLoader(\n...\n), opt`), which Black redoes.
    code = ("import os\nfrom torch.utils.data import DataLoader\n\n\ndef train(model, loader, opt):\n"
            "    for x in loader:\n        model(x).backward()\n        opt.step()\n\n\n"
            "def main(model, opt):\n    train(\n        model, DataLoader(dataset_with_a_long_name, batch_size=64), opt\n    )\n")
    fixed = fix_source(code, select=["TL101"], path="train.py")
    assert fixed.splitlines()[10:] == [
        "def main(model, opt):",
        "    train(",
        "        model,",
        "        DataLoader(",
        "            dataset_with_a_long_name,",
        "            batch_size=64,",
        "            num_workers=min(8, os.cpu_count() or 1),",
        "        ),",
        "        opt,",
        "    )",
    ]
    # A line of arguments that still fits keeps its layout; one with a comment is the author's.
    short = code.replace("dataset_with_a_long_name, batch_size=64", "ds")
    assert "    train(\n        model, DataLoader(ds, num_workers=min(8, os.cpu_count() or 1)), opt\n    )\n" \
        in fix_source(short, select=["TL101"], path="train.py")
    commented = code.replace("opt\n    )", "opt  # the run\n    )")
    assert "        model, DataLoader(\n" in fix_source(commented, select=["TL101"], path="train.py")


def test_a_call_fixed_inside_nested_calls_takes_the_outermost_call_of_its_line_along():
    # Black splits a line at its last brackets, those of the outermost call (`mse_loss(`), not at
    # the call right around the fix: TL108 once wrote `mse_loss(model(\n    x.to(...)\n), y...)`.
    # Each fix of the line takes its turn; the second still fits the line of arguments.
    head = ("from torch.utils.data import DataLoader\n\n\ndef train(model, opt, ds, device):\n"
            "    for x, y in DataLoader(ds, pin_memory=True):\n")
    tail = "        loss.backward()\n        opt.step()\n"
    code = head + "        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))\n" + tail
    assert fix_source(code, select=["TL108"], path="train.py") == head + (
        "        loss = torch.nn.functional.mse_loss(\n"
        "            model(x.to(device, non_blocking=True)), y.to(device, non_blocking=True)\n"
        "        )\n") + tail


def test_a_call_fixed_before_one_method_call_splits_that_calls_brackets():
    # `images.to(device).to(memory_format=...)`: Black splits the last brackets, the method
    # call's, when the line up to them fits; the fix once split its own call's brackets
    # (`images.to(\n    device, non_blocking=True\n).to(...)`), which Black redoes.
    head = ("import torch\nfrom torch.utils.data import DataLoader\n\n\ndef train(model, opt, ds, device):\n"
            "    for images, y in DataLoader(ds, pin_memory=True):\n")
    tail = "        model(masked, y).backward()\n        opt.step()\n"
    code = head + "        masked = images.to(device).to(memory_format=torch.channels_last)\n" + tail
    assert fix_source(code, select=["TL108"], path="train.py") == head + (
        "        masked = images.to(device, non_blocking=True).to(\n"
        "            memory_format=torch.channels_last\n"
        "        )\n") + tail


def test_a_save_laid_out_by_hand_around_a_comment_keeps_its_alignment():
    # TL501 keeps the layout of a call with comments between its arguments; its lines aligned
    # under the parenthesis stayed where they were when `_trainlint_async_save(` replaced a
    # shorter or longer head. A call whose arguments start on a line of their own has no line
    # aligned under its head: it is not moved.
    source = (
        "import torch\nimport transformers\n\n\n"
        "def train(out, self, opt, loader):\n"
        "    self.accelerator_unwrapped_encoder_model = transformers.AutoModel.from_pretrained('e')\n"
        "    for step, batch in enumerate(loader):\n"
        "        self(batch).backward()\n"
        "        opt.step()\n"
        "        if step % 500 == 0:\n"
        "            self.accelerator_unwrapped_encoder_model.save_pretrained(out,  # the folder\n"
        "                                                                     safe_serialization=True)\n"
        "            torch.save(  # weights only\n"
        "                self.state_dict(), 'x.pt')\n")
    fixed = fix_source(source, select=["TL501"], unsafe_fixes=True)
    assert fixed.splitlines()[-7:] == [
        "        if step % 500 == 0:",
        "            _trainlint_async_save(self.accelerator_unwrapped_encoder_model.save_pretrained, out,  # the folder",
        "                                  safe_serialization=True,",
        "                                  state_dict=self.accelerator_unwrapped_encoder_model.state_dict())",
        "            _trainlint_async_save(  # weights only",
        "                torch.save, self.state_dict(), 'x.pt')",
        "    _trainlint_wait_for_save()",
    ]


def test_a_helper_added_to_a_tab_indented_file_is_indented_with_tabs():
    # TL106's `_trainlint_to_device` was written with its own four spaces into a tab-indented
    # file; libcst then read the file's indentation as those spaces, and the fixes after it mixed
    # both (`\t    batch_size=32,`). Its blocks take the file's indentation; its strings keep theirs.
    code = ("import torch\nfrom torch.utils.data import DataLoader\n\n"
            "device = torch.device('cuda')\n\n\ndef collate(batch):\n"
            "\treturn torch.stack([b[0] for b in batch]).to(device)\n\n\n"
            "def main():\n\tloader = DataLoader(ds, batch_size=4, shuffle=True, collate_fn=collate)\n"
            "\tfor x in loader:\n\t\tloss = model(x)\n\t\tloss.backward()\n\t\topt.step()\n\n\n"
            "if __name__ == '__main__':\n\tmain()\n")
    fixed = fix_source(code, select=["TL1"], path="train.py")
    assert "def _trainlint_to_device(batch, device):\n\t\"\"\"Added by trainlint" in fixed
    assert "\t\treturn batch.to(device, non_blocking=True)\n" in fixed
    assert "\tloader = DataLoader(\n\t\tds,\n\t\tbatch_size=4,\n" in fixed
    assert "\t\treturn type(batch)(\n\t\t\t(k, _trainlint_to_device(v, device)) for k" in fixed
    assert [line for line in fixed.splitlines() if line[:len(line) - len(line.lstrip())].count(" ")] == []


def test_a_call_fixed_inside_a_for_header_takes_the_enclosing_call_along():
    # `for ... in enumerate(DataLoader(...)):` too long once fixed: Black splits at enumerate's
    # brackets (its sole argument takes no comma), then the loader's; before, the loader was split
    # inside the header line (`enumerate(DataLoader(\n...\n)):`), a layout Black redoes.
    code = ("import os\nfrom torch.utils.data import DataLoader\n\n\ndef train(model, opt, dataset):\n"
            "    for step, (inputs, labels) in enumerate(DataLoader(dataset, batch_size=64, shuffle=True)):\n"
            "        loss = model(inputs, labels)\n        loss.backward()\n        opt.step()\n")
    fixed = fix_source(code, select=["TL101"], path="train.py")
    assert fixed.splitlines()[5:13] == [
        "    for step, (inputs, labels) in enumerate(",
        "        DataLoader(",
        "            dataset,",
        "            batch_size=64,",
        "            shuffle=True,",
        "            num_workers=min(8, os.cpu_count() or 1),",
        "        )",
        "    ):",
    ]


def test_a_call_fixed_inside_a_list_splits_the_lists_brackets_first():
    # transformers' Trainer: `args["kwargs_handlers"] = [DistributedDataParallelKwargs(**ddp_kwargs)]`.
    # Black splits the list's brackets, the call on a line of its own; before, the call was split
    # inside the brackets (`[DistributedDataParallelKwargs(\n...\n)]`), a layout Black redoes.
    code = ("from accelerate import Accelerator, DistributedDataParallelKwargs\n\n\n"
            "def create_accelerator(args, find_unused, loss):\n"
            "    ddp_kwargs = {\"find_unused_parameters\": find_unused}\n"
            "    args[\"kwargs_handlers\"] = [DistributedDataParallelKwargs(**ddp_kwargs, static_graph=True)]\n"
            "    Accelerator(**args).backward(loss)\n")
    fixed = fix_source(code, select=["TL302"], unsafe_fixes=True, path="train.py")
    assert fixed.splitlines()[5:10] == [
        "    args[\"kwargs_handlers\"] = [",
        "        DistributedDataParallelKwargs(",
        "            **ddp_kwargs, static_graph=True, gradient_as_bucket_view=True",
        "        )",
        "    ]",
    ]


def test_a_call_fixed_as_a_dicts_value_splits_the_dicts_braces_first():
    # `loaders = {"train": DataLoader(...), "val": DataLoader(...)}`: Black explodes the dict one
    # item per line; before, the call was split inside the braces (`{"train": DataLoader(\n...\n),
    # "val": ...}`), a layout Black redoes.
    code = ("from torch.utils.data import DataLoader\n\n"
            "loaders = {\"train\": DataLoader(ds, shuffle=True, num_workers=2), \"val\": DataLoader(vs)}\n"
            "for x in loaders[\"train\"]:\n    model(x.cuda()).backward()\n    opt.step()\n")
    fixed = fix_source(code, select=["TL102"], path="train.py")
    assert fixed.splitlines()[2:6] == [
        "loaders = {",
        "    \"train\": DataLoader(ds, shuffle=True, num_workers=2, pin_memory=True),",
        "    \"val\": DataLoader(vs),",
        "}",
    ]


def test_a_call_fixed_inside_a_list_argument_takes_the_enclosing_call_along():
    # `Accelerator(kwargs_handlers=[DistributedDataParallelKwargs(...)])`: on one line, the
    # Accelerator's arguments go one per line and the list is split at its brackets there; laid out
    # by Black already (the list argument on a line of its own), the list is split where it stands.
    head = "from accelerate import Accelerator, DistributedDataParallelKwargs\n\n\ndef build(loss):\n"
    tail = "    accelerator.backward(loss)\n"
    expected = [
        "    accelerator = Accelerator(",
        "        kwargs_handlers=[",
        "            DistributedDataParallelKwargs(",
        "                find_unused_parameters=True, gradient_as_bucket_view=True",
        "            )",
        "        ]",
        "    )",
    ]
    one_line = head + ("    accelerator = Accelerator(kwargs_handlers=[DistributedDataParallelKwargs("
                       "find_unused_parameters=True)])\n") + tail
    by_black = head + ("    accelerator = Accelerator(\n        kwargs_handlers=[DistributedDataParallelKwargs("
                       "find_unused_parameters=True)]\n    )\n") + tail
    for code in (one_line, by_black):
        fixed = fix_source(code, select=["TL302"], unsafe_fixes=True, path="train.py")
        assert fixed.splitlines()[4:11] == expected, fixed


def test_calls_fixed_inside_a_list_argument_split_already_are_split_on_their_own_lines():
    # The second round of fixes on `run(model, [DataLoader(...), DataLoader(...)])`, whose first
    # round split the list one loader per line: each loader too long for its line is split there,
    # as Black splits it; before, the loaders were left past the line length (Black redid them).
    code = ("from torch.utils.data import DataLoader\n\n\ndef run(model, loaders):\n    for loader in loaders:\n"
            "        for b in loader:\n            model(b).backward()\n            opt.step()\n\n\n"
            # (under a `__main__` guard: TL101 adds no workers to a script that trains unguarded)
            "if __name__ == '__main__':\n"
            "    run(model, [DataLoader(train_ds, batch_size=32), DataLoader(val_ds, batch_size=64)])\n")
    fixed = fix_source(code, select=["TL101", "TL104"], path="train.py")
    assert fixed.splitlines()[13:] == [
        "    run(",
        "        model,",
        "        [",
        "            DataLoader(",
        "                train_ds,",
        "                batch_size=32,",
        "                num_workers=min(8, os.cpu_count() or 1),",
        "                prefetch_factor=4,",
        "            ),",
        "            DataLoader(",
        "                val_ds,",
        "                batch_size=64,",
        "                num_workers=min(8, os.cpu_count() or 1),",
        "                prefetch_factor=4,",
        "            ),",
        "        ],",
        "    )",
    ], fixed


def test_a_call_fixed_inside_a_comprehension_splits_the_comprehensions_brackets_first():
    # HF-style batch moves (simpletransformers, torchtune): Black splits the comprehension's
    # brackets, its content on a line of its own, else one line for the element and one per
    # `for`/`if` clause; before, the `.to(...)` call was split inside the comprehension.
    head = ("from torch.utils.data import DataLoader\n\n\n"
            "def get_inputs(batch, device, to_skip):\n"
            "    if isinstance(batch, dict):\n")
    tail = ("    return batch\n\n\n"
            "def train(model, opt, loader, device):\n"
            "    for batch in loader:\n"
            "        model(**get_inputs(batch, device, ())).backward()\n"
            "        opt.step()\n\n\n"
            "train(model, opt, DataLoader(ds, pin_memory=True), device)\n")
    cases = [
        ("        batch = {k: v.to(device) for k, v in batch.items() if k not in to_skip}\n",
         ["        batch = {",
          "            k: v.to(device, non_blocking=True)",
          "            for k, v in batch.items()",
          "            if k not in to_skip",
          "        }"]),
        ("        batch = {name: tensor.to(device) for name, tensor in batch.items()}\n",
         ["        batch = {",
          "            name: tensor.to(device, non_blocking=True) for name, tensor in batch.items()",
          "        }"]),
        ("        return [tensor_of_the_batch.to(device) for tensor_of_the_batch in batch.values()]\n",
         ["        return [",
          "            tensor_of_the_batch.to(device, non_blocking=True)",
          "            for tensor_of_the_batch in batch.values()",
          "        ]"]),
    ]
    for line, expected in cases:
        fixed = fix_source(head + line + tail, select=["TL108"], path="train.py")
        assert fixed.splitlines()[5:5 + len(expected)] == expected, fixed


def test_a_call_fixed_inside_a_tuple_or_a_split_comprehension_is_laid_out_as_black_does():
    # simpletransformers: `labels = batch["labels"].to(device), labels  # ...` (the tuple goes in
    # parentheses, one element per line, the comment after them) and a comprehension Black split
    # at its brackets, whose content line no longer fits (split before `for`).
    head = "from torch.utils.data import DataLoader\n\n\ndef get_inputs(batch, device):\n"
    tail = ("    return inputs, labels\n\n\n"
            "def train(model, opt, loader, device):\n"
            "    for batch in loader:\n"
            "        model(*get_inputs(batch, device)).backward()\n"
            "        opt.step()\n\n\n"
            "train(model, opt, DataLoader(ds, pin_memory=True), device)\n")
    body = ("    labels = batch[\"labels\"].to(device), batch[\"labels_for_the_second_head\"]  # two heads\n"
            "    inputs = {\n"
            "        key: value.squeeze(1).to(device) for key, value in batch[\"inputs_here\"].items()\n"
            "    }\n")
    fixed = fix_source(head + body + tail, select=["TL108"], path="train.py")
    assert fixed.splitlines()[4:12] == [
        "    labels = (",
        "        batch[\"labels\"].to(device, non_blocking=True),",
        "        batch[\"labels_for_the_second_head\"],",
        "    )  # two heads",
        "    inputs = {",
        "        key: value.squeeze(1).to(device, non_blocking=True)",
        "        for key, value in batch[\"inputs_here\"].items()",
        "    }",
    ], fixed


def test_a_call_fixed_inside_a_comprehension_argument_takes_the_call_along():
    # `batch = tuple(t.to(device) for t in batch)` (the Hugging Face examples' idiom) and a list
    # comprehension handed to `torch.stack`: the enclosing call is split at its brackets, the
    # comprehension on a line of its own, split before `for`/`if` when it does not fit there (what
    # Black writes from the one-line fixed text; before, `.to(` was split inside the comprehension).
    head = "from torch.utils.data import DataLoader\n\n\ndef train(model, opt, loader, device):\n"
    tail = ("            model(batch).backward()\n            opt.step()\n\n\n"
            "train(model, opt, DataLoader(ds, pin_memory=True), device)\n")
    body = ("    for batch in loader:\n        if batch:\n"
            "            batch = tuple(tensor_of_the_batch.to(device) for tensor_of_the_batch in batch)\n"
            "            stacked = torch.stack([tensor_of_batch.to(device) for tensor_of_batch in batch if tensor_of_batch])\n")
    fixed = fix_source(head + body + tail, select=["TL108"], path="train.py")
    assert fixed.splitlines()[6:18] == [
        "            batch = tuple(",
        "                tensor_of_the_batch.to(device, non_blocking=True)",
        "                for tensor_of_the_batch in batch",
        "            )",
        "            stacked = torch.stack(",
        "                [",
        "                    tensor_of_batch.to(device, non_blocking=True)",
        "                    for tensor_of_batch in batch",
        "                    if tensor_of_batch",
        "                ]",
        "            )",
        "            model(batch).backward()",
    ], fixed


@pytest.mark.parametrize("imports,expected", [
    # isort's order: a section's plain imports first, alphabetically, then its `from` imports.
    ("from torch.utils.data import DataLoader\n", "import torch\nfrom torch.utils.data import DataLoader\n"),
    ("import numpy as np\nimport transformers\n", "import numpy as np\nimport torch\nimport transformers\n"),
    ("import os\n\nimport numpy as np\nfrom tqdm import tqdm\n",
     "import os\n\nimport numpy as np\nimport torch\nfrom tqdm import tqdm\n"),
    # After standard-library imports only: a section of its own.
    ("import os\n", "import os\n\nimport torch\n"),
])
def test_an_added_third_party_import_goes_where_isort_puts_it(imports, expected):
    # TL404's fix needs `torch` (it was added after the last import: `from torch.utils.data import
    # DataLoader` above `import torch`, which isort reorders).
    loop = "\nfor x, y in loader:\n    loss = model(x.cuda(), y.cuda())\n    loss.backward()\n    opt.step()\n"
    fixed = fix_source(imports + loop, select=["TL404"], unsafe_fixes=True, path="train.py")
    assert fixed.startswith(expected), fixed


def test_a_value_replaced_among_the_arguments_of_a_hand_laid_call_is_not_split_inside_them():
    # `default=0` of an argparse option made `min(8, os.cpu_count() or 1)` was split at the new
    # call's brackets in the middle of the author's aligned arguments; Black would split the
    # outer call: the line is left long for the formatter instead.
    code = ('import argparse\nfrom torch.utils.data import DataLoader\nparser = argparse.ArgumentParser()\n'
            'parser.add_argument("-j", "--workers", default=0, type=int, metavar="N",\n'
            '                    help="number of data loading workers")\n'
            'def main(args):\n    loader = DataLoader(ds, num_workers=args.workers)\n    for b in loader:\n        step(b)\n'
            'if __name__ == "__main__":\n    main(parser.parse_args())\n')
    fixed = fix_source(code, path="train.py", unsafe_fixes=True)
    assert 'parser.add_argument("-j", "--workers", default=min(8, os.cpu_count() or 1), type=int, metavar="N",\n' \
           '                    help="number of data loading workers")\n' in fixed


def test_a_call_fixed_inside_a_conditional_in_a_generator_is_not_split_at_its_own_brackets():
    # `x, y = (t.cuda() if ... else t for t in batch)`: the fix once wrote `t.cuda(\n
    # non_blocking=True\n)` in the middle of the generator; Black would split the generator, not the
    # call: the line is left long for the formatter instead.
    code = ("import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, pin_memory=True)\n"
            "def main():\n    for epoch in range(2):\n        for batch in loader:\n"
            "            x, y = (t.cuda() if torch.cuda.is_available() else t for t in batch)\n"
            "            model(x, y).backward()\n            opt.step()\n")
    fixed = fix_source(code, select=["TL108"], path="train.py")
    assert "            x, y = (t.cuda(non_blocking=True) if torch.cuda.is_available() else t for t in batch)\n" \
        in fixed, fixed


def test_arguments_added_beside_a_split_argument_go_one_per_line():
    # TL402 splits `enabled=` over two lines, then TL401 put `"cuda"` before it and TL403
    # `init_scale=8192` after it on those lines (two arguments on one line, a continued condition
    # between them): the call is laid out again, one argument per line, as Black writes it.
    source = (
        "import torch\n\n\n"
        "def make():\n"
        "    scaler = torch.cuda.amp.GradScaler(enabled=torch.cuda.is_available())\n"
        "    return scaler\n\n\n"
        "def step(model, x):\n"
        "    with torch.autocast('cuda'):\n"
        "        return model(x)\n")
    fixed = fix_source(source, select=["TL401", "TL402", "TL403"])
    assert fixed.splitlines()[4:10] == [
        "    scaler = torch.amp.GradScaler(",
        "        'cuda',",
        "        enabled=torch.cuda.is_available()",
        "        and not torch.cuda.is_bf16_supported(including_emulation=False),",
        "        init_scale=8192,",
        "    )",
    ]


# A loader whose safe TL104 fix makes its line too long, with another finding suppressed there.
_SUPPRESSED = ("from torch.utils.data import DataLoader\n\n\ndef main(ds, model, opt):\n"
               "    loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=4){comment}\n"
               "    for x, y in loader:\n        x = x.cuda()\n        loss = model(x).sum()\n"
               "        loss.backward()\n        opt.step()\n")


@pytest.mark.parametrize("comment", ["  # noqa: TL102", "  # keep: TL102 # noqa: TL102", "  # trainlint: ignore[TL102]",
                                     "  # noqa: TL102, TL108"])
def test_a_call_split_over_lines_keeps_its_suppression_on_its_first_line(comment):
    """The split call's line comment holds a suppression: it goes up to the opening bracket's line,
    where the findings start (left behind the closing bracket, it suppressed nothing there, and
    the next round of fixes wrote TL102's and TL108's fixes, which it had suppressed)."""
    fixed = fix_source(_SUPPRESSED.format(comment=comment), unsafe_fixes=False, path="train.py")
    lines = fixed.splitlines()
    assert lines[4] == "    loader = DataLoader(" + comment, fixed
    assert lines[5].lstrip().startswith("ds, batch_size=32") and "prefetch_factor" in lines[5], fixed
    assert lines[6] == "    )", fixed
    assert "pin_memory" not in fixed and "non_blocking" not in fixed


def test_a_call_split_over_lines_leaves_other_comments_where_black_does():
    fixed = fix_source(_SUPPRESSED.format(comment="  # the training data"), select=["TL104"], path="train.py")
    assert fixed.splitlines()[4:7] == ["    loader = DataLoader(", fixed.splitlines()[5], "    )  # the training data"]
