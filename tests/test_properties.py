"""Property-based tests: no crash on generated programs; fixed output parses and is idempotent.

Two sources of programs:
- hypothesmith, from Python's grammar (odd but valid syntax), with a header that makes every
  rule's text prefilter pass, so the rules and the shared analyses really run over them;
- a generator of training-script shapes (loaders with random arguments, epoch and step loops,
  interval guards, host syncs, collate functions, datasets) that the rules fix, to check that
  every fix (unsafe ones included) yields code that parses and compiles, and that fixing again
  changes nothing.

Example counts are kept small for CI (TRAINLINT_PROPERTY_EXAMPLES raises them locally).
"""

from __future__ import annotations

import os

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import libcst as cst

from trainlint.analysis.batches import POSITIONAL_PARAMETERS
from trainlint.analysis.names import dotted
from trainlint.analysis.tree import TreeIndex
from trainlint.config import Settings
from trainlint.engine import ParseError, lint_text, parse
from trainlint.fixer import FixError, fix_text

EXAMPLES = int(os.environ.get("TRAINLINT_PROPERTY_EXAMPLES", "40"))
ALL = Settings(select=("ALL",))
RULES = ALL.active_rules("gen.py")
PROPS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])

# Mentions every rule's trigger strings, so the prefilter lets every rule run on what follows.
HEADER = ("# DataLoader collate_fn __getitem__ __iter__ pin_memory backward step( .item( autocast GradScaler\n"
          "# torch.save no_sync DistributedDataParallel DataParallel zero_grad softmax synchronize\n")


def _lint(code: str):
    try:
        return lint_text(code, "gen.py", RULES, ALL)
    except ParseError:
        return None  # a clean per-file error: not a crash


@PROPS
@given(hypothesmith.from_grammar())
def test_no_crash_on_grammar_programs(program):
    _lint(HEADER + program)


@PROPS
@given(hypothesmith.from_grammar(auto_target=False))
def test_fix_of_grammar_programs_parses_and_is_idempotent(program):
    code = HEADER + program
    try:
        fixed = fix_text(code, "gen.py", RULES, ALL, unsafe_fixes=True).text
    except (ParseError, FixError):
        return
    _check_fixed(code, fixed)


# -- training-script shapes -----------------------------------------------------------------------

_names = st.sampled_from(["loader", "train_loader", "val_loader", "dl", "self.loader", "data_iter"])
# Settings written as names too: a module constant and a configuration class's fields (settings.py).
_values = st.sampled_from(["0", "2", "4", "args.workers", "True", "False", "None", "n", "8 if x else 0",
                           "NUM_WORKERS", "PIN", "cfg.num_workers", "cfg.pin_memory", "cfg.drop_last"])
_kwargs = st.sampled_from(["num_workers", "pin_memory", "persistent_workers", "prefetch_factor", "drop_last",
                           "shuffle", "batch_size", "collate_fn", "sampler"])


# Values for DataLoader's positional parameters after the dataset, in order.
_POSITIONAL_VALUES = (["32", "bs"], ["True", "False", "None"], ["None"], ["None"], ["0", "2", "args.workers"],
                      ["None", "collate"], ["True", "False"], ["True", "False"])


@st.composite
def loader_call(draw):
    ctor = draw(st.sampled_from(["DataLoader", "torch.utils.data.DataLoader", "DL", "StatefulDataLoader"]))
    args = [draw(st.sampled_from(["ds", "train_ds", "range(10)", "Text(paths)"]))]
    # Some of DataLoader's parameters by position (a fix must not add them again as keywords).
    positional = draw(st.integers(0, len(_POSITIONAL_VALUES)))
    args += [draw(st.sampled_from(values)) for values in _POSITIONAL_VALUES[:positional]]
    given = set(POSITIONAL_PARAMETERS[:positional + 1])
    for key in draw(st.lists(_kwargs, max_size=5, unique=True)):
        if key in given:
            continue
        value = "collate" if key == "collate_fn" else draw(_values)
        args.append(f"{key}={value}")
    if draw(st.booleans()):
        args.append("**kw")
    trailing = draw(st.sampled_from(["", ","]))
    multiline = draw(st.booleans())
    if multiline:
        inner = "".join(f"\n    {a}," for a in args)
        if not trailing:
            inner = inner[:-1] + "\n"
        else:
            inner += "\n"
        return f"{ctor}({inner})"
    return f"{ctor}({', '.join(args)}{trailing})"


