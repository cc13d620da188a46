"""Where a file's tensors may live: "does it use CUDA?" (TL404) and "can its training run on an
accelerator at all?" (the TL2xx host-sync rules).

A read of a tensor on the host (`loss.item()`) costs a wait for the GPU only when the tensor is on
one. A script that never names a device (no `.cuda()`/`.to(...)`, no `device=`, no "cuda" string, no
framework that places the model for it) and builds its model and data itself trains on the CPU,
where PyTorch runs each operation before returning and such a read is free. The answer errs on the
side of "may": anything the file cannot see (a model handed in as a parameter, a name bound
elsewhere, a module of the project, a checkpoint that restores tensors where they were saved)
could already be on a device.
"""

from __future__ import annotations

import builtins
from functools import cached_property

import libcst as cst

from trainlint.analysis.imports import is_stdlib
from trainlint.analysis.loops import Loops
from trainlint.analysis.names import Names, dotted
from trainlint.analysis.tree import TreeIndex, assigned_pairs, assignments, named_parameters, parameter
from trainlint.analysis.variables import Bindings, is_variable, role
from trainlint.analysis.words import words

# Words (parts of an identifier or a string, lower-cased) that name a device or something that
# places tensors on one: `device`, `args.gpus`, `use_cuda`, `"cuda:0"`, `torch_xla`,
# `DistributedDataParallel`, `torch.accelerator`, `"nccl"`.
_DEVICE_WORDS = frozenset({
    "device", "devices", "cuda", "gpu", "gpus", "mps", "xla", "npu", "tpu", "tpus", "xpu", "hpu", "nccl",
    "accelerator", "accelerate", "parallel", "distributed", "ddp", "fsdp", "deepspeed", "lightning", "fabric",
})
# Methods that move a tensor or a module (`.to(...)` moves to devices as well as dtypes).
_MOVES = frozenset({"to", "to_empty"})
# torch.cuda / torch.accelerator functions that place nothing: they synchronize, free the cache or
# report on it, and are no-ops (or answer 0) without a GPU. TL203 reports them; their own names must
# not make the file count as one that uses a GPU.
_DEVICE_NEUTRAL_CALLS = frozenset(
    f"torch.{module}.{fn}" for module in ("cuda", "mps", "accelerator") for fn in (
        "synchronize", "empty_cache", "ipc_collect", "memory_allocated", "memory_reserved", "max_memory_allocated",
        "max_memory_reserved", "memory_stats", "memory_summary", "reset_peak_memory_stats", "mem_get_info",
        "get_memory_info", "manual_seed", "manual_seed_all"))
# Libraries that never put a tensor on a device unless asked in words the scan sees (`device=`,
# `.to(...)`); any other import (accelerate, lightning, transformers, a module of the project) may.
_NEUTRAL_LIBRARIES = frozenset({
    "torch", "torchvision", "torchaudio", "torchtext", "torchdata", "torchmetrics", "numpy", "pandas", "scipy",
    "sklearn", "matplotlib", "seaborn", "tqdm", "PIL", "einops", "tensorboard", "tensorboardX", "yaml", "h5py",
    "wandb", "mlflow", "rich", "click", "typer", "omegaconf", "hydra", "absl", "datasets", "timm",
})
# Calls that restore pickled tensors where they were saved, a GPU included, unless given a map_location.
_LOADS = frozenset({"torch.load", "torch.jit.load", "torch.hub.load", "pickle.load", "pickle.loads"})
_BUILTINS = frozenset(dir(builtins)) | {"__file__", "__builtins__"}
# How many variables (assignments, a constructor's parameters) a device or a CUDA test is followed
# through: a guard against variables assigned from one another (`a = b` and `b = a`, a class
# constructing itself with its own parameter). Descending into an expression (`torch.device(...)`'s
# argument, a conditional's test) ends by itself and is not counted.
_MAX_HOPS = 3


