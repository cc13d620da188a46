"""Data-parallel wrapping and gradient accumulation, as the distributed rules ask about them.

Which names hold a DDP/FSDP-wrapped model (a direct call, an import alias, a module-local helper
that returns one, a parameter a wrapped model is passed to, a model prepared by accelerate or set
up by Lightning Fabric, which wrap it in DDP when launched on several processes); whether a
training loop already skips the gradient all-reduce of the model it trains (`no_sync`,
`require_backward_grad_sync`, accelerate, Fabric: in the loop, code it calls or its function);
and which hot loops accumulate gradients: backward on every micro-batch while the optimizer
steps only under an interval condition (flat form) or after an inner micro-batch loop (nested).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from trainlint.analysis.loops import Loop, Loops, is_optimizer_step
from trainlint.analysis.names import Names, dotted
from trainlint.analysis.tree import TreeIndex, binding_targets, walk

DDP = "torch.nn.parallel.DistributedDataParallel"
FSDP = "torch.distributed.fsdp.FullyShardedDataParallel"
WRAPPERS = (DDP, FSDP)
# FSDP2's `fully_shard(model)`: shards the module in place (and returns it); it has no `no_sync()`,
# its switch is `model.set_requires_gradient_sync(False)`.
FSDP2 = "torch.distributed.fsdp.fully_shard"
_FULLY_SHARD = frozenset({FSDP2, "torch.distributed._composable.fsdp.fully_shard",
                          "torch.distributed._composable.fsdp.fully_shard.fully_shard"})
ACCELERATE = "accelerate.Accelerator"
FABRIC = "lightning.fabric.Fabric"
_ACCELERATOR_CLASSES = ("accelerate.Accelerator", "accelerate.accelerator.Accelerator")
_FABRIC_CLASSES = ("lightning.Fabric", "lightning.fabric.Fabric", "lightning.fabric.fabric.Fabric",
                   "lightning_fabric.Fabric", "lightning_fabric.fabric.Fabric")
# An object not constructed in the module is known by its conventional name (`self.accelerator`,
# a `fabric` parameter).
_FRAMEWORK_NAMES = {"accelerator": ACCELERATE, "fabric": FABRIC}
# The methods that hand back a model wrapped for data parallelism. accelerate's `prepare` takes
# models, optimizers, loaders and schedulers in any order; Fabric's `setup` takes the model first.
_PREPARE = {ACCELERATE: ("prepare", "prepare_model"), FABRIC: ("setup", "setup_module")}

# Names (attributes, functions, strings) whose presence means the code already controls when
# gradients are all-reduced: DDP/FSDP `no_sync()`, the attribute nanoGPT sets, accelerate's
# `accumulate`/`no_sync`/`sync_gradients`, Fabric's `no_backward_sync`, FSDP2's
# `set_requires_gradient_sync`, and project helpers named after them (`maybe_no_sync`).
SYNC_CONTROL = re.compile(r"no_sync|grad(ient)?s?_sync|backward_sync|sync_grad")
_FUNC_BOUNDARY = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
# Grad modes, as a `with` or a function's decorator, under which no backward can run.
# Builtins that go over an iterable they are given before returning (_consumed_at_once).
_CONSUMING_BUILTINS = frozenset(f"builtins.{name}" for name in (
    "sum", "list", "tuple", "set", "frozenset", "dict", "sorted", "min", "max", "any", "all"))
_NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                      "torch.autograd.inference_mode", "torch.autograd.grad_mode.no_grad",
                      "torch.autograd.grad_mode.inference_mode"})


@dataclass
class Wrapped:
    name: str  # dotted name holding the wrapped model (`model`, `self.model`)
    kind: str  # DDP, FSDP, ACCELERATE or FABRIC
    conditional: bool  # wrapped only on some paths (`if ddp: model = DDP(model)`)
    # For ACCELERATE/FABRIC: the dotted name of the object that prepared the model (`accelerator`).
    via: str | None = None
    # For a parameter a wrapped model is passed to: the functions whose parameter it is (the same
    # name elsewhere is another variable), or for `self.model` stored by a constructor it was
    # handed to, that class; None for a name assigned the model.
    scopes: tuple[cst.FunctionDef | cst.ClassDef, ...] | None = None


@dataclass
class Accumulation:
    """A hot loop that runs backward on every micro-batch but steps the optimizer on some."""

    loop: cst.CSTNode  # the loop whose every iteration runs backward (the micro-batch loop)
    backward: cst.Call
    step: cst.Call
    # The code, true on the micro-batch whose backward must all-reduce; None when unknown.
    sync_test: str | None
    # What the rule's message quotes: the condition the step runs under.
    condition: str
    # For the flat form: the loop-body statement (an `if`) that holds the step, else None.
    guard: cst.CSTNode | None = None
    nested: bool = False


@dataclass
class LateNoSync:
    """`with model.no_sync():` around a backward whose forward ran before it, outside it."""

    statement: cst.With
    item: cst.WithItem  # the item that names the model's no_sync
    wrapped: Wrapped
    backward: cst.Call
    forward: cst.Call  # the nearest forward of the model before the `with`


def one_line(code: str) -> str:
    """Code as one line, for a message: `(\n    a\n    and b\n)` -> `(a and b)`."""
    return re.sub(r"\s+\)", ")", re.sub(r"\(\s+", "(", re.sub(r"\s+", " ", code.strip())))


def _switches_off(method: str, call: cst.Call) -> bool:
    """`.eval()`, `.train(False)`, `.requires_grad_(False)`: a model switched out of training."""
    if method == "eval":
        return not call.args
    args = [a for a in call.args if a.keyword is None or a.keyword.value in ("mode", "requires_grad")]
    return method in ("train", "requires_grad_") and len(call.args) == 1 and len(args) == 1 \
        and dotted(args[0].value) == "False"


def _local_name(call: cst.Call) -> str | None:
    """The name of the module function or method a call calls (`wrap` of `wrap(m)`, `self.wrap(m)`)."""
    name = dotted(call.func)
    return name.rsplit(".", 1)[-1] if name is not None and name.split(".")[0] in (name, "self") else None


def _stored_parameters(init: cst.FunctionDef, params: set[str]) -> dict[str, list[str]]:
    """parameter -> the attributes of self that `__init__` stores it in (`self.model = model`,
    `self.model, self.opt = model, opt`), assigned only so."""
    out: dict[str, list[str]] = {}
    for node in walk(init.body):
        if not (isinstance(node, cst.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0].target, node.value
        pairs = [(target, value)]
        if isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple) and len(target.elements) == len(value.elements):
            pairs = [(t.value, v.value) for t, v in zip(target.elements, value.elements)]
        for t, v in pairs:
            name = dotted(t)
            if isinstance(v, cst.Name) and v.value in params and name and name.startswith("self.") and name.count(".") == 1:
                out.setdefault(v.value, []).append(name)
    return out


def _strip_module(name: str) -> str:
    """`model.module` (the module inside the wrapper) stands for the model."""
    while name.endswith(".module"):
        name = name[: -len(".module")]
    return name


def _conditional(index: TreeIndex, node: cst.CSTNode) -> bool:
    for anc in index.ancestors(node):
        if isinstance(anc, (cst.If, cst.Try, cst.IfExp)):
            return True
        if isinstance(anc, _FUNC_BOUNDARY):
            return False
    return False


class Distributed:
    def __init__(self, index: TreeIndex, names: Names, loops: Loops) -> None:
        self.index = index
        self.names = names
        self.loops = loops
        self.wrapped: dict[str, Wrapped] = {}
        self._helper_kinds: dict[str, str] | None = None
        self._partial_helpers: set[str] = set()  # helpers that return the plain model on some path
        self._frameworks: dict[str, str] | None = None
        self._called_names: set[str] | None = None
        self._controls: list[tuple[cst.CSTNode, list[str]]] | None = None
        self._aliases: dict[str, str] | None = None
        self._find_wrapped()

    # -- wrapping ------------------------------------------------------------------------

    def wrapper_kind(self, expr: cst.BaseExpression, helpers: dict[str, str] | None = None) -> str | None:
        """DDP/FSDP when expr constructs one: `DDP(m)`, `torch.compile(DDP(m))`, `wrap(m)` (a local
        helper; helpers: those found so far, while they are searched for), `DDP(m) if ddp else m`."""
        return self._wrapping(expr, helpers)[0]

    def _wrapping(self, expr: cst.BaseExpression, helpers: dict[str, str] | None = None) -> tuple[str | None, bool]:
        """(wrapper_kind, whether expr may also be the plain model): `DDP(m) if ddp else m` is a DDP
        on some paths only, like `if ddp: model = DDP(model)`, and a plain module has no no_sync."""
        if isinstance(expr, cst.IfExp):
            (body, body_partly), (orelse, orelse_partly) = (self._wrapping(e, helpers) for e in (expr.body, expr.orelse))
            return body or orelse, not (body and orelse) or body_partly or orelse_partly
        if not isinstance(expr, cst.Call):
            return None, False
        qn = self.names.qualified(expr.func)
        if qn == "torch.compile" and expr.args:
            return self._wrapping(expr.args[0].value, helpers)
        kind = self._constructed_kind(expr, qn, helpers)
        # `wrap(model, use_ddp)` that returns the model itself when not asked to wrap: maybe a DDP.
        return kind, kind is not None and _local_name(expr) in self._partial_helpers

    def _constructed_kind(self, expr: cst.Call, qn: str | None, helpers: dict[str, str] | None) -> str | None:
        if qn in WRAPPERS:
            return qn
        if qn in _FULLY_SHARD:
            return FSDP2
        if self.names.is_a(expr.func, *WRAPPERS):  # a local subclass
            return DDP if self.names.is_a(expr.func, DDP) else FSDP
        local = _local_name(expr)
        if local not in self.loops.functions:
            return None  # not a call of a module-local function: no need to search for helpers
        return (self._helpers() if helpers is None else helpers).get(local)

    def _helpers(self) -> dict[str, str]:
        """Module-local functions that return a wrapped model (directly or through a local name), by
        name; searched for when a local function's call is first asked about."""
        if self._helper_kinds is None:
            helpers: dict[str, str] = {}
            # A helper returns a wrapper that it or another helper constructs: a module that calls no
            # DDP/FSDP class (nor a subclass of one) has none.
            if any(self.names.is_a(call.func, *WRAPPERS) or self.names.qualified(call.func) in _FULLY_SHARD
                   for call in self.index.nodes(cst.Call)):
                for _ in range(2):  # a helper may call another helper
                    for fn_name, fns in self.loops.functions.items():
                        for fn in fns:
                            kind, partly = self._returns_wrapper(fn, helpers)
                            if kind:
                                helpers[fn_name] = kind
                                if partly:
                                    self._partial_helpers.add(fn_name)
            self._helper_kinds = helpers
        return self._helper_kinds

    def _find_wrapped(self) -> None:
        index = self.index
        assigns = [(a.targets[0].target if len(a.targets) == 1 else None, a.value, a) for a in index.nodes(cst.Assign)]
        assigns += [(a.target, a.value, a) for a in index.nodes(cst.AnnAssign) if a.value is not None]
        for target, value, node in assigns:
            kind, partly = self._wrapping(value)
            name = dotted(target) if target is not None else None
            if kind and name:
                self._add(name, kind, partly or _conditional(index, node))
            elif target is not None:
                for name, kind, via in self._prepared(target, value):
                    self._add(name, kind, _conditional(index, node), via)
        # `fully_shard(model)` as a statement shards the model where it stands.
        for call in index.nodes(cst.Call):
            if call.args and not call.args[0].star and self.names.qualified(call.func) in _FULLY_SHARD:
                name = dotted(call.args[0].value)
                if name:
                    self._add(name, FSDP2, _conditional(index, call))
        # A wrapped model handed to a local function is wrapped under the parameter's name.
        for _ in range(2):
            for callee, call, param, arg in self.loops.call_arguments:
                src = self.wrapped.get(dotted(arg.value) or "")
                if src is not None:
                    self._add(param, src.kind, src.conditional, src.via, scope=callee)
                elif (wrapping := self._wrapping(arg.value))[0]:  # train(DDP(model), ...)
                    self._add(param, wrapping[0], wrapping[1] or _conditional(index, call), scope=callee)
        self._find_stored()

    def _find_stored(self) -> None:
        """A wrapped model handed to the constructor of a class of this module, which stores it on
        itself (`Trainer(model, opt)` with `self.model = model` in `__init__`): wrapped as
        `self.model` in that class's methods."""
        classes = {c.name.value: c for c in self.index.nodes(cst.ClassDef)}
        for cls in self.index.nodes(cst.ClassDef):
            # Its own __init__, else one inherited from a base class of this module (the stored
            # attribute is then read in the methods of both).
            owner, seen = cls, set()
            init = None
            while owner is not None and owner.name.value not in seen:
                seen.add(owner.name.value)
                init = next((s for s in owner.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"),
                            None)
                if init is not None:
                    break
                bases = [dotted(b.value) for b in owner.bases]
                owner = classes.get(bases[0]) if len(bases) == 1 else None
            if init is None:
                continue
            params = [p.name.value for p in init.params.params][1:]  # after self
            stored = _stored_parameters(init, set(params) | {p.name.value for p in init.params.kwonly_params})
            if not stored:
                continue
            for call in self.index.nodes(cst.Call):
                if not (isinstance(call.func, cst.Name) and call.func.value == cls.name.value):
                    continue
                for i, arg in enumerate(call.args):
                    if arg.star:
                        break
                    param = arg.keyword.value if arg.keyword is not None else params[i] if i < len(params) else None
                    src = self.wrapped.get(dotted(arg.value) or "")
                    for attr in stored.get(param, ()):
                        for scope in dict.fromkeys((cls, owner)):
                            if src is not None:
                                self._add(attr, src.kind, src.conditional, src.via, scope=scope)
                            elif (wrapping := self._wrapping(arg.value))[0]:  # Trainer(DDP(model), ...)
                                self._add(attr, wrapping[0], wrapping[1] or _conditional(self.index, call), scope=scope)

    def _add(self, name: str, kind: str, conditional: bool, via: str | None = None,
             scope: cst.FunctionDef | cst.ClassDef | None = None) -> None:
        old = self.wrapped.get(name)
        scopes = None if scope is None or (old is not None and old.scopes is None) else \
            tuple(dict.fromkeys([*(old.scopes if old is not None else ()), scope]))
        self.wrapped[name] = Wrapped(name, kind, conditional or (old is not None and old.conditional), via, scopes)

    def framework(self, name: str | None) -> str | None:
        """ACCELERATE or FABRIC when the dotted name holds an `Accelerator` or a `Fabric`."""
        if name is None:
            return None
        if self._frameworks is None:
            self._frameworks = {}
            for assign in self.index.nodes(cst.Assign):
                value = assign.value
                if len(assign.targets) != 1 or not isinstance(value, cst.Call):
                    continue
                target = dotted(assign.targets[0].target)
                if target and self.names.is_a(value.func, *_ACCELERATOR_CLASSES):
                    self._frameworks[target] = ACCELERATE
                elif target and self.names.is_a(value.func, *_FABRIC_CLASSES):
                    self._frameworks[target] = FABRIC
            # Handed to a local function: `train(accelerator, model)` binds its parameter.
            for _callee, _call, param, arg in self.loops.call_arguments:
                kind = self._frameworks.get(dotted(arg.value) or "")
                if kind:
                    self._frameworks.setdefault(param, kind)
        if name in self._frameworks:
            return self._frameworks[name]
        head = name.split(".", 1)[0]
        if head in self.names.aliases and "." in name:
            return None  # an attribute of an imported module (`torch.accelerator`)
        return _FRAMEWORK_NAMES.get(name.rsplit(".", 1)[-1])

    def _prepared(self, target: cst.BaseAssignTargetExpression, value: cst.BaseExpression):
        """(name, kind, via) for each model that `accelerator.prepare(...)`/`fabric.setup(...)` hands back."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
            return
        via = dotted(value.func.value)
        kind = self.framework(via)
        method = value.func.attr.value
        if kind is None or method not in _PREPARE[kind]:
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            names = [dotted(e.value) for e in target.elements]
        else:
            names = [dotted(target)]
        if method in ("prepare_model", "setup_module") or (kind == FABRIC and method == "setup"):
            names = names[:1]  # Fabric's setup returns the model first, then the optimizers
        else:
            # What accelerate prepared is a model if the module calls it (`model(x)`); optimizers,
            # loaders and schedulers are not called.
            names = [n for n in names if n is not None and n in self._called()]
        for name in names:
            if name is not None:
                yield name, kind, via

    def _called(self) -> set[str]:
        if self._called_names is None:
            self._called_names = {dotted(c.func) for c in self.index.nodes(cst.Call)} - {None}
        return self._called_names

    def _returns_wrapper(self, fn: cst.FunctionDef, helpers) -> tuple[str | None, bool]:
        """(the wrapper kind fn returns, whether it may also return something else: another
        `return` gives back the plain model, or the name it returns is wrapped under a condition
        only, as in `if use_ddp: model = DDP(model)`)."""
        local: dict[str, str] = {}
        conditional: set[str] = set()
        found, partly = None, False
        for node in self.index.walk(fn.body):
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                kind, maybe = self._wrapping(node.value, helpers)
                name = dotted(node.targets[0].target)
                if kind and name:
                    local[name] = kind
                    if maybe or _conditional(self.index, node):
                        conditional.add(name)
            if isinstance(node, cst.Expr) and isinstance(node.value, cst.Call) and node.value.args \
                    and not node.value.args[0].star and self.names.qualified(node.value.func) in _FULLY_SHARD:
                # `fully_shard(model)` as a statement shards the model in place, then `return model`.
                name = dotted(node.value.args[0].value)
                if name:
                    local[name] = FSDP2
                    if _conditional(self.index, node):
                        conditional.add(name)
            if isinstance(node, cst.Return) and self.index.enclosing_function(node) is fn:
                returned = dotted(node.value) if node.value is not None else None
                kind, maybe = self._wrapping(node.value, helpers) if node.value is not None else (None, False)
                kind = kind or local.get(returned or "")
                if kind:
                    found = found or kind
                    partly = partly or maybe or returned in conditional
                else:
                    partly = True
        return found, found is not None and partly

    def references(self, root: cst.CSTNode, name: str) -> bool:
        """Code under root names `name` (dotted): not as the attribute of another object (`model`
        is not named by `self.model`, which may hold something else)."""
        return any(isinstance(n, (cst.Name, cst.Attribute)) and dotted(n) == name
                   and not (isinstance(self.index.parent.get(n), cst.Attribute) and self.index.parent[n].attr is n)
                   for n in self.index.walk(root))

    def wrapped_in(self, root: cst.CSTNode) -> list[Wrapped]:
        """Wrapped models that code under root uses: those it names itself, else those that the
        local functions it calls use (a training step in a helper)."""
        direct = [w for w in self.wrapped.values() if self._in_scope(root, w) and self.references(root, w.name)]
        if direct:
            return direct
        called = self._called_functions(root)
        return [w for w in self.wrapped.values()
                if any(self.references(r, w.name) for r in called if self._in_scope(r, w))]

    def _in_scope(self, node: cst.CSTNode, wrapped: Wrapped) -> bool:
        return wrapped.scopes is None or any(node is s or self.index.contains(s, node) for s in wrapped.scopes)

    def _called_functions(self, root: cst.CSTNode, depth: int = 2) -> list[cst.FunctionDef]:
        return self._callees([c for c in self.index.walk(root) if isinstance(c, cst.Call)], depth)

    def _callees(self, calls: list[cst.Call], depth: int) -> list[cst.FunctionDef]:
        """Module-local functions the calls reach, and those they call in turn (depth levels), in
        the order they are found."""
        out: list[cst.FunctionDef] = []
        for _ in range(depth):
            found = []
            for call in calls:
                for fn in self.loops.callees(call):
                    if fn not in out:
                        out.append(fn)
                        found.append(fn)
            calls = [c for fn in found for c in self.index.walk(fn) if isinstance(c, cst.Call)]
        return out

    def calls_local_using(self, root: cst.CSTNode, name: str) -> bool:
        return any(self.references(fn, name) for fn in self._called_functions(root, depth=1))

    # -- wrappers no backward runs through ----------------------------------------------

    def may_train(self, call: cst.Call) -> bool:
        """Whether a backward may run through the model the wrapper `call` (`DDP(model)`) builds.
        False only when all its uses are in sight and none trains: the call is assigned to a plain
        name in a function, the name stays there (not returned, handed to a call, stored, read by
        a nested function or a generator expression that runs later, or declared global), and each
        use after the assignment is under `torch.no_grad()`/`torch.inference_mode()` (the
        function's decorator or a `with`; what it computes there may be returned, as it carries no
        graph: `return sum(model(x).sum() for x in batches)`), or in a
        function that runs no backward or optimizer step (nor calls one that does, nor is called
        per step), and is neither a `.train()` switch nor its `.parameters()` handed to a call (an
        optimizer, a gradient clip: an evaluation helper's uses). One returned after it is switched
        to evaluation (`model.eval()`, then `return model`) from a module that runs no backward or
        optimizer step is an inference model too (mmdet's benchmark wraps one so)."""
        assign = self.index.parent.get(call)
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name)):
            return True
        name = assign.targets[0].target.value
        fn = self.index.enclosing_function(assign)
        if fn is None or self.index.enclosing(assign, (cst.FunctionDef, cst.ClassDef, *Loop)) is not fn:
            # A module's (or class's) name may be read anywhere, imported too; a loop wraps again
            # after the uses it saw.
            return True
        targets = {n for node in self.index.walk(fn.body) for t in binding_targets(node) for n in self.index.walk(t)}
        after = switched_off = False
        trains_here = None
        for node in self.index.walk(fn.body):
            if node is assign:
                after = True
            if isinstance(node, (cst.Global, cst.Nonlocal)) and any(n.name.value == name for n in node.names):
                return True
            if not (after and isinstance(node, cst.Name) and node.value == name) or node in targets \
                    or self.index.contains(assign, node) or not self._reads(node):
                continue
            if self.index.enclosing(node, _FUNC_BOUNDARY) is not fn or self._deferred(node, fn):
                return True  # read by a nested function or a generator run later: not all in sight
            if self._escapes(node, fn):
                if switched_off and self._returned(node) and not self.loops.step_calls:
                    continue  # an inference model: switched to evaluation, returned from a module that trains nothing
                if self._output_returned(node, fn) and self._without_grad(node, fn):
                    continue  # its outputs returned, computed under no_grad: no graph for a backward
                return True  # returned, handed on or stored: not all in sight
            if self._without_grad(node, fn):
                continue
            use = self.index.parent.get(node)
            switch = self.index.parent.get(use)
            if isinstance(use, cst.Attribute) and use.attr.value == "train" and isinstance(switch, cst.Call) \
                    and switch.func is use and not (switch.args and dotted(switch.args[0].value) == "False"):
                return True  # `model.train()`: it is going to train
            if isinstance(use, cst.Attribute) and use.attr.value in ("parameters", "named_parameters") \
                    and isinstance(switch, cst.Call) and switch.func is use \
                    and isinstance(self.index.parent.get(switch), cst.Arg):
                return True  # its parameters handed to an optimizer, a gradient clip, a scaler's step
            if isinstance(use, cst.Attribute) and isinstance(switch, cst.Call) and switch.func is use \
                    and _switches_off(use.attr.value, switch):
                switched_off = True
                continue  # `teacher.eval()`, `teacher.requires_grad_(False)`: nothing trains through it
            if trains_here is None:
                trains_here = self._runs_steps(fn)
            if trains_here or self.loops.in_hot_loop(node):
                return True
        return False

    def _deferred(self, node: cst.Name, fn: cst.FunctionDef) -> bool:
        """node is in a generator expression of fn that may run after fn's line, outside the
        `no_grad` there: one not consumed where it stands (returned, assigned, handed to `map` or
        `zip`). A generator's body runs when it is iterated, as a nested function's does when called;
        one handed to a builtin that goes over it at once (`sum(model(x) for x in batches)`, `list`,
        `max`...) runs in place, and so do list, set and dict comprehensions. Only the builtins are
        taken to consume it: any other call (`map`, `itertools.chain`, a project's helper) may keep
        it. Its first iterable (`(f(x) for x in model(batch))`) is evaluated at once."""
        for anc in self.index.ancestors(node):
            if anc is fn:
                return False
            if isinstance(anc, cst.GeneratorExp) and not self.index.contains(anc.for_in.iter, node) \
                    and not self._consumed_at_once(anc):
                return True
        return False

    def _consumed_at_once(self, gen: cst.GeneratorExp) -> bool:
        """gen is the only argument of a builtin that goes over it all before returning
        (`sum(...)`, `list(...)`, `max(...)`)."""
        arg = self.index.parent.get(gen)
        call = self.index.parent.get(arg)
        return isinstance(arg, cst.Arg) and arg.value is gen and not arg.keyword and not arg.star \
            and isinstance(call, cst.Call) and call.args[0] is arg \
            and self.names.qualified(call.func) in _CONSUMING_BUILTINS

    def _output_returned(self, node: cst.Name, fn: cst.FunctionDef) -> bool:
        """node is called (`model(x)`) and its function returns what that computes, held in no
        generator that runs later (_deferred) or yielded: `return model(x).argmax(-1)`,
        `return sum(model(x).sum() for x in batches)`. The model itself stays in fn."""
        use = self.index.parent.get(node)
        if not (isinstance(use, cst.Call) and use.func is node):
            return False
        for anc in self.index.ancestors(node):
            if anc is fn or isinstance(anc, (cst.Yield, cst.Lambda)):
                return False
            if isinstance(anc, cst.Return):
                return True
        return False

    def _returned(self, node: cst.Name) -> bool:
        """node is what its function's `return` gives: `return model`."""
        parent = self.index.parent.get(node)
        return isinstance(parent, cst.Return) and parent.value is node

    def _reads(self, node: cst.Name) -> bool:
        """The name node is a variable read, not an attribute's, a keyword's or an import's name
        (nor a `del`, which only lets the model go)."""
        parent = self.index.parent.get(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return False
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            return False
        return not isinstance(parent, (cst.ImportAlias, cst.Param, cst.FunctionDef, cst.ClassDef, cst.Del))

    def _escapes(self, node: cst.Name, fn: cst.FunctionDef) -> bool:
        """The wrapped model read at node may leave fn's sight: only its own calls (`model(x)`) and
        its attributes (`model.eval()`, `model.module`) keep it there, outside a return or yield."""
        for anc in self.index.ancestors(node):
            if anc is fn:
                break
            if isinstance(anc, (cst.Return, cst.Yield)):
                return True
        use = self.index.parent.get(node)
        return not (isinstance(use, cst.Attribute) and use.value is node
                    or isinstance(use, cst.Call) and use.func is node)

    def _without_grad(self, node: cst.CSTNode, fn: cst.FunctionDef) -> bool:
        """node runs under torch.no_grad()/inference_mode(): a `with` in fn around it, or fn's decorator."""
        for anc in self.index.ancestors(node):
            if anc is fn:
                return any(self._grad_off(d.decorator) for d in fn.decorators)
            if isinstance(anc, cst.With) and any(self._grad_off(item.item) for item in anc.items):
                return True
        return False

    def _grad_off(self, expr: cst.BaseExpression) -> bool:
        """`torch.no_grad()`, `torch.inference_mode()` (or `(True)`), also as bare decorators."""
        func = expr.func if isinstance(expr, cst.Call) else expr
        if self.names.qualified(func) not in _NO_GRAD:
            return False
        args = expr.args if isinstance(expr, cst.Call) else ()
        return not args or len(args) == 1 and dotted(args[0].value) == "True"

    def _runs_steps(self, fn: cst.FunctionDef) -> bool:
        """fn runs a backward or an optimizer step, or calls a module-local function that does, or
        a framework calls it on every step."""
        stepping = {f.name.value for f in self.loops.stepping_functions}
        return self.loops.is_step_hook(fn) or any(
            isinstance(c, cst.Call) and self._owner(c) is fn
            and (c in self._step_call_set or self.loops.local_callee_name(c) in stepping)
            for c in self.index.walk(fn.body))

    @cached_property
    def _step_call_set(self) -> set:
        return set(self.loops.step_calls)

    # -- existing sync control ---------------------------------------------------------

    def controls_sync(self, loop: cst.CSTNode, models: list[Wrapped]) -> bool:
        """The code already decides when the gradients of one of models are all-reduced in loop:
        a sync control (`model.no_sync()`, `model.require_backward_grad_sync = ...`,
        `accelerator.accumulate(model)`, `fabric.no_backward_sync(model)`, a project helper named
        after them, see SYNC_CONTROL) that is about one of the models, or names no wrapped model
        at all (`self.maybe_no_sync()`, a flag), and sits in the loop, in a function the loop
        calls, or elsewhere in the loop's own function (a context chosen before the loop) or a
        function called from there; not in another training loop, which it controls instead. A
        control of another wrapped model does not count."""
        keys = {self._model_key(w.name) for w in models}
        wrapped = {self._model_key(name) for name in self.wrapped}
        others = reached = None
        for node, candidates in self._sync_controls():
            found = {self._model_key(c) for c in candidates}
            if not found & keys and found & wrapped:
                continue  # about another wrapped model (`m2.no_sync()`)
            if others is None:
                others = self._other_loops(loop)
                reached = self._reached_functions(loop, others)
            if self._reaches(loop, node, others, reached):
                return True
        return False

    def _sync_controls(self) -> list[tuple[cst.CSTNode, list[str]]]:
        """(node, the dotted names it may be about) for every sync control in the module."""
        if self._controls is None:
            out = []
            for node in self.index.nodes(cst.Name):
                if SYNC_CONTROL.search(node.value) or node.value == "accumulate":
                    found = self._control(node)
                    if found is not None:
                        out.append(found)
            for node in self.index.nodes(cst.SimpleString):
                # `getattr(model, "no_sync")`: a string handed to a call, not a docstring or comment.
                arg = self.index.parent.get(node)
                call = self.index.parent.get(arg)
                if SYNC_CONTROL.search(node.value) and isinstance(arg, cst.Arg) and isinstance(call, cst.Call):
                    out.append((call, [n for a in call.args if a is not arg and (n := dotted(a.value))]))
            self._controls = out
        return self._controls

    def _control(self, node: cst.Name) -> tuple[cst.CSTNode, list[str]] | None:
        parent = self.index.parent.get(node)
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Param, cst.ImportAlias)):
            return None  # a definition or an import: what counts is where it is used
        accumulate = node.value == "accumulate"
        candidates: list[str | None] = []
        expr: cst.CSTNode = node
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            expr = parent
            base = dotted(parent.value)
            kind = self.framework(base)
            if accumulate and kind != ACCELERATE:
                return None  # an `args.accumulate` count, not accelerate's context manager
            if kind is None:
                candidates.append(base)  # `model.no_sync()`; not the accelerator of `accelerator.no_sync(model)`
        elif accumulate:
            return None
        elif isinstance(parent, cst.Arg) and parent.keyword is node:
            expr = self.index.parent.get(parent)  # the call: `helper(model, no_sync=True)`
        call = expr if isinstance(expr, cst.Call) else self.index.parent.get(expr)
        if isinstance(call, cst.Call) and (call is expr or call.func is expr):
            candidates += [dotted(a.value) for a in call.args]
        # `model.require_backward_grad_sync == flag` as a statement compares and sets nothing.
        comparison = self.index.parent.get(expr)
        if isinstance(comparison, cst.ComparisonTarget):
            comparison = self.index.parent.get(comparison)
        if isinstance(comparison, cst.Comparison) and isinstance(self.index.parent.get(comparison), cst.Expr):
            return None
        return expr, [c for c in candidates if c]

    def _model_key(self, name: str) -> str:
        """One name for every alias of a model: `raw = model`, `model.module`, a parameter it is passed to."""
        if self._aliases is None:
            self._aliases = {}
            pairs = []
            for assign in self.index.nodes(cst.Assign):
                if len(assign.targets) == 1:
                    pairs.append((dotted(assign.targets[0].target), dotted(assign.value)))
            for assign in self.index.nodes(cst.AnnAssign):
                if assign.value is not None:
                    pairs.append((dotted(assign.target), dotted(assign.value)))
            pairs += [(param, dotted(arg.value)) for _callee, _call, param, arg in self.loops.call_arguments]
            for a, b in pairs:
                if a and b:
                    ra, rb = self._root(_strip_module(a)), self._root(_strip_module(b))
                    if ra != rb:
                        self._aliases[ra] = rb
        return self._root(_strip_module(name))

    def _root(self, name: str) -> str:
        seen = set()
        while name in self._aliases and name not in seen:
            seen.add(name)
            name = self._aliases[name]
        return name

    def _owner(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The function whose code node is (lambdas are part of it); None for module level."""
        return self.index.enclosing(node, cst.FunctionDef)

    def _other_loops(self, loop: cst.CSTNode) -> list[cst.CSTNode]:
        """Training loops that neither hold loop nor are inside it."""
        index = self.index
        return [hot for hot in self.loops.hot_loops
                if not index.contains(hot, loop) and not index.contains(loop, hot)]

    def _reached_functions(self, loop: cst.CSTNode, others: list[cst.CSTNode], depth: int = 2) -> set:
        """Module-local functions called from loop, or from its own function outside other
        training loops, and those they call in turn (depth levels)."""
        index = self.index
        home = self._owner(loop)
        # The loop lies in its function: only that function's calls (the module's, at top level) can qualify.
        calls = [c for c in index.walk(home if home is not None else index.module) if isinstance(c, cst.Call)
                 and (index.contains(loop, c)
                      or (self._owner(c) is home and not any(index.contains(o, c) for o in others)))]
        return set(self._callees(calls, depth))

    def _reaches(self, loop: cst.CSTNode, node: cst.CSTNode, others: list[cst.CSTNode], reached: set) -> bool:
        """node is code that runs for loop: in it, elsewhere in its function, or in a function
        reached from there; not in another training loop, whose control it is."""
        index = self.index
        if any(index.contains(o, node) for o in others):
            return False
        if index.contains(loop, node):
            return True
        owner = self._owner(node)
        return owner is self._owner(loop) or owner in reached

    # -- no_sync around the backward alone ----------------------------------------------

    def backward_only_no_syncs(self) -> list[LateNoSync]:
        """`with model.no_sync():` (or a context chosen from it: `model.no_sync() if ... else
        nullcontext()`, a name assigned one in the function) of a DDP model around a backward,
        while the model's forward runs before the `with`, outside it. DDP reads its sync flag in
        the forward, where it arms the all-reduce the next backward runs, so that backward
        all-reduces anyway. FSDP reads its flag in the backward, and accelerate or Fabric may wrap
        the model in FSDP: only DDP is asked about."""
        out = []
        backwards = self._backward_calls()
        for stmt in self.index.nodes(cst.With):
            found = self._no_sync_item(stmt)
            if found is None:
                continue
            item, wrapped = found
            backward = next((b for b in backwards if self.index.contains(stmt.body, b)
                             and self._owner(b) is self._owner(stmt)), None)
            if backward is None:
                continue
            if self.references(stmt.body, wrapped.name) or self.calls_local_using(stmt.body, wrapped.name):
                continue  # the forward runs inside (or may: a helper that uses the model, the model handed on)
            forward = self._forward_before(stmt, wrapped)
            if forward is not None:
                out.append(LateNoSync(stmt, item, wrapped, backward, forward))
        return out

    def _no_sync_item(self, stmt: cst.With) -> tuple[cst.WithItem, Wrapped] | None:
        for item in stmt.items:
            for name in self._no_sync_of(item.item, stmt):
                wrapped = self.wrapped.get(name or "")
                if wrapped is not None and wrapped.kind == DDP and self._in_scope(stmt, wrapped):
                    return item, wrapped
        return None

    def _no_sync_of(self, expr: cst.BaseExpression, at: cst.CSTNode, follow: bool = True) -> list[str | None]:
        """The models whose `no_sync` expr names: `model.no_sync()`, `getattr(model, "no_sync",
        nullcontext)()`; with follow, also through a name assigned one in at's function (`with
        ctx:` after `ctx = model.no_sync() if ... else nullcontext()`)."""
        names = []
        for node in self.index.walk(expr):
            if isinstance(node, cst.Attribute) and node.attr.value == "no_sync":
                names.append(dotted(node.value))
            elif isinstance(node, cst.Call) and dotted(node.func) == "getattr" and len(node.args) >= 2 \
                    and isinstance(node.args[1].value, cst.SimpleString) \
                    and node.args[1].value.evaluated_value == "no_sync":
                names.append(dotted(node.args[0].value))
        held = expr.func if isinstance(expr, cst.Call) and not expr.args else expr  # `with ctx():`
        if not names and follow and isinstance(held, cst.Name):
            scope = self.index.enclosing_function(at)
            for assign in self.index.nodes(cst.Assign):
                if len(assign.targets) == 1 and dotted(assign.targets[0].target) == held.value \
                        and self.index.enclosing_function(assign) is scope:
                    names += self._no_sync_of(assign.value, at, follow=False)
        return names

    def _forward_before(self, stmt: cst.With, wrapped: Wrapped) -> cst.Call | None:
        """The nearest forward of wrapped that runs before stmt: in an earlier statement of its
        block or of the blocks around it, up to the loop (or function) that holds it."""
        for anc, earlier in self.index.preceding(stmt):
            if isinstance(anc, (*Loop, *_FUNC_BOUNDARY)):
                return None
            for prev in earlier:
                forward = self.forward_in(prev, wrapped)
                if forward is not None:
                    return forward
        return None

    def forward_in(self, stmt: cst.CSTNode, wrapped: Wrapped) -> cst.Call | None:
        """A forward of wrapped that stmt runs on each of its own runs, outside any sync control:
        a call of the model (`model(x)`), or of a module-local function that uses it. Not one in
        a loop or a function of stmt's own."""
        loop, owner = self.loops.innermost_loop(stmt), self._owner(stmt)
        for node in self.index.walk(stmt):
            if not isinstance(node, cst.Call) or self._owner(node) is not owner \
                    or self.loops.innermost_loop(node) is not loop or self._under_sync_control(node, stmt):
                continue
            if dotted(node.func) == wrapped.name or self.calls_local_using(node, wrapped.name):
                return node
        return None

    def _under_sync_control(self, node: cst.CSTNode, stmt: cst.CSTNode) -> bool:
        """node is in a `with` of stmt whose context names a sync control (`model.no_sync()`)."""
        for anc in self.index.ancestors(node):
            if isinstance(anc, cst.With) and any(
                    isinstance(n, cst.Name) and SYNC_CONTROL.search(n.value)
                    for item in anc.items for n in self.index.walk(item.item)):
                return True
            if anc is stmt:
                return False
        return False

    # -- accumulation ------------------------------------------------------------------

    def _backward_calls(self) -> list[cst.Call]:
        return [c for c in self.loops.step_calls if not is_optimizer_step(c)]

    def accumulations(self) -> list[Accumulation]:
        out = []
        steps = self.loops.optimizer_step_sites
        for backward in self.loops.backward_sites:
            loop = self.loops.hot_loop_of(backward)
            if loop is None or not self.loops.is_per_step(backward):
                continue
            in_loop = [s for s in steps if self.loops.hot_loop_of(s) is loop]
            if in_loop:
                acc = self._flat(loop, backward, in_loop)
            else:
                acc = self._nested(loop, backward, steps)
            if acc is not None:
                out.append(acc)
        return out

    def _flat(self, loop, backward, steps) -> Accumulation | None:
        """backward per micro-batch; `if (i + 1) % accum == 0: opt.step()` in the same loop."""
        for step in steps:
            if self.loops.is_per_step(step) and self._continue_guard(loop, step) is None:
                return None  # the optimizer steps on every iteration: no accumulation here
        if self._zeroes_every_iteration(loop):
            return None  # `opt.zero_grad()` on every iteration: nothing accumulates (a warm-up freeze)
        step = steps[0]
        top = self.top_statement(loop, step)
        if top is not None and isinstance(top, cst.If) and self.loops.limits_body(top.test) \
                and self.index.contains(top.body, step):
            test = self._code(top.test)
            return Accumulation(loop, backward, step, test, one_line(test), guard=top)
        if isinstance(top, cst.If) and top.orelse is not None and self.index.contains(top.orelse, step):
            test = self.loops.else_interval(top.test)  # `if (i + 1) % accum != 0: ... else: opt.step()`
            if test is not None:
                return Accumulation(loop, backward, step, test, one_line(test), guard=top)
        skip = self._continue_guard(loop, step)
        if skip is not None:
            # `if (i + 1) % accum != 0: continue` steps when `(i + 1) % accum == 0`, said so.
            test = self.loops.else_interval(skip.test) or f"not ({self._code(skip.test)})"
            return Accumulation(loop, backward, step, test, one_line(test), guard=skip)
        # Under some other interval guard (nested, or an `else:`): accumulation, but no known sync test.
        cond = next((a for a in self.index.ancestors(step) if isinstance(a, cst.If)), None)
        if cond is None or not self.index.contains(loop, cond):
            return None
        return Accumulation(loop, backward, step, None, one_line(self._code(cond.test)))

    def _zeroes_every_iteration(self, loop) -> bool:
        """The loop clears the gradients on each of its iterations (`optimizer.zero_grad()` outside
        any condition): each backward starts from none, so none accumulate between steps."""
        return any(isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                   and call.func.attr.value == "zero_grad" and self.loops.hot_loop_of(call) is loop
                   and self.loops.is_per_step(call) for call in self.index.walk(loop.body))

    def _continue_guard(self, loop, step) -> cst.If | None:
        """`if (i + 1) % accum != 0: continue` before the step, in the loop's body."""
        top = self.top_statement(loop, step)
        if top is None:
            return None
        for stmt in loop.body.body:
            if stmt is top:
                return None
            if isinstance(stmt, cst.If) and stmt.orelse is None and self.loops.is_interval_test(stmt.test):
                inner = stmt.body.body
                if len(inner) == 1 and isinstance(inner[0], cst.SimpleStatementLine) \
                        and isinstance(inner[0].body[0], cst.Continue):
                    return stmt
        return None

    def _nested(self, loop, backward, steps) -> Accumulation | None:
        """`for micro in range(accum): ... backward()` inside a loop that steps after it."""
        outer = self.loops.innermost_loop(loop)
        if outer is None:
            return None
        step = next((s for s in steps if self.loops.innermost_loop(s) is outer), None)
        if step is None:
            return None
        return Accumulation(loop, backward, step, self._last_iteration_test(loop), "after the micro-batch loop",
                            nested=True)

    def _last_iteration_test(self, loop) -> str | None:
        """Code true on the loop's last iteration, for `range(n)`, `range(a, n)`, `enumerate(seq)`."""
        if not isinstance(loop, cst.For) or loop.orelse is not None or self._may_skip_iterations(loop):
            return None
        it, target = loop.iter, loop.target
        if isinstance(it, cst.Call) and dotted(it.func) == "range" and isinstance(target, cst.Name) \
                and 1 <= len(it.args) <= 2 and not any(a.keyword or a.star for a in it.args):
            return f"{target.value} == {self._code(it.args[-1].value)} - 1"
        if isinstance(it, cst.Call) and dotted(it.func) == "enumerate" and len(it.args) == 1 \
                and dotted(it.args[0].value) is not None and isinstance(target, cst.Tuple) \
                and isinstance(target.elements[0].value, cst.Name):
            return f"{target.elements[0].value.value} == len({self._code(it.args[0].value)}) - 1"
        return None

    def _may_skip_iterations(self, loop) -> bool:
        """A `break`/`continue` of this loop: the last micro-batch might not run its backward."""
        for node in self.index.walk(loop.body):
            if isinstance(node, (cst.Break, cst.Continue)):
                owner = next(a for a in self.index.ancestors(node) if isinstance(a, (cst.For, cst.While)))
                if owner is loop:
                    return True
        return False

    # -- helpers -----------------------------------------------------------------------

    def top_statement(self, loop, node) -> cst.CSTNode | None:
        """The statement of loop's own body that holds node."""
        child = node
        for anc in self.index.ancestors(node):
            if anc is loop.body:
                return child
            child = anc
        return None

    def _code(self, node) -> str:
        return self.index.module.code_for_node(node)
