"""Qualified names of imported objects, from an import-alias table built from the one traversal.

This replaces libcst's QualifiedNameProvider (scope analysis of every name, the dominant cost
in TorchFix and Fixit) with a table of what each imported name stands for. Names bound by
imports anywhere in the module count; a later rebinding of an imported name is rare in
training scripts and is accepted as a known imprecision.
"""

from __future__ import annotations

import builtins

import libcst as cst

from trainlint.analysis.tree import TreeIndex, binding_targets, parameter_names, walk

# Public re-exports: the canonical name rules ask for, keyed by the defining module's name.
CANONICAL = {
    "torch.utils.data.dataloader.DataLoader": "torch.utils.data.DataLoader",
    "torch.utils.data.dataset.Dataset": "torch.utils.data.Dataset",
    "torch.utils.data.dataset.IterableDataset": "torch.utils.data.IterableDataset",
    "torch.nn.parallel.distributed.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.data_parallel.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel": "torch.nn.DataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel":
        "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.cuda.amp.autocast_mode.autocast": "torch.cuda.amp.autocast",
    "torch.cuda.amp.grad_scaler.GradScaler": "torch.cuda.amp.GradScaler",
    "torch.nn.functional.softmax": "torch.softmax",
    "torch.Tensor.softmax": "torch.softmax",
    # Mixed precision: one name per class, whichever module or alias it was imported through.
    "torch.autocast": "torch.amp.autocast",
    "torch.amp.autocast_mode.autocast": "torch.amp.autocast",
    "torch.GradScaler": "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "torch.cpu.amp.autocast_mode.autocast": "torch.cpu.amp.autocast",
    "torch.cpu.amp.grad_scaler.GradScaler": "torch.cpu.amp.GradScaler",
    "torch.cuda.amp.autocast_mode.custom_fwd": "torch.cuda.amp.custom_fwd",
    "torch.cuda.amp.autocast_mode.custom_bwd": "torch.cuda.amp.custom_bwd",
    "torch.amp.autocast_mode.custom_fwd": "torch.amp.custom_fwd",
    "torch.amp.autocast_mode.custom_bwd": "torch.amp.custom_bwd",
    # dtype aliases: torch.half is torch.float16, torch.float is torch.float32.
    "torch.half": "torch.float16",
    "torch.float": "torch.float32",
    "torch.nn.modules.dropout.Dropout": "torch.nn.Dropout",
    "torch.nn.modules.activation.Softmax": "torch.nn.Softmax",
}

_BUILTINS = frozenset(dir(builtins))


