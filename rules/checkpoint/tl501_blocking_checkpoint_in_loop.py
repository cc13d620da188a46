"""TL501 blocking-checkpoint-in-loop: a checkpoint save (`torch.save`, `save_pretrained`,
`save_state`, `fabric.save`, `save_checkpoint`, safetensors' `save_file`) blocking the training loop."""

from __future__ import annotations

import re
from functools import cached_property

import libcst as cst

from trainlint.analysis.distributed import one_line
from trainlint.analysis.imports import after_imports
from trainlint.analysis.command_line import unread_option
from trainlint.analysis.loops import first_modulo, range_counter
from trainlint.analysis.names import bound_names, dotted, local_names
from trainlint.analysis.paths import (
    folders,
    hands_folder,
    may_name,
    only_text,
    path_forms,
    path_variables,
    reads_folder,
)
from trainlint.analysis.tree import binding_targets, named_parameters, parameter_names, walk
from trainlint.analysis.variables import is_variable, names_a_value, role
from trainlint.diagnostics import Applicability
from trainlint.layout import head_grown, split_at_brackets
from trainlint.rule import NO_FIX, Invalid, Option, Rule, Valid, in_training_loop

from ..host_sync.guards import has_flow_or_step, step_counter
from ..host_sync.logged_values import is_log_call
from .async_save_helper import HELPER, HELPER_CODE, WAIT


# Any case: a save interval is as often a constant (`SAVE_EVERY = 500`) as a variable (as TL201's).
_SAVE_INTERVAL = re.compile(
    r"^(save_every\w*|save_steps|save_interval|save_freq\w*|save_iters?|ckpt_every|ckpt_interval|ckpt_freq\w*|"
    r"checkpoint_every\w*|checkpoint_interval|checkpoint_freq\w*|checkpointing_steps|checkpoint_steps)$",
    re.IGNORECASE,
)
_NOT_A_MODEL = re.compile(r"(token|processor|config|feature_extractor|image_processor)", re.IGNORECASE)
_RANK_TEST = re.compile(r"(rank|is_main|main_process|is_master|master_process|world_process_zero|is_global_zero)",
                        re.IGNORECASE)
_LOADS = frozenset({"from_pretrained", "load_state", "load_checkpoint"})
# Where each save takes the file or folder it writes: (position, keyword).
# Libraries with models of their own whose save_pretrained takes no `state_dict=`.
_OTHER_SAVE_PRETRAINED = ("peft", "diffusers", "sentence_transformers")
# Contexts that only change how tensors are computed: a save inside them may still write in the
# background (any other `with` that binds nothing may be a lock others read the file under).
_COMPUTE_CONTEXTS = frozenset({
    "torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.autocast", "torch.amp.autocast",
    "torch.cuda.amp.autocast", "torch.cpu.amp.autocast", "contextlib.nullcontext",
    "torch.autograd.profiler.record_function", "torch.profiler.record_function",
})
# Calls after which other processes count on what each one wrote (TL501's background write).
_BARRIERS = frozenset({"barrier", "wait_for_everyone", "monitored_barrier"})

_PATH_ARGUMENT = {"torch.save": (1, "f"), "save_pretrained": (0, "save_directory"),
                  "engine.save_checkpoint": (0, "save_dir"),
                  "accelerator.save_state": (0, "output_dir"), "accelerator.save": (1, "f"),
                  "fabric.save": (0, "path"),
                  "trainer.save_checkpoint": (0, "filepath"),
                  "safetensors.torch.save_file": (1, "filename"), "safetensors.torch.save_model": (1, "filename")}
# safetensors' saves that are not written from a snapshot, and why. (`save_file` is: the snapshot
# keeps which tensors share memory, which it refuses as before.)
_SAFETENSORS = {
    "safetensors.torch.save_model": "is handed the live module, which the fix cannot snapshot",
}
# Names of a whole module or optimizer handed to torch.save (not its state dict).
_LIVE_OBJECT = re.compile(r"^(model|net|module|network|encoder|decoder|optimizer|opt|optim)$|_(model|net|optimizer)$",
                          re.IGNORECASE)
# Methods that only show a path (a log line): they neither read nor move the file.
_SHOWS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log", "print"})
# At most this many statements after a per-step save move under its interval with it (the uses
# of its file).
_MAX_MOVED_USERS = 3
# Calls handed a path that never open the file: a container keeping the name (`saved.append(last)`),
# builtins that look at the value alone (`str(path)`, `len(name)`).
_KEEPS_VALUE = frozenset({"append", "extend", "add", "insert", "appendleft", "extendleft"})
_CONTAINERS = frozenset({"list", "set", "deque", "collections.deque"})
_LOOKS_AT_VALUE = frozenset({"str", "repr", "len", "format", "hash", "id", "isinstance", "type", "bool"})

def _lets_fail(handler: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
    """The handler cannot swallow a failed save's error: it catches only KeyboardInterrupt or
    SystemExit, or ends by re-raising."""
    last = handler.body.body[-1] if handler.body.body else None  # a line, or (`except E: raise`) a small statement
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1]
    if isinstance(last, cst.Raise) and last.exc is None:
        return True
    types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type] if handler.type else []
    names = [dotted(t.value if isinstance(t, cst.Element) else t) for t in types]
    return bool(names) and all(n in ("KeyboardInterrupt", "SystemExit") for n in names)


# Calls that run the callable they are handed later, with the values handed with it: the callable
# first (`pool.submit(fn, *args)`, `pool.apply_async(fn, args)`), or as `target=` (threads, processes).
_RUNS_LATER = frozenset({"submit", "apply_async", "Thread", "Process"})


def _handed_to(ctx, call: cst.Call) -> tuple[cst.BaseExpression, list[cst.BaseExpression]] | None:
    """(the callable, the positional values it will be called with) for a call that hands them to
    a pool or a thread; None for any other call."""
    func = call.func
    last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if last not in _RUNS_LATER:
        return None
    target = ctx.keyword(call, "target") or ctx.keyword(call, "func")
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if target is None and last in ("submit", "apply_async") and positional:
        target, positional = positional[0], positional[1:]
    if target is None:
        return None
    values = [a.value for a in positional] if last == "submit" else []
    given = ctx.keyword(call, "args") or (positional[0] if last == "apply_async" and positional else None)
    if given is not None and isinstance(given.value, (cst.Tuple, cst.List)):
        values = [e.value for e in given.value.elements if not isinstance(e, cst.StarredElement)]
    return target.value, values


def _tests_receiver(test: cst.BaseExpression, site: cst.Call) -> bool:
    """test only asks whether the object whose method site calls is set (`if self.cb is not None:`,
    `if self.cb:` around `self.cb.on_step_end(self, step)`, a callback set later, in `setup()`):
    it holds on every step or on none, so it is no step condition. It was taken for one, and the
    save was only written in the background under it, not saved every N steps."""
    receiver = site.func.value if isinstance(site.func, cst.Attribute) else None
    shown = dotted(receiver) if receiver is not None else None
    if shown is None:
        return False
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if not (isinstance(target.operator, cst.IsNot) and isinstance(target.comparator, cst.Name)
                and target.comparator.value == "None"):
            return False
        test = test.left
    return dotted(test) == shown


def _is_wait(stmt: cst.CSTNode) -> bool:
    """stmt is (or is a line of only) the call of the wait the fix adds after a loop."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        stmt = stmt.body[0]
    return isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call) and dotted(stmt.value.func) == WAIT


# Nodes whose line breaks inside brackets join with no space: after an opening bracket, before a
# closing one or a comma, around a dot.
_TIGHT = (cst.LeftParen, cst.LeftSquareBracket, cst.LeftCurlyBrace, cst.RightParen, cst.RightSquareBracket,
          cst.RightCurlyBrace, cst.Dot)
_TIGHT_FIELDS = frozenset({"whitespace_before_args", "whitespace_after_arg", "whitespace_before_colon",
                           "whitespace_after_func"})


def _joined(expr: cst.BaseExpression) -> cst.BaseExpression:
    """expr (an argument the author split over lines, with no comment in it) on one line, for the
    call to be laid out afresh as Black lays it out (`{"model": ...,` / `"step": step}` kept its old
    continuation indent inside `_trainlint_async_save(`)."""
    class _Join(cst.CSTTransformer):
        def on_leave(self, original, updated):
            changes = {}
            for field in ("whitespace_before", "whitespace_after", "whitespace_between", *_TIGHT_FIELDS):
                if isinstance(getattr(original, field, None), cst.ParenthesizedWhitespace):
                    tight = isinstance(original, _TIGHT) or field in _TIGHT_FIELDS \
                        or isinstance(original, cst.Comma) and field == "whitespace_before"
                    changes[field] = cst.SimpleWhitespace("" if tight else " ")
            return updated.with_changes(**changes) if changes else updated

    if "\n" not in cst.Module([]).code_for_node(expr):
        return expr
    return expr.visit(_Join())



# A save function writing its checkpoint under a temporary name, then `{publish}`.
_ATOMIC_HELPER = ("import os\nimport torch\ndef save_ckpt(path):\n    tmp = path + '.tmp'\n"
                  "    torch.save(model.state_dict(), tmp)\n    {publish}\n")

# Moves that publish a file written under a temporary name (an atomic checkpoint write).
_PUBLISHES = frozenset({"os.replace", "os.rename", "shutil.move"})

class _Substituted(cst.CSTTransformer):
    """A save function's statement as a final save after the loop writes it: each name read
    that is a key of `values` (a parameter, `self`) replaced by what the call handed it."""

    def __init__(self, values: dict[str, cst.BaseExpression]) -> None:
        super().__init__()
        self.values = values
        self.kept: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.kept.add(id(node.attr))  # `x.step` reads x, not `step`

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.kept.add(id(node.keyword))

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if id(original) in self.kept or original.value not in self.values:
            return updated
        return self.values[original.value]


def _operand(code: str) -> str:
    """A test's code as an operand of `and`: parenthesised where it is an `or`, a conditional
    expression, a lambda or a walrus, whose parts `and` would otherwise take apart."""
    expr = cst.parse_expression(code)
    if isinstance(expr, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)) and not expr.lpar \
            and not (isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.And)):
        return f"({code})"
    return code


def _shown(ctx, call: cst.Call) -> str:
    """A call as a message names it: whole when short, else `shutil.copyfile(...)`."""
    code = one_line(ctx.code(call))
    return code if len(code) <= 60 else f"{one_line(ctx.code(call.func))}(...)"


def _fixed(loop: str, wait: str = "", final: str = "") -> str:
    """A rule case's loop (at the end of the module) as fixed: the helper after the imports, the
    wait after the loop (indented by `wait`), then `final` (the save run once more after it)."""
    loop += f"{wait}{WAIT}()\n{final}"
    head, _, rest = loop.partition("\n")
    if rest.startswith(_TRANSFORMERS):  # the helper goes after the imports
        head, rest = head + "\n" + _TRANSFORMERS.rstrip("\n"), rest[len(_TRANSFORMERS):]
    return head + "\n" + HELPER_CODE + "\n\n" + rest


_TRANSFORMERS = "from transformers import AutoModel\n"


_DEEPSPEED = ("import deepspeed\nmodel_engine, opt, _, _ = deepspeed.initialize(model=model, config=cfg)\n"
              "for step, (x, y) in enumerate(loader):\n    loss = model_engine(x, y)\n    model_engine.backward(loss)\n"
              "    model_engine.step()\n    {save}\n")


def _hf(loop: str) -> str:
    """A rule case's loop in a module that imports transformers, training one of its models (whose
    save_pretrained takes `state_dict=`)."""
    return loop.replace("import torch\n", "import torch\n" + _TRANSFORMERS, 1).replace(
        "for step", "model = AutoModel.from_pretrained('m')\nfor step", 1)


def _counter(ctx, node: cst.CSTNode) -> str | None:
    """The hot loop's step counter: `for step in range(n)`, else what the host-sync rules use (a
    framework's counter in its step hooks)."""
    loop = ctx.loops.hot_loop_of(node)
    # In the optimizer step of gradient accumulation the loop's index counts micro-batches:
    # `if i % 1000 == 0:` there could hold on no step; step_counter takes one counted there.
    counter = range_counter(loop, ctx.assigned_values)
    if counter is not None and ctx.loops.step_region(node) is None:
        return counter
    return step_counter(ctx, node)


# A trainer saving through the checkpointer it keeps on itself.
_KEPT_CHECKPOINTER = ("import torch\n{head}class Checkpointer:\n    def __init__(self, path):\n        self.path = path\n"
                      "    def save(self, model, step):\n        {save}\nclass Trainer:\n    def __init__(self):\n"
                      "        self.model = torch.nn.Linear(8, 1)\n        self.ckpt = Checkpointer('last.pt')\n"
                      "    def fit(self, x):\n        for step in range(10):\n            self.model(x).sum().backward()\n"
                      "            self.opt.step()\n            {call}\n{wait}")


# A training function saving through a checkpointer handed in as a parameter.
_PASSED_CHECKPOINTER = ("import torch\n{head}class Checkpointer:\n    def __init__(self, path):\n        self.path = path\n"
                        "    def save(self, model):\n        {save}\ndef train(model, opt, loader, ckpt{annotation}):\n"
                        "    for step, (x, y) in enumerate(loader):\n        model(x, y).backward()\n        opt.step()\n"
                        "        {call}\n{calls}")


# ... handed to a trainer's method, the trainer and the checkpointer both handed down from main.
_HANDED_DOWN_CHECKPOINTER = (
    "import torch\n{head}class Checkpointer:\n    def __init__(self, path):\n        self.path = path\n"
    "    def save(self, model):\n        {save}\nclass Runner:\n    def fit(self, model, opt, loader, ckpt):\n"
    "        for step, (x, y) in enumerate(loader):\n            model(x, y).backward()\n            opt.step()\n"
    "            {call}\n{after}def train(runner, ckpt):\n    runner.fit(model, opt, loader, ckpt)\n"
    "def main(runner, ckpt):\n    train(runner, ckpt)\nmain(Runner(), Checkpointer('last.pt'))\n")


# A trainer calling each of its callbacks (a list of the file's instances) on every step.
_CALLBACK_LIST = ("import torch\n{head}class Saver{base}:\n    def on_step_end(self, trainer, step):\n        {save}\n"
                  "{other}class Trainer:\n    def __init__(self):\n        self.model = torch.nn.Linear(8, 1)\n"
                  "        self.callbacks = [{elements}]\n    def fit(self, x):\n        for step in range(10):\n"
                  "            self.model(x).sum().backward()\n            self.opt.step()\n"
                  "            for cb in self.callbacks:\n                {call}\n{wait}")
_LOSS_LOGGER = "class LossLogger:\n    def on_step_end(self, trainer, step):\n        print(step)\n"


# A trainer whose callback is None in `__init__` and set in `setup()`, tested before each call.
_LATE_CALLBACK = ("import torch\n{head}class Saver:\n    def on_step_end(self, trainer, step):\n        {save}\n"
                  "class Trainer:\n    def __init__(self):\n        self.model = torch.nn.Linear(8, 1)\n"
                  "        self.cb = None\n    def setup(self):\n        self.cb = Saver()\n    def fit(self, x):\n"
                  "        for step in range(10):\n            self.model(x).sum().backward()\n            self.opt.step()\n"
                  "            if self.cb is not None:\n                {call}\n{wait}")


# A checkpointer kept on the trainer whose save function does other work too (counts its saves),
# handed a counter the trainer keeps outside its loop.
_COUNTING_CHECKPOINTER = ("import torch\n{head}class Checkpointer:\n    def __init__(self, path):\n"
                          "        self.path = path\n        self.saves = 0\n    def save(self, model, step):\n"
                          "        {work}\n        {save}\nclass Trainer:\n    def __init__(self):\n"
                          "        self.model = torch.nn.Linear(8, 1)\n        self.ckpt = Checkpointer('last.pt')\n"
                          "    def fit(self, loader):\n        step = 0\n        for x in loader:\n"
                          "            self.model(x).sum().backward()\n            self.opt.step()\n            step += 1\n"
                          "            self.ckpt.save(self.model, step)\n{final}")


def _through_object(template: str, save: str, fixed: dict, message: str, head: str = "", **fields) -> Invalid:
    """A case of template whose save, in a method of the file's class, runs on every step through
    an object the loop calls: fixed with the helper after `head`, the save written in the
    background, and the fields `fixed` names (the call under an interval, the wait after the
    loop) in place of those given."""
    return Invalid(template.format(head=head, save=save, **fields),
                   fixed=template.format(head=head + HELPER_CODE + "\n\n",
                                         save=save.replace("torch.save(", "_trainlint_async_save(torch.save, ", 1),
                                         **{**fields, **fixed}),
                   message=message)


# The saves those templates' methods write, and what their fixes put after a method's loop.
_SAVE_PATH = "torch.save(model.state_dict(), self.path)"
_SAVE_TRAINER = "torch.save(trainer.model.state_dict(), 'last.pt')"
_WAIT_IN_METHOD = "        _trainlint_wait_for_save()\n"
# A callback list's call under the interval, the wait after the trainer's loop.
_CALLBACK_GUARDED = {"call": "if step % 1000 == 0 or step == 9:\n                    cb.on_step_end(self, step)",
                     "wait": _WAIT_IN_METHOD}


# Rule cases that are reported and left as they are.
# A per-step save, then other work, then a replace of the file it wrote.
_REPLACE_AFTER_WORK = in_training_loop("torch.save(model.state_dict(), 'ckpt.pt.tmp')\nlog(loss)\n"
                                       "os.replace('ckpt.pt.tmp', 'ckpt.pt')")
# PyTorch's ImageNet example's helper, called every N steps.
_IMAGENET = ("import shutil\nimport torch\ndef save_checkpoint(state, is_best, filename='checkpoint.pth.tar'):\n"
             "    torch.save(state, filename)\n    if is_best:\n"
             "        shutil.copyfile(filename, 'model_best.pth.tar')\n"
             + in_training_loop("if step % args.save_freq == 0:\n"
                                "    save_checkpoint({'model': model.state_dict()}, is_best)").partition("\n")[2])
# A loop inside a `with` binding a temporary folder.
_IN_TMPDIR = ("import os\nimport tempfile\nimport torch\nwith tempfile.TemporaryDirectory() as out:\n"
              "    for step, (x, y) in enumerate(loader):\n        model(x, y).backward()\n        opt.step()\n"
              "        {save}\n")
# A loop inside a `try` whose handlers let a save's error end the run.
_TRY_AROUND_LOOP = ("import torch\n{helper}try:\n    for step, (x, y) in enumerate(loader):\n        model(x, y).backward()\n"
                    "        opt.step()\n        if step % 10 == 0:\n            {save}\n{wait}"
                    "except (KeyboardInterrupt, SystemExit):\n{wait}    pass\nexcept Exception:\n{wait}    notify()\n    raise\n")
# A per-step save into a file a `with` opens, which does more than the save.
_WITH_MORE = in_training_loop("with open('ckpt.pt', 'wb') as f:\n    torch.save(model.state_dict(), f)\n"
                              "    os.fsync(f.fileno())")


