"""Mixed precision in one file: autocast regions, GradScalers, the dtypes they use, TF32 settings.

Answers the questions the TL4xx rules share: "which calls are autocast and with what dtype on
which device", "which names hold a GradScaler", "does the file already choose bf16 when the GPU
supports it", "does it set TF32 or leave float32 at all". Dtypes are resolved through names
assigned in the module (`amp_dtype = torch.float16`), conditional expressions and dict lookups
(`{"fp16": torch.float16, "bf16": torch.bfloat16}[args.precision]`); what cannot be resolved is
"unknown", and the rules stay quiet on unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from trainlint.analysis.frameworks import configured_for_cpu, is_accelerator, is_lightning_trainer, is_training_arguments
from trainlint.analysis.literals import literal
from trainlint.analysis.names import Names, bound_names, dotted
from trainlint.analysis.tree import TreeIndex, assignments
from trainlint.analysis.variables import Bindings

AUTOCAST = ("torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast")
# FSDP's ShardedGradScaler subclasses torch.amp.GradScaler and takes the same leading arguments
# (device, init_scale, ..., enabled at index 5).
SHARDED_GRAD_SCALER = "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler"
DEVICE_FIRST_SCALERS = ("torch.amp.GradScaler", SHARDED_GRAD_SCALER)
GRAD_SCALER = (*DEVICE_FIRST_SCALERS, "torch.cuda.amp.GradScaler", "torch.cpu.amp.GradScaler")
# Deprecated spellings -> (device type, name in torch.amp).
DEPRECATED_AMP = {
    "torch.cuda.amp.autocast": ("cuda", "autocast"),
    "torch.cuda.amp.GradScaler": ("cuda", "GradScaler"),
    "torch.cpu.amp.autocast": ("cpu", "autocast"),
    "torch.cpu.amp.GradScaler": ("cpu", "GradScaler"),
    "torch.cuda.amp.custom_fwd": ("cuda", "custom_fwd"),
    "torch.cuda.amp.custom_bwd": ("cuda", "custom_bwd"),
}
DTYPES = {"torch.float16": "float16", "torch.bfloat16": "bfloat16", "torch.float32": "float32"}
# Autocast's default dtype per device type (torch.get_autocast_dtype's defaults).
DEFAULT_AUTOCAST_DTYPE = {"cuda": "float16", "cpu": "bfloat16", "xpu": "bfloat16", "hpu": "bfloat16", "mps": "float16"}
UNKNOWN = "unknown"

# Settings that decide float32 matmul precision (any value: the author chose). The generic
# `torch.backends.fp32_precision` counts: cuda.matmul's own setting is "none" by default and
# inherits it. cuDNN's settings (`cudnn.allow_tf32`, `cudnn.fp32_precision`, `cudnn.conv.`...)
# do not: they cover cuDNN's convolutions and RNNs (allow_tf32 is already True by default), and
# matmuls and linear layers stay in full float32.
_TF32_ATTRS = re.compile(r"^torch\.backends\.(cuda\.matmul\.(allow_tf32|fp32_precision)|fp32_precision)$")
_TF32_CALLS = ("torch.set_float32_matmul_precision",)
# Signs that the model is not trained in float32 (or precision is handled by a framework).
_LOW_PRECISION_METHODS = frozenset({"half", "bfloat16"})
_FRAMEWORK_PRECISION_KEYWORDS = frozenset({"mixed_precision", "precision", "fp16", "bf16", "amp", "use_amp"})
# Keywords that pass a model/parameter dtype chosen elsewhere (torchtune's `dtype=self._dtype`,
# HF's `torch_dtype=`, FSDP's MixedPrecision(param_dtype=...)).
_DTYPE_KEYWORDS = frozenset({"dtype", "torch_dtype", "param_dtype", "compute_dtype"})
# dtypes that are not a lowered float: torch's and numpy's (`np.int64` in a data pipeline), Python's
# own types, and numpy's names written as strings (`dtype="int64"`).
_NOT_FLOAT_DTYPES = re.compile(r"^(?:(?:torch|numpy|builtins)\.)?(u?int\d*|long|short|bool_?|float32|float64|double|"
                               r"complex\d*|cfloat|float|object_?|str_?)$")


# float16 mixed precision chosen in a framework's configuration: the framework then runs the step
# under a float16 autocast and scales the loss with a GradScaler, as TL402 flags in plain code.
# By framework: (its configuration class, keyword, the values that mean float16 with a scaler);
# a literal value only, since a value from a flag or a config is the user's choice.
_FRAMEWORK_FP16 = {
    "transformers": (is_training_arguments, "fp16", (True,)),
    "lightning": (is_lightning_trainer, "precision", (16, "16", "16-mixed")),
    "accelerate": (is_accelerator, "mixed_precision", ("fp16",)),
}


@dataclass(frozen=True)
class FrameworkFp16:
    """`TrainingArguments(fp16=True)`, `Trainer(precision="16-mixed")`, `Accelerator(mixed_precision="fp16")`."""
    call: cst.Call
    arg: cst.Arg
    framework: str  # a key of _FRAMEWORK_FP16


@dataclass(frozen=True)
class AutocastUse:
    call: cst.Call
    qualname: str
    device: str | None  # "cuda", "cpu", ... or None when not known statically
    # A call of a name bound to `functools.partial(torch.amp.autocast, "cuda", ...)` (TL401's fix
    # for an aliased autocast writes it): that partial call, whose arguments come before the
    # call's own. None for a call of autocast itself (or of a name bound to it).
    partial: cst.Call | None = None
    # The name is bound to a null context on some path instead (`functools.partial(torch.amp.autocast,
    # "cuda") if use_amp else contextlib.nullcontext`, TL401's fix of `torch.cuda.amp.autocast if
    # use_amp else ...`): an autocast region when enabled, like `enabled=use_amp`, but the call takes
    # no autocast argument on the other path.
    optional: bool = False
    # `@torch.autocast("cuda")` on a function: the region is that function's body, wherever it is
    # called (a module's `forward` runs under the model call), and the call's arguments are
    # evaluated once, where the function is defined. None for a `with` or a plain call.
    decorates: cst.FunctionDef | None = None


@dataclass(frozen=True)
class ScalerUse:
    call: cst.Call
    qualname: str
    device: str | None


class Precision:
    def __init__(self, index: TreeIndex, names: Names, bindings: Bindings) -> None:
        self.index = index
        self.names = names
        self.bindings = bindings
        self.autocasts: list[AutocastUse] = []
        self.scalers: list[ScalerUse] = []
        # Assignments by dotted target, for resolving dtype names (module-wide: scripts assign once).
        self.assigned: dict[str, list[cst.BaseExpression]] = {}
        for target, value, _ in assignments(index):
            name = dotted(target)
            if name:
                self.assigned.setdefault(name, []).append(value)
        bound = self._autocast_names()
        for call in index.nodes(cst.Call):
            qn = names.qualified(call.func)
            if qn in AUTOCAST:
                self.autocasts.append(AutocastUse(call, qn, self._device(call, qn), decorates=self._decorated(call)))
            elif qn in GRAD_SCALER:
                self.scalers.append(ScalerUse(call, qn, self._device(call, qn)))
            elif qn is None and dotted(call.func) in bound:
                qn, partial, optional = bound[dotted(call.func)]
                self.autocasts.append(AutocastUse(call, qn, self._device(call, qn, partial), partial, optional,
                                                  self._decorated(call)))

    def _decorated(self, call: cst.Call) -> cst.FunctionDef | None:
        """The function `call` decorates (`@torch.autocast("cuda")` above `def forward`), if it does."""
        decorator = self.index.parent.get(call)
        if isinstance(decorator, cst.Decorator) and decorator.decorator is call:
            fn = self.index.parent.get(decorator)
            if isinstance(fn, cst.FunctionDef):
                return fn
        return None

    def _autocast_names(self) -> dict[str, tuple[str, cst.Call | None, bool]]:
        """Names (`autocast_ctx`, `self.amp_ctx`) every assignment binds alike to autocast itself
        (`ctx = torch.autocast`) or to `functools.partial(<autocast>, ...)`, maybe or else a null
        context: by name, autocast's qualified name, the partial call, and whether the null context
        may be bound. Calling such a name opens an autocast region (AutocastUse)."""
        out: dict[str, tuple[str, cst.Call | None, bool]] = {}
        for name, values in self.assigned.items():
            found = {self._autocast_binding(value) for value in values}
            if len(found) == 1 and None not in found:
                out[name] = found.pop()
        return out

    def _autocast_binding(self, value: cst.BaseExpression) -> tuple[str, cst.Call | None, bool] | None:
        if isinstance(value, cst.IfExp):
            arms = (self._autocast_binding(value.body), self._autocast_binding(value.orelse))
            nulls = (self._is_null_context(value.body), self._is_null_context(value.orelse))
            for arm, other_null in ((arms[0], nulls[1]), (arms[1], nulls[0])):
                if arm is not None and not arm[2] and other_null:
                    return arm[0], arm[1], True
            return None
        qn = self.names.qualified(value)
        if qn in AUTOCAST:
            return qn, None, False
        if isinstance(value, cst.Call) and self.names.qualified(value.func) == "functools.partial" and value.args:
            first = value.args[0]
            if first.keyword is None and not first.star and self.names.qualified(first.value) in AUTOCAST:
                return self.names.qualified(first.value), value, False
        return None

    def _is_null_context(self, value: cst.BaseExpression) -> bool:
        return self.names.qualified(value) == "contextlib.nullcontext"

    # -- devices and dtypes -------------------------------------------------------------

    def _device(self, call: cst.Call, qn: str, partial: cst.Call | None = None) -> str | None:
        if qn.startswith("torch.cuda."):
            return "cuda"
        if qn.startswith("torch.cpu."):
            return "cpu"
        keyword = "device_type" if qn == "torch.amp.autocast" else "device"
        arg = _bound_arg(call, partial, keyword, 0)
        if arg is None:
            return "cuda" if qn in DEVICE_FIRST_SCALERS else None  # GradScaler's default device
        return self.device_of(arg.value)

    def device_of(self, expr: cst.BaseExpression, _depth: int = 0) -> str | None:
        if isinstance(expr, cst.SimpleString):
            return str(expr.evaluated_value).split(":", 1)[0]
        if _depth < 4 and isinstance(expr, (cst.Name, cst.Attribute)):
            values = self.assigned.get(dotted(expr) or "", [])
            devices = {self.device_of(v, _depth + 1) for v in values}
            if len(devices) == 1:
                return devices.pop()
        return None

    def dtypes(self, expr: cst.BaseExpression | None, _depth: int = 0, none: str = UNKNOWN) -> set[str]:
        """The dtypes expr may evaluate to: subset of float16/bfloat16/float32/unknown; `none` for a
        None it may be (autocast's `dtype=None`: the device's default)."""
        if expr is None or _depth > 5:
            return {UNKNOWN}
        if _is_none(expr):
            return {none}
        qn = self.names.qualified(expr)
        if qn in DTYPES:
            return {DTYPES[qn]}
        if isinstance(expr, cst.IfExp):
            return self.dtypes(expr.body, _depth + 1, none) | self.dtypes(expr.orelse, _depth + 1, none)
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Dict):
            out: set[str] = set()
            for element in expr.value.elements:
                out |= self.dtypes(getattr(element, "value", None), _depth + 1, none)
            return out
        if isinstance(expr, (cst.Name, cst.Attribute)):
            values = self.assigned.get(dotted(expr) or "", [])
            if values:
                out = set()
                for value in values:
                    out |= self.dtypes(value, _depth + 1, none)
                return out
        return {UNKNOWN}

    def autocast_dtype_expr(self, use: AutocastUse) -> cst.BaseExpression | None:
        """The dtype the region is given; None when it is not given, or given as `None` (autocast
        then takes the device's default, as when it is left out)."""
        # torch.amp.autocast(device_type, dtype, ...); torch.cuda.amp.autocast(enabled, dtype, ...)
        arg = _bound_arg(use.call, use.partial, "dtype", 1)
        return arg.value if arg is not None and not _is_none(arg.value) else None

    def dtype_position(self, use: AutocastUse) -> int | None:
        """Where a positional dtype stands among the call's own arguments (1 for a call of autocast;
        0 after `functools.partial(torch.amp.autocast, "cuda")`); None when the partial already
        passes it by position, or hides positions behind `*args` (a dtype given at the call would
        be a second value)."""
        if use.partial is None:
            return 1
        bound = _bound_positionals(use.partial)
        return None if bound is None or bound > 1 else 1 - bound

    def autocast_is_disabled(self, use: AutocastUse) -> bool:
        """The region is turned off by a literal `enabled=False` (in the call or its partial)."""
        # torch.amp.autocast(device_type, dtype, enabled, ...); torch.cuda.amp.autocast(enabled, ...)
        arg = _bound_arg(use.call, use.partial, "enabled", 2 if use.qualname == "torch.amp.autocast" else 0)
        return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "False"

    def autocast_dtypes(self, use: AutocastUse) -> set[str]:
        """The dtypes an autocast region computes in (its device's default when dtype is not given
        or is None: `dtype=None`, `amp_dtype = torch.bfloat16 if bf16 else None`)."""
        device = use.device
        if device is None and any(s.device == "cuda" for s in self.scalers):
            device = "cuda"  # `torch.autocast(device.type)` next to a CUDA GradScaler
        default = DEFAULT_AUTOCAST_DTYPE.get(device or "", UNKNOWN)
        expr = self.autocast_dtype_expr(use)
        return {default} if expr is None else self.dtypes(expr, none=default)

    def is_disabled(self, call: cst.Call, positional_index: int | None = None) -> bool:
        """`enabled=False` given as a literal."""
        arg = _keyword(call, "enabled")
        if arg is None and positional_index is not None:
            arg = _positional(call, positional_index)
        return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "False"

    def scaler_enabled_index(self, use: ScalerUse) -> int:
        # torch.amp.GradScaler(device, init_scale, growth_factor, backoff_factor, growth_interval, enabled)
        return 5 if use.qualname in DEVICE_FIRST_SCALERS else 4

    def active_scalers(self) -> list[ScalerUse]:
        return [s for s in self.scalers if not self.is_disabled(s.call, self.scaler_enabled_index(s))]

    @cached_property
    def framework_fp16(self) -> list[FrameworkFp16]:
        """Framework configurations that train in float16 with a GradScaler (_FRAMEWORK_FP16); not
        one told to train on the CPU, where Lightning runs bfloat16 instead."""
        out = []
        for call in self.index.nodes(cst.Call):
            qn = self.names.qualified(call.func)
            for framework, (is_class, keyword, values) in _FRAMEWORK_FP16.items():
                if is_class(qn) and not configured_for_cpu(call):
                    arg = _keyword(call, keyword)
                    if arg is not None and literal(arg.value) in values:
                        out.append(FrameworkFp16(call, arg, framework))
        return out

    # -- file-level questions -----------------------------------------------------------

    @cached_property
    def chooses_bf16(self) -> bool:
        """The file already picks bf16 somewhere: it asks `is_bf16_supported`, an autocast may run in
        bfloat16, or a scaler's `enabled` depends on the dtype."""
        return self.chooses_bf16_beside_autocast or any(self.may_run_bf16(use) for use in self.autocasts)

    def may_run_bf16(self, use: AutocastUse) -> bool:
        """The autocast region may compute in bfloat16 on a GPU (not the CPU's default)."""
        return "bfloat16" in self.autocast_dtypes(use) and use.device != "cpu"

    @cached_property
    def chooses_bf16_beside_autocast(self) -> bool:
        """chooses_bf16 but for the autocasts' dtypes: the file asks `is_bf16_supported`, or a
        scaler's `enabled` depends on the dtype. A rule that knows which autocasts pair with the
        scaler asks may_run_bf16 of those alone (a bfloat16 autocast in evaluation chooses nothing
        for training)."""
        return bool(self.bf16_choices)

    @cached_property
    def bf16_choices(self) -> list[cst.Call]:
        """Where the file chooses beside the autocasts' dtypes: each `is_bf16_supported()` call, and
        each scaler whose `enabled` depends on the dtype. A rule can tell from where they are which
        part of the file chooses (one training stage of two, each with its own scaler)."""
        out = []
        for call in self.index.nodes(cst.Call):
            func = call.func
            name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
            if name == "is_bf16_supported":
                out.append(call)
        for use in self.scalers:
            arg = _keyword(use.call, "enabled")
            if arg is not None and any(d in ("float16", "bfloat16") for d in self._mentioned_dtypes(arg.value)):
                out.append(use.call)
        return out

    def part(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The part of the file node is in, for telling training stages apart: its function, or for
        a method (or a class body's own code) its class, whose `__init__` may make the scaler and
        `train_step` open the autocast; None at module level."""
        fn = self.index.enclosing_function(node)
        if fn is None:
            return self.index.enclosing_class(node)
        block = self.index.parent.get(fn)
        cls = self.index.parent.get(block) if block is not None else None
        return cls if isinstance(cls, cst.ClassDef) else fn

    def bf16_choosing_parts(self, parts: set, autocasts: list[cst.Call]) -> set | None:
        """Which of parts (functions or classes, as `part` names them: a rule's training stages)
        choose bf16 by one of bf16_choices, or of autocasts (those the rule knows may run bfloat16): a
        choice made in a part is that part's; one made at module level, in a variable or a function
        (`AMP_DTYPE = torch.bfloat16 if torch.cuda.is_bf16_supported() else ...`), is for the parts
        that read it, directly or through the module's variables and functions reading it in turn
        (`def pick_dtype(): return ... AMP_DTYPE ...`). None when a choice may be for any part: made
        anywhere else, read by no part, or read by other code (the module's own statements, a
        function the file does not call: either may hand it in)."""
        out: set = set()
        for choice in [*self.bf16_choices, *autocasts]:
            if self.part(choice) in parts:
                out.add(self.part(choice))
                continue
            readers = self._module_value_readers(choice, parts)
            if not readers:
                return None
            out |= readers
        return out

    def _module_value_readers(self, node: cst.CSTNode, parts: set) -> set | None:
        """The parts that read what node's module-level statement binds (bf16_choosing_parts);
        None when that statement or one it flows into is not a plain assignment or a function, or
        when what it binds is read nowhere in the file (maybe from another) or is rebound elsewhere."""
        found: set = set()
        todo = [self._top_statement(node)]
        seen: set = set()
        while todo:
            stmt = todo.pop()
            if stmt in seen:
                continue
            seen.add(stmt)
            if isinstance(stmt, cst.FunctionDef):
                bound = {stmt.name.value}
            elif isinstance(stmt, cst.SimpleStatementLine) and all(
                    isinstance(small, (cst.Assign, cst.AnnAssign)) for small in stmt.body):
                bound = {name for name in bound_names(stmt) if "." not in name}
            else:
                return None
            for name in bound:
                uses = self.bindings.module_uses(name)
                if uses is None:
                    return None
                outside = [u for u in uses if not self.index.contains(stmt, u.node)]
                if not outside or any(u.kind != "read" for u in outside):
                    return None
                for use in outside:
                    part = self.part(use.node)
                    if part in parts:
                        found.add(part)
                    else:
                        todo.append(self._top_statement(use.node))
        return found

    def _top_statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The module-level statement node is in (its own, a function's or a class's def), or None."""
        for anc in self.index.ancestors(node):
            if self.index.parent.get(anc) is self.index.module:
                return anc
        return None

    def _mentioned_dtypes(self, expr: cst.CSTNode) -> set[str]:
        out = set()
        for node in self.index.walk(expr):
            if isinstance(node, (cst.Name, cst.Attribute)):
                qn = self.names.qualified(node)
                if qn in DTYPES:
                    out.add(DTYPES[qn])
                elif isinstance(node, cst.Name) and node.value in self.assigned:
                    out |= self.dtypes(node) - {UNKNOWN}
        return out

    @cached_property
    def scaler_names(self) -> set[str]:
        """Dotted names that hold a GradScaler: assigned from a constructor (`scaler`, `self.scaler`),
        or parameters annotated as one."""
        out: set[str] = set()
        scaler_calls = {s.call for s in self.scalers}
        for name, values in self.assigned.items():
            for value in values:
                if any(node in scaler_calls for node in self.index.walk(value)):
                    out.add(name)
        for param in self.index.nodes(cst.Param):
            if param.annotation is not None and self.names.qualified(param.annotation.annotation) in GRAD_SCALER:
                out.add(param.name.value)
        return out

    @cached_property
    def sets_tf32(self) -> bool:
        for node in self.index.nodes(cst.Assign):
            for target in node.targets:
                if _TF32_ATTRS.match(self.names.qualified(target.target) or ""):
                    return True
        for call in self.index.nodes(cst.Call):
            if self.names.qualified(call.func) in _TF32_CALLS:
                return True
        return False

    @cached_property
    def lowers_precision(self) -> bool:
        """Autocast, a half/bf16 model, or precision left to a framework (accelerate, Lightning, HF)."""
        if self.autocasts:
            return True
        for comparison in self.index.nodes(cst.Comparison):
            if self._mentioned_dtypes(comparison) & {"float16", "bfloat16"}:
                return True  # `if self._dtype == torch.float16:` - the file reasons about its training dtype
        for call in self.index.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in _LOW_PRECISION_METHODS:
                return True
            last = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
            if last in ("set_default_dtype", "get_dtype") and call.args:
                return True  # a training dtype read from configuration (torchtune's recipes)
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value in _FRAMEWORK_PRECISION_KEYWORDS:
                    return True
                if arg.keyword is not None and arg.keyword.value in _DTYPE_KEYWORDS \
                        and not _NOT_FLOAT_DTYPES.match(self._dtype_name(arg.value)):
                    return True  # a float dtype that is not float32, or one decided by configuration
                if self._mentioned_dtypes(arg.value) & {"float16", "bfloat16"}:
                    return True  # .to(torch.bfloat16), set_default_dtype(torch.float16), ...
        return False

    def _dtype_name(self, expr: cst.BaseExpression) -> str:
        """A dtype argument as written: its qualified name (`numpy.int64`, `builtins.int`), or a
        string's value (`"int64"`); "" when it is neither."""
        value = literal(expr)
        return value if isinstance(value, str) else self.names.qualified(expr) or ""


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _bound_positionals(partial: cst.Call) -> int | None:
    """How many positional arguments `functools.partial(f, ...)` binds before a call's own; None
    when `*args` hides the count."""
    if any(a.star == "*" for a in partial.args):
        return None
    return len(_partial_positionals(partial))


def _partial_positionals(partial: cst.Call) -> list[cst.Arg]:
    return [a for a in partial.args[1:] if a.keyword is None and not a.star]


def _bound_arg(call: cst.Call, partial: cst.Call | None, name: str, index: int) -> cst.Arg | None:
    """The argument for parameter `name` (the `index`-th positional one) of `call`, whose callee may
    be `partial`: the call's keyword wins over the partial's (functools.partial merges keywords that
    way), and the partial's positional arguments come before the call's."""
    if partial is None:
        return _keyword(call, name) or _positional(call, index)
    arg = _keyword(call, name) or _keyword(partial, name)
    if arg is not None:
        return arg
    bound = _bound_positionals(partial)
    if bound is None:
        return None
    if index < bound:
        return _partial_positionals(partial)[index]
    return _positional(call, index - bound)


def _keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def _positional(call: cst.Call, index: int) -> cst.Arg | None:
    seen = 0
    for arg in call.args:
        if arg.star == "*":
            return None  # *args: positions unknown from here on
        if arg.keyword is None and not arg.star:
            if seen == index:
                return arg
            seen += 1
    return None