class Devices:
    """Answers "does this file use CUDA?" and "may its training run on an accelerator?"."""

    def __init__(self, index: TreeIndex, names: Names, bindings: Bindings, loops: Loops) -> None:
        self.index = index
        self.names = names
        self.bindings = bindings
        self.loops = loops

    @cached_property
    def uses_cuda(self) -> bool:
        """A "cuda" device string or a `.cuda()` call: the file trains on an NVIDIA GPU (TL404)."""
        for node in self.index.nodes(cst.SimpleString):
            value = node.evaluated_value
            if isinstance(value, str) and (value == "cuda" or value.startswith("cuda:")):
                return True
        for call in self.index.nodes(cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "cuda":
                return True
        return False

    @cached_property
    def may_use_accelerator(self) -> bool:
        """False only for a file that names no device and builds what it trains itself
        (names_a_device, takes_from_outside): its tensors stay on the CPU."""
        return self.names_a_device or self.takes_from_outside

    @cached_property
    def names_a_device(self) -> bool:
        """A `.cuda()`/`.to(...)` call, an identifier (name, attribute, keyword, parameter) or a
        string with a device word in it (`device=`, `args.gpu`, `"mps"`, `DataParallel`), or an
        import that may place tensors itself (_NEUTRAL_LIBRARIES). TL203's own calls
        (`torch.cuda.empty_cache()`) place nothing and do not count."""
        neutral = set()
        for call in self.index.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in _MOVES:
                return True
            name = dotted(func) or ""
            if words(name) & {"cuda", "mps", "accelerator"} and self.names.qualified(func) in _DEVICE_NEUTRAL_CALLS:
                neutral.update(id(n) for n in self.index.walk(func) if isinstance(n, cst.Name))
        for node in self.index.nodes(cst.Name):
            if id(node) not in neutral and words(node.value) & _DEVICE_WORDS:
                return True
        for node in (*self.index.nodes(cst.SimpleString), *self.index.nodes(cst.FormattedStringText)):
            value = node.evaluated_value if isinstance(node, cst.SimpleString) else node.value
            if isinstance(value, str) and words(value) & _DEVICE_WORDS:
                return True
        return any(not neutral_module(target) for target in self._imported_modules())

    def _imported_modules(self) -> list[str]:
        """Every module the file imports from, relative ones as written (`.models`)."""
        modules = [dotted(alias.name) or "" for node in self.index.nodes(cst.Import) for alias in node.names]
        for node in self.index.nodes(cst.ImportFrom):
            module = dotted(node.module) if node.module is not None else ""
            modules.append("." * len(node.relative) + (module or ""))
        return modules

    @cached_property
    def takes_from_outside(self) -> bool:
        """What the loop trains may come from code this file does not show, already on a device: a
        function holding a training loop takes parameters (`def train(model, loader)`: its caller
        chose where they live; one with a literal default, `epochs=2`, is a setting), a name is
        read that the file binds nowhere (a notebook's earlier cell, `from x import *`), or tensors
        are restored from a file without a map_location (`torch.load`)."""
        for loop in self.loops.hot_loops:
            for anc in self.index.ancestors(loop):
                if isinstance(anc, cst.FunctionDef) and _takes_objects(anc):
                    return True
        if any(isinstance(node.names, cst.ImportStar) for node in self.index.nodes(cst.ImportFrom)):
            return True
        for call in self.index.nodes(cst.Call):
            if self.names.qualified(call.func) in _LOADS and not any(
                    a.keyword is not None and a.keyword.value == "map_location" for a in call.args):
                return True
        return any(self._unbound(name) for name in self.index.nodes(cst.Name))

    def picked_by_cuda_availability(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """expr, a device a tensor is moved to, is chosen when the script runs by whether CUDA is
        there: `"cuda" if torch.cuda.is_available() else "cpu"`, `torch.device(...)` of that, or a
        variable (`device`, `self.device`) assigned such a value, or assigned in the branches of an
        `if` that asks (`if torch.cuda.is_available(): device = "cuda"`), or a parameter of a
        class's `__init__` (`self.device = device`) that every construction of the class hands
        such a value (`Trainer(model, loader, device)` in `main`). Such a script is meant to
        run on a CPU-only machine too, where what only helps a GPU (pinned batches) should be off:
        PyTorch warns on every pass over a pinning loader when no accelerator is found. depth
        counts the variables followed (_MAX_HOPS)."""
        if depth > _MAX_HOPS:
            return False
        if isinstance(expr, cst.IfExp):
            return self.asks_cuda_availability(expr.test, depth)
        if isinstance(expr, cst.Call) and self.names.qualified(expr.func) == "torch.device" and expr.args:
            return self.picked_by_cuda_availability(expr.args[0].value, depth)
        handed = self._handed_in(expr)
        if handed is not None:
            return all(self.picked_by_cuda_availability(value, depth + 1) for value in handed)
        return any(self.picked_by_cuda_availability(value, depth + 1) or self.under_availability_test(value, depth + 1)
                   for value in self._assigned(expr))

    def asks_cuda_availability(self, test: cst.BaseExpression, depth: int = 0) -> bool:
        """test calls `torch.cuda.is_available()`, or reads a variable assigned from such a test
        (`use_cuda = not args.no_cuda and torch.cuda.is_available()`, `args.cuda = ...`), or a
        parameter of a class's `__init__` every construction hands such a test."""
        if depth > _MAX_HOPS:
            return False
        for node in self.index.walk(test):
            if isinstance(node, cst.Call) and self.names.qualified(node.func) == "torch.cuda.is_available":
                return True
        names = [n for n in self.index.walk(test) if isinstance(n, (cst.Name, cst.Attribute))
                 and not isinstance(self.index.parent.get(n), cst.Attribute)]
        for name in names:
            handed = self._handed_in(name)
            if handed is not None and all(self.asks_cuda_availability(value, depth + 1) for value in handed):
                return True
        return any(self.asks_cuda_availability(value, depth + 1) for n in names for value in self._assigned(n))

    def under_availability_test(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """node runs in a branch of an `if` (of its own function) that asks whether CUDA is there
        (`if torch.cuda.is_available(): x = x.cuda()`, `if use_cuda: ... else: ...`)."""
        for anc in self.index.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(anc, (cst.If, cst.IfExp)) and self.asks_cuda_availability(anc.test, depth):
                return True
        return False

    def _handed_in(self, expr: cst.BaseExpression) -> list[cst.BaseExpression] | None:
        """For a read of a parameter of a class's `__init__` (`self.device = device`): the values
        every construction of the class in the file hands it (Loops.init_arguments); for a read of
        a parameter of another function that binds it nowhere else (PyTorch's MNIST example,
        `train(model, device, loader, opt)`), the values every call of it in the file hands it
        (Loops.parameter_values). The caller must all agree on them; None for anything else, or
        where they are not known."""
        if not isinstance(expr, cst.Name) or not is_variable(self.index, expr):
            return None
        handed = self.loops.init_arguments(expr, expr)
        if handed is not None:
            return [value for value, _call in handed]
        fn = self.index.enclosing_function(expr)
        if fn is None or parameter(fn, expr.value) is None \
                or (self.loops.variables.of(expr.value) or {}).get(fn) != [("bind", None)]:
            return None
        return self.loops.parameter_values(fn, expr.value)

    def _assigned(self, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The values a variable read (a name, as its scope sees it) or an attribute of `self`
        (assigned in any method of the class, also as an element of a tuple assignment:
        `self.model, self.device = model, device`) is assigned; [] for anything else."""
        if isinstance(expr, cst.Name):
            if not is_variable(self.index, expr):
                return []
            return self.bindings.assigned_values(expr) or []
        spelled = dotted(expr) if isinstance(expr, cst.Attribute) else None
        if spelled is None:
            return []
        if spelled.startswith("self."):
            cls = self.index.enclosing_class(expr)
            if cls is None:
                return []
            return self._assignments_of(spelled, lambda node: self.index.enclosing_class(node) is cls)
        # `args.cuda = ...` at module level or in the same function.
        scope = self.index.enclosing_function(expr)
        return self._assignments_of(spelled, lambda node: self.index.enclosing_function(node) is scope)

    def _assignments_of(self, spelled: str, where) -> list[cst.BaseExpression]:
        """The values assigned to the attribute spelled so (`self.device`) by the assignments
        where(node) accepts, element by element in a tuple assignment (assigned_pairs)."""
        return [value for whole, assigned, node in assignments(self.index) if where(node)
                for target, value in assigned_pairs(whole, assigned)
                if value is not None and dotted(target) == spelled]

    def _unbound(self, name: cst.Name) -> bool:
        """name reads a variable that the file binds nowhere and that is no builtin."""
        return name.value not in _BUILTINS and is_variable(self.index, name) \
            and role(self.index, name)[0] == "read" and self.bindings.of(name.value) == {} \
            and self.index.enclosing(name, (cst.Import, cst.ImportFrom)) is None


def setting_literal(ctx, expr: cst.BaseExpression | None):
    """The value a setting written as expr has in the run the advice is for, one on a GPU: its
    literal, or True for `torch.cuda.is_available()` (TL102's fix writes `pin_memory=torch.cuda.
    is_available()` in a script that picks its device that way; the loader pins on a GPU, and the
    copies of its batches should then not block, TL108)."""
    if isinstance(expr, cst.Call) and not expr.args and ctx.names.qualified(expr.func) == "torch.cuda.is_available":
        return True
    return ctx.literal(expr)


def neutral_module(module: str) -> bool:
    """module (a dotted name) is of a library that puts nothing on a device unless asked in words
    a scan sees (_NEUTRAL_LIBRARIES), or of the standard library."""
    top = module.split(".", 1)[0]
    return bool(top) and (top in _NEUTRAL_LIBRARIES or is_stdlib(top))


def _takes_objects(fn: cst.FunctionDef) -> bool:
    """fn has a parameter that may hold a model, optimizer or data (any but one whose default is a
    number, string or bool literal)."""
    params = fn.params
    for param in named_parameters(fn):
        if not isinstance(param.default, (cst.Integer, cst.Float, cst.SimpleString)) and not (
                isinstance(param.default, cst.Name) and param.default.value in ("True", "False")):
            return True
    return isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None