class BlockingCheckpointInLoop(Rule):
    code = "TL501"
    name = "blocking-checkpoint-in-loop"
    summary = ("`torch.save`/`save_pretrained`/`save_state`/`fabric.save`/`save_checkpoint`/safetensors' `save_file` "
               "blocking the training loop")
    source = "§6.2"
    fix_applicability = "unsafe"
    triggers = ("save",)
    needs_hot_loop = True
    options = {"save-every": Option(1000, int, "The interval a per-step save is moved under when the script "
                                               "defines no save interval of its own.", minimum=1)}
    docs = """
## What it does
Flags `torch.save`, `save_pretrained`, `accelerator.save` and `save_state`, `fabric.save`, Lightning's
`trainer.save_checkpoint`, a DeepSpeed engine's `save_checkpoint` and safetensors' `save_file` and
`save_model` (or a function of the module that calls one) run inside the hot loop, on every step or every N steps, or in a
hook a framework calls on every step (a Lightning callback's `on_train_batch_end`, a
TrainerCallback's `on_step_end`: see TL201). A method the file's own loop calls on an object it
follows (`self.ckpt.save(...)`, each callback of a list of the file's instances in `for cb in
self.callbacks:`, a callback set in `setup()`, a checkpointer handed in as a parameter) is a save
function of the module, a framework's hook too; a test that the object is set (`if self.cb is
not None:`) is no step condition. Saves outside the hot loop (once per epoch, at the
end) and saves of tokenizers or configs are not flagged; nor is a save that runs once, or at a
few steps named one by one (`if step == max_steps - 1:`, `if step in {1000, 5000}:`), also where
a save function of the module decides it (`def maybe_save(step): if step == 0: torch.save(...)`,
or `if step != 0: return` before its save), called each step.

A save helper that checks its own interval (an `if` around the save, an early return, or in
a helper it calls) or decides for some of its saves (only a better model) is only made
asynchronous, never put under a second interval. A save in the optimizer-step branch of gradient
accumulation is per step, guarded on an optimizer-step counter counted there (none: no fix). A
per-step save in an epoch's inner loop to a file that loop does not name anew (the last statement
of its body, reading nothing the loop binds, which no `break`, `continue` or `return` skips:
`torch.save(model.state_dict(), f"model_epoch{epoch}.pt")`) is moved after the loop, once per
epoch, which leaves each file as the loop left it. No background write when a call in the loop
archives, uploads, syncs, copies or lists (`out.glob("*.pt")`, other than to delete older files) a folder the file lies in (also a function of the module
handed the folder that does, or one handed to a pool or thread: `pool.submit(upload, out)`), or a
read of it runs earlier in the loop (a roll-back), nor in a generator that yields in the loop.
`accelerator.save` is made asynchronous like `torch.save`; a finding without a fix says why.

## Why is this bad?
A checkpoint write serialises the whole state and waits for the disk; the GPU idles meanwhile.
Saving on every step multiplies that stall by the number of steps, and even every N steps the
stall grows with the model. A CPU snapshot takes a fraction of the time; the write itself can
run in the background while training continues.

## Example
```python
for step, (x, y) in enumerate(loader):
    ...
    opt.step()
    torch.save({"model": model.state_dict(), "step": step}, "latest.pt")
```

## Use instead
```python
for step, (x, y) in enumerate(loader):
    ...
    opt.step()
    if step % save_every == 0:
        _trainlint_async_save(torch.save, {"model": model.state_dict(), "step": step}, "latest.pt")
```
`_trainlint_async_save` (added once per module by the fix) copies every tensor to the CPU before
it returns, then writes in a background thread; a save first waits for the previous one, and the
fix calls `_trainlint_wait_for_save()` right after the loop (after the outermost loop around it in
its function, such as the epoch loop, unless that loop's other code uses the file or loads a
checkpoint), after the loop around a call of the save function outside the hot loop (a save per
epoch), right after each call that runs once, outside any loop (a final `save(model, "final.pt")`:
where no statement can follow it, `return save(...)`, no background write is offered), before a
`return` inside it or in
its `else:`, before every `os._exit(...)` in the module (a time budget in the loop, a signal
handler that saves then exits: it ends the process without waiting for the thread; `sys.exit`
does wait), first in every function the module registers with `signal.signal` (a preemption
handler that saves the same file would otherwise write it while the background write still
does), and first in each `except` and `finally` of a `try` around the
loop in its function, or around a call of that function in the module (a few calls up), so that
whatever runs after the loop, or after an error or interrupt leaves it (a final save to the same
file, a load, an archive, `os._exit`), finds the last file complete. A caller in another module
that catches an error from the loop gets no wait: that is the one way out of the loop not covered
(an uncaught error ends the process, which waits for the thread). For sharded state use
`torch.distributed.checkpoint.async_save`.

## Fix safety
Unsafe. The file written holds exactly the state of the step that saved it (tensors are copied
before training continues), but it appears on disk later (by the end of the loop), and an error
while writing surfaces at the next save or after the loop; where no wait follows the last save (in
a framework's step hook), at exit: the writing thread prints its traceback and,
once the script's own exit handlers have run, the process exits with status 1 (where the blocking
save would have raised; a script that ends normally otherwise exits 0 as before). A save inside a
`try` (in its function, or around the call of the module's save function) whose handler may catch
its error and carry on is not made asynchronous, since the error would come outside the `try`;
handlers of only `KeyboardInterrupt`/`SystemExit`, or ending in a bare `raise`, do not count. Nor is
a save made asynchronous when its path is built from a name that a `with` around it (or around a
call that leads to it, the path followed through parameters) binds: `with
tempfile.TemporaryDirectory() as out:` removes the folder on exit, which could come while the last
write still runs, and any other `with` may likewise close or move what it bound. Nor when the end
of its statement tells others the file is written: it stands in a `with` that binds nothing (other
than `torch.no_grad()`, autocast and the like: `with lock:`, under which an actor loads the file)
or a barrier follows it in the loop (`dist.barrier()`, `accelerator.wait_for_everyone()`, after
which other ranks load it). A per-step save with no interval is moved under `if <step> % <interval> == 0:`,
with the script's own save interval if it has one (that of another save in the same loop, such
as `if step % 500 == 0:`, else a save-interval setting such as `args.save_steps`, also one the script's `add_argument` defines
and its code never reads, where the loop sees the parsed namespace: one parsed under `if __name__ ==
"__main__":` only where the loop's function reads that name already), else the
`save-every` option (in a framework's hook, under its step counter: `trainer.global_step`,
`state.global_step`; a save alone under a rank test joins it: `if rank == 0 and step % 1000 == 0:`): fewer checkpoints, so the last steps before a crash are not saved. In
`for i in range(n):` the guard also holds on the last step (`or i == n - 1`), so the file ends with
the state the loop ends with; in other loops (over a loader, `while`, a `range` loop that may
`break`) the save runs once more after the outermost loop, after the wait, as written (blocking,
under the `if`s it stood under in the loop, such as `if rank == 0:`; a save function's call, itself
written in the background, before the wait). Where that final save cannot be written (it reads a
name only the loop binds, such as the batch or the loop's own index, unbound after a loop that ran
no step; a `return` or `yield` in the loop would skip it; a `break` may end the loop after a state
it did not save (an early stop keeps the last good checkpoint); something other than logging or
other saves follows the save in the loop (a scheduler's per-epoch step, a `dist.barrier()`, a
loop's `else:`), so the final state would differ from the loop's last save; it runs on the
optimizer steps of gradient accumulation, where the final state could follow micro-batches no
step applied; it stands in a `try` in the loop; in a framework's step hook, which has no end of
the loop; in a method the file's loop calls through a call that runs other methods too, such as
`cb.on_step_end(...)` over a list of several callback classes, where an interval would skip the
others), the save is not put under an interval: it is only made asynchronous where it stands,
if it can be, and the message says why. So is a save that
shares its line with other statements (`loss.backward(); opt.step(); torch.save(...)`: a guard
around the line would skip the step too). The call of a save function of the module is put under
the interval only when the function does nothing but the save (and what serves it: building its
state or path in local names, `os.makedirs`, printing or logging, and moving the file it wrote
into place, `os.replace(tmp, path)` of an atomic write); one that does other work too
(an EMA update, `self.seen += 1`) gets the interval around the save inside it, on the parameter
every call hands the loop's counter to, with the save itself written once more after the loop
(never the function called again, which would redo its work); that final save reads the
function's parameters as what the call hands them (a name, a dotted name or a literal; `self` as
the call's receiver: `self.ckpt.path`). Where that cannot be (no such parameter; the save reads
other names of the function, which a final save after the loop cannot read; the function does more
than log or save after its save, so that after the loop what it reads would hold a state its last
save did not write), its save is only made asynchronous, and the message says why. The guard goes around a `with` that holds only the save (`with open(path, "wb") as f:
torch.save(state, f)`: inside it, the file would still be created, empty, on every step); a save
inside a `with` that holds more and binds a name the save reads (`as f`) is not fixed. A save that
already runs every N steps (also in the `else:` of `if step % n:`) keeps its
guard and is only made asynchronous. One in the body of `if step % n:` (or `step % n != 0`,
`(step + 1) % n > 0`), which holds on all steps but one in N, is reported as saving on those
steps and is only made asynchronous too: an interval inside that test could hold on no step. Whole modules or
optimizers passed to `torch.save` get no background write (the helper could not snapshot them and
would save them blocking, as before: the message says to save the `state_dict()`; one on every
step is only put under the interval), and so are saves into file objects:
one a `with` binds (`as f`), a name assigned `open(...)`/`io.BytesIO()` (also in a tuple
assignment: `best_loss, best = loss, io.BytesIO()`), or one of those in the call, is only put under the interval, with no background write promised; one under an interval
already is reported without the background-thread advice, and one into an `io.BytesIO()` under
an interval (an in-memory copy, such as the best weights) is not reported: nothing is written. `model.save_pretrained(out)` is made asynchronous
(writing `state_dict=model.state_dict()` from the snapshot) only on a model known to be
transformers' (made by `from_pretrained`/`from_config` of a transformers class, or a class of the
module subclassing one, also through `accelerator.unwrap_model`), in a module that imports none of
diffusers, PEFT or sentence-transformers, whose `save_pretrained` ignores or rejects `state_dict=`
(a diffusers UNet, or a huggingface_hub `PyTorchModelHubMixin` model, would be written live while
training goes on). safetensors' `save_file` is made asynchronous as `torch.save` is; its
`save_model` is not (handed the live module). The snapshot copies each storage once and keeps
every tensor the same view of its copy, so tensors that shared memory (tied weights) still do:
`torch.save` writes them once, as before, and `save_file` refuses them as before (raised by the
next save or the wait). A copy of a GPU storage is written with its storage's device, so
`torch.load` without `map_location` puts it back on the GPU, as it did a blocking save's (state
loaded by hand, such as an EMA dict, stays where the training expects it). `accelerator.save_state`,
`fabric.save`, `trainer.save_checkpoint` and DeepSpeed's `save_checkpoint` (which may gather
across ranks) are only moved under an interval, never made asynchronous (for Lightning the
message names its `AsyncCheckpointIO` plugin, a change to how the Trainer is built; for DeepSpeed
its asynchronous checkpoint engines, chosen in its configuration); no asynchronous fix is offered when a function
the loop calls loads a checkpoint (or, where no wait can follow every call that reaches the save,
a load after the loop), nor in a generator that yields inside the loop (its caller may read the file
between two steps; waiting before each `yield` would wait for nearly every write at once) or a
coroutine that awaits in it or steps it with `async for` (other tasks run there, and a wait would
block the event loop), nor
when a call after the save, while the loop runs, lists the folder the file is in
(`max(out.glob("*.pt"), key=os.path.getmtime)`, `os.listdir(out)`, `glob.glob(f"{out}/*.pt")`: it
would miss the file or find it partial; a keep-last-N rotation, a `for` over the listing that only
deletes files, still gets the fix: the file being written is the newest, which it keeps, though
a listing taken before the write opens it may keep one more file until the next pass), or is
handed the path it writes, which it may read, copy, move or upload before the background write is done: an argument, or the object of a method, built
from all the parts of the save's file (or folder) argument (its variables and the components of
its strings, a variable taken with the values assigned to it): `os.replace(tmp, path)`,
`shutil.copyfile(filename, best)`, `tmp.rename(path)`, `upload(str(path))`, and
`copyfile(os.path.join(out, "last.pt"), best)`, `f"{out}/last.pt"` or `str(out) + "/last.pt"`
after a save into `ckpt = os.path.join(out, "last.pt")` (another file of the folder,
`os.path.join(out, "metrics.json")`, is not the one written), later in the
save's function or, for a save in a function of the module, in its callers after the call (a
parameter followed to the argument passed for it; a returned path to the name the call's value
is assigned to, or the call handed it). Print and log calls (though not a call in their
arguments that reads the file: `os.path.getsize(path)`, `open(path)`), a list or set the module
makes keeping the path (`saved.append(path)`), `str(path)` and the like, other saves
(`tokenizer.save_pretrained(out)`, a call of the module's own save function) and `os.makedirs`
or `mkdir` do not count; a path built from it elsewhere
(`os.path.join(out, "x")` outside a save) does. A per-step save whose file is used that way is
moved under the interval together with the statements right after it that use the file (up to
three: `if step % 1000 == 0:` around `torch.save(state, tmp)` and `os.replace(tmp, path)`), or
not fixed when such a use on every step is elsewhere. A save whose statement assigns a name read
elsewhere in the loop on every step (`last = save_ckpt(model, step)`, then `saved.append(last)`) is
not put under an interval (the name would hold an older value on the steps it skips): it is only
made asynchronous, where it stands. Where a save is not made asynchronous, its
message offers no background write and says what stops it (the call that uses the file, the
handler that carries on, the `with` that may tear the path down, the file object, the library),
and whether the fix still moves the save under an interval.
"""
    valid = [
        # A parameter the calls hand different objects (here None too) is not taken for the
        # checkpointer: which `save` runs is unknown.
        Valid(_PASSED_CHECKPOINTER.format(head="", save=_SAVE_PATH, annotation="",
                                          call="ckpt.save(model)", calls="train(model, opt, loader, Checkpointer('a.pt'))\n"
                                          "train(model, opt, loader, None)\n")),
        # A list of callbacks holding one the file does not make: which `on_step_end` runs is
        # unknown, so the loop over it is not followed to Saver's save.
        Valid(_CALLBACK_LIST.format(head="", base="", save=_SAVE_TRAINER,
                                    other="", elements="Saver(), make_callback()", call="cb.on_step_end(self, step)",
                                    wait="")),
        Valid(in_training_loop("pass") + "torch.save(model.state_dict(), 'final.pt')\n"),
        Valid("import torch\nfor epoch in range(10):\n    for x, y in loader:\n        loss = model(x, y)\n"
              "        loss.backward()\n        opt.step()\n    torch.save(model.state_dict(), f'epoch{epoch}.pt')\n"),
        Valid(in_training_loop("tokenizer.save_pretrained(out_dir)")),
        # An in-memory copy now and then (the best weights, read back at once): nothing is written.
        Valid("import io\n" + in_training_loop("if step % 50 == 0:\n    with io.BytesIO() as b:\n"
                                                "        torch.save(model.state_dict(), b)\n        b.seek(0)\n"
                                                "        best = torch.load(b)")),
        # ... also a buffer assigned in a tuple assignment.
        Valid("import io\n" + in_training_loop("if step % 100 == 0 and val_loss < best_loss:\n"
                                                "    best_loss, best_weights = val_loss, io.BytesIO()\n"
                                                "    torch.save(model.state_dict(), best_weights)")),
        Valid(in_training_loop("if step == max_steps - 1:\n    torch.save(model.state_dict(), 'last.pt')")),
        Valid(in_training_loop("if step in {1000, 5000}:\n    torch.save(model.state_dict(), f'{step}.pt')")),
        # ... also where a save function of the module decides it, called each step (before: reported,
        # "under conditions of its own"): under `if step == 0:`, after `if step != 0: return`, or
        # through a second function.
        Valid("import torch\ndef maybe_save(step):\n    if step == 0:\n        torch.save(model.state_dict(), 'first.pt')\n"
              + in_training_loop("maybe_save(step)").partition("\n")[2]),
        Valid("import torch\ndef maybe_save(step):\n    if step != 0:\n        return\n"
              "    torch.save(model.state_dict(), 'first.pt')\n" + in_training_loop("maybe_save(step)").partition("\n")[2]),
        Valid("import torch\ndef save_ckpt(path):\n    torch.save(model.state_dict(), path)\n"
              "def maybe_save(step):\n    if step == 0:\n        save_ckpt('first.pt')\n"
              + in_training_loop("maybe_save(step)").partition("\n")[2]),
        Valid(in_training_loop("if step % 100 == 0:\n    _trainlint_async_save(torch.save, model.state_dict(), 'ckpt.pt')")),
        Valid("import torch\nwith torch.no_grad():\n    for x in val_loader:\n        torch.save(model(x), 'pred.pt')\n"),
        # Another library's trainer: not Lightning's save_checkpoint.
        Valid(in_training_loop("if step % 100 == 0:\n    trainer.save_checkpoint('x')")),
        # Once per epoch, from a Lightning hook that is not a per-step one.
        Valid("import torch\nimport lightning as L\nclass Save(L.Callback):\n"
              "    def on_train_epoch_end(self, trainer, module):\n        torch.save(module.state_dict(), 'e.pt')\n"),
    ]
    invalid = [
        # No final save after a loop that may `break` (an early stop keeps the last good state,
        # which a final save overwrote with the diverged one), nor where something follows the
        # save in the loop (the scheduler's per-epoch step: the final file held one step more;
        # a `dist.barrier()`, after which other ranks read the file). Only the background write.
        Invalid("import torch\nstep = 0\nfor x, y in loader:\n    model(x, y).backward()\n    opt.step()\n"
                "    if diverged(model):\n        break\n    step += 1\n    torch.save(model.state_dict(), 'l.pt')\n",
                fixed=_fixed("import torch\nstep = 0\nfor x, y in loader:\n    model(x, y).backward()\n    opt.step()\n"
                             "    if diverged(model):\n        break\n    step += 1\n"
                             "    _trainlint_async_save(torch.save, model.state_dict(), 'l.pt')\n"),
                message="not saved under an interval: the end of training would go unsaved (a `break` may leave"),
        Invalid("import torch\nstep = 0\nfor epoch in range(3):\n    for x, y in loader:\n        model(x, y).backward()\n"
                "        opt.step()\n        step += 1\n        torch.save([step, sched.state_dict()], 's.pt')\n    sched.step()\n",
                fixed=_fixed("import torch\nstep = 0\nfor epoch in range(3):\n    for x, y in loader:\n        model(x, y).backward()\n"
                             "        opt.step()\n        step += 1\n"
                             "        _trainlint_async_save(torch.save, [step, sched.state_dict()], 's.pt')\n"
                             "    sched.step()\n"),
                message="(`sched.step()` follows the save in the loop"),
        # ... and a barrier after the save tells the other ranks the file is written: no
        # background write either (other ranks loaded a partial file), so no fix.
        Invalid("import torch\nimport torch.distributed as dist\nfor x, y in loader:\n    model(x, y).backward()\n"
                "    opt.step()\n    if rank == 0:\n        torch.save(model.state_dict(), 'shared.pt')\n    dist.barrier()\n",
                fixed=NO_FIX, message="`dist.barrier()` after it tells other processes the file is written"),
        # A save inside `with lock:` (an actor loads the file under the same lock): a background
        # write would leave the lock before the file is complete (the actor read partial files).
        Invalid(in_training_loop("if step % 2 == 0:\n    with lock:\n        torch.save(model.state_dict(), 'policy.pt')"),
                fixed=NO_FIX, message="it stands in `with lock:`, whose end would come before a background write is done"),
        # A save sharing its line with the step (`loss.backward(); opt.step(); torch.save(...)`):
        # the guard went around the whole line, so the model trained on the saving steps only.
        Invalid("import torch\nfor i in range(20):\n    loss = model(x).sum()\n"
                "    loss.backward(); opt.step(); torch.save(model.state_dict(), 'last.pt')\n",
                fixed="import torch\n" + HELPER_CODE + "\n\nfor i in range(20):\n    loss = model(x).sum()\n"
                "    loss.backward(); opt.step(); _trainlint_async_save(torch.save, model.state_dict(), 'last.pt')\n"
                "_trainlint_wait_for_save()\n",
                message="not saved under an interval: the save shares its line with other statements"),
        # A save through an object the trainer keeps (`self.ckpt = Checkpointer(...)`, its only
        # binding) runs on every step: it was not followed, and the per-step save went unreported.
        _through_object(_KEPT_CHECKPOINTER, _SAVE_PATH, call="self.ckpt.save(self.model, step)", wait="",
                        fixed={"call": "if step % 1000 == 0 or step == 9:\n                self.ckpt.save(self.model, step)",
                               "wait": _WAIT_IN_METHOD},
                        message="`save()` (which calls `torch.save`) writes a checkpoint on every training step"),
        # A callback in a list the trainer's loop goes over (`for cb in self.callbacks:`): the
        # interval goes around the call, as for `self.ckpt.save(...)`.
        _through_object(_CALLBACK_LIST, _SAVE_TRAINER, base="", other="", elements="Saver()",
                        call="cb.on_step_end(self, step)", wait="", fixed=_CALLBACK_GUARDED,
                        message="`on_step_end()` (which calls `torch.save`) writes a checkpoint on every training step"),
        # ... also a TrainerCallback's hook, which the file's own loop calls: it was taken for one
        # only transformers' Trainer calls, and was not put under an interval (the message said
        # "a framework calls it").
        _through_object(_CALLBACK_LIST, _SAVE_TRAINER, head="from transformers import TrainerCallback\n",
                        base="(TrainerCallback)", other="", elements="Saver()", call="cb.on_step_end(self, step)",
                        wait="", fixed=_CALLBACK_GUARDED, message="save every `1000` steps and at the last step"),
        # ... beside another callback: an interval around the call would skip the logger's
        # `on_step_end` too, so only the save is made asynchronous. The message said a framework
        # calls it, where the file's own loop does.
        _through_object(_CALLBACK_LIST, _SAVE_TRAINER, base="", other=_LOSS_LOGGER, elements="LossLogger(), Saver()",
                        call="cb.on_step_end(self, step)", wait="", fixed={},
                        message="not saved under an interval: the end of training would go unsaved (`Saver.on_step_end()` "
                        "is called on every step by `cb.on_step_end(self, step)` in the file's loop, and an interval "
                        "around it would skip the other `on_step_end()` methods it may call too"),
        # A callback set late (None in `__init__`, an instance in `setup()`), tested `is not None`
        # before its call: that test is no step condition. It was taken for one, and the save was
        # only written in the background "under `self.cb is not None`", not every N steps.
        _through_object(_LATE_CALLBACK, _SAVE_TRAINER, call="self.cb.on_step_end(self, step)", wait="",
                        fixed={"call": "if step % 1000 == 0 or step == 9:\n                    self.cb.on_step_end(self, step)",
                               "wait": _WAIT_IN_METHOD},
                        message="save every `1000` steps and at the last step"),
        # A checkpointer handed in as a parameter, every call passing one of the file's class
        # (or the parameter annotated with it): its save runs on every step, but a parameter's
        # object was not followed and the save went unreported.
        *[_through_object(_PASSED_CHECKPOINTER, _SAVE_PATH, annotation=annotation, call="ckpt.save(model)", calls=calls,
                          fixed={"call": "if step % 1000 == 0:\n            ckpt.save(model)",
                                 "calls": "    ckpt.save(model)\n    _trainlint_wait_for_save()\n" + calls},
                          message="`save()` (which calls `torch.save`) writes a checkpoint on every training step")
          for annotation, calls in [("", "train(model, opt, loader, Checkpointer('last.pt'))\n"),
                                    ("", "ckpt = Checkpointer('last.pt')\ntrain(model, opt, loader, ckpt)\n"),
                                    (": 'Checkpointer'", "")]],
        # ... the method's caller and its caller handed both objects down (`main(Runner(),
        # Checkpointer(...))`): the parameters' classes were cut at the depth first asked, and the
        # save went unreported.
        _through_object(_HANDED_DOWN_CHECKPOINTER, _SAVE_PATH, call="ckpt.save(model)", after="",
                        fixed={"call": "if step % 1000 == 0:\n                ckpt.save(model)",
                               "after": "        ckpt.save(model)\n        _trainlint_wait_for_save()\n"},
                        message="`save()` (which calls `torch.save`) writes a checkpoint on every training step"),
        # The save function's parameters read as what the call hands them (`step`, the trainer's
        # own counter, still bound after the loop; `self` as `self.ckpt`): the final save after
        # the loop can be written. It was refused as unable to read `model` (or `step`) there.
        Invalid(_COUNTING_CHECKPOINTER.format(head="", work="self.saves += 1",
                                              save="torch.save([model.state_dict(), step], self.path)", final=""),
                fixed=_COUNTING_CHECKPOINTER.format(
                    head=HELPER_CODE + "\n\n", work="self.saves += 1",
                    save="if step % 1000 == 0:\n            _trainlint_async_save(torch.save, [model.state_dict(), step], self.path)",
                    final="        _trainlint_wait_for_save()\n"
                          "        torch.save([self.model.state_dict(), step], self.ckpt.path)\n"),
                message="save every `1000` steps inside `save()`, and once more after the loop"),
        # ... but not where the function's work follows its save: after the loop, the objects it
        # reads would hold a state the loop's last save did not write (here the next file's name).
        # The message says so, rather than that the names cannot be read there.
        Invalid(_COUNTING_CHECKPOINTER.format(head="", save="self.path = f'{step}.pt'",
                                              work="torch.save([model.state_dict(), step], self.path)", final=""),
                fixed=_COUNTING_CHECKPOINTER.format(
                    head=HELPER_CODE + "\n\n", save="self.path = f'{step}.pt'",
                    work="_trainlint_async_save(torch.save, [model.state_dict(), step], self.path)",
                    final="        _trainlint_wait_for_save()\n"),
                message="a final save after the loop would not match its last save (`self.path = f'{step}.pt'` "
                        "follows the save inside it)"),
        # Keeping the path in a container reads no file: `seen.add(path)` was taken for a use of
        # it and moved under the interval with the save (the set lost the other steps' paths).
        Invalid("import torch\nseen = set()\nfor step in range(10):\n    model(x).sum().backward()\n    opt.step()\n"
                "    path = f'ck{step % 2}.pt'\n    torch.save(model.state_dict(), path)\n    seen.add(path)\n",
                fixed=_fixed("import torch\nseen = set()\nfor step in range(10):\n    model(x).sum().backward()\n"
                             "    opt.step()\n    path = f'ck{step % 2}.pt'\n    if step % 1000 == 0 or step == 9:\n"
                             "        _trainlint_async_save(torch.save, model.state_dict(), path)\n    seen.add(path)\n"),
                message="save every `1000` steps"),
        # The save function's value (its path) kept on every step: `saved.append(last)` is no use of
        # the file (it was: the two went under the interval together, and `saved` held 2 paths,
        # not 10), and the save's statement stays where it is (under an interval, `last` would
        # hold an older path on the steps it skips): only the background write.
        Invalid("import torch\ndef save_ckpt(model, step):\n    path = f'ck{step}.pt'\n"
                "    torch.save(model.state_dict(), path)\n    return path\nsaved = []\nfor step in range(10):\n"
                "    model(x).sum().backward()\n    opt.step()\n    last = save_ckpt(model, step)\n    saved.append(last)\n",
                fixed=_fixed("import torch\ndef save_ckpt(model, step):\n    path = f'ck{step}.pt'\n"
                             "    _trainlint_async_save(torch.save, model.state_dict(), path)\n    return path\nsaved = []\n"
                             "for step in range(10):\n    model(x).sum().backward()\n    opt.step()\n"
                             "    last = save_ckpt(model, step)\n    saved.append(last)\n"),
                message="not saved under an interval: `last`, which the save's statement assigns, is read on every "
                        "step (in `saved.append(last)`)"),
        # The loop steps through a helper: the function holding it trains, its save is a site (it
        # was taken for a helper that saves, and fit() is called nowhere here).
        Invalid("import torch\ndef train_step(model, opt, x, y):\n    model(x, y).backward()\n    opt.step()\n"
                "def fit(model, opt, loader):\n    for step, (x, y) in enumerate(loader):\n"
                "        train_step(model, opt, x, y)\n        if step % 100 == 0:\n"
                "            torch.save(model.state_dict(), f'ckpt{step}.pt')\n",
                fixed="import torch\n" + HELPER_CODE + "\n\ndef train_step(model, opt, x, y):\n"
                "    model(x, y).backward()\n    opt.step()\ndef fit(model, opt, loader):\n    for step, (x, y) in enumerate(loader):\n"
                "        train_step(model, opt, x, y)\n        if step % 100 == 0:\n"
                "            _trainlint_async_save(torch.save, model.state_dict(), f'ckpt{step}.pt')\n"
                "    _trainlint_wait_for_save()\n",
                message="under `step % 100 == 0`"),
        # On all steps but one in N (the `else:` of the remainder test is the limited branch):
        # reported as such; made asynchronous where it stands, not put under an interval inside
        # the test (`step % 1000 == 0` under `step % 50 != 0` would hold on no step).
        Invalid(in_training_loop("if step % 50 != 0:\n    torch.save(model.state_dict(), 'latest.pt')"),
                fixed=_fixed(in_training_loop("if step % 50 != 0:\n    _trainlint_async_save(torch.save, "
                                              "model.state_dict(), 'latest.pt')")),
                message="on all training steps but one in N (under `step % 50 != 0`)"),
        # Per step in an epoch's loop, to a file the loop does not name anew: saved once after the
        # loop, which leaves each file as it was left (under an interval, each epoch's file held its
        # first step's weights, and the last one was never written).
        Invalid("import torch\nfor epoch in range(3):\n    for i, (x,) in enumerate(loader):\n        model(x).backward()\n"
                "        opt.step()\n        torch.save(model.state_dict(), f'model_epoch{epoch}.pt')\n",
                fixed="import torch\nfor epoch in range(3):\n    for i, (x,) in enumerate(loader):\n        model(x).backward()\n"
                "        opt.step()\n    torch.save(model.state_dict(), f'model_epoch{epoch}.pt')\n",
                message="save it once, after the loop"),
        # ... not when it reads what the loop binds, nor when the loop may skip it.
        Invalid("import torch\nfor epoch in range(3):\n    for i, (x,) in enumerate(loader):\n        loss = model(x)\n"
                "        loss.backward()\n        opt.step()\n        torch.save({'loss': loss}, f'e{epoch}.pt')\n",
                # (under an interval, no save after the loop could write the last `loss`: bound only in it)
                message="not saved under an interval: the end of training would go unsaved (a final save after the "
                        "loop would read `loss`, which only the loop binds"),
        Invalid("import torch\nfor epoch in range(3):\n    for i, (x,) in enumerate(loader):\n        if x is None:\n"
                "            continue\n        model(x).backward()\n        opt.step()\n        torch.save(model.state_dict(), 'e.pt')\n",
                message="save every `1000` steps"),
        # Per step: moved under an interval and made asynchronous; saved once more after the loop,
        # after the wait, as written (the interval alone left a loader's loop of fewer than 1000
        # steps with no checkpoint at all, and a longer one with a stale one).
        Invalid(in_training_loop("torch.save(model.state_dict(), 'latest.pt')"),
                fixed=_fixed(in_training_loop("if step % 1000 == 0:\n    _trainlint_async_save(torch.save, model.state_dict(), "
                                   "'latest.pt')"), final="torch.save(model.state_dict(), 'latest.pt')\n"),
                message="every training step and training waits for it; save every `1000` steps, and once more after "
                        "the loop, from a CPU snapshot written in a background thread"),
        # Over a loader, in an epoch loop, a counter set before the loops: the interval alone left
        # no checkpoint at all in a run of 24 steps (the resume file the script kept current was
        # missing). After the outer loop: the wait, then the save as written, once (one wait: it
        # was written after the inner loop too, though nothing between reads the file).
        Invalid("import torch\nstep = 0\nfor epoch in range(3):\n    for x, y in loader:\n        model(x, y).backward()\n"
                "        opt.step()\n        step += 1\n        torch.save({'model': model.state_dict(), 'step': step}, 'last.pt')\n",
                fixed=_fixed("import torch\nstep = 0\nfor epoch in range(3):\n    for x, y in loader:\n"
                             "        model(x, y).backward()\n        opt.step()\n        step += 1\n"
                             "        if step % 1000 == 0:\n            _trainlint_async_save(\n"
                             "                torch.save, {'model': model.state_dict(), 'step': step}, 'last.pt'\n"
                             "            )\n",
                             final="torch.save({'model': model.state_dict(), 'step': step}, 'last.pt')\n"),
                message="save every `1000` steps, and once more after the loop"),
        # ... but where the epoch loop uses the file after the steps (`evaluate('l.pt')`), the wait
        # stays after the inner loop, before that use.
        Invalid("import torch\nstep = 0\nfor epoch in range(3):\n    for x, y in loader:\n        model(x, y).backward()\n"
                "        opt.step()\n        step += 1\n        torch.save([step, model.state_dict()], 'l.pt')\n"
                "    evaluate('l.pt')\n",
                fixed="import torch\n" + HELPER_CODE + "\n\nstep = 0\nfor epoch in range(3):\n    for x, y in loader:\n"
                "        model(x, y).backward()\n        opt.step()\n        step += 1\n"
                "        _trainlint_async_save(torch.save, [step, model.state_dict()], 'l.pt')\n"
                "    _trainlint_wait_for_save()\n    evaluate('l.pt')\n",
                message="from a CPU snapshot"),
        # A save alone under a rank test: the interval joins that test (it was written as a second
        # `if` directly inside it); an `or` in the interval is parenthesised.
        Invalid("import torch\nfor step in range(10):\n    model(x).sum().backward()\n    opt.step()\n"
                "    if rank == 0:\n        torch.save(model.state_dict(), 'l.pt')\n",
                fixed=_fixed("import torch\nfor step in range(10):\n    model(x).sum().backward()\n    opt.step()\n"
                             "    if rank == 0 and (step % 1000 == 0 or step == 9):\n"
                             "        _trainlint_async_save(torch.save, model.state_dict(), 'l.pt')\n"),
                message="save every `1000` steps and at the last step"),
        # ... a `while` loop alike.
        Invalid("import torch\nstep = 0\nwhile step < max_steps:\n    model(x).backward()\n    opt.step()\n"
                "    step += 1\n    torch.save(model.state_dict(), 'last.pt')\n",
                fixed=_fixed("import torch\nstep = 0\nwhile step < max_steps:\n    model(x).backward()\n    opt.step()\n"
                             "    step += 1\n    if step % 1000 == 0:\n"
                             "        _trainlint_async_save(torch.save, model.state_dict(), 'last.pt')\n",
                             final="torch.save(model.state_dict(), 'last.pt')\n")),
        # ... reading the loop's `batch`, unbound after a loop that ran no step: no interval, the
        # save only made asynchronous where it stands.
        Invalid(in_training_loop("torch.save({'model': model.state_dict(), 'batch': x}, 'last.pt')"),
                fixed=_fixed(in_training_loop("_trainlint_async_save(\n    torch.save, {'model': model.state_dict(), "
                                              "'batch': x}, 'last.pt'\n)")),
                message="not saved under an interval: the end of training would go unsaved (a final save after the "
                        "loop would read `x`, which only the loop binds (unbound after a loop that ran no step)); the "
                        "fix writes it from a CPU snapshot in a background thread, where it stands"),
        # ... under `if rank == 0:` (and the `else:` of another test): the final save keeps them.
        Invalid(in_training_loop("if skip or debug:\n    pass\nelif rank == 0:\n    torch.save(model.state_dict(), 'last.pt')"),
                fixed=_fixed(in_training_loop("if skip or debug:\n    pass\nelif rank == 0:\n    if step % 1000 == 0:\n"
                                              "        _trainlint_async_save(torch.save, model.state_dict(), 'last.pt')"),
                             final="if not (skip or debug):\n    if rank == 0:\n"
                                   "        torch.save(model.state_dict(), 'last.pt')\n")),
        # ... two saves of one loop: each saved after the one wait, in the loop's order.
        Invalid(in_training_loop("torch.save(model.state_dict(), 'a.pt')\ntorch.save(opt.state_dict(), 'b.pt')"),
                fixed=_fixed(in_training_loop("if step % 1000 == 0:\n    _trainlint_async_save(torch.save, model.state_dict(), "
                                              "'a.pt')\nif step % 1000 == 0:\n    _trainlint_async_save(torch.save, "
                                              "opt.state_dict(), 'b.pt')"),
                             final="torch.save(model.state_dict(), 'a.pt')\ntorch.save(opt.state_dict(), 'b.pt')\n")),
        # ... a save function that writes under a temporary name and publishes the file
        # (`os.replace(tmp, path)`, an atomic write): the move is the save's second half, skipped
        # with it between saves; the call goes under the interval, written once more after the
        # loop, in the foreground (the move uses the file). It was refused as other work.
        Invalid(_ATOMIC_HELPER.format(publish="os.replace(tmp, path)")
                + in_training_loop("save_ckpt('last.pt')").partition("\n")[2],
                fixed=_ATOMIC_HELPER.format(publish="os.replace(tmp, path)")
                + in_training_loop("if step % 1000 == 0:\n    save_ckpt('last.pt')").partition("\n")[2]
                + "save_ckpt('last.pt')\n"),
        # ... a move of another file is other work: kept on every step.
        Invalid(_ATOMIC_HELPER.format(publish="os.replace('run.log', 'run.old.log')")
                + in_training_loop("save_ckpt('last.pt')").partition("\n")[2],
                message="does other work besides the save (`os.replace('run.log', 'run.old.log')`)"),
        # ... a save function, itself written in the background: called once more before the wait.
        Invalid("import torch\ndef save_ckpt(path):\n    torch.save(model.state_dict(), path)\n"
                + in_training_loop("save_ckpt('last.pt')").partition("\n")[2],
                fixed="import torch\n" + HELPER_CODE + "\n\ndef save_ckpt(path):\n"
                "    _trainlint_async_save(torch.save, model.state_dict(), path)\n"
                + in_training_loop("if step % 1000 == 0:\n    save_ckpt('last.pt')").partition("\n")[2]
                + "save_ckpt('last.pt')\n_trainlint_wait_for_save()\n"),
        # A save function that does other work besides the save (an EMA update): an interval
        # around its call skipped that work too (the EMA was updated 2 times of 10, and its file
        # held another state). The interval goes inside, and the final save after the loop reads
        # `self` as the call's receiver, `ema` (it was refused as unable to read `self` there, and
        # the save only made asynchronous where it stood).
        Invalid("import torch\nclass EMA:\n    def after_step(self, model, step):\n"
                "        for s, p in zip(self.shadow, model.parameters()):\n            s.lerp_(p.detach(), 0.1)\n"
                "        torch.save(self.shadow, 'ema.pt')\nema = EMA()\n"
                + in_training_loop("ema.after_step(model, step)").partition("\n")[2],
                fixed="import torch\n" + HELPER_CODE + "\n\nclass EMA:\n    def after_step(self, model, step):\n"
                "        for s, p in zip(self.shadow, model.parameters()):\n            s.lerp_(p.detach(), 0.1)\n"
                "        if step % 1000 == 0:\n            _trainlint_async_save(torch.save, self.shadow, 'ema.pt')\nema = EMA()\n"
                + in_training_loop("ema.after_step(model, step)").partition("\n")[2]
                + "_trainlint_wait_for_save()\ntorch.save(ema.shadow, 'ema.pt')\n",
                message="save every `1000` steps inside `after_step()`, and once more after the loop"),
        # ... a callback counting its calls (`self.seen += 1`, once run 2 times of 10) with no
        # parameter the loop's counter is handed to: the same.
        Invalid("import torch\nclass Cb:\n    def on_step_end(self, model):\n        self.seen += 1\n"
                "        torch.save(model.state_dict(), 'last.pt')\ncb = Cb()\n"
                + in_training_loop("cb.on_step_end(model)").partition("\n")[2],
                message="`on_step_end()` does other work besides the save (`self.seen += 1`), which an interval around "
                        "its call would skip too, and no interval could test the loop's counter around the save inside it"),
        # ... a function whose save reads only the module's names, handed the loop's counter: the
        # interval goes around the save inside it, on that parameter, and the save (not the
        # function, whose other work would run once more) is written once more after the loop.
        Invalid("import torch\nSAVE_EVERY = 4\ndef after_step(i):\n    ema.update(model)\n"
                "    torch.save(ema.state_dict(), 'ema.pt')\n"
                + in_training_loop("after_step(step)").partition("\n")[2],
                fixed="import torch\n" + HELPER_CODE + "\n\nSAVE_EVERY = 4\ndef after_step(i):\n    ema.update(model)\n"
                "    if i % SAVE_EVERY == 0:\n        _trainlint_async_save(torch.save, ema.state_dict(), 'ema.pt')\n"
                + in_training_loop("after_step(step)").partition("\n")[2]
                + "_trainlint_wait_for_save()\ntorch.save(ema.state_dict(), 'ema.pt')\n",
                message="save every `SAVE_EVERY` steps inside `after_step()`, and once more after the loop"),
        # ... a function that only builds its state and path, makes the folder and prints: its
        # call is still put under the interval (nothing else of it is skipped).
        Invalid("import os\nimport torch\ndef save_ckpt(out):\n    os.makedirs(out, exist_ok=True)\n"
                "    state = {'model': model.state_dict()}\n    path = os.path.join(out, 'last.pt')\n"
                "    torch.save(state, path)\n    print(f'saved {path}')\n"
                + in_training_loop("save_ckpt('out')").partition("\n")[2],
                message="save every `1000` steps, and once more after the loop"),
        # In `for i in range(n):` the guard also holds on the last step: the interval alone left
        # `latest.pt` at step 0 of 50 (a tester's resume file); not with a `break` in the loop,
        # whose last step is not `n - 1`.
        Invalid("import torch\nfor step in range(args.steps):\n    model(x).backward()\n    opt.step()\n"
                "    torch.save({'step': step}, 'latest.pt')\n",
                fixed=_fixed("import torch\nfor step in range(args.steps):\n    model(x).backward()\n    opt.step()\n"
                             "    if step % 1000 == 0 or step == args.steps - 1:\n"
                             "        _trainlint_async_save(torch.save, {'step': step}, 'latest.pt')\n"),
                message="save every `1000` steps and at the last step"),
        # (There no final save after the loop may be written: an early stop keeps the last state
        # it saved, which a final save would overwrite; it would also read `step`, which only the
        # loop binds. No interval, only the background write; the interval alone left the file stale.)
        Invalid("import torch\nfor step in range(n):\n    model(x).backward()\n    opt.step()\n"
                "    torch.save({'step': step}, 'latest.pt')\n    if done():\n        break\n",
                fixed=_fixed("import torch\nfor step in range(n):\n    model(x).backward()\n    opt.step()\n"
                             "    _trainlint_async_save(torch.save, {'step': step}, 'latest.pt')\n"
                             "    if done():\n        break\n"),
                message="not saved under an interval: the end of training would go unsaved (a `break` may leave "
                        "the loop after a state it did not save"),
        # A call laid out by hand around a comment keeps its layout: the lines aligned under its
        # parenthesis move with it, as the head grows and the guard indents it.
        Invalid(in_training_loop("torch.save(model.state_dict(),  # weights only\n           'latest.pt')"),
                fixed=_fixed(in_training_loop("if step % 1000 == 0:\n    _trainlint_async_save(torch.save, "
                                              "model.state_dict(),  # weights only\n" + " " * 26 + "'latest.pt')"),
                             final="torch.save(model.state_dict(),  # weights only\n           'latest.pt')\n")),
        # ... a line inside the first argument moves with it, past the inserted `torch.save, `; the
        # closing parenthesis under the opening one stays under it.
        Invalid(in_training_loop("if step % 100 == 0:\n    torch.save({'model': model.state_dict(),  # weights\n"
                                 + " " * 16 + "'opt': opt.state_dict()},\n" + " " * 15 + "path\n" + " " * 14 + ")"),
                fixed=_fixed(in_training_loop("if step % 100 == 0:\n    _trainlint_async_save(torch.save, {'model': "
                                              "model.state_dict(),  # weights\n" + " " * 39 + "'opt': opt.state_dict()},\n"
                                              + " " * 26 + "path\n" + " " * 25 + ")"))),
        # A call too long for its line once made asynchronous and put under the guard is split as
        # Black splits it: its arguments on a line of their own when they fit there (the line is
        # measured where the call stands: after `state_dict=` was added, it once was not, and the
        # call stayed on a line of 92 characters).
        Invalid(_hf(in_training_loop("model.save_pretrained(out_dir)")),
                fixed=_fixed(_hf(in_training_loop("if step % 1000 == 0:\n    _trainlint_async_save(\n        "
                                                  "model.save_pretrained, out_dir, state_dict=model.state_dict()\n    )")),
                             final="model.save_pretrained(out_dir)\n")),
        Invalid(in_training_loop("torch.save(model.state_dict(), os.path.join(out, 'latest.pt'))"),
                fixed=_fixed(in_training_loop("if step % 1000 == 0:\n    _trainlint_async_save(\n        torch.save, "
                                              "model.state_dict(), os.path.join(out, 'latest.pt')\n    )"),
                             final="torch.save(model.state_dict(), os.path.join(out, 'latest.pt'))\n")),
        # Every N steps, through a module-local helper; the script's interval name is kept.
        Invalid("import torch\ndef save_ckpt(path):\n    torch.save({'model': model.state_dict()}, path)\n"
                + in_training_loop("if step % args.save_steps == 0:\n    save_ckpt(f'ckpt-{step}.pt')").partition("\n")[2],
                fixed="import torch\n" + HELPER_CODE + "\n\ndef save_ckpt(path):\n"
                "    _trainlint_async_save(torch.save, {'model': model.state_dict()}, path)\n"
                + in_training_loop("if step % args.save_steps == 0:\n    save_ckpt(f'ckpt-{step}.pt')").partition("\n")[2]
                + "_trainlint_wait_for_save()\n",
                message="save_ckpt"),
        # A call inside a print or a log line's arguments that reads the file for it uses the file
        # (these were taken for part of the harmless line, and the fixed script raised
        # FileNotFoundError)...
        Invalid("import os\n" + in_training_loop("if step % 100 == 0:\n    path = os.path.join(out, f'step{step}.pt')\n"
                                 "    torch.save(model.state_dict(), path)\n"
                                 "    print(f'saved {path} ({os.path.getsize(path) / 1e6:.2f} MB)')"),
                fixed=NO_FIX, message="`os.path.getsize(path)` uses the file after the save"),
        Invalid(in_training_loop("if step % 100 == 0:\n    torch.save(model.state_dict(), path)\n"
                                 "    print('saved', os.stat(path).st_size)"),
                fixed=NO_FIX, message="`os.stat(path)` uses the file after the save"),
        Invalid(in_training_loop("if step % 100 == 0:\n    torch.save(model.state_dict(), path)\n"
                                 "    logging.info('sha %s', hashlib.sha256(open(path, 'rb').read()))"),
                fixed=NO_FIX, message="`open(path, 'rb')` uses the file after the save"),
        Invalid(in_training_loop("if step % 100 == 0:\n    torch.save(model.state_dict(), path)\n"
                                 "    logger.info('%s %d', path, Path(path).stat().st_size)"),
                fixed=NO_FIX, message="uses the file after the save"),
        # ... while one that only builds the text shown, as the path itself, does not.
        Invalid("import os\n" + in_training_loop("if step % 100 == 0:\n    torch.save(model.state_dict(), path)\n"
                                                "    print(f'saved {os.path.basename(str(path))}', path)"),
                fixed="import os\n" + _fixed(in_training_loop("if step % 100 == 0:\n    _trainlint_async_save(torch.save, "
                                              "model.state_dict(), path)\n"
                                              "    print(f'saved {os.path.basename(str(path))}', path)")),
                message="background"),
        # A call handed a folder the file is in (an archive, an upload of the run's folder) reads
        # the file: no background write (the archive once held a truncated file)...
        Invalid(in_training_loop("if step % 100 == 0:\n    d = f'{out}/step{step}'\n"
                                 "    torch.save(model.state_dict(), d + '/state.pt')\n"
                                 "    shutil.make_archive(d, 'zip', d)"),
                fixed=NO_FIX, message="`shutil.make_archive(d, 'zip', d)` uses the file after the save"),
        Invalid(in_training_loop("if step % 100 == 0:\n    d = f'{out}/step{step}'\n"
                                 "    torch.save(model.state_dict(), f'{d}/state.pt')\n"
                                 "    subprocess.run(['aws', 's3', 'sync', out, dest])"),
                fixed=NO_FIX, message="uses the file after the save"),
        Invalid(in_training_loop("if step % 100 == 0:\n    d = f'{out}/step{step}'\n"
                                 "    torch.save(model.state_dict(), d + '/state.pt')\n"
                                 "    os.system('aws s3 sync ' + d + ' s3://b/run')"),
                fixed=NO_FIX, message="uses the file after the save"),
        Invalid(in_training_loop("if step % 100 == 0:\n    d = f'{out}/step{step}'\n"
                                 "    torch.save(model.state_dict(), d + '/state.pt')\n"
                                 "    with tarfile.open('c.tar', 'w') as tar:\n        tar.add(d)"),
                fixed=NO_FIX, message="`tar.add(d)` uses the file after the save"),
        # ... also through a function of the module archiving the folder it is handed (its archive
        # object named as any other), that function or an uploader handed to a pool or a thread, an
        # upload from an object made in place, a wandb artifact's folder: the archives once held
        # an empty model.pt.
        Invalid("import os\nimport tarfile\nimport torch\ndef publish(folder):\n    with tarfile.open(folder + '.tar', 'w') as tf:\n"
                "        tf.add(folder)\n" + in_training_loop(
                    "if step % 5 == 0:\n    ckdir = f'ckpt/step{step}'\n"
                    "    torch.save(model.state_dict(), os.path.join(ckdir, 'model.pt'))\n    publish(ckdir)")
                .partition("\n")[2], fixed=NO_FIX, message="`publish(ckdir)` uses the file after the save"),
        Invalid(in_training_loop("if step % 5 == 0:\n    torch.save(model.state_dict(), os.path.join(out, 'model.pt'))\n"
                                 "    pool.submit(publish, out)").replace(
                    "import torch\n", "import os\nimport torch\ndef publish(folder):\n    shutil.make_archive(folder, 'zip', folder)\n"),
                fixed=NO_FIX, message="`pool.submit(publish, out)` uses the file after the save"),
        Invalid(in_training_loop("if step % 5 == 0:\n    torch.save(model.state_dict(), os.path.join(out, 'model.pt'))\n"
                                 "    threading.Thread(target=upload_checkpoint, args=(out,)).start()").replace(
                    "import torch\n", "import os\nimport threading\nimport torch\n"),
                fixed=NO_FIX, message="uses the file after the save"),
        Invalid(in_training_loop("if step % 5 == 0:\n    torch.save(model.state_dict(), os.path.join(out, 'model.pt'))\n"
                                 "    HfApi().upload_folder(folder_path=out, repo_id=repo)").replace(
                    "import torch\n", "import os\nimport torch\nfrom huggingface_hub import HfApi\n"),
                fixed=NO_FIX, message="uses the file after the save"),
        Invalid(in_training_loop("if step % 5 == 0:\n    torch.save(model.state_dict(), f'{out}/model.pt')\n"
                                 "    art = wandb.Artifact('ckpt', type='model')\n    art.add_dir(out)"),
                fixed=NO_FIX, message="`art.add_dir(out)` uses the file after the save"),
        # ... but not one handed another file in that folder.
        Invalid(in_training_loop("if step % 100 == 0:\n    torch.save(model.state_dict(), d + '/state.pt')\n"
                                 "    write_json(d + '/meta.json', meta)"),
                fixed=_fixed(in_training_loop("if step % 100 == 0:\n    _trainlint_async_save(torch.save, "
                                              "model.state_dict(), d + '/state.pt')\n"
                                              "    write_json(d + '/meta.json', meta)"))),
        # A per-step save takes the interval of the loop's other saves: a save interval by its
        # name before the `eval_interval` a best-model save sits under.
        Invalid(in_training_loop("torch.save(model.state_dict(), 'latest.pt')\nif step % eval_interval == 0:\n"
                                 "    if val < best:\n        torch.save(model.state_dict(), 'best.pt')\n"
                                 "if step % save_interval == 0:\n    torch.save(model.state_dict(), 'c.pt')"),
                message="save every `save_interval` steps"),
        # A whole module: the helper cannot snapshot it and saves it blocking; the message says so.
        # No fix: the helper would save it blocking as before, and the finding went away as fixed.
        Invalid(in_training_loop("if step % 100 == 0:\n    torch.save(model, 'model.pt')"), fixed=NO_FIX,
                message="no background write is offered, so no fix: `model` itself is a live object, which a "
                        "background write cannot snapshot: save `model.state_dict()` to write it in the background"),
        # ... on every step it goes under the interval, written blocking as before.
        Invalid(in_training_loop("torch.save(model, 'model.pt')"),
                fixed=in_training_loop("if step % 1000 == 0:\n    torch.save(model, 'model.pt')")
                + "torch.save(model, 'model.pt')\n",
                message="(the fix does only that; no background write is offered: `model` itself is a live object"),
        # Gradient accumulation's guard is not the loop's save interval (`accum` was taken for one;
        # now no interval is written there at all, see below).
        Invalid("import torch\nstep = 0\nfor i in range(n):\n    model(x).backward()\n    if (i + 1) % accum == 0:\n"
                "        opt.step()\n        step += 1\n        torch.save(model.state_dict(), 'l.pt')\n"
                "        save_ckpt(step)\n", message="not saved under an interval"),
        # A keyword or a function named like an interval is no interval (it was written into the
        # guard: a NameError, or `step % <function>`).
        Invalid(in_training_loop("torch.save(model.state_dict(), 'l.pt')").replace(
                    "import torch\n", "import torch\ncfg = make_config(lr=0.1, save_steps=4)\ndef save_every(m):\n    pass\n"),
                message="save every `1000` steps"),
        # A save-interval option the script defines but never reads is the interval (it was 1000
        # until something read `args.save_steps`) ...
        Invalid("import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--save_steps', type=int, default=7)\nargs = parser.parse_args()\n"
                "def train(model, loader):\n    for step, batch in enumerate(loader):\n"
                "        model(batch).sum().backward()\n        torch.save(model.state_dict(), 'l.pt')\n",
                message="save every `args.save_steps` steps"),
        # ... bound under `if __name__ == "__main__":`, only where the function reads it already (it
        # does not exist where another module imports the function) ...
        Invalid("import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--save_steps', type=int, default=7)\n"
                "def train(model, loader):\n    for step, batch in enumerate(loader):\n"
                "        model(batch).sum().backward()\n        torch.save(model.state_dict(), args.out)\n"
                "if __name__ == '__main__':\n    args = parser.parse_args()\n    train(model, loader)\n",
                message="save every `args.save_steps` steps"),
        Invalid("import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--save_steps', type=int, default=7)\n"
                "def train(model, loader):\n    for step, batch in enumerate(loader):\n"
                "        model(batch).sum().backward()\n        torch.save(model.state_dict(), 'l.pt')\n"
                "if __name__ == '__main__':\n    args = parser.parse_args()\n    train(model, loader)\n",
                message="save every `1000` steps"),
        # ... where the loop's code reads the parsed namespace: not when `main()` parses it into a
        # name of its own, which `train` cannot see.
        Invalid("import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--save-steps', type=int, default=7)\n"
                "def train(model, loader):\n    for step, batch in enumerate(loader):\n"
                "        model(batch).sum().backward()\n        torch.save(model.state_dict(), 'l.pt')\n"
                "def main():\n    args = parser.parse_args()\n    train(model, loader)\n",
                message="save every `1000` steps"),
        # A helper whose inner save function is also called after the loop keeps its interval.
        Invalid("import torch\ndef save_ckpt(step):\n    torch.save(model.state_dict(), f'c{step}.pt')\n"
                "def maybe_save(step):\n    if step % 4 == 0:\n        save_ckpt(step)\n"
                + in_training_loop("maybe_save(step)").partition("\n")[2] + "save_ckpt(12)\n",
                message="(under `step % 4 == 0`)"),
        # A helper that decides for some of its saves (a periodic copy beside the latest; only a
        # better model): made asynchronous, never put under an interval that would lose those.
        Invalid("import torch\ndef save_ckpt(step):\n    torch.save(model.state_dict(), 'latest.pt')\n"
                "    if step % 4 == 0:\n        torch.save(model.state_dict(), f'c{step}.pt')\n"
                + in_training_loop("save_ckpt(step)").partition("\n")[2],
                fixed="import torch\n" + HELPER_CODE + "\n\ndef save_ckpt(step):\n"
                "    _trainlint_async_save(torch.save, model.state_dict(), 'latest.pt')\n    if step % 4 == 0:\n"
                "        _trainlint_async_save(torch.save, model.state_dict(), f'c{step}.pt')\n"
                + in_training_loop("save_ckpt(step)").partition("\n")[2] + "_trainlint_wait_for_save()\n",
                message="(under conditions of its own)"),
        Invalid("import torch\ndef save_if_best(loss, best):\n    if loss >= best:\n        return best\n"
                "    torch.save(model.state_dict(), 'best.pt')\n    return loss\n"
                + in_training_loop("best = save_if_best(float(loss), best)").partition("\n")[2],
                message="(under conditions of its own)"),
        # `for _ in range(n)` with a counter of its own: the guard reads that counter.
        Invalid("import torch\nstep = 0\nfor _ in range(n):\n    model(x).backward()\n    opt.step()\n    step += 1\n"
                "    torch.save(model.state_dict(), 'l.pt')\n",
                fixed=_fixed("import torch\nstep = 0\nfor _ in range(n):\n    model(x).backward()\n    opt.step()\n"
                             "    step += 1\n    if step % 1000 == 0:\n"
                             "        _trainlint_async_save(torch.save, model.state_dict(), 'l.pt')\n",
                             final="torch.save(model.state_dict(), 'l.pt')\n")),
        # A roll-back at the top of the loop reads the file on a later pass.
        Invalid(in_training_loop("if step % 2 == 0:\n    torch.save(model.state_dict(), 'good.pt')").replace(
                    "    loss = model(x, y)\n", "    if bad(step):\n        model.load_state_dict(torch.load('good.pt'))\n"
                                             "        continue\n    loss = model(x, y)\n"),
                fixed=NO_FIX, message="torch.load('good.pt')"),
        # A final save to the same path after the loop stays blocking: the fix waits for the
        # background write after the loop, before it (once refused; through a function of the
        # module called after the loop, the two writes ran at once and left the file corrupt).
        Invalid(in_training_loop("if step % 8 == 0:\n    torch.save(model.state_dict(), path)")
                + "torch.save(model.state_dict(), path)\n",
                fixed=_fixed(in_training_loop("if step % 8 == 0:\n    _trainlint_async_save(torch.save, "
                                              "model.state_dict(), path)")) + "torch.save(model.state_dict(), path)\n"),
        Invalid("import torch\ndef save_final(model):\n    torch.save(model.state_dict(), 'last.pt')\n"
                "def train(model):\n    for step, (x, y) in enumerate(loader):\n        model(x, y).backward()\n"
                "        opt.step()\n        if step % 5 == 0:\n            torch.save(model.state_dict(), 'last.pt')\n"
                "    save_final(model)\n",
                fixed="import torch\n" + HELPER_CODE + "\n\ndef save_final(model):\n    torch.save(model.state_dict(), "
                "'last.pt')\ndef train(model):\n    for step, (x, y) in enumerate(loader):\n        model(x, y).backward()\n"
                "        opt.step()\n        if step % 5 == 0:\n"
                "            _trainlint_async_save(torch.save, model.state_dict(), 'last.pt')\n"
                "    _trainlint_wait_for_save()\n    save_final(model)\n"),
        # A save function called once more after the loop is written in the background too: the
        # fix waits right after that call (none followed it, and `fit()` returned with the final
        # checkpoint half-written for its caller in another module to load).
        Invalid("import torch\ndef save(model, path):\n    torch.save(model.state_dict(), path)\n"
                "def fit(model, opt):\n    for step in range(100):\n        model(x).sum().backward()\n"
                "        opt.step()\n        if step % 10 == 0:\n            save(model, f'step{step}.pt')\n"
                "    save(model, 'final.pt')\n    if best:\n        save(model, 'best.pt')\n",
                fixed="import torch\n" + HELPER_CODE + "\n\ndef save(model, path):\n"
                "    _trainlint_async_save(torch.save, model.state_dict(), path)\n"
                "def fit(model, opt):\n    for step in range(100):\n        model(x).sum().backward()\n"
                "        opt.step()\n        if step % 10 == 0:\n            save(model, f'step{step}.pt')\n"
                "    _trainlint_wait_for_save()\n    save(model, 'final.pt')\n    _trainlint_wait_for_save()\n"
                "    if best:\n        save(model, 'best.pt')\n        _trainlint_wait_for_save()\n"),
        # ... one in the epoch loop around the step loop is waited for after the epoch loop, as
        # the step loop's saves are (a wait right after it made every epoch's save blocking).
        Invalid("import torch\ndef save(model, path):\n    torch.save(model.state_dict(), path)\n"
                "def fit(model, opt):\n    for epoch in range(3):\n        for step in range(100):\n"
                "            model(x).sum().backward()\n            opt.step()\n            if step % 10 == 0:\n"
                "                save(model, f'step{step}.pt')\n        save(model, f'epoch{epoch}.pt')\n",
                fixed="import torch\n" + HELPER_CODE + "\n\ndef save(model, path):\n"
                "    _trainlint_async_save(torch.save, model.state_dict(), path)\n"
                "def fit(model, opt):\n    for epoch in range(3):\n        for step in range(100):\n"
                "            model(x).sum().backward()\n            opt.step()\n            if step % 10 == 0:\n"
                "                save(model, f'step{step}.pt')\n        save(model, f'epoch{epoch}.pt')\n"
                "    _trainlint_wait_for_save()\n"),
        # ... where no statement can follow that call (`return save(...)`), the save stays blocking.
        Invalid("import torch\ndef save(model, path):\n    torch.save(model.state_dict(), path)\n"
                "def fit(model, opt):\n    for step in range(100):\n        model(x).sum().backward()\n"
                "        opt.step()\n        if step % 10 == 0:\n            save(model, f'step{step}.pt')\n"
                "    return save(model, 'final.pt')\n",
                fixed=NO_FIX, message="`save(model, 'final.pt')` runs the save once more where no wait for a "
                                      "background write can follow it"),
        # ... also before a `return` inside the loop, which leaves the function without passing it.
        Invalid("import torch\ndef train(model):\n    for step, (x, y) in enumerate(loader):\n        model(x, y).backward()\n"
                "        opt.step()\n        if step % 5 == 0:\n            torch.save(model.state_dict(), 'last.pt')\n"
                "        if step == 10:\n            return model\n        if done(): return\n",
                fixed="import torch\n" + HELPER_CODE + "\n\ndef train(model):\n    for step, (x, y) in enumerate(loader):\n"
                "        model(x, y).backward()\n        opt.step()\n        if step % 5 == 0:\n"
                "            _trainlint_async_save(torch.save, model.state_dict(), 'last.pt')\n"
                "        if step == 10:\n            _trainlint_wait_for_save()\n            return model\n"
                "        if done(): _trainlint_wait_for_save(); return\n    _trainlint_wait_for_save()\n"),
        # ... and before a `return` in its `else:` (the file was read half written after `fit()`).
        Invalid("import torch\ndef fit(model):\n    for step, (x, y) in enumerate(loader):\n        model(x, y).backward()\n"
                "        opt.step()\n        if step % 5 == 0:\n            torch.save(model.state_dict(), 'last.pt')\n"
                "    else:\n        return 'done'\n",
                fixed="import torch\n" + HELPER_CODE + "\n\ndef fit(model):\n    for step, (x, y) in enumerate(loader):\n"
                "        model(x, y).backward()\n        opt.step()\n        if step % 5 == 0:\n"
                "            _trainlint_async_save(torch.save, model.state_dict(), 'last.pt')\n"
                "    else:\n        _trainlint_wait_for_save()\n        return 'done'\n    _trainlint_wait_for_save()\n"),
        # ... and before `os._exit()` in the loop (a time budget), which ends the process without
        # joining the writing thread: the last checkpoint was left truncated. (`sys.exit()` raises
        # SystemExit, whose shutdown joins the thread: nothing added.)
        Invalid(in_training_loop("if step % 5 == 0:\n    torch.save(model.state_dict(), 'last.pt')\n"
                                 "if time.time() > deadline:\n    os._exit(0)\nif bad:\n    sys.exit(1)")
                .replace("import torch\n", "import os\nimport sys\nimport time\nimport torch\n", 1),
                fixed=_fixed(in_training_loop("if step % 5 == 0:\n    _trainlint_async_save(torch.save, model.state_dict(), "
                                              "'last.pt')\nif time.time() > deadline:\n    _trainlint_wait_for_save()\n"
                                              "    os._exit(0)\nif bad:\n    sys.exit(1)"))
                .replace("import torch\n", "import os\nimport sys\nimport time\nimport torch\n", 1)),
        # ... and before `os._exit()` in a function the loop calls, which ends the process alike.
        Invalid("import os\nimport torch\ndef check_budget(step):\n    if step > budget:\n        os._exit(0)\n"
                "def train(model):\n    for step, (x, y) in enumerate(loader):\n        model(x, y).backward()\n"
                "        opt.step()\n        if step % 5 == 0:\n            torch.save(model.state_dict(), 'last.pt')\n"
                "        check_budget(step)\n",
                fixed="import os\nimport torch\n" + HELPER_CODE + "\n\ndef check_budget(step):\n    if step > budget:\n"
                "        _trainlint_wait_for_save()\n        os._exit(0)\n"
                "def train(model):\n    for step, (x, y) in enumerate(loader):\n        model(x, y).backward()\n"
                "        opt.step()\n        if step % 5 == 0:\n"
                "            _trainlint_async_save(torch.save, model.state_dict(), 'last.pt')\n"
                "        check_budget(step)\n    _trainlint_wait_for_save()\n"),
        # ... and before every other `os._exit()` of the module, where no loop leads: a signal
        # handler that calls the save function made asynchronous, then exits (its checkpoint was
        # left empty); an alias of `os._exit` too. The one in a lambda is left alone.
        Invalid("import signal\nfrom os import _exit as hard_exit\nimport torch\ndef save_ckpt(path):\n"
                "    torch.save(model.state_dict(), path)\ndef on_preempt(signum, frame):\n"
                "    save_ckpt('preempt.pt')\n    hard_exit(0)\nsignal.signal(signal.SIGTERM, on_preempt)\n"
                "quit = lambda: hard_exit(1)\n"
                "for step, (x, y) in enumerate(loader):\n    model(x, y).backward()\n    opt.step()\n"
                "    if step % 5 == 0:\n        save_ckpt(f'c{step}.pt')\n",
                fixed="import signal\nfrom os import _exit as hard_exit\nimport torch\n" + HELPER_CODE
                + "\n\ndef save_ckpt(path):\n    _trainlint_async_save(torch.save, model.state_dict(), path)\n"
                "def on_preempt(signum, frame):\n    _trainlint_wait_for_save()\n    save_ckpt('preempt.pt')\n"
                "    _trainlint_wait_for_save()\n"
                "    hard_exit(0)\nsignal.signal(signal.SIGTERM, on_preempt)\nquit = lambda: hard_exit(1)\n"
                "for step, (x, y) in enumerate(loader):\n    model(x, y).backward()\n    opt.step()\n"
                "    if step % 5 == 0:\n        save_ckpt(f'c{step}.pt')\n_trainlint_wait_for_save()\n"),
        # ... and first in a signal handler (a docstring stays first), whose own blocking save of
        # the same file raced the background write: a corrupted archive, or the older state
        # landed last (a tester's preemption handler, 4 runs in 8).
        Invalid("import signal\nimport sys\nimport torch\ndef on_preempt(signum, frame):\n    \"\"\"Save, then stop.\"\"\"\n"
                "    torch.save(model.state_dict(), 'last.pt')\n    sys.exit(0)\nsignal.signal(signal.SIGUSR1, on_preempt)\n"
                "for step, (x, y) in enumerate(loader):\n    model(x, y).backward()\n    opt.step()\n"
                "    if step % 5 == 0:\n        torch.save(model.state_dict(), 'last.pt')\n",
                fixed="import signal\nimport sys\nimport torch\n" + HELPER_CODE
                + "\n\ndef on_preempt(signum, frame):\n    \"\"\"Save, then stop.\"\"\"\n    _trainlint_wait_for_save()\n"
                "    torch.save(model.state_dict(), 'last.pt')\n    sys.exit(0)\nsignal.signal(signal.SIGUSR1, on_preempt)\n"
                "for step, (x, y) in enumerate(loader):\n    model(x, y).backward()\n    opt.step()\n"
                "    if step % 5 == 0:\n        _trainlint_async_save(torch.save, model.state_dict(), 'last.pt')\n"
                "_trainlint_wait_for_save()\n"),
        # ... and first in the handlers of a `try` around the call of the function that trains (an
        # error leaving the loop skipped the wait: the handler's `torch.load` met a half-written file).
        Invalid("import torch\ndef train(model):\n    for step, (x, y) in enumerate(loader):\n        model(x, y).backward()\n"
                "        opt.step()\n        if step % 5 == 0:\n            torch.save(model.state_dict(), 'last.pt')\n"
                "def main():\n    train(model)\ntry:\n    main()\nexcept RuntimeError:\n    model.load_state_dict(torch.load('last.pt'))\n"
                "finally: print('done')\n",
                fixed="import torch\n" + HELPER_CODE + "\n\ndef train(model):\n    for step, (x, y) in enumerate(loader):\n"
                "        model(x, y).backward()\n        opt.step()\n        if step % 5 == 0:\n"
                "            _trainlint_async_save(torch.save, model.state_dict(), 'last.pt')\n    _trainlint_wait_for_save()\n"
                "def main():\n    train(model)\ntry:\n    main()\nexcept RuntimeError:\n    _trainlint_wait_for_save()\n"
                "    model.load_state_dict(torch.load('last.pt'))\nfinally: _trainlint_wait_for_save(); print('done')\n"),
        # A generator that yields in the loop: its caller may read the file between yields (it
        # read a half-written one): no background write.
        Invalid("import torch\ndef train(model):\n    for step, (x, y) in enumerate(loader):\n        model(x, y).backward()\n"
                "        opt.step()\n        if step % 5 == 0:\n            torch.save(model.state_dict(), 'last.pt')\n"
                "            yield step\n", fixed=NO_FIX,
                message="no fix: `yield step` in the loop hands control to the caller, which may read the file"),
        # An `await` hands control to the event loop's other tasks alike (an evaluator task read a
        # half-written file), and a wait there would block the event loop: no background write.
        Invalid("import torch\nasync def train(model):\n    for step, (x, y) in enumerate(loader):\n"
                "        model(x, y).backward()\n        opt.step()\n        if step % 5 == 0:\n"
                "            torch.save(model.state_dict(), 'last.pt')\n            await queue.put(step)\n", fixed=NO_FIX,
                message="no fix: `await queue.put(step)` in the loop hands control to other tasks"),
        Invalid("import torch\nasync def train(model):\n    async for step, (x, y) in stream:\n"
                "        model(x, y).backward()\n        opt.step()\n        if step % 5 == 0:\n"
                "            torch.save(model.state_dict(), 'last.pt')\n", fixed=NO_FIX,
                message="no fix: `async for` hands control to other tasks at each step"),
        # A listing of the folder after the save finds the file missing or partial (the newest
        # checkpoint copied as latest.pt was the previous one, or truncated): no background write...
        Invalid("import os\nimport shutil\n" + in_training_loop(
                "if step % 5 == 0:\n    torch.save(sd, out / f'ckpt_{step}.pt')\n"
                "    shutil.copy2(max(out.glob('*.pt'), key=os.path.getmtime), 'latest.pt')"),
                fixed=NO_FIX, message="no fix: `out.glob('*.pt')` uses the file after the save"),
        Invalid("import glob\nimport os\n" + in_training_loop(
                "if step % 5 == 0:\n    torch.save(sd, os.path.join(out, f'ckpt_{step}.pt'))\n"
                "    n = len(glob.glob(f'{out}/*.pt'))"), fixed=NO_FIX, message="uses the file after the save"),
        # ... but a keep-last-N rotation, which only deletes older files from its listing, keeps the fix.
        Invalid(in_training_loop("if step % 5 == 0:\n    torch.save(sd, out / f'ckpt_{step:04d}.pt')\n"
                                 "    for old in sorted(out.glob('ckpt_*.pt'))[:-2]:\n        old.unlink()"),
                fixed=_fixed(in_training_loop("if step % 5 == 0:\n    _trainlint_async_save(torch.save, sd, out / "
                                              "f'ckpt_{step:04d}.pt')\n    for old in sorted(out.glob('ckpt_*.pt'))[:-2]:"
                                              "\n        old.unlink()"))),
        # A state dict the author split over lines is laid out afresh inside the new call (its
        # second line kept its old continuation indent, aligned under nothing).
        Invalid(in_training_loop("if step % 100 == 0:\n    torch.save({'model': model.state_dict(),\n"
                                 "                'step': step}, 'ckpt.pt')"),
                fixed=_fixed(in_training_loop("if step % 100 == 0:\n    _trainlint_async_save(\n"
                                              "        torch.save, {'model': model.state_dict(), 'step': step}, 'ckpt.pt'\n"
                                              "    )"))),
        # ... but a call Black exploded (its own trailing comma) is laid out afresh one argument per line.
        Invalid(in_training_loop("if step % 100 == 0:\n    torch.save(\n        model_to_save.state_dict(),\n"
                                 "        os.path.join(output_dir, 'pytorch_model.bin'),\n    )"),
                fixed=_fixed(in_training_loop("if step % 100 == 0:\n    _trainlint_async_save(\n        torch.save,\n"
                                              "        model_to_save.state_dict(),\n"
                                              "        os.path.join(output_dir, 'pytorch_model.bin'),\n    )"))),
        # Two calls of one helper: the use after the first withholds the fix from both, and the
        # second's message says whose call it follows.
        Invalid("import shutil\nimport torch\ndef save_ckpt(path):\n    torch.save(model.state_dict(), path)\n"
                + in_training_loop("if step % 1000 == 0:\n    save_ckpt('best.pt')\n    shutil.copy('best.pt', 'b.pt')\n"
                                   "if step % 500 == 0:\n    save_ckpt(f'step_{step}.pt')").partition("\n")[2],
                fixed=NO_FIX, message="uses the file after another call of `save_ckpt()`, whose save it shares"),
        # A helper that checks its own interval (around its save, or by an early return) saves on
        # those steps only: made asynchronous, never put under a second interval (which once kept
        # 2 of its 5 checkpoints).
        Invalid("import torch\ndef save_ckpt(step):\n    if step % 250 == 0:\n        torch.save(model.state_dict(), 'c.pt')\n"
                + in_training_loop("save_ckpt(step)").partition("\n")[2],
                fixed="import torch\n" + HELPER_CODE + "\n\ndef save_ckpt(step):\n    if step % 250 == 0:\n"
                "        _trainlint_async_save(torch.save, model.state_dict(), 'c.pt')\n"
                + in_training_loop("save_ckpt(step)").partition("\n")[2] + "_trainlint_wait_for_save()\n",
                message="(under `step % 250 == 0`)"),
        Invalid("import torch\ndef save_ckpt(step):\n    if step % args.save_steps != 0:\n        return\n"
                "    torch.save(model.state_dict(), 'c.pt')\n" + in_training_loop("save_ckpt(step)").partition("\n")[2],
                fixed="import torch\n" + HELPER_CODE + "\n\ndef save_ckpt(step):\n    if step % args.save_steps != 0:\n"
                "        return\n    _trainlint_async_save(torch.save, model.state_dict(), 'c.pt')\n"
                + in_training_loop("save_ckpt(step)").partition("\n")[2] + "_trainlint_wait_for_save()\n",
                message="(under `step % args.save_steps == 0`)"),
        # The optimizer step of gradient accumulation runs on every training step. An interval
        # there would leave the end unsaved, and a final save after the loop could follow
        # micro-batches no step applied (a tester's counter of samples seen said 80 where the
        # original's last checkpoint said 64): only the background write.
        Invalid("import torch\nstep = 0\nfor i in range(n):\n    model(x).backward()\n    if (i + 1) % accum == 0:\n"
                "        opt.step()\n        step += 1\n        torch.save(model.state_dict(), 'c.pt')\n",
                fixed=_fixed("import torch\nstep = 0\nfor i in range(n):\n    model(x).backward()\n    if (i + 1) % accum == 0:\n"
                             "        opt.step()\n        step += 1\n"
                             "        _trainlint_async_save(torch.save, model.state_dict(), 'c.pt')\n"),
                message="on every training step and training waits for it; not saved under an interval: the end of "
                        "training would go unsaved (the save runs on the optimizer steps of gradient accumulation"),
        # ... and with none counted there, only reported.
        Invalid("import torch\nfor i in range(n):\n    model(x).backward()\n    if (i + 1) % accum == 0:\n"
                "        opt.step()\n        torch.save(model.state_dict(), 'c.pt')\n",
                fixed=NO_FIX, message="not fixed: the loop counts no optimizer steps where it saves"),
        # save_pretrained writes from a snapshot of the state dict.
        Invalid(_hf(in_training_loop("if should_save:\n    model.save_pretrained(out)")),
                fixed=_fixed(_hf(in_training_loop("if should_save:\n    _trainlint_async_save(model.save_pretrained, out, "
                                                  "state_dict=model.state_dict())")))),
        # ... only transformers' models take `state_dict=`: diffusers' `unet.save_pretrained(out)` ignores
        # it (the live weights would be written while training goes on), its EMAModel's raises. The
        # message says why it offers no background write.
        Invalid(_hf(in_training_loop("if should_save:\n    unet.save_pretrained(out)")).replace(
            "import torch\n", "import torch\nfrom diffusers import UNet2DModel\n"), fixed=NO_FIX,
            message="no background write is offered, so no fix: the module imports diffusers, whose "
                    "`save_pretrained` ignores or rejects `state_dict=`"),
        Invalid(in_training_loop("if should_save:\n    model.save_pretrained(out)"), fixed=NO_FIX,
                message="no background write is offered, so no fix: only the `save_pretrained` of transformers' "
                        "models takes `state_dict=`, and the module does not import transformers"),
        # ... only for a model known to be transformers': huggingface_hub's ModelHubMixin takes
        # `state_dict=` into **kwargs and ignores it (the live model was written while training went
        # on), in a module that imports transformers for its scheduler.
        Invalid("import torch\nfrom huggingface_hub import PyTorchModelHubMixin\nfrom transformers import get_scheduler\n"
                "class Net(torch.nn.Module, PyTorchModelHubMixin):\n    pass\nmodel = Net()\n"
                + in_training_loop("if step % 3 == 0:\n    model.save_pretrained(f'ckpt/{step}')").partition("\n")[2],
                fixed=NO_FIX, message="no background write is offered, so no fix: `model` is not known to be a "
                                      "transformers model"),
        # ... a class of the module subclassing PreTrainedModel is one, also unwrapped.
        Invalid("import torch\nfrom transformers import PreTrainedModel\nclass Net(PreTrainedModel):\n    pass\n"
                + in_training_loop("if step % 3 == 0:\n    accelerator.unwrap_model(model).save_pretrained(out)")
                .partition("\n")[2].replace("for step", "model = Net(config).to('cuda')\nfor step", 1),
                fixed="import torch\nfrom transformers import PreTrainedModel\n" + HELPER_CODE + "\n\nclass Net(PreTrainedModel):\n"
                             "    pass\n" + in_training_loop(
                                 "if step % 3 == 0:\n    _trainlint_async_save(\n        accelerator.unwrap_model(model)."
                                 "save_pretrained,\n        out,\n        state_dict=accelerator.unwrap_model(model)."
                                 "state_dict(),\n    )").partition("\n")[2].replace(
                                     "for step", "model = Net(config).to('cuda')\nfor step", 1) + WAIT + "()\n"),
        # ... not when `*args` may pass the state dict by position: reported, no fix.
        Invalid(in_training_loop("if should_save:\n    model.save_pretrained(*save_args)"), fixed=NO_FIX,
                message="no background write is offered, so no fix: `*save_args` may pass the state dict by position"),
        # accelerate's save (torch.save on the main process): moved under the interval and written
        # in the background, as torch.save.
        Invalid(in_training_loop("accelerator.save(model.state_dict(), 'latest.pt')"),
                fixed=_fixed(in_training_loop("if step % 1000 == 0:\n    _trainlint_async_save(accelerator.save, "
                                              "model.state_dict(), 'latest.pt')"),
                             final="accelerator.save(model.state_dict(), 'latest.pt')\n")),
        # accelerate's save_state: per step, moved under the script's interval, not made asynchronous
        # (the message says so, and why).
        Invalid(in_training_loop("accelerator.save_state(out)").replace("import torch\n", "import torch\nsave_every = 50\n"),
                fixed=in_training_loop("if step % save_every == 0:\n    accelerator.save_state(out)").replace(
                    "import torch\n", "import torch\nsave_every = 50\n") + "accelerator.save_state(out)\n",
                message="save every `save_every` steps, and once more after the loop (the fix does only that; no background write is offered: "
                        "`accelerator.save_state` may gather state across ranks, which the fix cannot snapshot)"),
        # ... also written as a constant.
        Invalid(in_training_loop("accelerator.save_state(out)").replace("import torch\n", "import torch\nSAVE_EVERY = 50\n"),
                fixed=in_training_loop("if step % SAVE_EVERY == 0:\n    accelerator.save_state(out)").replace(
                    "import torch\n", "import torch\nSAVE_EVERY = 50\n") + "accelerator.save_state(out)\n"),
        # DeepSpeed's engine: per step, moved under the interval; every N steps, reported (its
        # asynchronous checkpoint engines are chosen in its configuration).
        # (its tag reads the loop's `step`: no save after the loop could write the last one, and an
        # interval alone left the last steps unsaved; so no interval, and no fix)
        Invalid(_DEEPSPEED.format(save="model_engine.save_checkpoint('ckpt', tag=f'step{step}')"), fixed=NO_FIX,
                message="not saved under an interval"),
        Invalid(_DEEPSPEED.format(save="model_engine.save_checkpoint('ckpt')"),
                fixed=_DEEPSPEED.format(save="if step % 1000 == 0:\n        model_engine.save_checkpoint('ckpt')")
                + "model_engine.save_checkpoint('ckpt')\n"),
        Invalid(_DEEPSPEED.format(save="if step % 500 == 0:\n        engine.save_checkpoint(args.out)").replace(
            "model_engine, ", "engine, "), fixed=NO_FIX, message="asynchronous checkpoint engine of DeepSpeed"),
        # safetensors' saves (once missed): reported; save_file written in the background (the
        # snapshot keeps shared memory shared, which it refuses as before)...
        Invalid(in_training_loop("if step % 100 == 0:\n    save_file(model.state_dict(), f'ckpt/{step}.safetensors')")
                .replace("import torch\n", "import torch\nfrom safetensors.torch import save_file\n"),
                fixed=_fixed(in_training_loop("if step % 100 == 0:\n    _trainlint_async_save(save_file, model.state_dict(), "
                                              "f'ckpt/{step}.safetensors')"))
                .replace("import torch\n", "import torch\nfrom safetensors.torch import save_file\n", 1),
                message="`safetensors.torch.save_file` blocks training while it writes the checkpoint (under `step % 100 == 0`); "
                        "snapshot the state to the CPU"),
        # ... save_model, handed the live module, per step: moved under the interval only.
        Invalid(in_training_loop("safetensors.torch.save_model(model, 'model.safetensors')")
                .replace("import torch\n", "import safetensors.torch\nimport torch\n"),
                fixed=in_training_loop("if step % 1000 == 0:\n    safetensors.torch.save_model(model, 'model.safetensors')")
                .replace("import torch\n", "import safetensors.torch\nimport torch\n")
                + "safetensors.torch.save_model(model, 'model.safetensors')\n",
                message="no background write is offered: `safetensors.torch.save_model` is handed the live module"),
        # fabric.save every N steps: reported, no asynchronous fix.
        Invalid(in_training_loop("if step % 500 == 0:\n    fabric.save('ckpt.pt', state)"), fixed=NO_FIX,
                message="no background write is offered, so no fix: `fabric.save` may gather state across ranks"),
        # A per-step save next to one every 500 steps: moved under the script's own 500 (the other
        # save keeps its guard).
        Invalid(_hf(in_training_loop("torch.save(model.state_dict(), 'latest.pt')\nif step % 500 == 0:\n"
                                     "    model.save_pretrained(out)")),
                fixed=_fixed(_hf(in_training_loop("if step % 500 == 0:\n    _trainlint_async_save(torch.save, "
                                                  "model.state_dict(), 'latest.pt')\nif step % 500 == 0:\n"
                                                  "    _trainlint_async_save(model.save_pretrained, out, "
                                                  "state_dict=model.state_dict())")),
                             final="torch.save(model.state_dict(), 'latest.pt')\n"),
                message="save every `500` steps"),
        # ... also through a flag the loop sets.
        Invalid(in_training_loop("should_save = step % 200 == 0\ntorch.save(model.state_dict(), 'latest.pt')\n"
                                 "if should_save:\n    torch.save(model.state_dict(), f'ckpt-{step}.pt')"),
                fixed=_fixed(in_training_loop("should_save = step % 200 == 0\nif step % 200 == 0:\n"
                                              "    _trainlint_async_save(torch.save, model.state_dict(), 'latest.pt')\n"
                                              "if should_save:\n"
                                              "    _trainlint_async_save(torch.save, model.state_dict(), f'ckpt-{step}.pt')"),
                             final="torch.save(model.state_dict(), 'latest.pt')\n"),
                message="save every `200` steps"),
        # The `else:` of `if step % 500:` already runs every 500 steps: made asynchronous, no new guard.
        Invalid(in_training_loop("if step % 500:\n    log(loss)\nelse:\n    torch.save(model.state_dict(), 'ckpt.pt')"),
                fixed=_fixed(in_training_loop("if step % 500:\n    log(loss)\nelse:\n"
                                              "    _trainlint_async_save(torch.save, model.state_dict(), 'ckpt.pt')")),
                message="under `step % 500 == 0`"),
        # The other save's interval changes in the loop: the option's interval instead.
        Invalid(in_training_loop("every = schedule(step)\nif step % every == 0:\n"
                                 "    torch.save(model.state_dict(), 'a.pt')\ntorch.save(model.state_dict(), 'b.pt')"),
                fixed=_fixed(in_training_loop("every = schedule(step)\nif step % every == 0:\n"
                                              "    _trainlint_async_save(torch.save, model.state_dict(), 'a.pt')\n"
                                              "if step % 1000 == 0:\n"
                                              "    _trainlint_async_save(torch.save, model.state_dict(), 'b.pt')"),
                             final="torch.save(model.state_dict(), 'b.pt')\n"),
                message="save every `1000` steps"),
        # A Lightning callback's per-batch hook, every N steps: made asynchronous.
        Invalid("import torch\nimport lightning as L\nclass Save(L.Callback):\n"
                "    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):\n"
                "        if trainer.global_step % 500 == 0:\n"
                "            torch.save(module.state_dict(), 'ckpt.pt')\n",
                fixed="import torch\nimport lightning as L\n" + HELPER_CODE + "\n\nclass Save(L.Callback):\n"
                "    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):\n"
                "        if trainer.global_step % 500 == 0:\n"
                "            _trainlint_async_save(torch.save, module.state_dict(), 'ckpt.pt')\n",
                message="under `trainer.global_step % 500 == 0`"),
        # Lightning's trainer.save_checkpoint in a callback: its asynchronous plugin is named.
        Invalid("import lightning as L\nclass Save(L.Callback):\n"
                "    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):\n"
                "        if trainer.global_step % 500 == 0:\n            trainer.save_checkpoint('last.ckpt')\n",
                fixed=NO_FIX, message="`AsyncCheckpointIO`"),
        # ... on every step of a LightningModule: not put under an interval (there is no end of the
        # loop to save the last state at, and the interval alone left the last steps unsaved), nor
        # made asynchronous: no fix.
        Invalid("import lightning as L\nclass M(L.LightningModule):\n    def training_step(self, batch, i):\n"
                "        self.trainer.save_checkpoint('last.ckpt')\n        return self(batch)\n",
                fixed=NO_FIX,
                message="not saved under an interval: the end of training would go unsaved (a framework calls it on "
                        "every step, and the fix has no end of training to save the last state at); not fixed: have "
                        "Lightning's `AsyncCheckpointIO`"),
        # A TrainerCallback saving on every step: made asynchronous where it stands (under the
        # Trainer's step counter, the last steps went unsaved, with no end of the loop here to
        # save them at).
        Invalid("import torch\nfrom transformers import TrainerCallback\nclass Save(TrainerCallback):\n"
                "    def on_step_end(self, args, state, control, model=None, **kwargs):\n"
                "        torch.save(model.state_dict(), 'latest.pt')\n",
                fixed="import torch\nfrom transformers import TrainerCallback\n" + HELPER_CODE + "\n\n"
                "class Save(TrainerCallback):\n"
                "    def on_step_end(self, args, state, control, model=None, **kwargs):\n"
                "        _trainlint_async_save(torch.save, model.state_dict(), 'latest.pt')\n",
                message="every training step and training waits for it; not saved under an interval"),
        # The checkpoint read back after the loop: the fix waits for the write before it (a load in
        # a function defined above the loop and called after it once read a file still written).
        Invalid(in_training_loop("if step % 10 == 0:\n    torch.save(model.state_dict(), 'best.pt')")
                + "model.load_state_dict(torch.load('best.pt'))\n",
                fixed=_fixed(in_training_loop("if step % 10 == 0:\n    _trainlint_async_save(torch.save, "
                                              "model.state_dict(), 'best.pt')")) + "model.load_state_dict(torch.load('best.pt'))\n"),
        # ... but a load in a function the loop calls may read the file while it is written.
        Invalid("import torch\ndef evaluate():\n    return torch.load(args.resume)\n"
                + in_training_loop("if step % 10 == 0:\n    torch.save(model.state_dict(), 'last.pt')\n    evaluate()")
                .partition("\n")[2], fixed=NO_FIX,
                message="no background write is offered, so no fix: `torch.load(args.resume)` in a function the loop "
                        "calls may read the file while it is still written"),
        # The atomic-write idiom: the next line moves the file the save wrote, so the save is not made
        # asynchronous (the file would not exist yet), and the line goes under the interval with it
        # (alone there, the save would leave the replace without its file on the other steps).
        Invalid(in_training_loop("torch.save(model.state_dict(), 'ckpt.pt.tmp')\nos.replace('ckpt.pt.tmp', 'ckpt.pt')")
                .replace("import torch\n", "import os\nimport torch\n"),
                fixed=in_training_loop("if step % 1000 == 0:\n    torch.save(model.state_dict(), 'ckpt.pt.tmp')\n"
                                       "    os.replace('ckpt.pt.tmp', 'ckpt.pt')")
                .replace("import torch\n", "import os\nimport torch\n")
                # ... and both run once more after the loop (the interval alone left `ckpt.pt` stale).
                + "torch.save(model.state_dict(), 'ckpt.pt.tmp')\nos.replace('ckpt.pt.tmp', 'ckpt.pt')\n",
                message="save every `1000` steps, and once more after the loop (the fix does only that; no background write is offered: "
                        "`os.replace('ckpt.pt.tmp', 'ckpt.pt')` uses the file after the save)"),
        # ... and when another statement runs between them: not fixed.
        Invalid(_REPLACE_AFTER_WORK, fixed=_REPLACE_AFTER_WORK,
                message="save every `1000` steps (no background write is offered: `os.replace('ckpt.pt.tmp', "
                        "'ckpt.pt')` uses the file after the save)"),
        # PyTorch's ImageNet example: the helper copies the file it has just saved, so it stays blocking;
        # run every N steps, there is nothing else to fix.
        Invalid(_IMAGENET, fixed=_IMAGENET,
                message="`save_checkpoint()` (which calls `torch.save`) blocks training while it writes the checkpoint "
                        "(under `step % args.save_freq == 0`); no background write is offered, so no fix: "
                        "`shutil.copyfile(filename, 'model_best.pth.tar')` uses the file after the save"),
        # The caller uploads the file the helper saved, the path passed through its parameter: moved
        # under the interval with the save, not made asynchronous; both run once more after the loop.
        Invalid("import torch\ndef save_ckpt(path):\n    torch.save({'model': model.state_dict()}, path)\n"
                + in_training_loop("save_ckpt(args.out)\nupload(args.out)").partition("\n")[2],
                fixed="import torch\ndef save_ckpt(path):\n    torch.save({'model': model.state_dict()}, path)\n"
                + in_training_loop("if step % 1000 == 0:\n    save_ckpt(args.out)\n"
                                   "    upload(args.out)").partition("\n")[2] + "save_ckpt(args.out)\nupload(args.out)\n",
                message="(the fix does only that; no background write is offered: `upload(args.out)` uses the file "
                        "after the save)"),
        # ... a path the loop names (`path = f'ckpt-{step}.pt'`) is unbound after a loop that ran no
        # step: no final save, so no interval (nor a fix; the interval alone left the last steps unsaved).
        Invalid("import torch\ndef save_ckpt(path):\n    torch.save({'model': model.state_dict()}, path)\n"
                + in_training_loop("path = f'ckpt-{step}.pt'\nsave_ckpt(path)\nupload(path)").partition("\n")[2],
                fixed=NO_FIX, message="a final save after the loop would read `path`, which only the loop binds"),
        # A helper that returns the path it saved to: what the caller does with the value is a use
        # of the file (the fix once wrote it in the background, and the copy found no file yet).
        Invalid("import shutil\nimport torch\ndef save_ckpt(model, step):\n    path = f'step_{step}.pt'\n"
                "    torch.save(model.state_dict(), path)\n    return path\n"
                + in_training_loop("if step % 5 == 0:\n    p = save_ckpt(model, step)\n    shutil.copy(p, 'latest.pt')")
                .partition("\n")[2], fixed=NO_FIX, message="`shutil.copy(p, 'latest.pt')` uses the file after the save"),
        Invalid("import torch\ndef save_ckpt(model, step):\n    torch.save(model.state_dict(), f'{step}.pt')\n"
                "    return f'{step}.pt'\n" + in_training_loop("if step % 5 == 0:\n    upload(save_ckpt(model, step))")
                .partition("\n")[2], fixed=NO_FIX, message="`upload(save_ckpt(model, step))` uses the file"),
        # Later calls that only print the path or are handed other values: still made asynchronous.
        Invalid(in_training_loop("if step % 500 == 0:\n    torch.save(model.state_dict(), path)\n"
                                 "    print(f'saved {path}')\n    evaluate(model, val_loader)"),
                fixed=_fixed(in_training_loop("if step % 500 == 0:\n"
                                              "    _trainlint_async_save(torch.save, model.state_dict(), path)\n"
                                              "    print(f'saved {path}')\n    evaluate(model, val_loader)")),
                message="under `step % 500 == 0`"),
        # The file read back through the path built again, not through the name holding it (the
        # copy would find no file yet): the name is followed to its value, and paths built from the
        # same parts (`os.path.join(out, "last.pt")`, `str(out) + "/last.pt"`, `f"{out}/last.pt"`)
        # name the same file.
        Invalid(in_training_loop("if step % 10 == 0:\n    ckpt = os.path.join(out_dir, 'last.pt')\n"
                                 "    torch.save(model.state_dict(), ckpt)\n"
                                 "    shutil.copyfile(os.path.join(out_dir, 'last.pt'), os.path.join(out_dir, 'best.pt'))"),
                fixed=NO_FIX, message="no fix: `shutil.copyfile(...)` uses the file after the save"),
        Invalid(in_training_loop("if step % 10 == 0:\n    torch.save(model.state_dict(), OUT / 'last.pt')\n"
                                 "    upload(str(OUT) + '/last.pt')"), fixed=NO_FIX),
        Invalid(in_training_loop("if step % 10 == 0:\n    torch.save(model.state_dict(), f'{out}/ckpt-{step}.pt')\n"
                                 "    upload(os.path.join(out, f'ckpt-{step}.pt'))"), fixed=NO_FIX),
        # ... another file of the same folder is not the one being written: made asynchronous.
        Invalid(in_training_loop("if step % 10 == 0:\n    torch.save(sd, os.path.join(out, 'last.pt'))\n"
                                 "    write_metrics(os.path.join(out, 'metrics.json'))"),
                fixed=_fixed(in_training_loop("if step % 10 == 0:\n"
                                              "    _trainlint_async_save(torch.save, sd, os.path.join(out, 'last.pt'))\n"
                                              "    write_metrics(os.path.join(out, 'metrics.json'))"))),
        # A save into a folder a `with` binds and tears down on exit (a TemporaryDirectory is
        # removed): a background write could still be running then. Only put under the interval.
        Invalid(_IN_TMPDIR.format(save="torch.save(sd, os.path.join(out, 'latest.pt'))"),
                fixed=_IN_TMPDIR.format(save="if step % 1000 == 0:\n            torch.save(sd, os.path.join(out, 'latest.pt'))")
                + "    torch.save(sd, os.path.join(out, 'latest.pt'))\n",
                message="(the fix does only that; no background write is offered: `with tempfile.TemporaryDirectory() "
                        "as out` may tear down `out` on exit, while the write still runs)"),
        # ... also through a variable, or the function that trains called inside the `with`.
        Invalid(_IN_TMPDIR.format(save="if step % 10 == 0:\n            torch.save(sd, ckpt)").replace(
            "    for step", "    ckpt = os.path.join(out, 'latest.pt')\n    for step"), fixed=NO_FIX),
        Invalid("import torch\ndef train(out):\n" + in_training_loop(
                "if step % 10 == 0:\n    torch.save(sd, f'{out}/latest.pt')").partition("\n")[2].replace("\n", "\n    ")
                .replace("for step", "    for step", 1) + "\nwith tempfile.TemporaryDirectory() as tmp:\n    train(tmp)\n",
                fixed=NO_FIX, message="no fix: `with tempfile.TemporaryDirectory() as tmp` may tear down `tmp` on exit"),
        # A save whose error the script catches and goes on from: in the background its error would
        # surface outside the `try` (at the next save, or at exit, which fails the process).
        Invalid(in_training_loop("if step % 10 == 0:\n    try:\n        torch.save(model.state_dict(), 'last.pt')\n"
                                 "    except OSError as exc:\n        print('checkpoint skipped:', exc)"), fixed=NO_FIX,
                message="no background write is offered, so no fix: `except OSError:` carries on after the save "
                        "fails, and a background write would raise its error later, outside the `try`"),
        # ... a handler that stops training on Ctrl-C, or re-raises, lets the error fail the run as before.
        Invalid(_TRY_AROUND_LOOP.format(save="torch.save(sd, 'last.pt')", helper="", wait=""),
                fixed=_TRY_AROUND_LOOP.format(save="_trainlint_async_save(torch.save, sd, 'last.pt')",
                                              wait="    _trainlint_wait_for_save()\n",
                                              helper=HELPER_CODE + "\n\n")),
        # A save into the file a `with` opens for it: the guard goes around the `with` (inside it, an
        # empty file would still be created on every step); a file object is written blocking.
        # Blocking, it is saved once more after the loop with no wait before it.
        Invalid(in_training_loop("with open('ckpt.pt', 'wb') as f:\n"
                                 "    torch.save({'model': model.state_dict()}, f)"),
                fixed=in_training_loop("if step % 1000 == 0:\n    with open('ckpt.pt', 'wb') as f:\n"
                                       "        torch.save({'model': model.state_dict()}, f)")
                + "with open('ckpt.pt', 'wb') as f:\n    torch.save({'model': model.state_dict()}, f)\n",
                message="save every `1000` steps, and once more after the loop (the fix does only that; no background "
                        "write is offered: `f` is a file object, written before the save returns)"),
        # ... a file named by the loop's `step` could not be saved after it: no interval, so no fix
        # (the interval alone left the last steps unsaved).
        Invalid(in_training_loop("with open(f'ckpt-{step}.pt', 'wb') as f:\n"
                                 "    torch.save({'model': model.state_dict()}, f)"), fixed=NO_FIX,
                message="(a final save after the loop would read `step`, which only the loop binds (unbound after a "
                        "loop that ran no step)); not fixed: no background write is offered: `f` is a file object"),
        # ... not fixed when the `with` does more than the save.
        Invalid(_WITH_MORE, fixed=_WITH_MORE),
        # A buffer held in a name (`buffer = io.BytesIO()`) is a file object too: no background
        # write promised (it once got the helper, which saved blocking); made in the loop, it could
        # not be saved into after it, so no interval either (it left the last steps unsaved).
        Invalid("import io\n" + in_training_loop("buffer = io.BytesIO()\ntorch.save(model.state_dict(), buffer)"),
                fixed=NO_FIX, message="would read `buffer`, which only the loop binds (unbound after a loop that ran "
                                      "no step)); not fixed: no background write is offered: `buffer` is a file object, "
                                      "written before the save returns"),
        Invalid("import io\n" + in_training_loop("n, buffer = 0, io.BytesIO()\ntorch.save(model.state_dict(), buffer)"),
                fixed=NO_FIX, message="`buffer` is a file object"),
        # Under an interval, a file object gets no background-thread advice it cannot take.
        Invalid(in_training_loop("if step % 100 == 0:\n    with open(path, 'wb') as f:\n        torch.save(sd, f)"),
                fixed=NO_FIX, message="a file object is written before the save returns"),
    ]

    # -- finding the saves -------------------------------------------------------------

    def _save_kind(self, call: cst.Call) -> str | None:
        ctx = self.ctx
        qualified = ctx.names.qualified(call.func)
        if qualified in ("torch.save", "safetensors.torch.save_file", "safetensors.torch.save_model"):
            return qualified
        func = call.func
        if not isinstance(func, cst.Attribute):
            return None
        receiver = (dotted(func.value) or ctx.code(func.value)).rsplit(".", 1)[-1]
        attr = func.attr.value
        if attr == "save_pretrained" and not _NOT_A_MODEL.search(ctx.code(func.value)):
            return "save_pretrained"
        if attr == "save_state" and "accelerator" in receiver.lower():
            return "accelerator.save_state"
        if attr == "save" and "accelerator" in receiver.lower():
            return "accelerator.save"  # torch.save on the main process (or safetensors)
        if attr == "save" and "fabric" in receiver.lower():
            return "fabric.save"
        if attr == "save_checkpoint" and receiver == "trainer" and (
                ctx.names.imports_from("lightning") or ctx.names.imports_from("pytorch_lightning")):
            return "trainer.save_checkpoint"  # Lightning's (`self.trainer` in a LightningModule)
        if attr == "save_checkpoint" and ctx.names.imports_from("deepspeed") and (
                "engine" in receiver.lower() or dotted(func.value) in self._deepspeed_engines):
            return "engine.save_checkpoint"  # DeepSpeed's (every rank writes its shard)
        return None

    @cached_property
    def _deepspeed_engines(self) -> frozenset[str]:
        """Names bound to the engine `deepspeed.initialize(...)` returns (its result's first item)."""
        ctx, names = self.ctx, set()
        for assign in ctx.index.nodes(cst.Assign):
            value = assign.value
            if isinstance(value, cst.Call) and ctx.names.qualified(value.func) == "deepspeed.initialize":
                for target in assign.targets:
                    first = target.target.elements[0].value if isinstance(target.target, (cst.Tuple, cst.List)) \
                        else target.target
                    if dotted(first):
                        names.add(dotted(first))
        return frozenset(names)

    def _analyse(self):
        """(direct saves outside our helper, local function name -> the saves it runs)."""
        ctx = self.ctx
        loops = ctx.loops
        saves = []
        for call in ctx.index.nodes(cst.Call):
            fn = ctx.index.enclosing_function(call)
            if self._save_kind(call) and not (fn is not None and fn.name.value == HELPER) \
                    and not loops.on_cache_miss(call):  # filling a data cache once is not a checkpoint
                saves.append(call)
        # Functions that save and do not train themselves: their call sites are the saves.
        helpers: dict[str, list[cst.Call]] = {}
        changed = True
        while changed:
            changed = False
            for name, fns in loops.functions.items():
                if name == HELPER or name in helpers or len(fns) != 1 or fns[0] in loops.stepping_functions \
                        or loops.is_step_hook(fns[0]) and not self._own_callers(fns[0]):
                    continue  # (a hook only the framework calls: its saves are the sites)
                fn = fns[0]
                # A function holding a hot loop trains: its saves are sites of their own, also when
                # the loop steps through a helper (`train_step(model, opt, x, y)`).
                if any(loops.hot_loop_of(c) is not None for c in loops.step_calls if ctx.index.contains(fn, c)) \
                        or any(ctx.index.contains(fn, loop) for loop in loops.hot_loops):
                    continue
                inner = [s for s in saves if ctx.index.contains(fn, s)]
                for callee, callee_saves in list(helpers.items()):
                    if any(ctx.index.contains(fn, c) for c in loops.calls_by_name.get(callee, ())):
                        inner += callee_saves
                if inner:
                    helpers[name] = inner
                    changed = True
        return saves, helpers

    def visit_Module(self, node: cst.Module) -> None:
        ctx = self.ctx
        saves, helpers = self._analyse()
        self._helpers = helpers  # a call of one is another save, not a use of the file (_not_a_reader)
        self._helper_fns = {fn for name in helpers for fn in ctx.loops.functions[name]}
        # A module fixed by an older trainlint has the helper without the wait: no wait is added.
        self._can_wait = HELPER not in ctx.loops.functions or WAIT in ctx.loops.functions
        self._uses_of: dict[cst.Call, list[cst.Call]] = {}  # save -> the calls that use its file (_path_uses)
        self._unsaved: dict[cst.Call, str] = {}  # per-step save -> why no interval (_fix)
        self._saved_at_end: set[cst.Call] = set()  # per-step saves the fix saves once more after the loop
        self._inside: dict[cst.Call, str] = {}  # call of a save function -> its name, when the interval is inside it
        self._bound_in: dict[cst.FunctionDef, set[str]] = {}  # fn -> its parameters and the names it binds
        helper_fns = {fn for name in helpers for fn in ctx.loops.functions[name]}
        sites: list[tuple[cst.Call, list[cst.Call], str | None]] = []
        for call in saves:
            if ctx.index.enclosing_function(call) not in helper_fns:
                sites.append((call, [call], None))
        for name, inner in helpers.items():
            for call in ctx.loops.calls_by_name.get(name, ()):
                if ctx.index.enclosing_function(call) not in helper_fns:
                    sites.append((call, inner, name))
        calls = [site for site, _inner, _helper in sites]
        for site, inner, helper in sites:
            if ctx.loops.in_hot_loop(site):
                self._check(site, inner, helper, calls)

    # -- one save site in the hot loop -------------------------------------------------

    def _check(self, site: cst.Call, inner: list[cst.Call], helper: str | None, sites: list[cst.Call]) -> None:
        """sites: every save site of the module, whose intervals a per-step save can take."""
        kind = self._guard_kind(site)
        if kind == "once":
            return
        if kind == "per-step" and helper:
            if all(self._limited_inside(s, self.ctx.loops.once_in_function) for s in inner):
                return  # saves on the first step only (`if step == 0:` in it), as such a guard in the loop
            # A helper that checks its own interval (`if step % 250 == 0:` or an early return
            # around its save) saves on those steps only: adding another would lose checkpoints.
            # One that decides otherwise for some of its saves (only a better model, a periodic
            # copy beside the latest) is not put under an interval either: only made asynchronous.
            inside = [self._interval_inside(s) for s in inner]
            if all(inside):
                kind = inside[0]
            elif any(inside) or any(self._conditional_inside(s) for s in inner):
                kind = "conditions of its own"
        what = f"`{helper}()` (which calls `{self._save_kind(inner[0])}`)" if helper else f"`{self._save_kind(site)}`"
        # Lightning writes through its CheckpointIO plugin, which has an asynchronous form; DeepSpeed
        # through a checkpoint engine its configuration picks.
        lightning = any(self._save_kind(s) == "trainer.save_checkpoint" for s in inner)
        deepspeed = any(self._save_kind(s) == "engine.save_checkpoint" for s in inner)
        plugin = ("Lightning's `AsyncCheckpointIO` (`Trainer(plugins=[AsyncCheckpointIO()])`, from "
                  "`lightning.pytorch.plugins.io`)")
        engine = ("an asynchronous checkpoint engine of DeepSpeed, chosen in its configuration (Nebula, "
                  "DataStates-LLM; see DeepSpeed's checkpointing docs)")
        into_file = all(self._into_file_object(s) for s in inner)
        ctx = self.ctx
        if kind != "per-step" and all(self._file_object(s) == "memory" for s in inner):
            return  # serialized into memory now and then (a copy of the best weights): nothing written
        # Decided once, for the fix and the message alike: a message never offers a background
        # write the fix withholds.
        withheld = self._withheld(site, inner, helper)
        once = self._once_after_loop(site) if kind == "per-step" and helper is None and not withheld else None
        if once is not None:
            # Every step writes the same file, whose last write is what stays: written once, after
            # the loop, it holds what it held (an interval would leave the first step's state).
            self.report(site, f"{what} writes a checkpoint on every training step and training waits for it, "
                              f"each time to the same file (it names no value the loop changes): save it once, "
                              f"after the loop, where it ends with the same state", once)
            return
        if kind == "per-step":
            remainder = ctx.loops.remainder_guard(site)
            interval = self._interval(site, sites)
            # An interval inside `if step % 50 != 0:` could hold on no step: there the fix only
            # writes in the background, where the save stands.
            fix = self._fix(site, inner, "per-step" if remainder is None else one_line(ctx.code(remainder.test)),
                            interval, withheld)
            live = self._live_object(inner)
            how = f", written in a background thread by {plugin}" if lightning else \
                f", written in the background by {engine}" if deepspeed else \
                f" ({'the fix does only that; ' if fix else ''}no background write is offered: {withheld})" \
                if withheld else f", from a CPU snapshot written in a background thread{live}"
            when = "every training step" if remainder is None else \
                f"all training steps but one in N (under `{one_line(ctx.code(remainder.test))}`)"
            inside = f" inside `{self._inside[site]}()`" if site in self._inside else ""
            end = " and at the last step" if fix is not None and remainder is None and not inside \
                and self._last_step_test(site) else \
                ", and once more after the loop" if fix is not None and site in self._saved_at_end else ""
            message = (f"{what} writes a checkpoint on {when} and training waits for it; save every "
                       f"`{interval}` steps{inside}{end}{how}")
            unsaved = self._unsaved.get(site)
            if unsaved is not None:
                message = f"{what} writes a checkpoint on {when} and training waits for it; not saved under an interval: {unsaved}"
                message += "; the fix writes it from a CPU snapshot in a background thread, where it stands" \
                    if fix is not None else f"; not fixed: have {plugin} write it in a background thread" if lightning \
                    else f"; not fixed: have {engine} write it in the background" if deepspeed \
                    else f"; not fixed: no background write is offered: {withheld}" if withheld else "; not fixed"
            elif fix is None and not withheld and not lightning and not deepspeed:
                counter, stmt = _counter(ctx, site), self._statement_to_guard(site)
                message += ("; not fixed: " + (
                    "the loop counts no optimizer steps where it saves (the micro-batch index would not do)"
                    if counter is None and ctx.loops.step_region(site) is not None else
                    "the loop keeps no step counter an interval could test" if counter is None else
                    "the save is not a statement of its own an interval could hold"
                    if stmt is None or not isinstance(ctx.parent(stmt), cst.IndentedBlock) else
                    "what uses the file it writes does not follow it closely enough to move under the interval too"))
        else:
            fix = self._fix(site, inner, kind, None, withheld)
            how = f"have {plugin} write it in a background thread" if lightning else \
                f"have {engine} write it in the background" if deepspeed else (
                "a file object is written before the save returns: save to a path from a CPU snapshot "
                "in a background thread instead") if into_file else \
                f"no background write is offered, so no fix: {withheld}" if withheld else (
                "snapshot the state to the CPU and write it in a background thread "
                f"(or `torch.distributed.checkpoint.async_save`){self._live_object(inner)}")
            under = "under an interval where its function is called" if kind == "an interval" else \
                "under conditions of its own" if kind == "conditions of its own" else f"under `{kind}`"
            message = f"{what} blocks training while it writes the checkpoint ({under}); {how}"
        self.report(site, message, fix)

    def _once_after_loop(self, site: cst.Call):
        """A fix that moves a per-step save after its hot loop, when that loop is inside another
        (`torch.save(model.state_dict(), f"model_epoch{epoch}.pt")` on each step of an epoch): the
        save is the last statement of the loop's body, reads nothing the loop binds, and the loop
        always reaches it (no `break`, `continue`, `return` or `else:`): the file then ends with
        the state of the loop's last step either way. None otherwise."""
        ctx = self.ctx
        loop = ctx.loops.hot_loop_of(site)
        stmt = ctx.index.enclosing(site, (cst.SimpleStatementLine,))
        if loop is None or stmt is None or loop.orelse is not None or not loop.body.body \
                or loop.body.body[-1] is not stmt or isinstance(ctx.parent(loop), cst.Module):
            return None
        outer = ctx.index.enclosing(loop, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda))
        if not isinstance(outer, (cst.For, cst.While)):
            return None
        bound = bound_names(loop.body) | (bound_names(loop.target) if isinstance(loop, cst.For) else set())
        read = {n.value for n in ctx.index.walk(stmt) if isinstance(n, cst.Name)}
        if read & bound:
            return None
        for node in ctx.index.walk(loop.body):
            if isinstance(node, (cst.Return, cst.Yield)) or isinstance(node, (cst.Break, cst.Continue)) \
                    and ctx.index.enclosing(node, (cst.For, cst.While)) is loop:
                return None
        return self.fix(Applicability.UNSAFE, "Save once, after the loop",
                        (stmt, ""), (loop, ctx.render(loop) + ctx.render(stmt.with_changes(leading_lines=[]), at=loop)))

    def _conditional_inside(self, save: cst.Call) -> bool:
        """save runs under a condition of the helper functions it is reached through: an `if`
        around it, or an `if ...: return` before it (`if loss >= best: return best`)."""
        loops = self.ctx.loops
        helper_fns = {fn for name in self._helpers for fn in loops.functions[name]}
        child = save
        for anc in self.ctx.index.ancestors(save):
            if isinstance(anc, cst.If) and child is not anc.test:
                return True
            if isinstance(anc, cst.IndentedBlock):
                position = next(i for i, stmt in enumerate(anc.body) if stmt is child)
                if any(isinstance(stmt, cst.If) and isinstance(getattr(stmt.body, "body", [None])[-1], cst.SimpleStatementLine)
                       and isinstance(stmt.body.body[-1].body[-1], cst.Return) for stmt in anc.body[:position]):
                    return True
            if isinstance(anc, cst.FunctionDef):
                if anc not in helper_fns:
                    return False
                calls = [c for c in loops.calls_of(anc)
                         if self.ctx.index.enclosing_function(c) in helper_fns]
                if len(calls) != 1:
                    return False
                return self._conditional_inside(calls[0])
            child = anc
        return False

    def _live_object(self, inner: list[cst.Call]) -> str:
        """A note for a torch.save of a whole module or optimizer (`torch.save(model, path)`), which
        `_trainlint_async_save` cannot snapshot and so still saves blocking; else ""."""
        for save in inner:
            name = self._live_name(save)
            if name:
                return (f" (`{name}` itself is a live object, which the helper saves blocking, as before: "
                        f"save `{name}.state_dict()` to write it in the background)")
        return ""

    def _live_name(self, save: cst.Call) -> str | None:
        """The name of the whole module or optimizer a torch.save writes (`torch.save(model, path)`)."""
        if self._save_kind(save) != "torch.save" or not save.args or save.args[0].star:
            return None
        obj = save.args[0].value
        if isinstance(obj, cst.Call) and isinstance(obj.func, cst.Attribute) and obj.func.attr.value == "unwrap_model" \
                and len(obj.args) == 1:
            obj = obj.args[0].value  # `accelerator.unwrap_model(model)` is the module itself
        name = dotted(obj) if isinstance(obj, (cst.Name, cst.Attribute)) else None
        return name if name and _LIVE_OBJECT.search(name.rsplit(".", 1)[-1]) else None

    def _interval_inside(self, save: cst.Call) -> str | None:
        """The interval (as code) that a save helper checks before it reaches save: around save in
        its function, else around the call of that function in the helper calling it (transformers'
        `_maybe_log_save_evaluate` tests `self.control.should_save` before `_save_checkpoint`)."""
        return self._limited_inside(save, self.ctx.loops.interval_in_function)

    def _limited_inside(self, save: cst.Call, reading):
        """What reading (interval_in_function, once_in_function) finds limiting save in its
        function, else around the call of that function in the helper calling it, and so on up
        the helpers; None (or False) when nothing does."""
        loops = self.ctx.loops
        helper_fns = {fn for name in self._helpers for fn in loops.functions[name]}
        node = save
        for _ in range(4):
            found = reading(node)
            if found:
                return found
            fn = self.ctx.index.enclosing_function(node)
            calls = loops.calls_of(fn) if fn is not None else ()
            # Its calls from the helpers above it (a final save after the loop calls it too, and
            # is not the training step's).
            inside = [c for c in calls if self.ctx.index.enclosing_function(c) in helper_fns]
            if not inside:
                return None  # called from the training code itself: that call site decides
            guarded = [reading(c) for c in inside]
            if all(guarded):
                return guarded[0]
            if len(inside) != 1:
                return None
            node = inside[0]
        return None

    def _withheld(self, site: cst.Call, inner: list[cst.Call], helper: str | None = None) -> str | None:
        """Why the save is not made asynchronous, as a message gives it (what stops it, named), or
        None when it may be: the helper cannot snapshot what it saves (_no_snapshot), or a
        background write could be unfinished (or fail) where the script still counts on it."""
        ctx = self.ctx
        for s in inner:
            reason = self._no_snapshot(s)
            if reason is not None:
                return reason
        live = [self._live_name(s) for s in inner]
        if all(live):
            # The helper saves a live object blocking, as before: wrapping the call in it changed
            # nothing, yet the finding went away as fixed.
            return (f"`{live[0]}` itself is a live object, which a background write cannot snapshot: save "
                    f"`{live[0]}.state_dict()` to write it in the background")
        late = self._unwaitable(inner) if self._can_wait else None
        if late is not None:
            return (f"`{_shown(ctx, late)}` runs the save once more where no wait for a background write "
                    f"can follow it")
        # A call after the save that is handed the file it writes would find it missing or partial;
        # the fix waits for the write after the loop, so only a call that runs while the loop does
        # counts (when every call that reaches the save is in a hot loop the fix can wait after).
        loops = self._wait_loops(inner)
        uses = [u for s in inner for u in self._path_uses(s) if loops is None or self._during(u, loops)]
        # The innermost use names it: `torch.load(path)`, not the `model.load_state_dict(...)` around it.
        use = next((u for u in uses if not any(o is not u and ctx.index.contains(u, o) for o in uses)), None)
        if use is not None and (self._save_kind(use) or ctx.loops.local_callee_name(use) in self._helpers):
            return (f"`{_shown(ctx, use)}` after the loop writes the same file and would not wait for a "
                    f"background write still running")
        if use is not None:
            fn, where = ctx.index.enclosing_function(site), ctx.index.enclosing_function(use)
            inside = {f for name in self._helpers for f in ctx.loops.functions[name]}
            if helper is not None and where not in inside and not (
                    where is fn and self._call_order[use] > self._call_order[site]):
                # The use follows another call of the helper, whose save the fix would change too.
                return f"`{_shown(ctx, use)}` uses the file after another call of `{helper}()`, whose save it shares"
            return f"`{_shown(ctx, use)}` uses the file after the save"
        # A generator hands control to its caller at each `yield`, which may read the file (evaluate
        # the checkpoint just written) before the background write is done; a wait before each
        # yield would wait for nearly every write at once. An `await` (or an `async for`, whose
        # every step awaits) hands it to the event loop's other tasks alike, and a wait there would
        # also block the event loop.
        for loop in loops or [ctx.loops.hot_loop_of(site)]:
            if loop is None:
                continue
            fn = ctx.index.enclosing_function(loop)
            if isinstance(loop, cst.For) and loop.asynchronous is not None:
                return ("`async for` hands control to other tasks at each step, which may read the file "
                        "while it is still written")
            held = next((n for n in ctx.index.walk(loop) if isinstance(n, (cst.Yield, cst.Await))
                         and ctx.index.enclosing_function(n) is fn), None)
            if held is not None:
                whom = "the caller" if isinstance(held, cst.Yield) else "other tasks"
                return (f"`{_shown(ctx, held)}` in the loop hands control to {whom}, which may read the file "
                        f"while it is still written")
        load = self._reads_back(site, loops)
        if load is not None:
            where = "after the loop" if loops is None else "in a function the loop calls"
            return f"`{_shown(ctx, load)}` {where} may read the file while it is still written"
        handler = next(filter(None, (self._caught(s) for s in (site, *inner))), None)
        if handler is not None:
            keyword = "except*" if isinstance(handler, cst.ExceptStarHandler) else "except"
            caught = f"{keyword} {one_line(ctx.code(handler.type))}:" if handler.type is not None else f"{keyword}:"
            return (f"`{caught}` carries on after the save fails, and a background write would raise its "
                    f"error later, outside the `try`")
        for s in inner:
            reason = self._signalled_done(s)
            if reason is not None:
                return reason
        for s in inner:
            item = self._torn_down(s)
            if item is not None:
                bound = one_line(ctx.code(item.asname.name))
                return (f"`with {one_line(ctx.code(item.item))} as {bound}` may tear down `{bound}` on exit, "
                        f"while the write still runs")
        return None

    def _no_snapshot(self, call: cst.Call) -> str | None:
        """Why `_trainlint_async_save` cannot write this save from a snapshot, or None."""
        ctx = self.ctx
        kind = self._save_kind(call)
        if kind == "save_pretrained":
            if ctx.hides_arguments(call):
                star = next(a for a in call.args if a.star)
                return f"`{star.star}{one_line(ctx.code(star.value))}` may pass the state dict by position"
            other = next((m for m in _OTHER_SAVE_PRETRAINED if ctx.names.imports_from(m)), None)
            if other is not None:
                # diffusers' save_pretrained ignores `state_dict=` (the live weights would be written
                # while training goes on); PEFT's and EMAModel's reject it.
                return f"the module imports {other}, whose `save_pretrained` ignores or rejects `state_dict=`"
            if not ctx.names.imports_from("transformers"):
                return ("only the `save_pretrained` of transformers' models takes `state_dict=`, and the module "
                        "does not import transformers")
            if not self._transformers_model(call.func.value):
                # huggingface_hub's ModelHubMixin.save_pretrained takes `state_dict=` into **kwargs and
                # ignores it: the live model was written while training went on.
                return (f"`{one_line(ctx.code(call.func.value))}` is not known to be a transformers model (made by "
                        "`from_pretrained` or `from_config` of a transformers class, or of a class subclassing one), "
                        "and only their `save_pretrained` takes `state_dict=`")
            return None
        if kind in _SAFETENSORS:
            return f"`{kind}` {_SAFETENSORS[kind]}"
        if kind not in ("torch.save", "accelerator.save", "safetensors.torch.save_file"):
            # accelerate's save: torch.save on the main process
            return f"`{kind}` may gather state across ranks, which the fix cannot snapshot"
        if self._into_file_object(call):
            return (f"`{one_line(ctx.code(self._written_path(call)))}` is a file object, written before the "
                    f"save returns")
        return None

    def _transformers_model(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """expr is a transformers model: made by a transformers class (`AutoModelForCausalLM.from_pretrained(...)`,
        `GPT2LMHeadModel(config)`) or a class of the module subclassing one (`PreTrainedModel`), as
        it is, unwrapped (`accelerator.unwrap_model(m)`, `m.module`, `m.to(device)`), or through a
        variable assigned one."""
        ctx = self.ctx
        while True:
            if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.args \
                    and expr.func.attr.value == "unwrap_model":
                expr = expr.args[0].value
            elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                    and expr.func.attr.value in ("to", "cuda", "cpu", "float", "half", "bfloat16", "train", "eval"):
                expr = expr.func.value
            elif isinstance(expr, cst.Attribute) and expr.attr.value == "module":
                expr = expr.value
            else:
                break
        if isinstance(expr, cst.IfExp):  # `model.module if hasattr(model, "module") else model`
            return self._transformers_model(expr.body, depth) and self._transformers_model(expr.orelse, depth)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("from_pretrained", "from_config"):
                func = func.value
            return self._transformers_class(func)
        if depth >= 3 or not isinstance(expr, (cst.Name, cst.Attribute)):
            return False
        values = ctx.assigned_values(expr) or ctx.assigned_values(expr, anywhere=True)
        return any(self._transformers_model(value, depth + 1) for value in values)

    def _transformers_class(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """expr names a class of transformers, or a class of the module with one among its bases."""
        qualified = self.ctx.names.qualified(expr) or ""
        if qualified.startswith("transformers."):
            return True
        if depth >= 3 or not isinstance(expr, cst.Name):
            return False
        return any(self._transformers_class(base.value, depth + 1) for cls in self.ctx.index.nodes(cst.ClassDef)
                   if cls.name.value == expr.value for base in cls.bases)

    def _guards(self, site: cst.Call):
        """(`if`, the part of it that holds site) for each `if` around site, innermost first, up to
        its hot loop or function."""
        child = site
        for anc in self.ctx.index.ancestors(site):
            if isinstance(anc, (cst.For, cst.While)) and child is anc.body and anc in self.ctx.loops.hot_loops:
                return
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return
            if isinstance(anc, cst.If):
                yield anc, child
            child = anc

    def _guard_kind(self, site: cst.Call) -> str:
        """"per-step", "once" (`if step == last:`), or the code of the interval/other condition."""
        ctx = self.ctx
        loops = ctx.loops
        other = None
        for guard, part in self._guards(site):
            if part is guard.body:
                test = one_line(ctx.code(guard.test))
                if loops.is_step_boundary(guard):
                    continue  # the optimizer step of gradient accumulation: every training step
                if loops.limits_body(guard.test):
                    return test if loops.is_periodic(guard.test) else "once"
                if loops.else_interval(guard.test) is not None:
                    continue  # `if step % n != 0:` holds on all steps but one in N: its `else:` is the interval
                if _tests_receiver(guard.test, site):
                    continue  # `if self.cb is not None:`: set or not, the same on every step
                if not _RANK_TEST.search(test):
                    other = other or test
            elif part is guard.orelse:
                negated = loops.else_interval(guard.test)  # `if step % 500: ... else: save()`
                if negated is not None:
                    return one_line(negated)
        if not loops.is_per_step(site, optimizer_steps=True):
            return "an interval"  # guarded where the function holding it is called
        return other or "per-step"

    def _loop_interval(self, site: cst.Call, sites: list[cst.Call]) -> str | None:
        """The interval of another save in the same hot loop (`if step % 500 == 0: save(...)`): the
        script's own save interval, when the divisor means the same at site (a number, or a name
        the loop does not assign)."""
        ctx = self.ctx
        loops = ctx.loops
        loop = loops.hot_loop_of(site)
        if loop is None:
            return None
        found = []  # (not named as a save interval, guards above it, divisor)
        for other in sites:
            if other is site or loops.hot_loop_of(other) is not loop:
                continue
            guards = [(g, part) for g, part in self._guards(other) if not loops.is_step_boundary(g)]
            for depth, (guard, part) in enumerate(reversed(guards)):
                # (gradient accumulation's `if (i + 1) % accum == 0:` is no save interval)
                in_body = part is guard.body and loops.limits_body(guard.test) and loops.is_periodic(guard.test)
                in_else = part is guard.orelse and loops.else_interval(guard.test) is not None
                if not (in_body or in_else):
                    continue
                divisor = self._divisor(guard.test, loop)
                if divisor is not None and self._same_at(divisor, loop):
                    code = ctx.code(divisor)
                    found.append((not _SAVE_INTERVAL.match(code.rsplit(".", 1)[-1]), depth, code))
        # A save interval by its name first (`save_interval`, not the `eval_interval` a best-model
        # save sits under), then the guard nearest the loop.
        return min(found)[2] if found else None

    def _divisor(self, test: cst.BaseExpression, loop: cst.CSTNode) -> cst.BaseExpression | None:
        """n of the first `x % n` in test, or in the test the loop assigns to a flag that test reads
        (`should_save = step % n == 0`)."""
        ctx = self.ctx
        modulo = first_modulo(test)
        if modulo is None:
            flags = [value for node in ctx.index.walk(test) if isinstance(node, (cst.Name, cst.Attribute))
                     for value in ctx.assigned_values(node)
                     if isinstance(value, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation))
                     and ctx.index.contains(loop, value)]
            modulo = first_modulo(flags[0]) if flags else None
        return modulo.right if modulo is not None else None

    def _same_at(self, expr: cst.BaseExpression, loop: cst.CSTNode) -> bool:
        """expr is an integer, or a (dotted) name that nothing in loop assigns."""
        ctx = self.ctx
        if isinstance(ctx.literal(expr), int) and not isinstance(ctx.literal(expr), bool):
            return True
        name = dotted(expr)
        if name is None:
            return False
        return not bound_names(loop.body) & {name, name.split(".")[0]}

    def _interval(self, site: cst.Call, sites: list[cst.Call]) -> str:
        """The script's save interval: that of another save in the loop, else one the loop's
        function can see, else the option."""
        ctx = self.ctx
        own = self._loop_interval(site, sites)
        if own is not None:
            return own
        scope = ctx.index.enclosing_function(site) or ctx.module
        for node in ctx.index.walk(scope):
            if isinstance(node, (cst.Name, cst.Attribute)) and names_a_value(ctx, node):
                text = dotted(node)
                if text and _SAVE_INTERVAL.match(text.rsplit(".", 1)[-1]):
                    return text
        if scope is not ctx.module:
            for stmt in ctx.module.body:
                for node in ctx.index.walk(stmt):
                    if isinstance(node, cst.Name) and _SAVE_INTERVAL.match(node.value) \
                            and isinstance(ctx.parent(node), cst.AssignTarget):
                        return node.value
        # An option the script defines but the code never reads (`--save_steps`, default 7): the
        # interval was the save-every option's 1000 until something read `args.save_steps`.
        return unread_option(ctx, site, _SAVE_INTERVAL) or str(self.opts.get("save-every") or 1000)

    # -- the fix -----------------------------------------------------------------------

    def _fix(self, site: cst.Call, inner: list[cst.Call], kind: str, interval: str | None, withheld: str | None):
        """withheld: why the save is not made asynchronous (_withheld), or None."""
        ctx = self.ctx
        stmt = self._statement_to_guard(site)
        guarded = kind == "per-step" and stmt is not None
        asyncs = None if withheld else [self._async_call(s, guarded and ctx.index.contains(stmt, s)) for s in inner]
        # The fix waits for the last background write after the loop (_withheld counts on it).
        waits = self._waits(self._wait_loops(inner) or []) if asyncs is not None else []
        if kind != "per-step":
            if asyncs is None:
                return None
            reps = list(zip(inner, asyncs)) + waits
            return self._with_helper(reps, "Save from a CPU snapshot in a background thread")
        # Per step: put the statement under an interval; async too where possible.
        counter = _counter(ctx, site)  # None outside a hot loop's body or a framework's step hook
        if stmt is None or counter is None or not isinstance(ctx.parent(stmt), cst.IndentedBlock):
            return None
        # The statements that use the file it writes go under the interval with it.
        moved = self._with_users(site, stmt, [use for s in inner for use in self._path_uses(s)])
        if moved is None:
            return None
        other = self._other_work(ctx.loops.functions[helper][0]) if (helper := ctx.loops.local_callee_name(site)) \
            and site not in inner and len(ctx.loops.functions[helper]) == 1 else None
        if other is not None and not moved:
            # A function that does other work besides the save (an EMA update, a counter): an
            # interval around its call skipped that work too (the EMA was updated 2 times of 10).
            # The interval goes around the save inside it, or nowhere.
            inside = self._fix_inside(site, inner, helper, other, interval, asyncs)
            if not isinstance(inside, str):
                return inside
            self._unsaved[site] = inside
            if asyncs is None:
                return None
            asyncs = [self._async_call(s) for s in inner]
            return self._with_helper(list(zip(inner, asyncs)) + waits,
                                     "Save from a CPU snapshot in a background thread, where it stands")
        if other is not None:  # the uses of its file, moved with the call, would skip the other work too
            self._unsaved[site] = (f"`{helper}()` does other work besides the save (`{other}`), which an interval "
                                   f"around its call would skip too")
            return None
        reps = []
        new_stmt = stmt
        for old, new in zip(inner, asyncs or ()):
            if ctx.index.contains(stmt, old):
                new_stmt = new_stmt.deep_replace(old, new)
            else:
                reps.append((old, new))
        # In `for i in range(n):` the last step saves too: the interval alone left the file at an
        # older step than the loop ended with (a tester's trainer resumed from step 1 of 5).
        last = self._last_step_test(site)
        stale = self._read_unsaved(stmt, moved)
        if stale is not None:
            final = (f"`{stale.value}`, which the save's statement assigns, is read on every step (in "
                     f"`{one_line(ctx.code(ctx.index.enclosing(stale, (cst.SimpleStatementLine, cst.BaseCompoundStatement))))}`), "
                     f"and would hold an older value on the steps an interval skips")
        elif isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) > 1:
            # The guard goes around a whole line: `loss.backward(); opt.step(); torch.save(...)`
            # trained only on the saving steps.
            final = "the save shares its line with other statements, which the guard would skip too; put it on a line of its own"
        else:
            # In other loops the last steps would go unsaved: the save runs once more after the loop.
            final = None if last else self._end_save(site, stmt, moved)
            if isinstance(final, str):
                final = f"the end of training would go unsaved ({final})"
        if isinstance(final, str):
            self._unsaved[site] = final
            if asyncs is None:
                return None
            asyncs = [self._async_call(s) for s in inner]
            return self._with_helper(list(zip(inner, asyncs)) + waits,
                                     "Save from a CPU snapshot in a background thread, where it stands")
        if final is not None:
            self._saved_at_end.add(site)
            if asyncs is None:  # blocking as before: nothing to wait for
                reps.append(self._final_after(final, wait=False, before=False))
            else:  # a save function's call writes in the background too: it goes before the wait
                waits = self._waits(self._wait_loops(inner) or [], final, before=site not in inner)
        test = f"{counter} % {interval} == 0" + (f" or {last}" if last else "")
        guarded = cst.If(
            test=cst.parse_expression(test),
            body=cst.IndentedBlock(body=[new_stmt.with_changes(leading_lines=[]), *moved]),
            leading_lines=stmt.leading_lines,
        )
        rank = self._rank_test_around(stmt) if not moved else None
        if rank is not None:  # `if rank == 0 and step % 1000 == 0:`, not one `if` inside the other
            reps.append((rank, rank.with_changes(
                test=cst.parse_expression(f"{_operand(ctx.code(rank.test))} and {_operand(test)}"),
                body=rank.body.with_changes(body=[new_stmt.with_changes(leading_lines=[])]))))
        else:
            reps.append((stmt, guarded))
        reps += [(s, "") for s in moved]  # each moved into the guard, removed where it stood
        end = " and at the last step" if last else ", and once more after the loop" if final is not None else ""
        message = f"Save every `{interval}` steps{end} (`if {test}:`)"
        if moved:
            lines = "the next line, which uses" if len(moved) == 1 else f"the next {len(moved)} lines, which use"
            message = f"Save, and {lines} the file it writes, every `{interval}` steps{end} (`if {test}:`)"
        if asyncs is None:
            return self.fix(Applicability.UNSAFE, message, *reps)
        return self._with_helper(reps + waits, message + ", from a CPU snapshot in a background thread")

    def _other_work(self, fn: cst.FunctionDef, depth: int = 0) -> str | None:
        """The first statement of save function fn (or of a save function it calls) that does other
        work than the save: anything but the save itself, building its state or path in a local
        name, making its folder, moving the file it wrote into place (`os.replace(tmp, path)`),
        printing or logging, a docstring, `pass` or a `return`, and `if`s and `with`s holding
        only those. An interval around the call of fn would skip that work on
        the steps between saves (an EMA that updates, then saves, updated only on saving steps).
        None when fn only saves."""
        ctx = self.ctx

        def serves(stmt: cst.CSTNode) -> bool:
            if isinstance(stmt, (cst.If, cst.With)):
                blocks = [stmt.body] + ([stmt.orelse.body] if isinstance(stmt, cst.If) and stmt.orelse else [])
                return all(serves(b) for b in blocks)
            if isinstance(stmt, (cst.IndentedBlock, cst.SimpleStatementSuite)):
                return all(serves(s) for s in stmt.body)
            if isinstance(stmt, (cst.If, cst.Else)):
                return serves(stmt.body)
            if isinstance(stmt, cst.SimpleStatementLine):
                return all(serves(s) for s in stmt.body)
            if isinstance(stmt, (cst.Pass, cst.Return)):
                return True
            if isinstance(stmt, (cst.Assign, cst.AnnAssign)):
                targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
                # a local name (the state dict, the path): `self.seen = ...` changes the object
                return all(isinstance(t, cst.Name) for t in targets) and not self._runs_other(stmt, depth)
            if isinstance(stmt, cst.Expr):
                value = stmt.value
                if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
                    return True
                return isinstance(value, cst.Call) and self._serves_save(value, depth)
            return False

        for stmt in fn.body.body:
            if not serves(stmt):
                return one_line(ctx.code(stmt)) if len(one_line(ctx.code(stmt))) <= 60 \
                    else one_line(ctx.code(stmt)).split(":")[0] + ": ..."
        return None

    def _serves_save(self, call: cst.Call, depth: int) -> bool:
        """call (a statement of a save function) is the save, a save function of the module that
        itself only saves, or serves it: `os.makedirs`, `.mkdir()`, publishing the file it wrote
        (`os.replace(tmp, path)`), printing or logging."""
        ctx = self.ctx
        if self._save_kind(call):
            return True
        name = ctx.loops.local_callee_name(call)
        if name in self._helpers:
            fns = ctx.loops.functions[name]
            return depth < 4 and len(fns) == 1 and self._other_work(fns[0], depth + 1) is None
        func = dotted(call.func) or ""
        last = func.rsplit(".", 1)[-1]
        if func in _PUBLISHES:
            # `os.replace(tmp, path)` of the file a save of the function wrote: the second half of
            # an atomic write, skipped with the save on the steps between saves, as it should be.
            fn = ctx.index.enclosing_function(call)
            return fn is not None and any(isinstance(node, cst.Call) and self._save_kind(node)
                                          and call in self._path_uses(node) for node in ctx.index.walk(fn))
        return func in ("os.makedirs", "os.mkdir", "print") or last == "mkdir" or last in _SHOWS \
            and "." in func and not self._runs_other(call.args, depth)

    def _runs_other(self, node, depth: int) -> bool:
        """A call under node (a statement, or a call's arguments) may change state: any call but
        a save function's, a `.state_dict()`, a path's making (`os.path.join`, `f.format`), or a
        builtin that only reads (`len`, `str`, `dict`, `int`...)."""
        reads = {"len", "str", "int", "float", "dict", "list", "tuple", "min", "max", "round", "format"}
        for part in node if isinstance(node, (list, tuple)) else [node]:
            for n in walk(part):
                if not isinstance(n, cst.Call):
                    continue
                func = dotted(n.func) or ""
                last = func.rsplit(".", 1)[-1] if func else (n.func.attr.value if isinstance(n.func, cst.Attribute) else "")
                if last in ("state_dict", "join", "format", "cpu", "detach", "clone", "items", "keys", "values") \
                        or func in reads or func.startswith("os.path.") or func in ("Path", "pathlib.Path"):
                    continue
                return True
        return False

    def _fix_inside(self, site: cst.Call, inner: list[cst.Call], helper: str, other: str, interval: str,
                    asyncs: list | None):
        """The fix that puts the interval around the save inside save function `helper`, which
        does other work (`other`) the interval must not skip: tested on the parameter every call
        hands the loop's counter to (`def after_step(self, model, step)`), with a final save after
        the loop for the last steps (`or step == n - 1` would need n, which the function does
        not see). The reason (as a message gives it) where it cannot: a final save after the loop
        would have to call `helper()` again, redoing its other work, unless the save reads only
        names the loop's scope sees as the function does."""
        ctx = self.ctx
        why = f"`{helper}()` does other work besides the save (`{other}`), which an interval around its call would skip too"
        fn = ctx.loops.functions[helper][0]
        save = inner[0]
        param = step_counter(ctx, save) if len(inner) == 1 and ctx.index.enclosing_function(save) is fn else None
        stmt = self._statement_to_guard(save) if param is not None else None
        if param is None or stmt is None or ctx.parent(stmt) is not fn.body \
                or isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) > 1:
            return f"{why}, and no interval could test the loop's counter around the save inside it"
        # The interval must name in the function what it names at the loop: a number or a module's name.
        root = interval.split(".")[0]
        own = local_names(fn)
        module_names = set()
        for top in ctx.module.body:
            module_names |= bound_names(top) if not isinstance(top, (cst.FunctionDef, cst.ClassDef)) else {top.name.value}
            if isinstance(top, (cst.SimpleStatementLine,)):
                for small in top.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                        module_names |= {dotted(a.asname.name if a.asname else a.name).split(".")[0] for a in small.names}
        if not (interval.isdigit() or root not in own and root in module_names):
            return f"{why}, and the interval `{interval}` is not seen inside it"
        attrs = {id(n.attr) for n in walk(stmt) if isinstance(n, cst.Attribute)} \
            | {id(n.keyword) for n in walk(stmt) if isinstance(n, cst.Arg) and n.keyword is not None}
        read = {n.value for n in walk(stmt) if isinstance(n, cst.Name) and id(n) not in attrs}  # `self`, not `seen`
        site_fn = ctx.index.enclosing_function(site)
        shadowed = local_names(site_fn) if site_fn is not None else set()
        handed = self._handed_values(fn, site, stmt, read)
        local = sorted(((read & own) | (read & shadowed - module_names)) - handed.keys())
        after = self._after_inside(fn, stmt) if read & own else None
        if local and after is not None and after is not stmt:
            shown = ctx.code(after).strip().splitlines()[0]
            return (f"{why}; an interval around the save inside it would leave the last steps unsaved, and a "
                    f"final save after the loop would not match its last save (`{shown}` follows the save "
                    f"inside it) nor could call `{helper}()` again, which would redo that work")
        if local:
            return (f"{why}; an interval around the save inside it would leave the last steps unsaved, and a "
                    f"final save after the loop cannot read `{local[0]}` there nor call `{helper}()` again, "
                    f"which would redo that work")
        site_stmt = ctx.index.enclosing(site, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        final = self._end_save(site, site_stmt, [], written=stmt.visit(_Substituted(handed)) if handed else stmt)
        if isinstance(final, str):
            return f"{why}; an interval around the save inside it would leave the last steps unsaved ({final})"
        new_stmt = stmt.deep_replace(save, self._async_call(save, True)) if asyncs is not None else stmt
        guarded = cst.If(test=cst.parse_expression(f"{param} % {interval} == 0"),
                         body=cst.IndentedBlock(body=[new_stmt.with_changes(leading_lines=[])]),
                         leading_lines=stmt.leading_lines)
        reps = [(stmt, guarded)]
        self._saved_at_end.add(site)
        self._inside[site] = helper
        message = (f"Save every `{interval}` steps inside `{helper}()` (`if {param} % {interval} == 0:`), and once "
                   f"more after the loop")
        if asyncs is None:
            return self.fix(Applicability.UNSAFE, message, *reps, self._final_after(final, wait=False, before=False))
        waits = self._waits(self._wait_loops(inner) or [], final, before=False)
        return self._with_helper(reps + waits, message + ", from a CPU snapshot in a background thread")

    def _after_inside(self, fn: cst.FunctionDef, stmt: cst.BaseStatement) -> cst.BaseStatement | None:
        """The first statement after stmt (the save, a statement of fn's body) in fn that does
        more than log or save, or stmt itself where it is not one of fn's body; else None."""
        body = list(fn.body.body)
        at = next((i for i, b in enumerate(body) if b is stmt), None)
        if at is None:
            return stmt
        return next((b for b in body[at + 1:] if not self._changes_nothing_saved(b)), None)

    def _handed_values(self, fn: cst.FunctionDef, site: cst.Call, stmt: cst.BaseStatement,
                       read: set[str]) -> dict[str, cst.BaseExpression]:
        """For the names of fn's parameters that its save (stmt, a statement of fn's body) reads,
        what the call at site hands each (bind_args): a name, a dotted name or a literal, which a
        final save after the loop reads as the save read the parameter; for `self` the call's
        receiver (`self.ckpt` of `self.ckpt.save(self.model, step)`). A final save was refused as
        unable to read `step` there, though the call handed it the trainer's own counter. None
        where the function does more after the save than log or save (`self.path = next_path()`,
        an in-place update): after the loop those objects would hold a state the loop's last save
        did not write."""
        ctx = self.ctx
        out: dict[str, cst.BaseExpression] = {}
        if any(arg.star for arg in site.args) or self._after_inside(fn, stmt) is not None:
            return out
        for param, arg in ctx.loops.bind_args(fn, site):
            value = arg.value
            if param in read and ctx.loops.is_plain_parameter(fn, param) \
                    and (dotted(value) is not None or isinstance(value, (cst.Integer, cst.Float, cst.SimpleString))):
                out[param] = value
        params = fn.params.params
        receiver = site.func.value if isinstance(site.func, cst.Attribute) else None
        if "self" in read and params and params[0].name.value == "self" and receiver is not None \
                and dotted(receiver) is not None and ctx.index.enclosing_class(fn) is not None:
            out["self"] = receiver
        return out

    def _last_step_test(self, site: cst.Call) -> str | None:
        """`i == n - 1` for a save in `for i in range(n):` (or `range(start, n)`), which the guard
        adds so that the last step still saves; None where that would not find the last step:
        another kind of loop (there the interval leaves the last steps unsaved, as the docs say),
        `_` as the index, a `break`, `return` or `yield` in the loop, a bound the loop rebinds, or
        in gradient accumulation's optimizer step (the last micro-batch need not end one)."""
        ctx = self.ctx
        loop = ctx.loops.hot_loop_of(site)
        if not (isinstance(loop, cst.For) and isinstance(loop.target, cst.Name) and loop.target.value != "_"
                and isinstance(loop.iter, cst.Call) and dotted(loop.iter.func) in ("range", "trange")) \
                or ctx.loops.step_region(site) is not None:
            return None
        args = loop.iter.args
        if not 1 <= len(args) <= 2 or any(a.keyword is not None or a.star for a in args):
            return None
        stop = args[-1].value
        if not (isinstance(stop, (cst.Name, cst.Attribute, cst.Integer)) or isinstance(stop, cst.Call)
                and dotted(stop.func) == "len" and len(stop.args) == 1
                and isinstance(stop.args[0].value, (cst.Name, cst.Attribute))):
            return None
        fn = ctx.index.enclosing_function(loop)
        stop_names = {n.value for n in ctx.index.walk(stop) if isinstance(n, cst.Name)}
        for node in ctx.index.walk(loop.body):
            if isinstance(node, (cst.Return, cst.Yield, cst.Await)) and ctx.index.enclosing_function(node) is fn:
                return None
            if isinstance(node, cst.Break) and ctx.index.enclosing(node, (cst.For, cst.While)) is loop:
                return None
        if stop_names & bound_names(loop.body) or (dotted(stop) or "") in bound_names(loop.body):
            return None
        last = str(int(stop.value) - 1) if isinstance(stop, cst.Integer) and stop.value.isdigit() else f"{ctx.code(stop)} - 1"
        return f"{loop.target.value} == {last}"

    def _with_helper(self, reps, message: str):
        if HELPER not in self.ctx.loops.functions:
            insert = after_imports(self.ctx, HELPER_CODE, blank_lines_after=2)
            if insert is None:
                return None
            reps = [insert, *reps]
        return self.fix(Applicability.UNSAFE, message, *reps)

    def _async_call(self, call: cst.Call, guarded: bool = False) -> cst.Call:
        """`save(args)` as `_trainlint_async_save(save, args)`, for a save _no_snapshot allows."""
        ctx = self.ctx
        written = call  # the call as the file has it: where it stands
        args = list(call.args)
        if self._save_kind(call) == "save_pretrained" and ctx.keyword(call, "state_dict") is None:
            receiver = ctx.code(call.func.value)
            call = ctx.with_keyword(call, "state_dict", f"{receiver}.state_dict()")
            args = list(call.args)
        first = cst.Arg(value=call.func, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        new = call.with_changes(func=cst.Name(HELPER), args=[first, *args])
        code = ctx.code(new)
        if "#" in code or any(re.search(r",\s*\n\s*[)\]}]", ctx.code(a.value)) for a in args):
            # Comments between the arguments, or an argument the author keeps exploded with a
            # trailing comma (a dict): keep the author's layout, the lines aligned under the
            # opening parenthesis moved as far as it moves (`torch.save(` -> `_trainlint_async_save(`).
            func = len(ctx.code(call.func))
            paren = ctx.column(written.func) + func + len(ctx.code(call.whitespace_after_func))
            grown = len(HELPER) - func
            return head_grown(new, paren, grown, grown + len(ctx.code(first)), len(ctx.indentation(written)))
        # Lay the call out afresh: one line if it fits, else split at its brackets as Black splits it.
        flat = new.with_changes(
            whitespace_before_args=cst.SimpleWhitespace(""),
            args=[a.with_changes(value=_joined(a.value),
                                 comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if i < len(args) else
                                 cst.MaybeSentinel.DEFAULT, whitespace_after_arg=cst.SimpleWhitespace(""))
                  for i, a in enumerate(new.args)])
        if ctx.fits(ctx.code(flat), at=written, deeper=guarded):
            return flat
        indent = ctx.module.default_indent
        return split_at_brackets(flat, indent, "", ctx.room(written, guarded * indent))

    def _into_file_object(self, call: cst.Call) -> bool:
        """`torch.save(state, f)` into a file object (_file_object says which)."""
        return self._file_object(call) is not None

    def _file_object(self, call: cst.Call) -> str | None:
        """For `torch.save(state, f)` into a file object, "memory" (an `io.BytesIO()`) or "file":
        the name a `with` around it binds (`with open(path, "wb") as f:`), a variable whose every
        assignment it may read is `open(...)`/`io.BytesIO()` (`buffer = io.BytesIO()`, `best, buffer
        = loss, io.BytesIO()`), or one of those written in the call.
        None for a path (or anything else)."""
        ctx = self.ctx
        if self._save_kind(call) != "torch.save":
            return None
        value = self._written_path(call)
        if isinstance(value, cst.Name):
            for anc in ctx.index.ancestors(call):
                for item in anc.items if isinstance(anc, cst.With) else ():
                    if isinstance(item.asname and item.asname.name, cst.Name) and item.asname.name.value == value.value:
                        return self._opens(item.item) or "file"  # `with fsspec.open(...) as f:` too
            # Every binding the save may read, tuple assignments included (`best, buf = loss,
            # io.BytesIO()`); a binding of unknown value (a loop target, `a, b = f()`) is no file object.
            bindings = ctx.bindings.seen_from(value) or []
            kinds = {self._opens(v) if kind == "assign" and v is not None else None for kind, v in bindings}
            return kinds.pop() if len(kinds) == 1 else None
        return self._opens(value)

    def _opens(self, value: cst.BaseExpression) -> str | None:
        """"memory" for `io.BytesIO(...)`, "file" for `open(...)`, else None."""
        if not isinstance(value, cst.Call):
            return None
        qualified = self.ctx.names.qualified(value.func)
        if qualified == "io.BytesIO":
            return "memory"
        return "file" if dotted(value.func) == "open" or qualified == "builtins.open" else None

    def _caught(self, call: cst.Call) -> cst.ExceptHandler | cst.ExceptStarHandler | None:
        """call is in the body of a `try` (in its function) with a handler that may catch its error
        and go on: in the background the error would surface outside the `try`, at the next save or
        at exit (where the helper fails the process). Handlers of only KeyboardInterrupt/SystemExit,
        or that re-raise (end in `raise`), let it fail the run as before."""
        child = call
        for anc in self.ctx.index.ancestors(call):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return None
            if isinstance(anc, (cst.Try, cst.TryStar)) and child is anc.body:
                handler = next((h for h in anc.handlers if not _lets_fail(h)), None)
                if handler is not None:
                    return handler
            child = anc
        return None

    def _reads_back(self, site: cst.Call, loops: list | None) -> cst.Call | None:
        """A checkpoint load that could read a file still being written: with the fix waiting after
        loops (_wait_loops), one in a function of the module that a call in them reaches (a
        load in the loop itself is a use of the path: _path_uses); with no wait, any load after the
        hot loop in the file."""
        ctx = self.ctx
        if loops is not None:
            calls = [c for fn in self._reached(loops) for c in self._calls_in.get(fn, ())]
        else:
            loop = ctx.loops.hot_loop_of(site) or ctx.index.enclosing(site, (cst.For, cst.While))
            calls = ctx.index.nodes(cst.Call)
            inside = [i for i, c in enumerate(calls) if loop is not None and ctx.index.contains(loop, c)]
            calls = calls[(max(inside) if inside else 0) + 1:]
        for call in calls:
            qn = ctx.names.qualified(call.func)
            attr = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
            if qn == "torch.load" or attr in _LOADS or (attr == "load" and "fabric" in (dotted(call.func) or "")):
                return call
        return None

    def _reached(self, loops: list) -> list[cst.FunctionDef]:
        """The functions of the module that calls in loops run, directly or through one another."""
        return self._reached_from([c for loop in loops for c in self.ctx.index.walk(loop) if isinstance(c, cst.Call)])

    def _reached_from(self, calls: list[cst.Call]) -> list[cst.FunctionDef]:
        """The functions of the module that calls run, directly or through one another."""
        ctx = self.ctx
        todo = list(calls)
        out: list[cst.FunctionDef] = []
        while todo:
            name = ctx.loops.local_callee_name(todo.pop())
            fns = ctx.loops.functions.get(name, ()) if name else ()
            if len(fns) == 1 and fns[0] not in out:
                out.append(fns[0])
                todo += self._calls_in.get(fns[0], ())
        return out

    # -- waiting for the background write after the loop ---------------------------------

    def _wait_loops(self, inner: list[cst.Call]) -> list[cst.CSTNode] | None:
        """The hot loops after which the fix waits for the background write of inner's saves:
        the loop holding each call that reaches them (the save itself, or for a save function,
        each call of it outside the module's save functions); for a call that runs once, outside
        the hot loops (a final `save_ckpt('final.pt')` after the loop), the statement holding it,
        after which the fix waits at once (_once_statement). None when one of those calls is in
        a framework's step hook (or a function such a hook runs) or cannot be waited after: no
        wait follows it, so nothing after it may count on the file."""
        ctx = self.ctx
        if not self._can_wait:
            return None
        loops: list[cst.CSTNode] = []
        for entry in self._entries(inner):
            loop = ctx.loops.hot_loop_of(entry) or self._plain_loop(entry)
            if loop is None:
                # A save function's call after the loop was written in the background and never
                # waited for: the function returned, and what its caller (in another module) did
                # next found the final checkpoint half-written.
                stmt = self._once_statement(entry)
                if stmt is None:
                    return None
                if stmt not in loops:
                    loops.append(stmt)
                continue
            loop = self._outer_wait_loop(loop, inner)
            if loop not in loops:
                loops.append(loop)
        return loops or None

    def _entries(self, inner: list[cst.Call]) -> list[cst.Call]:
        """The calls that reach inner's saves from outside the module's save functions: the saves
        themselves, or each call of a save function (through the save functions calling it)."""
        ctx = self.ctx
        entries, todo, seen = [], list(inner), set()
        while todo:
            node = todo.pop()
            fn = ctx.index.enclosing_function(node)
            if fn not in self._helper_fns:
                entries.append(node)
            elif fn not in seen:
                seen.add(fn)
                todo += ctx.loops.calls_of(fn)
        return entries

    def _unwaitable(self, inner: list[cst.Call]) -> cst.Call | None:
        """A call of the save, once, outside the hot loops, after which no wait can be written
        (`return save_ckpt(path)`): written in the background there, its file would be unfinished
        for whatever the caller does next."""
        ctx = self.ctx
        return next((e for e in self._entries(inner) if ctx.loops.hot_loop_of(e) is None
                     and not ctx.loops.in_hot_loop(e) and self._plain_loop(e) is None
                     and self._once_statement(e) is None), None)

    def _plain_loop(self, call: cst.Call) -> cst.CSTNode | None:
        """The loop of its function that holds a save call outside the hot loops (an epoch loop
        that saves once per epoch, around the step loop): the fix waits after it as after a hot
        loop (not after each call, which would make every epoch's save blocking again). None in a
        framework's step hook or a function the hot loop runs."""
        ctx = self.ctx
        if ctx.loops.in_hot_loop(call):
            return None
        loop = ctx.index.enclosing(call, (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef))
        return loop if isinstance(loop, (cst.For, cst.While)) else None

    def _once_statement(self, call: cst.Call) -> cst.BaseStatement | None:
        """The statement to wait after for a save call outside the hot loops: the line holding it
        (or the one-line compound statement, `if best: save_ckpt(p)`). None in a framework's step
        hook or a function the hot loop runs (waiting there would block every step), or where no
        statement can follow the call (`return save_ckpt(p)`)."""
        ctx = self.ctx
        if ctx.loops.in_hot_loop(call):
            return None
        stmt = ctx.index.enclosing(call, (cst.SimpleStatementLine,)) \
            or ctx.index.enclosing(call, (cst.BaseCompoundStatement,))
        if stmt is None or not isinstance(ctx.parent(stmt), (cst.IndentedBlock, cst.Module)) \
                or any(isinstance(n, (cst.Return, cst.Yield, cst.Raise)) for n in ctx.index.walk(stmt)):
            return None
        return stmt

    def _outer_wait_loop(self, loop: cst.CSTNode, inner: list[cst.Call]) -> cst.CSTNode:
        """The loop to wait after for a write in loop: the outermost loop around it in its function
        (an epoch loop around the steps) whose code outside it neither uses the file
        (_path_uses) nor loads a checkpoint, itself or in a function of the module it calls (an
        evaluation that loads it); loop itself where the loop around it does. One wait after the
        outermost loop was written after each loop of the nest."""
        ctx = self.ctx
        uses = [u for s in inner for u in self._path_uses(s)]
        current = loop
        for anc in ctx.index.ancestors(loop):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                break
            if not isinstance(anc, (cst.For, cst.While)):
                continue
            between = [c for c in ctx.index.walk(anc) if isinstance(c, cst.Call) and not ctx.index.contains(current, c)]
            reached = [c for fn in self._reached_from(between) for c in self._calls_in.get(fn, ())]
            if any(u is c for u in uses for c in between) or any(self._loads(c) for c in (*between, *reached)):
                break
            current = anc
        return current

    def _loads(self, call: cst.Call) -> bool:
        """call loads a checkpoint (`torch.load`, `load_state`, `load_checkpoint`...), as _reads_back tells one."""
        qn = self.ctx.names.qualified(call.func)
        attr = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        return qn in ("torch.load", "open") or attr in _LOADS or attr == "load"

    def _during(self, use: cst.Call, loops: list) -> bool:
        """use may run before the wait after loops: it is in one of them, or in a save function
        they call (uses are found only in the save's function and its callers: _uses_after)."""
        return any(self.ctx.index.contains(loop, use) for loop in loops) \
            or self.ctx.index.enclosing_function(use) in self._helper_fns

    def _waits(self, loops: list, final: tuple | None = None, before: bool = False) -> list:
        """Replacements that call the wait wherever the code may go on past a loop without the
        statement after it: after each loop; before each `return` in it or in its `else:`; before
        each `os._exit(...)` in the module (_exits); and first in each `except`/`finally` of a `try`
        the loop's exceptions reach (_tries_reached). Each one unless the wait is there already.
        final: (the outermost loop, the save to run once after it: _end_save), written after the
        wait there (before it when the save is itself a background one: `before`)."""
        ctx = self.ctx
        call = f"{WAIT}()"
        # The final save goes last: it may be inserted where a wait after an inner loop is too.
        reps = []
        for loop in loops:
            block = ctx.parent(loop)
            body = list(block.body)
            after = body.index(loop) + 1
            if not (after < len(body) and _is_wait(body[after])) and not (final is not None and final[0] is loop):
                reps.append((loop, ctx.render(loop) + ctx.indentation(loop) + call + "\n"))
            if not isinstance(loop, (cst.For, cst.While)):
                continue  # a save run once (_once_statement): waited for right after it
            fn = ctx.index.enclosing_function(loop)
            returns = [node for part in (loop.body, loop.orelse) if part is not None
                       for node in ctx.index.walk(part)
                       if isinstance(node, cst.Return) and ctx.index.enclosing_function(node) is fn]
            for node in returns:
                reps += self._wait_before(node)
        for node in self._exits:
            reps += self._wait_before(node)
        for fn in self._signal_handlers:
            body = list(fn.body.body)
            if len(body) > 1 and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Expr) \
                    and isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
                body = body[1:]  # the docstring stays first
            first = body[0]
            if not (isinstance(first, cst.SimpleStatementLine) and _is_wait(first.body[0])):
                reps.append(ctx.insert_before(first, call))
        for handler in self._tries_reached(loops):
            first = handler.body.body[0] if handler.body.body else None
            if first is None or _is_wait(first) or isinstance(first, cst.SimpleStatementLine) and _is_wait(first.body[0]):
                continue
            if isinstance(handler.body, cst.IndentedBlock):
                reps.append(ctx.insert_before(first, call))
            else:  # `except KeyboardInterrupt: pass` on one line
                reps.append((first, call + "; " + ctx.code(first)))
        if final is not None:
            reps.append(self._final_after(final, wait=True, before=before))
        return reps

    def _final_after(self, final: tuple, wait: bool, before: bool):
        """The replacement that writes final's save (code at its loop's indentation) after the
        loop: after the wait there (written too, when `wait` and missing), or before it (`before`:
        a save function's call, itself written in the background), after the final saves an
        earlier fix wrote there (each save of the loop gets its own, in the loop's order)."""
        ctx = self.ctx
        loop, code = final
        body = list(ctx.parent(loop).body)
        at = body.index(loop)  # the statement the code goes after
        while at + 1 < len(body) and self._is_final_save(body[at + 1]):
            at += 1
        if not wait:
            return (body[at], ctx.render(body[at]) + code)
        line = ctx.indentation(loop) + f"{WAIT}()\n"
        if at + 1 < len(body) and _is_wait(body[at + 1]):
            if before:
                return (body[at], ctx.render(body[at]) + code)
            at += 1
            while at + 1 < len(body) and self._is_final_save(body[at + 1]):
                at += 1
            return (body[at], ctx.render(body[at]) + code)
        return (body[at], ctx.render(body[at]) + (code + line if before else line + code))

    def _own_callers(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """The calls in the file's own hot loops that run fn (`cb.on_step_end(self, step)` in `for
        cb in self.callbacks:`): a hook of a framework's class (a TrainerCallback's `on_step_end`)
        that the file's loop calls itself is no hook only the framework calls."""
        return [c for c in self.ctx.loops.calls_of(fn) if self.ctx.loops.in_hot_loop(c)]

    def _called_by_loop(self, fn: cst.FunctionDef, call: cst.Call) -> str:
        """Why a per-step save in fn, which the file's own loop calls at call, gets no interval:
        an interval around that call would skip the other functions it runs too (each callback's
        method of that name); inside fn, the fix has no save after the loop to write the last
        state. (The message said a framework calls it, where the file's loop does.)"""
        ctx = self.ctx
        others = [f for f in ctx.loops.callees(call) if f is not fn]
        cls = ctx.index.enclosing_class(fn)
        shown = f"`{cls.name.value}.{fn.name.value}()`" if cls is not None else f"`{fn.name.value}()`"
        where = f"`{_shown(ctx, call)}`"
        why = (f"an interval around it would skip the other `{fn.name.value}()` methods it may call too"
               if others else "the fix puts no interval around it")
        return (f"{shown} is called on every step by {where} in the file's loop, and {why}; inside {shown} "
                f"the fix has no end of training to save the last state at")

    def _is_final_save(self, stmt: cst.CSTNode) -> bool:
        """stmt (after a loop) runs a save or a call of the module's save functions: a final save,
        the user's or one an earlier fix wrote (_final_after keeps their order)."""
        return not _is_wait(stmt) and any(
            isinstance(c, cst.Call) and (self._save_kind(c) or self.ctx.loops.local_callee_name(c) in self._helpers)
            for c in self.ctx.index.walk(stmt))

    def _end_save(self, site: cst.Call, stmt: cst.BaseStatement, moved: list, written: cst.BaseStatement | None = None):
        """(the outermost loop around site's hot loop, the code that runs stmt and the moved
        statements once more after it, under the `if`s around them in the loop), for a per-step
        save put under an interval in a loop that is no counted range: without it the last steps,
        and in a short run every step, would go unsaved (a resume file the script kept current
        was left stale or never written). A reason (as a message gives it) when it cannot be
        written there: a name it reads is bound only in the loop (after an empty loop it would be
        unbound), a `return` or `yield` in the loop would skip it, a `try` in the loop around it,
        or no loop at all (a framework's step hook)."""
        ctx = self.ctx
        loop = ctx.loops.hot_loop_of(site)
        if loop is None:
            fn = ctx.index.enclosing_function(site)
            callers = self._own_callers(fn) if fn is not None else []
            if callers:
                return self._called_by_loop(fn, callers[0])
            return "a framework calls it on every step, and the fix has no end of training to save the last state at"
        outer = loop
        for anc in ctx.index.ancestors(loop):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                break
            if isinstance(anc, (cst.For, cst.While)):
                outer = anc
        if not isinstance(ctx.parent(outer), (cst.IndentedBlock, cst.Module)):
            return "the loop stands on one line with what holds it"
        fn = ctx.index.enclosing_function(outer)
        chain = [a for a in (loop, *ctx.index.ancestors(loop)) if isinstance(a, (cst.For, cst.While))
                 and ctx.index.contains(outer, a)]
        for node in ctx.index.walk(outer):
            if isinstance(node, (cst.Return, cst.Yield)) and ctx.index.enclosing_function(node) is fn:
                return f"`{one_line(ctx.code(node))}` in the loop would skip a final save after it"
            # An early stop (`if diverged: break` before the save) keeps the last good checkpoint;
            # a final save would overwrite it with the state the loop refused to save.
            if isinstance(node, cst.Break) and ctx.index.enclosing(node, (cst.For, cst.While)) in chain:
                return "a `break` may leave the loop after a state it did not save, which a final save would write"
        # What runs after the save in the same pass (a `dist.barrier()`, the scheduler's per-epoch
        # step, a loop's `else:`) would be in the final save's state but not in the loop's last one.
        after = [a for a in self._after_in_loop(stmt, outer) if not any(a is m for m in moved)
                 and not self._changes_nothing_saved(a)]
        if after:
            # A compound statement is named by its first line (`if step % 500 == 0:`, `else:`).
            first = after[0]
            shown = "else:" if isinstance(first, cst.Else) else ctx.code(first).strip().splitlines()[0] \
                if isinstance(first, cst.BaseCompoundStatement) else one_line(ctx.code(first))
            return (f"`{shown}` follows the save in the loop, and a final save after "
                    f"the loop would not match the loop's last save, nor be followed by it")
        tests = []
        child = stmt
        for anc in ctx.index.ancestors(stmt):
            if anc is outer:
                break
            if isinstance(anc, (cst.Try, cst.TryStar)):
                return "the save stands in a `try` inside the loop, which a final save after it would not have"
            if isinstance(anc, cst.If) and ctx.loops.is_step_boundary(anc):
                # Gradient accumulation: after the loop, the last micro-batches (counted, but
                # applied by no step) would be in the saved counters.
                return ("the save runs on the optimizer steps of gradient accumulation, and a final save "
                        "after the loop could follow micro-batches no step applied")
            if isinstance(anc, cst.If):
                if child is anc.body:
                    tests.append(anc.test)
                elif child is anc.orelse:
                    test = anc.test
                    if isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.NamedExpr, cst.Lambda)) and not test.lpar:
                        test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                    tests.append(cst.UnaryOperation(operator=cst.Not(), expression=test))
            child = anc
        # written: the statement to write there instead of stmt (a save function's save, _fix_inside)
        body = [(written or stmt).with_changes(leading_lines=[]), *(s.with_changes(leading_lines=[]) for s in moved)]
        unbound = self._bound_only_in(outer, [*body, *tests], fn)
        if unbound:
            return (f"a final save after the loop would read `{unbound}`, which only the loop binds (unbound "
                    f"after a loop that ran no step)")
        for test in tests:  # innermost first
            body = [cst.If(test=test, body=cst.IndentedBlock(body=body))]
        return outer, "".join(ctx.render(s, at=outer) for s in body)

    def _changes_nothing_saved(self, stmt: cst.CSTNode) -> bool:
        """After the save in the loop, a statement that changes nothing a final save would hold:
        lines that only report (`print(...)`, a logger's call), `pass`/`continue`, other saves
        (`torch.save(opt.state_dict(), 'b.pt')`, the module's save function; a per-step one runs
        once more after the loop too),
        and `if`s holding only those (`if step % 500 == 0: torch.save(...)`)."""
        if isinstance(stmt, cst.If):
            branches = [stmt.body, stmt.orelse] if stmt.orelse is not None else [stmt.body]
            return all(self._changes_nothing_saved(b) for b in branches)
        if isinstance(stmt, (cst.IndentedBlock, cst.Else)):
            body = stmt.body.body if isinstance(stmt, cst.Else) else stmt.body
            return all(self._changes_nothing_saved(b) for b in body)
        if not isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return False
        for small in stmt.body:
            if isinstance(small, (cst.Pass, cst.Continue)):
                continue
            if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
                return False
            if not (is_log_call(self.ctx, small.value) or self._save_kind(small.value)
                    or self.ctx.loops.local_callee_name(small.value) in self._helpers):
                return False
        return True

    def _after_in_loop(self, stmt: cst.BaseStatement, loop: cst.CSTNode) -> list[cst.CSTNode]:
        """What runs after stmt in the same pass through loop's body (the statements after it in
        its block and in each block around it, up to loop's body), and the `else:` of loop and
        of the loops in between, which runs after their last pass."""
        ctx = self.ctx
        after = []
        child = stmt
        for anc in ctx.index.ancestors(stmt):
            if isinstance(anc, cst.IndentedBlock):
                body = list(anc.body)
                at = next((i for i, b in enumerate(body) if b is child), None)
                if at is not None:
                    after.extend(body[at + 1:])
            if isinstance(anc, (cst.For, cst.While)) and anc.orelse is not None:
                after.append(anc.orelse)
            if anc is loop:
                break
            child = anc
        return after

    def _bound_only_in(self, loop: cst.CSTNode, nodes: list, fn: cst.FunctionDef | None) -> str | None:
        """The first name nodes read that only loop binds in its scope (fn, else the module): its
        targets, its inner loops' targets, an assignment in its body, with none outside it (a
        counter set before the loop and counted in it is bound outside). None when there is none."""
        ctx = self.ctx
        read, own, not_read = [], set(), set()
        for root in nodes:
            own |= bound_names(root)  # `as f`, a comprehension's target: bound where they are read
            for node in walk(root):
                if isinstance(node, cst.Attribute):
                    not_read.add(id(node.attr))  # `model.step` reads `model`, not `step`
                elif isinstance(node, cst.Arg) and node.keyword is not None:
                    not_read.add(id(node.keyword))
                elif isinstance(node, cst.Name) and id(node) not in not_read and node.value not in read:
                    read.append(node.value)
        inside = bound_names(loop)
        candidates = [n for n in read if n in inside and n not in own]
        if not candidates:
            return None
        outside = set()
        scope = fn if fn is not None else ctx.module
        for node in ctx.index.walk(scope):
            owner = next((a for a in ctx.index.ancestors(node) if isinstance(a, (cst.FunctionDef, cst.Lambda,
                                                                                    cst.ClassDef))), None)
            if ctx.index.contains(loop, node) or owner is not fn:
                continue  # bound in the loop, or in another scope (a function's parameter, `def save(path)`)
            if isinstance(node, cst.Param):
                outside.add(node.name.value)
            elif isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not scope:
                outside.add(node.name.value)
            elif isinstance(node, (cst.Import, cst.ImportFrom)) and not isinstance(node.names, cst.ImportStar):
                outside |= {dotted(a.asname.name if a.asname else a.name).split(".")[0] for a in node.names}
            else:
                outside |= {dotted(n) for t in binding_targets(node) for n in walk(t)
                            if isinstance(n, cst.Name)}
        return next((n for n in candidates if n not in outside), None)

    @cached_property
    def _exits(self) -> list[cst.BaseSmallStatement]:
        """The statements of the module that call `os._exit(...)` (or an alias of it), which ends
        the process without joining the writing thread: in the loop (a time budget), in a function
        it calls, and also where no loop leads (a signal handler that calls the save function, then
        exits: its checkpoint was left empty). The wait is a no-op when no write is pending, so
        each one gets it. Not those in a lambda, nor the helper's own."""
        ctx = self.ctx
        out = []
        for node in ctx.index.nodes(cst.Call):
            if ctx.names.qualified(node.func) != "os._exit":
                continue
            stmt = ctx.index.enclosing(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement))
            outer = ctx.index.enclosing(node, (cst.FunctionDef, cst.Lambda))
            if isinstance(stmt, cst.BaseSmallStatement) and not isinstance(outer, cst.Lambda) \
                    and not any(isinstance(a, cst.FunctionDef) and a.name.value in (HELPER, WAIT)
                                for a in ctx.index.ancestors(node)) and not any(stmt is s for s in out):
                out.append(stmt)
        return out

    @cached_property
    def _signal_handlers(self) -> list[cst.FunctionDef]:
        """The module's functions it registers as signal handlers (`signal.signal(signal.SIGTERM,
        on_preempt)`), which get the wait first: a handler runs between two steps of the loop,
        while a background write may still be writing, and a preemption handler's own save of the
        same file then raced it (a corrupted archive, or the older state written last). Only a
        handler written as an indented block (a one-line one has no place for it)."""
        ctx = self.ctx
        out = []
        for node in ctx.index.nodes(cst.Call):
            if ctx.names.qualified(node.func) != "signal.signal" or len(node.args) < 2 \
                    or not isinstance(node.args[1].value, cst.Name):
                continue
            for fn in ctx.loops.functions.get(node.args[1].value.value, ()):
                if isinstance(fn.body, cst.IndentedBlock) and fn.name.value not in (HELPER, WAIT) and fn not in out:
                    out.append(fn)
        return out

    def _wait_before(self, node: cst.BaseSmallStatement) -> list:
        """The replacement that calls the wait just before the small statement node (a `return`,
        an `os._exit(...)`), unless the statement before it is the wait."""
        ctx = self.ctx
        call = f"{WAIT}()"
        line = ctx.parent(node)
        before = line.body[:line.body.index(node)]
        if before and _is_wait(before[-1]):
            return []
        lines = ctx.parent(line)
        if isinstance(line, cst.SimpleStatementLine) and not before:
            position = lines.body.index(line)
            if position and _is_wait(lines.body[position - 1]):
                return []
            # render, not code: a `return (` over several lines keeps its lines' indentation.
            return [(node, call + "\n" + ctx.indentation(line) + ctx.render(node))]
        return [(node, call + "; " + ctx.render(node))]

    def _tries_reached(self, loops: list) -> list:
        """The `except` handlers and `finally:` blocks an exception leaving one of loops runs, first
        (an interrupt, an error, `raise` to stop): of each `try` around the loop in its function,
        and around a call of that function in the module (and of the function holding that call,
        and so on, a few calls up). A handler may save or load the file the background write is
        still writing. Not followed: calls from other modules."""
        ctx = self.ctx
        out, seen = [], set()
        todo = [(loop, 0) for loop in loops]
        while todo:
            node, depth = todo.pop(0)
            child = node
            for anc in ctx.index.ancestors(node):
                if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                    break
                if isinstance(anc, (cst.Try, cst.TryStar)):
                    blocks = list(anc.handlers) if child is anc.body else []
                    if anc.finalbody is not None and child is not anc.finalbody:
                        blocks.append(anc.finalbody)
                    out += [b for b in blocks if b not in out]
                child = anc
            fn = ctx.index.enclosing_function(node)
            if fn is None or fn in seen or depth >= 3 or len(ctx.loops.functions.get(fn.name.value, ())) != 1:
                continue
            seen.add(fn)
            todo += [(c, depth + 1) for c in ctx.loops.calls_of(fn)]
        return out

    # -- what the code does with the file after the save ----------------------------------

    def _statement_to_guard(self, site: cst.Call) -> cst.BaseStatement | None:
        """The statement an interval guard goes around: the one holding site, or the `with` whose
        body is only that statement (`with open(path, "wb") as f: torch.save(state, f)`: a guard
        inside it would still create, and leave empty, a file every step). None when the guard
        could only go inside a `with` that binds a name the save reads and holds more than the save."""
        ctx = self.ctx
        stmt = ctx.index.enclosing(site, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        while stmt is not None:
            block = ctx.parent(stmt)
            if isinstance(stmt, cst.SimpleStatementSuite):  # `with ... as f: torch.save(state, f)` on one line
                if not isinstance(block, cst.With) or len(stmt.body) != 1:
                    return None
                stmt = block
            elif isinstance(block, cst.IndentedBlock) and isinstance(ctx.parent(block), cst.With) \
                    and len(block.body) == 1:
                stmt = ctx.parent(block)
            else:
                break
        if stmt is None:
            return None
        read = {n.value for n in ctx.index.walk(site) if isinstance(n, cst.Name)}
        loop = ctx.loops.hot_loop_of(site)
        for anc in ctx.index.ancestors(stmt):
            if anc is loop or isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                break
            if isinstance(anc, cst.With) and any(
                    item.asname is not None and read & {n.value for n in ctx.index.walk(item.asname.name)
                                                        if isinstance(n, cst.Name)} for item in anc.items):
                return None
        return stmt

    def _rank_test_around(self, stmt: cst.BaseStatement) -> cst.If | None:
        """The `if rank == 0:` (a rank test: _RANK_TEST) whose whole body is stmt, with no `else`,
        inside the hot loop: the interval joins its test (`if rank == 0 and step % 1000 == 0:`),
        as TL201 joins its own, rather than nesting a second `if` directly inside it. Not an
        `elif` (its own `if` decides whether its test runs)."""
        ctx = self.ctx
        block = ctx.parent(stmt)
        branch = ctx.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if not isinstance(branch, cst.If) or branch.orelse is not None or len(block.body) != 1 \
                or isinstance(ctx.parent(branch), cst.If) \
                or not _RANK_TEST.search(ctx.code(branch.test)) or has_flow_or_step(ctx, branch.test):
            return None
        loop = ctx.loops.hot_loop_of(stmt)
        return branch if loop is not None and ctx.index.contains(loop.body, branch) else None

    def _read_unsaved(self, stmt: cst.BaseStatement, moved: list) -> cst.Name | None:
        """A read, in the loops around stmt (in its function) but outside stmt and the statements
        moved with it, of a name stmt assigns (`last = save_ckpt(model, step)` then
        `saved.append(last)`): under an interval, stmt would leave it holding an older value on
        the steps it skips. None where there is none."""
        ctx = self.ctx
        names = set()
        small_statements = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ()
        for target in (t for small in small_statements if isinstance(small, (cst.Assign, cst.AnnAssign))
                       for t in (binding_targets(small) if isinstance(small, cst.Assign) else [small.target])):
            names |= {n.value for n in walk(target) if isinstance(n, cst.Name)}
        if not names:
            return None
        fn = ctx.index.enclosing_function(stmt)
        loops = [a for a in ctx.index.ancestors(stmt) if isinstance(a, (cst.For, cst.While))
                 and ctx.index.enclosing_function(a) is fn]
        if not loops:
            return None
        held = [stmt, *moved]
        for node in ctx.index.walk(loops[-1].body):
            if isinstance(node, cst.Name) and node.value in names and is_variable(ctx.index, node) \
                    and role(ctx.index, node)[0] in ("read", "aug") and ctx.index.enclosing_function(node) is fn \
                    and not any(ctx.index.contains(h, node) for h in held):
                return node
        return None

    def _with_users(self, site: cst.Call, stmt: cst.BaseStatement, uses: list[cst.Call]) -> list | None:
        """The statements right after stmt that use the file it saves, which go under the interval
        with it (`torch.save(state, tmp)` then `os.replace(tmp, path)`: alone under the guard, the
        save would leave the replace without its file on the other steps); None when a use that
        runs on every step is not among the next few statements of stmt's block, or one of those
        leaves the block or steps."""
        ctx = self.ctx
        loop = ctx.loops.hot_loop_of(site)
        fn = ctx.index.enclosing_function(site)
        block = ctx.parent(stmt)
        body = list(block.body)
        start = next(i for i, s in enumerate(body) if s is stmt)
        end = start
        held = set()
        for use in uses:
            # Only the uses that run on every step now: those after the loop see an older file.
            if ctx.index.enclosing_function(use) is not fn or ctx.index.contains(stmt, use) \
                    or (loop is not None and not ctx.index.contains(loop, use)):
                continue
            at = next((i for i, s in enumerate(body) if ctx.index.contains(s, use)), None)
            if at is None or at < start:
                return None
            held.add(at)
            end = max(end, at)
        if end - start > _MAX_MOVED_USERS:
            return None
        moved = body[start + 1:end + 1]
        # Each statement that moves uses the file: none is unrelated work.
        if any(i not in held or has_flow_or_step(ctx, s) for i, s in enumerate(moved, start + 1)):
            return None
        return moved

    def _written_path(self, save: cst.Call) -> cst.BaseExpression | None:
        """The file (or folder) a save writes, as its call passes it."""
        where = _PATH_ARGUMENT.get(self._save_kind(save))
        if where is None:
            return None
        arg = self.ctx.keyword(save, where[1]) or self.ctx.positional(save, where[0])
        return arg.value if arg is not None else None

    def _path_uses(self, save: cst.Call) -> list[cst.Call]:
        """The calls that are handed the path a save writes after the save: in its function, and in
        the callers of that function after each call of it, the path followed through the
        function's parameters."""
        if save not in self._uses_of:  # a helper's saves are asked for each of its call sites
            path = self._written_path(save)
            # The folders the file is in count where the save stands: archiving or uploading one
            # after the save reads the file (a truncated copy, if it is still being written).
            self._uses_of[save] = self._uses_after(save, [path], set(), folders(self.ctx, path)) \
                if path is not None else []
        return self._uses_of[save]

    def _uses_after(self, call: cst.Call, paths: list[cst.BaseExpression], seen: set,
                    above: set[str] = frozenset()) -> list[cst.Call]:
        ctx = self.ctx
        fn = ctx.index.enclosing_function(call)
        order = self._call_order
        forms = [form for p in paths for form in path_forms(ctx, p)]
        # After the save, or before it in a loop around both (it runs again on the next pass: a
        # roll-back `torch.load` at the top of the loop body).
        loops = [anc for anc in ctx.index.ancestors(call) if isinstance(anc, (cst.For, cst.While))
                 and ctx.index.enclosing_function(anc) is fn]
        out = [c for c in self._calls_in.get(fn, ()) if not ctx.index.contains(call, c)
               and (order[c] > order[call] or any(ctx.index.contains(loop.body, c) for loop in loops))
               and self._hands_path(c, forms, above)]
        key = (fn, frozenset(ctx.code(p) for p in paths))
        if fn is None or key in seen or len(ctx.loops.functions.get(fn.name.value, ())) != 1:
            return out
        seen.add(key)
        returns = self._returns_path(fn, forms)
        for caller in ctx.loops.calls_of(fn):
            outer = self._through_parameters(fn, caller, paths)
            if returns:
                # `p = save_ckpt(model, step)` then `shutil.copy(p, "latest.pt")`: the name the
                # call's value is assigned to names the file too; a call handed the value at once
                # (`upload(save_ckpt(...))`) uses it.
                parent = ctx.parent(caller)
                user = ctx.index.enclosing(caller, (cst.Call,))
                if isinstance(parent, cst.Assign) and len(parent.targets) == 1 \
                        and isinstance(parent.targets[0].target, cst.Name):
                    outer = [*outer, parent.targets[0].target]
                elif user is not None and not self._not_a_reader(user):
                    out.append(user)
            if outer:
                out += self._uses_after(caller, outer, seen)
        return out

    def _returns_path(self, fn: cst.FunctionDef, forms: list) -> bool:
        """fn returns the path of forms (path_forms), as `return path` after `torch.save(state, path)`."""
        return any(node.value is not None and may_name(self.ctx, forms, node.value)
                   for node in self.ctx.index.returns(fn))

    def _signalled_done(self, save: cst.Call) -> str | None:
        """Why the end of the save's own statement tells others the file is written, or None: it
        stands in a `with` that binds nothing (`with lock:`, a file lock an actor reads under: a
        background write leaves the lock before the file is complete), or a barrier follows it
        in its loop (`dist.barrier()`, `accelerator.wait_for_everyone()`, after which other ranks
        load it: they read a partial file)."""
        ctx = self.ctx
        stmt = ctx.index.enclosing(save, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        loop = ctx.loops.hot_loop_of(save) or ctx.index.enclosing(save, (cst.For, cst.While))
        for anc in ctx.index.ancestors(save):
            if anc is loop or isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                break
            for item in anc.items if isinstance(anc, cst.With) else ():
                made = item.item.func if isinstance(item.item, cst.Call) else item.item
                if item.asname is None and ctx.names.qualified(made) not in _COMPUTE_CONTEXTS:
                    return (f"it stands in `with {one_line(ctx.code(item.item))}:`, whose end would come before "
                            f"a background write is done")
        if stmt is None or loop is None:
            return None
        for later in self._after_in_loop(stmt, loop):
            for node in ctx.index.walk(later):
                if isinstance(node, cst.Call) and (dotted(node.func) or "").rsplit(".", 1)[-1] in _BARRIERS:
                    return (f"`{one_line(ctx.code(node))}` after it tells other processes the file is written, "
                            f"which a background write may not be yet")
        return None

    def _torn_down(self, save: cst.Call) -> cst.WithItem | None:
        """The item of a `with` around the save (or around a call that leads to it) binding a variable its path
        is built from (`with tempfile.TemporaryDirectory() as out:` ... `os.path.join(out,
        "latest.pt")`): what it does on exit (a temporary folder is removed) could come while a
        background write of the file is still running. The variables are followed through the
        parameters of the save's function to what each caller passes (as _uses_after follows paths)."""
        ctx = self.ctx
        path = self._written_path(save)
        todo = [(save, frozenset(path_variables(ctx, path)))] if path is not None else []
        seen = set()
        while todo:
            call, read = todo.pop(0)
            for anc in ctx.index.ancestors(call):
                if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                    break
                for item in anc.items if isinstance(anc, cst.With) else ():
                    if item.asname is not None and read & {n.value for n in ctx.index.walk(item.asname.name)
                                                           if isinstance(n, cst.Name)}:
                        return item
            fn = ctx.index.enclosing_function(call)
            if fn is None or (fn, read) in seen or len(ctx.loops.functions.get(fn.name.value, ())) != 1:
                continue
            seen.add((fn, read))
            for caller in ctx.loops.calls_of(fn):
                outer = self._through_parameters(fn, caller, [cst.Name(name) for name in sorted(read)])
                todo.append((caller, frozenset().union(*(path_variables(ctx, p) for p in outer))))
        return None

    @cached_property
    def _call_order(self) -> dict[cst.Call, int]:
        return {c: i for i, c in enumerate(self.ctx.index.nodes(cst.Call))}  # document order

    @cached_property
    def _calls_in(self) -> dict[cst.FunctionDef | None, list[cst.Call]]:
        """The calls of each function (None: the module's own code), in document order."""
        out: dict = {}
        for c in self.ctx.index.nodes(cst.Call):
            out.setdefault(self.ctx.index.enclosing_function(c), []).append(c)
        return out

    def _hands_path(self, call: cst.Call, forms: list, above: set[str] = frozenset()) -> bool:
        """call is handed one of the paths (path_forms: an argument, or the object whose method it
        is, built from all the parts of one: `tmp.rename(path)`, `copyfile(os.path.join(out,
        "last.pt"), best)` after a save into `ckpt = os.path.join(out, "last.pt")`) and may read or
        move the file: it is not a save, nor a print or a log line, nor inside a save
        (`torch.save(opt, os.path.join(out, "opt.pt"))`). Inside a print or a log line only a call
        that builds the text shown is harmless (`print(f"saved {str(path)}")`), not one that reads
        the file for it (`print(f"{os.path.getsize(path)} bytes")` once crashed the fixed script)."""
        ctx = self.ctx
        if self._not_a_reader(call) or self._keeps_value(call):
            return False
        for node in ctx.index.ancestors(call):
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                break
            if isinstance(node, cst.Call) and self._not_a_reader(node) and (
                    not self._shows(node) or only_text(ctx, call)):
                return False
        given = [a.value for a in call.args]
        if isinstance(call.func, cst.Attribute):
            given.append(call.func.value)
        return any(may_name(ctx, forms, value) for value in given) or bool(above) and self._reads_folder(call, above)

    def _keeps_value(self, call: cst.Call) -> bool:
        """call is handed the path but reads no file: a container's method that keeps it
        (`saved.append(last)`, `seen.add(path)`) or a builtin that looks at the value alone
        (`str(path)`; the call it is handed to is judged itself: `upload(str(path))`). Such a
        call was taken for a use of the file: it blocked the background write and was moved under
        the interval with the save, so that `saved` held 1 path where it held 10."""
        func = call.func
        if isinstance(func, cst.Attribute):
            # Only on a list or set the module makes: `tar.add(d)` archives the folder.
            return func.attr.value in _KEEPS_VALUE and isinstance(func.value, cst.Name) \
                and self._is_container(func.value)
        return isinstance(func, cst.Name) and func.value in _LOOKS_AT_VALUE and func.value not in self.ctx.loops.functions

    def _is_container(self, name: cst.Name) -> bool:
        """Every binding of the variable read as name makes a list, set or deque (`saved = []`,
        `seen = set()`), not an archive or an uploader that also has an `add`."""
        bound = self.ctx.loops.variables.seen_from(name)
        return bool(bound) and all(
            kind == "assign" and (isinstance(value, (cst.List, cst.Set, cst.ListComp, cst.SetComp))
                                  or isinstance(value, cst.Call) and not value.args
                                  and dotted(value.func) in _CONTAINERS)
            for kind, value in bound)

    def _reads_folder(self, call: cst.Call, names: set[str], depth: int = 0) -> bool:
        """call reads one of the folders `names` as a whole (paths.reads_folder): also a function of the
        module handed one that reads it so (`publish(ckdir)` archiving its parameter), and either
        handed to a pool or a thread with one (`pool.submit(upload, out)`, `Thread(target=publish,
        args=(out,))`), as though called with it (the archive once held an empty file)."""
        ctx = self.ctx
        if reads_folder(ctx, names, call):
            return True
        handed = _handed_to(ctx, call)
        func, values = handed if handed is not None else (call.func, None)
        name = func.value if isinstance(func, cst.Name) else None
        if values is None:
            name = ctx.loops.local_callee_name(call)
        fns = ctx.loops.functions.get(name, ()) if name else ()
        if len(fns) != 1 or depth >= 3:
            # Another library's function handed to a pool: read as a call of it with the values.
            return values is not None and reads_folder(ctx, names, cst.Call(func=func, args=[cst.Arg(v) for v in values]))
        if values is None:
            passed = [(param, arg.value) for param, arg in ctx.loops.bind_args(fns[0], call)]
        else:
            passed = list(zip([p.name.value for p in fns[0].params.params], values))
        params = {param for param, value in passed if hands_folder(ctx, names, value)}
        return bool(params) and any(self._reads_folder(c, params, depth + 1) for c in self._calls_in.get(fns[0], ()))

    def _shows(self, call: cst.Call) -> bool:
        """call is a print or a log line (`print(...)`, `logger.info(...)`)."""
        func = call.func
        return isinstance(func, cst.Name) and func.value == "print" \
            or isinstance(func, cst.Attribute) and func.attr.value in _SHOWS

    def _not_a_reader(self, call: cst.Call) -> bool:
        """A save in a hot loop (the module's own save functions too), a print or log line, or a
        call that makes a folder: none reads the file."""
        func = call.func
        name = func.value if isinstance(func, cst.Name) else \
            func.attr.value if isinstance(func, cst.Attribute) else None
        if (self._save_kind(call) is not None or self.ctx.loops.local_callee_name(call) in self._helpers) \
                and not self.ctx.loops.in_hot_loop(call):
            # A save after the loop (a final or per-epoch save to the same path) stays blocking and
            # does not wait for a background write still running: both would write the file at once.
            return False
        return name in (HELPER, "save_pretrained", "print", "makedirs", "mkdir") \
            or self._save_kind(call) is not None or self.ctx.loops.local_callee_name(call) in self._helpers \
            or (isinstance(func, cst.Attribute) and name in _SHOWS)

    def _through_parameters(self, fn: cst.FunctionDef, call: cst.Call,
                            paths: list[cst.BaseExpression]) -> list[cst.BaseExpression]:
        """paths, written in fn, as the caller of `call` writes them: a parameter is the argument
        the call passes for it (or its default); an expression of names fn does not bind (a
        module's constant, a literal, `self.out` from a method of the same object) is the same
        text there; one of fn's own names cannot be followed."""
        ctx = self.ctx
        params = named_parameters(fn)
        names = parameter_names(fn)
        if fn not in self._bound_in:
            self._bound_in[fn] = local_names(fn)
        own = set(self._bound_in[fn])
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls") and params \
                and params[0].name.value == receiver.value:
            own.discard(receiver.value)  # the caller's self is fn's
        passed = dict(ctx.loops.bind_args(fn, call))
        out = []
        for path in paths:
            if isinstance(path, cst.Name) and path.value in names:
                arg = passed.get(path.value)
                default = next((p.default for p in params if p.name.value == path.value), None)
                if arg is not None or default is not None:
                    out.append(arg.value if arg is not None else default)
                continue
            free = {n.value for n in ctx.index.walk(path) if isinstance(n, cst.Name)
                    and not (isinstance(ctx.parent(n), cst.Attribute) and ctx.parent(n).attr is n)}
            if not free & own:
                out.append(path)
        return out