def dotted(expr: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


def bound_names(root: cst.CSTNode, skip: tuple[type, ...] = ()) -> frozenset[str]:
    """What the bindings under root (assignments, `for` targets, `as` names, walrus...) may rebind:
    every name and dotted name their targets mention. `self.x[i] = v` gives `self.x`, `self`, `x`
    and `i`: more than it binds, which is the safe side for its callers, who ask "can anything
    here change what this name holds?" before they move code or trust a value. Frozen, so that
    TreeIndex.memo can hand the same answer to every caller. Nodes of the `skip` types are left
    out with all they hold (tree.walk)."""
    return frozenset(
        name
        for node in walk(root, skip)
        for target in binding_targets(node)
        for n in walk(target)
        if isinstance(n, (cst.Name, cst.Attribute)) and (name := dotted(n)) is not None
    )


def local_names(fn: cst.FunctionDef | cst.Lambda) -> frozenset[str]:
    """The names fn has of its own (bound_names of its body, and its signature's): a read of any
    other is the enclosing scope's or the module's."""
    return bound_names(fn.body) | parameter_names(fn)


def module_names(module: cst.Module) -> frozenset[str]:
    """The names a module's own code binds (bound_names of its top level, `if __name__ ==
    "__main__":` blocks and loops included) and the functions and classes it defines, but not
    what those bind inside them: a name written at the top level must not be one of these."""
    scopes = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
    defined = {stmt.name.value for block in walk(module, scopes) if isinstance(block, (cst.Module, cst.IndentedBlock))
               for stmt in block.body if isinstance(stmt, (cst.FunctionDef, cst.ClassDef))}
    return bound_names(module, scopes) | defined


def _module_name(expr) -> str:
    return dotted(expr) or ""


def _alias_table(bindings, fallbacks: dict[int, bool]) -> dict[str, str]:
    """local name -> what it stands for, from (local, target, import node) in import order. A name
    bound both by the import for current PyTorch and by an old-version fallback (`if TORCH_2_4:
    from torch.amp import GradScaler else: from torch.cuda.amp import ...`) means what the
    current-version import says."""
    table: dict[str, str] = {}
    fallback_bound: set[str] = set()
    for local, target, node in bindings:
        fallback = fallbacks[id(node)]
        if local in table and fallback and local not in fallback_bound:
            continue
        table[local] = target
        if fallback:
            fallback_bound.add(local)
        else:
            fallback_bound.discard(local)
    return table


# Where a Name is bound (or may be: any name in a tuple counts, the safe side for an alias).
_BINDING_PARENTS = (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.AsName, cst.FunctionDef,
                    cst.ClassDef, cst.Param, cst.ImportAlias, cst.Tuple)


class Names:
    """Answers "which API is this expression?" for one module."""

    def __init__(self, index: TreeIndex) -> None:
        self.local_defs: set[str] = set()
        # class name -> qualified names of its bases (as written, resolved lazily)
        self.classes: dict[str, list[cst.BaseExpression]] = {}
        from trainlint.analysis.gates import in_version_fallback  # gates uses this module's dotted()

        # (local name, what it stands for, the import), imports anywhere in the module, in order.
        bindings: list[tuple[str, str, cst.CSTNode]] = []
        for node in index.nodes(cst.Import):
            for alias in node.names:
                full = _module_name(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    bindings.append((alias.asname.name.value, full, node))
                else:
                    top = full.split(".", 1)[0]
                    bindings.append((top, top, node))
        for node in index.nodes(cst.ImportFrom):
            if node.relative:
                module = "." * len(node.relative) + (_module_name(node.module) if node.module else "")
            else:
                module = _module_name(node.module) if node.module else ""
            if isinstance(node.names, cst.ImportStar):
                continue
            for alias in node.names:
                name = _module_name(alias.name)
                local = name
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    local = alias.asname.name.value
                bindings.append((local, f"{module}.{name}", node))
        fallbacks = {id(node): in_version_fallback(index, node) for _, _, node in bindings}
        # What each name stands for where rules read it: imports in functions count too (a
        # script's `def main(): import torch` names torch for the code of main).
        self.aliases = _alias_table(bindings, fallbacks)
        # What fixes may write anywhere in the module: a function's (or class body's) own import
        # binds its name in that scope only, so code written at module level or in another
        # function would meet a NameError (`import torch as th` at the top, and a helper an earlier
        # fix inserted with `import torch` in its body: `torch` is not the module's name for torch).
        self.module_aliases = _alias_table(
            [b for b in bindings if index.enclosing(b[2], (cst.FunctionDef, cst.ClassDef)) is None], fallbacks)
        self._value_aliases(index)
        # Classes of this module that define their own __init__: calling them does not pass the
        # call's arguments to the base class's constructor.
        self.own_init: set[str] = set()
        for node in index.nodes(cst.ClassDef):
            self.classes[node.name.value] = [b.value for b in node.bases if b.keyword is None and not b.star]
            self.local_defs.add(node.name.value)
            body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
            for stmt in body:
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
                    params = stmt.params
                    # `def __init__(self, *args, **kwargs)` passes the arguments on: same signature.
                    forwards = isinstance(params.star_arg, cst.Param) and params.star_kwarg is not None
                    if not forwards:
                        self.own_init.add(node.name.value)
        for node in index.nodes(cst.FunctionDef):
            self.local_defs.add(node.name.value)

    def _value_aliases(self, index: TreeIndex) -> None:
        """A module-level name assigned an imported object once (`DP = nn.DataParallel`, `DL =
        torch.utils.data.DataLoader`) stands for that object where rules read it, as an import
        alias does; a name bound anywhere else too (or imported) is left alone. Every file builds
        Names: the candidates come from the module's top-level lines first, and only their names
        are counted through the file."""
        candidates: dict[str, str] = {}
        for stmt in index.module.body:
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
                    and isinstance(small.value, (cst.Name, cst.Attribute))):
                continue
            name = small.targets[0].target.value
            head, _, rest = (dotted(small.value) or "").partition(".")
            target = self.aliases.get(head)
            if target is None or name in self.aliases:
                continue
            full = f"{target}.{rest}" if rest else target
            if not full.startswith(("torch.cuda.amp", "torch.cpu.amp")):  # TL401 rewrites those bindings itself
                candidates[name] = full
        if not candidates:
            return
        counts: dict[str, int] = {}
        for node in index.nodes(cst.Name):
            if node.value in candidates and isinstance(index.parent.get(node), _BINDING_PARENTS):
                counts[node.value] = counts.get(node.value, 0) + 1
        self.aliases.update({name: full for name, full in candidates.items() if counts.get(name) == 1})

    def qualified(self, expr: cst.BaseExpression) -> str | None:
        """The canonical qualified name of an imported object or builtin, else None."""
        text = dotted(expr)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        target = self.aliases.get(head)
        if target is None:
            if head in _BUILTINS and head not in self.local_defs and not rest:
                return f"builtins.{head}"
            return None
        full = f"{target}.{rest}" if rest else target
        return CANONICAL.get(full, full)

    def qualified_if_named(self, expr: cst.BaseExpression, *endings: str) -> str | None:
        """expr's qualified name when its last name, or what that name's import alias stands for,
        ends with one of endings (`Trainer`); None otherwise. The name is tested first: qualifying
        every call of a file costs more, and most calls are not the one asked about."""
        last = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
        if not self.aliases.get(last, last).endswith(endings):
            return None
        return self.qualified(expr)

    def is_a(self, expr: cst.BaseExpression, *qualnames: str) -> bool:
        """True when expr names one of qualnames, or a class of this module derived from one."""
        qn = self.qualified(expr)
        if qn is not None:
            return qn in qualnames
        return isinstance(expr, cst.Name) and self.inherits(expr.value, lambda base: base in qualnames)

    def constructs(self, expr: cst.BaseExpression, *qualnames: str) -> bool:
        """Calling expr runs one of qualnames' constructors with the call's own arguments.

        True for the class itself and for subclasses of this module that inherit its __init__;
        a subclass with its own __init__ has its own signature (a test's `FakeLoader()` that
        passes fixed arguments to `super().__init__`), so its calls say nothing about the base
        class's arguments.
        """
        qn = self.qualified(expr)
        if qn is not None:
            return qn in qualnames
        name = expr.value if isinstance(expr, cst.Name) else None
        seen: set[str] = set()
        while name is not None and name in self.classes and name not in seen:
            seen.add(name)
            if name in self.own_init:
                return False
            bases = self.classes[name]
            if any(self.qualified(b) in qualnames for b in bases):
                return True
            # Follow the first local base (single inheritance is what loaders and datasets use).
            name = next((b.value for b in bases if isinstance(b, cst.Name) and b.value in self.classes), None)
        return False

    def inherits(self, class_name: str, wanted) -> bool:
        """Whether the module's class `class_name` derives, through its classes in this module,
        from a class whose qualified name `wanted(qualified_name)` accepts."""
        pending, seen = [class_name], set()
        while pending:
            name = pending.pop()
            if name in seen or name not in self.classes:
                continue
            seen.add(name)
            for base in self.classes[name]:
                qn = self.qualified(base)
                if qn is not None and wanted(qn):
                    return True
                if isinstance(base, cst.Name):
                    pending.append(base.value)
        return False

    def module_alias(self, module: str) -> str | None:
        """A name an import at module level binds to exactly `module` (`torch` for `import torch`,
        `th` for `import torch as th`): the name a fix can write anywhere in the module. An import
        inside a function or class body does not count (module_aliases)."""
        if self.module_aliases.get(module.split(".", 1)[0]) == module and "." not in module:
            return module
        for local, target in self.module_aliases.items():
            if target == module:
                return local
        return None

    def imports_from(self, prefix: str) -> bool:
        return any(v == prefix or v.startswith(prefix + ".") for v in self.aliases.values())