_step_lines = st.sampled_from([
    "x = x.to(device)",
    "x, y = x.cuda(), y.to('cuda', non_blocking=False)",
    "loss = model(x, y)",
    "loss = criterion(model(x), y)",
    "total += loss.item()",
    "print(f'loss {loss}')",
    "print(loss.item())",
    "if torch.isnan(loss):\n    break",
    "if step % log_every == 0:\n    print(loss.item())",
    "torch.cuda.synchronize()",
    "optimizer.zero_grad(set_to_none=False)",
    "with torch.cuda.amp.autocast():\n    out = model(x)",
    "torch.save(model.state_dict(), 'ckpt.pt')",
    "attn = torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v",
    "pbar.set_postfix(loss=loss)",
    "acc = (preds == y).float().mean().item()",
    "scaler.scale(loss).backward()",
    "loss.backward()",
    "optimizer.step()",
    "scaler.step(optimizer)",
    "pass",
    # Copies inside comprehensions and tuples, some long enough that a fix must split them (layout.py).
    "x = {k: v.to(device) for k, v in x.items()}",
    "x = tuple(t.to(device) for t in x)",
    "features_of_the_batch = [tensor_of_the_batch.cuda() for tensor_of_the_batch in x if tensor_of_the_batch is not None]",
    "inputs_for_the_model = {name_of_tensor: tensor_of_batch.to(device) for name_of_tensor, tensor_of_batch in x.items()}",
    "stacked_inputs = torch.stack([tensor_of_the_batch.to(device) for tensor_of_the_batch in x])",
    "labels_of_the_batch = y.to(device), x",
])


def _indent(block: str, prefix: str) -> str:
    return "".join(prefix + line + "\n" for line in block.splitlines())


@st.composite
def training_script(draw):
    lines = ["import os", "import torch", "from torch.utils.data import DataLoader, Dataset",
             "from torch.utils.data import DataLoader as DL",
             "from torchdata.stateful_dataloader import StatefulDataLoader"]
    if draw(st.booleans()):
        lines.append("def collate(batch):\n    return tokenizer(batch, padding=True, return_tensors='pt')")
    if draw(st.booleans()):
        lines.append("class Text(Dataset):\n    def __getitem__(self, i):\n"
                     "        return self.tok.encode(open(self.paths[i]).read())")
    lines.append(f"NUM_WORKERS = {draw(st.sampled_from(['0', '4']))}\nPIN = {draw(st.sampled_from(['False', 'True']))}")
    lines.append(f"class Cfg:\n    num_workers = {draw(st.sampled_from(['0', '2']))}\n    pin_memory = False\n"
                 f"    drop_last = False\ncfg = Cfg()")
    if draw(st.booleans()):
        # The `**kw` some loaders pass, built in view (star_args.py), sometimes merged with `.update`.
        keys = draw(st.lists(_kwargs.filter(lambda k: k not in ("collate_fn", "sampler")), max_size=3, unique=True))
        lines.append("kw = {" + ", ".join(f"'{k}': {draw(_values)}" for k in keys) + "}")
        if draw(st.booleans()):
            lines.append(f"if x:\n    kw.update({{'{draw(_kwargs)}': 2}})")
    name = draw(_names)
    loaders = draw(st.lists(loader_call(), min_size=1, max_size=3))
    for i, call in enumerate(loaders):
        target = name if i == 0 else f"loader_{i}"
        if target.startswith("self."):
            target = "loader_self"
        lines.append(f"{target} = {call}")
    loop_target = name if not name.startswith("self.") else "loader_self"
    body = "\n".join(draw(st.lists(_step_lines, min_size=1, max_size=8)))
    inner = f"for step, (x, y) in enumerate({loop_target}):\n" + _indent(body, "    ")
    if draw(st.booleans()):
        inner = "for epoch in range(3):\n" + _indent(inner, "    ")
    shape = draw(st.sampled_from(["module", "function", "handed", "reads", "shared", "pairs", "drawn"]))
    other = "loader_1" if len(loaders) > 1 else loop_target
    if shape == "function":
        inner = "def train(model, optimizer):\n" + _indent(inner, "    ")
    elif shape == "handed":
        # The loop in a function the loader is handed to (MNIST's `train(..., train_loader, ...)`).
        inner = "def train(model, optimizer, loader):\n" + _indent(inner.replace(loop_target, "loader"), "    ")
        inner += f"for epoch in range(3):\n    train(model, optimizer, {loop_target})\n"
    elif shape == "reads":
        # The loop in a function reading the module's loader, called every epoch (pytorch-cifar).
        inner = "def train(epoch):\n" + _indent(inner, "    ") + "for epoch in range(3):\n    train(epoch)\n"
    elif shape == "shared":
        # One function both loaders go through, stepping only when handed an optimizer.
        inner = ("def run_epoch(model, loader, optimizer=None):\n    training = optimizer is not None\n"
                 + _indent(inner.replace(loop_target, "loader"), "    ")
                 + f"for epoch in range(3):\n    run_epoch(model, {loop_target}, opt)\n    run_epoch(model, {other})\n")
    elif shape == "pairs":
        # A loop over (phase, loader) pairs.
        inner = (f"for phase, loader in [('train', {loop_target}), ('val', {other})]:\n"
                 + _indent(inner.replace(loop_target, "loader"), "    "))
    elif shape == "drawn":
        # Batches drawn with next() in a step loop.
        inner = (f"data_iter = iter({loop_target})\nfor step in range(100):\n"
                 f"    try:\n        x, y = next(data_iter)\n    except StopIteration:\n"
                 f"        data_iter = iter({loop_target})\n        x, y = next(data_iter)\n" + _indent(body, "    "))
    lines.append(inner.rstrip("\n"))
    text = "\n".join(lines) + "\n"
    return text.replace("\n", "\r\n") if draw(st.booleans()) else text


def _no_argument_twice(module) -> None:
    """No DataLoader call of the fixed text passes a parameter twice (by position and by keyword,
    or two keywords): Python would raise TypeError, which compiling does not show."""
    for node in TreeIndex(module).nodes(cst.Call):
        name = dotted(node.func) or ""
        if not name.endswith(("DataLoader", "DL")) or any(a.star for a in node.args):
            continue
        count = len([a for a in node.args if a.keyword is None])
        keywords = [a.keyword.value for a in node.args if a.keyword is not None]
        assert len(keywords) == len(set(keywords)), module.code_for_node(node)
        assert not set(keywords) & set(POSITIONAL_PARAMETERS[:count]), module.code_for_node(node)


def _keywords_beside_their_star_key(module) -> set:
    """The keywords a call passes that its `**kw` may hold too (`kw = {...}`, `kw.update({...})` in
    the module): Python raises "got multiple values" there."""
    index = TreeIndex(module)
    held = {dotted(k.key) or (k.key.evaluated_value if isinstance(k.key, cst.SimpleString) else None)
            for d in index.nodes(cst.Dict) for k in d.elements if isinstance(k, cst.DictElement)}
    found = set()
    for node in index.nodes(cst.Call):
        if any(a.star == "**" and dotted(a.value) == "kw" for a in node.args):
            found |= {a.keyword.value for a in node.args if a.keyword is not None} & held
    return found


def _check_fixed(original: str, fixed: str) -> None:
    _no_argument_twice(parse(fixed))  # libcst
    # A keyword a fix adds beside a `**` must be one the dict cannot pass (the generator may
    # write such a clash itself; the fixes must not add one).
    assert _keywords_beside_their_star_key(parse(fixed)) <= _keywords_beside_their_star_key(parse(original))
    compile(fixed, "gen.py", "exec", dont_inherit=True)  # CPython
    again = fix_text(fixed, "gen.py", RULES, ALL, unsafe_fixes=True).text
    assert again == fixed, "a second fix run changed the fixed text"
    if "\r\n" in original and "\n" not in original.replace("\r\n", ""):  # a pure CRLF file stays one
        assert "\n" not in fixed.replace("\r\n", ""), "a fix introduced a bare LF into a CRLF file"


@PROPS
@given(training_script())
def test_training_scripts_lint_without_crash(code):
    compile(code, "gen.py", "exec", dont_inherit=True)  # the generator writes valid Python
    found = _lint(code)
    assert found is not None
    for diag in found:
        assert 0 <= diag.start_offset <= diag.end_offset <= len(code)
        if diag.fix is not None:
            for edit in diag.fix.edits:
                assert 0 <= edit.start <= edit.end <= len(code)


@PROPS
@given(training_script(), st.booleans())
def test_training_script_fixes_parse_and_are_idempotent(code, unsafe):
    try:
        outcome = fix_text(code, "gen.py", RULES, ALL, unsafe_fixes=unsafe)
    except FixError as exc:  # refusing a fix is allowed; a broken file is not
        pytest.fail(f"a rule produced a fix that does not parse: {exc}\n{code}")
    if not unsafe:
        # Only safe fixes: rerunning with safe fixes changes nothing.
        again = fix_text(outcome.text, "gen.py", RULES, ALL, unsafe_fixes=False).text
        assert again == outcome.text
        _no_argument_twice(parse(outcome.text))
        compile(outcome.text, "gen.py", "exec", dont_inherit=True)
        return
    _check_fixed(code, outcome.text)
