"""Where a setting written as a name gets its value: `DataLoader(num_workers=NUM_WORKERS)` loads
in the training process when the module says `NUM_WORKERS = 0`, as surely as with a literal 0.

A setting read from elsewhere in the file has a Source: a command-line option's default
(`args.workers`, see command_line.py), a variable assigned once (`NUM_WORKERS = 0`, `nw = 0` in the
function), or the default of a configuration class's field (`cfg.num_workers` where the module's
`Config` declares `num_workers: int = 0`). Rules judge the value a plain run gets, name the source in
their message, and fix the source rather than the call, so the next reader still finds one place
that sets it.
"""

from __future__ import annotations

from functools import cached_property
from typing import NamedTuple

import libcst as cst

from trainlint.analysis.command_line import option_default
from trainlint.analysis.devices import setting_literal
from trainlint.analysis.imports import insert_stdlib_import
from trainlint.analysis.literals import UNKNOWN
from trainlint.analysis.tree import parameter_annotation
from trainlint.analysis.variables import is_variable, owner

# Calls that make a configuration object with some fields changed.
_REPLACERS = frozenset({"replace", "dataclasses.replace", "attrs.evolve", "attr.evolve", "evolve"})


class Source(NamedTuple):
    kind: str  # "option", "variable" or "field"
    name: str  # how a message names it: `--workers`, `NUM_WORKERS`, `Config.num_workers`
    value: object  # the value a plain run gets, a literal (False for a `store_true` switch)
    node: cst.BaseExpression | None  # the literal a fix replaces; None when there is none to change
    switch: cst.Call | None = None  # an option's `add_argument(..., action="store_true")`, which has none

    def condition(self) -> str:
        """Where the value comes from, for a message that says what goes wrong with it:
        `unless `--workers` is given (it defaults to 0)`, `(`NUM_WORKERS` is 0)`."""
        if self.kind == "variable":
            return f"(`{self.name}` is {self.value!r})"
        if isinstance(self.value, bool):
            default = f"is {'on' if self.value else 'off'} by default"
        else:
            default = f"defaults to {self.value!r}"
        if self.kind == "option":
            return f"unless `{self.name}` is given (it {default})"
        return f"unless configured otherwise (`{self.name}` {default})"

    def when_set(self) -> str:
        """The runs that do not get the plain run's value: `when `--workers` is given; it defaults
        to 0`, `when configured; `Config.num_workers` defaults to 0`."""
        if self.kind == "option":
            return f"when `{self.name}` is given; it defaults to {self.value!r}"
        return f"when configured; `{self.name}` defaults to {self.value!r}"

    def advice(self, value: str) -> str:
        """What to change, for a message: `default it to 8`, `set NUM_WORKERS = 8`."""
        if self.kind == "variable":
            return f"set `{self.name} = {value}`"
        return f"default `{self.name}` to `{value}`"

    @property
    def is_certain(self) -> bool:
        """Every run gets this value (a variable's); an option's or field's is only a default."""
        return self.kind == "variable"

    def fix_title(self, value: str) -> str:
        advice = self.advice(value)
        return advice[0].upper() + advice[1:]

    def explain(self, problem: str, value: str, why: str = "") -> str:
        """A message: the problem, where the value comes from, and what to change there
        (`Batches go ... unless `--pin-memory` is given (it is off by default); default
        `--pin-memory` to `True` for faster copies`)."""
        return f"{problem} {self.condition()}; {self.advice(value)}{f' {why}' if why else ''}"

    def fix(self, rule, value: str, applicability, *extra):
        """The fix that gives a plain run value where the setting is written: its literal
        replaced, or a `store_true` switch made one that is on by default
        (`action=argparse.BooleanOptionalAction, default=True`: `--flag` still works, `--no-flag`
        turns it off); None when there is no literal to change."""
        if self.switch is not None and value == "True":
            return self._switch_on(rule, applicability, *extra)
        if self.node is None:
            return None
        if isinstance(self.node, cst.Float) and value.isdigit():
            value += ".0"  # a float written stays one (`default=65536.0` of a `type=float` option)
        return rule.fix(applicability, self.fix_title(value), (self.node, cst.parse_expression(value)), *extra)

    def _switch_on(self, rule, applicability, *extra):
        ctx = rule.ctx
        argparse = ctx.names.module_alias("argparse")
        imports = [] if argparse else [insert_stdlib_import(ctx, "argparse")]
        action = f"{argparse or 'argparse'}.BooleanOptionalAction"
        switch = ctx.with_keyword(ctx.with_keyword(self.switch, "action", action), "default", "True")
        return rule.fix(applicability, f"Default `{self.name}` to True (`action={action}`, `--no-` turns it off)",
                        ctx.call_replacement(self.switch, switch), *imports, *extra)


class Sources:
    """The sources of the settings of one file (FileContext.sources)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.index = ctx.index
        self._sources: dict = {}

    def value(self, expr: cst.BaseExpression | None, *, certain: bool = False):
        """The value a plain run gives expr: its literal, else its source's, else UNKNOWN. With
        certain, only a value no configuration can change: a literal or a variable's (a default
        is what the run gets unless told otherwise; a fix that relies on it would break then)."""
        value = setting_literal(self.ctx, expr)
        if value is UNKNOWN and expr is not None:
            source = self.source(expr)
            if source is not None and (source.is_certain or not certain):
                return source.value
        return value

    def of_arg(self, arg: cst.Arg | None) -> Source | None:
        """Where an argument written as a name (`pin_memory=args.pin_memory`) gets its value; None
        for a literal, a `*`/`**` argument, or one whose value the file does not settle."""
        if arg is None or arg.star or self.ctx.literal(arg.value) is not UNKNOWN:
            return None
        return self.source(arg.value)

    def source(self, expr: cst.BaseExpression) -> Source | None:
        """Where expr, a name or attribute, gets a literal value from, when the file says so; once
        per node (each loader rule asks, and an option's default is found by scanning the file)."""
        if expr not in self._sources:
            self._sources[expr] = self._find(expr, 0)
        return self._sources[expr]

    def _find(self, expr: cst.BaseExpression, depth: int) -> Source | None:
        if isinstance(expr, cst.Name) and is_variable(self.index, expr):
            return self._variable(expr, depth)
        if isinstance(expr, cst.Attribute):
            option = option_default(self.ctx, expr)
            if option is not None:
                return Source("option", option.flag, option.value,
                              option.arg.value if option.arg is not None else None, option.switch)
            return self._field(expr)
        return None

    # -- variables ----------------------------------------------------------------------------

    def _variable(self, name: cst.Name, depth: int) -> Source | None:
        """A variable assigned exactly once, in the scope Python reads it from (the function's own,
        else an enclosing function's, else the module's), and never declared `global`/`nonlocal`."""
        scopes = self.ctx.bindings.of(name.value)
        if scopes is None:
            return None
        for scope in self._scopes_seen_from(name):
            bindings = scopes.get(scope)
            if not bindings:
                continue
            if len(bindings) != 1 or bindings[0][0] != "assign" or bindings[0][1] is None:
                return None
            value_node = bindings[0][1]
            value = setting_literal(self.ctx, value_node)
            if value is UNKNOWN:
                # `workers = NUM_WORKERS`: one more step, to the module's constant.
                inner = self._find(value_node, depth + 1) if depth < 2 else None
                return inner if inner is not None and inner.kind == "variable" else None
            return Source("variable", name.value, value, value_node)
        return None

    def _scopes_seen_from(self, name: cst.Name):
        """The scopes a read of name looks in, innermost first (class bodies only for their own code)."""
        scope = owner(self.index, name)
        yield scope
        while scope is not None:
            scope = owner(self.index, scope)
            if not isinstance(scope, cst.ClassDef):
                yield scope

    # -- configuration classes ----------------------------------------------------------------

    def _field(self, expr: cst.Attribute) -> Source | None:
        """`cfg.num_workers` whose object is an instance (or the class) of the module's one class
        declaring the field with a literal default, which nothing in the file sets otherwise: no
        assignment to any `.num_workers`, no construction or `replace(...)` naming it, no
        construction that could pass it (positional or `**` arguments)."""
        attr = expr.attr.value
        declared = self._fields.get(attr)
        if not declared or len(declared) != 1 or attr in self._assigned_attributes:
            return None  # declared in several classes (a subclass's own default?): which one is unknown
        cls, node = declared[0]
        value = setting_literal(self.ctx, node)
        if value is UNKNOWN or not self._is_instance(expr.value, cls) or \
                self._overridden(self._family(cls), attr):
            return None
        return Source("field", f"{cls.name.value}.{attr}", value, node)

    @cached_property
    def _fields(self) -> dict:
        """field name -> [(class, default expression)] for the class-level `name: T = value` and
        `name = value` statements of the module's classes (`field(default=value)` read through)."""
        table: dict = {}
        for cls in self.index.nodes(cst.ClassDef):
            for stmt in cls.body.body:
                if not isinstance(stmt, cst.SimpleStatementLine):
                    continue
                for small in stmt.body:
                    targets = [small.target] if isinstance(small, cst.AnnAssign) else \
                        [t.target for t in small.targets] if isinstance(small, cst.Assign) else []
                    value = getattr(small, "value", None)
                    if value is None:
                        continue
                    if isinstance(value, cst.Call) and self.ctx.dotted(value.func) in ("field", "dataclasses.field"):
                        default = self.ctx.keyword(value, "default")
                        value = default.value if default is not None else None
                    for target in targets:
                        if isinstance(target, cst.Name) and value is not None:
                            table.setdefault(target.value, []).append((cls, value))
        return table

    @cached_property
    def _assigned_attributes(self) -> frozenset[str]:
        """Attribute names the file assigns (`cfg.num_workers = 4`, `self.x += 1`) or sets by
        `setattr(obj, "x", ...)` / `setattr(obj, name, ...)` (then every name: None is added)."""
        found = set()
        for node in self.index.nodes(cst.Attribute):
            parent = self.index.parent.get(node)
            if isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)) and parent.target is node:
                found.add(node.attr.value)
        for call in self.index.nodes(cst.Call):
            if self.ctx.dotted(call.func) == "setattr" and len(call.args) >= 2:
                name = self.ctx.literal(call.args[1].value)
                found.add(name if isinstance(name, str) else None)
        if None in found:
            return frozenset(self._fields)  # a computed setattr may set any field
        return frozenset(found)

    def _overridden(self, classes: set[str], attr: str) -> bool:
        """A construction of one of the classes, or a `replace(...)`, may set attr."""
        for call in self.index.nodes(cst.Call):
            func = self.ctx.dotted(call.func)
            if func in classes:
                if any(arg.keyword is None or arg.keyword.value == attr for arg in call.args):
                    return True  # positional, `**options` or the field itself
            elif func in _REPLACERS and self.ctx.keyword(call, attr) is not None:
                return True
        return False

    def _family(self, cls: cst.ClassDef) -> set[str]:
        """The names of cls and of the file's classes that derive from it (Loops.subclasses): a
        subclass's construction or instance carries cls's fields too."""
        return {cls.name.value, *(sub.name.value for sub in self.ctx.loops.subclasses(cls))}

    def _is_instance(self, obj: cst.BaseExpression, cls: cst.ClassDef) -> bool:
        """obj is the class itself, `self` in its methods (or a subclass's), or a name or attribute
        annotated with it, or every assignment of which builds it or hands the class to a parser
        (`tyro.cli(Config)`, `parse(config_class=Config)`)."""
        classes = self._family(cls)
        if isinstance(obj, cst.Name) and obj.value in classes:
            return True
        if isinstance(obj, cst.Name) and obj.value in ("self", "cls"):
            own = self.index.enclosing_class(obj)
            return own is not None and own.name.value in classes
        if self._annotated(obj, classes):
            return True
        if self._parsed_into(obj, classes):
            return True
        values = self.ctx.assigned_values(obj, anywhere=isinstance(obj, cst.Attribute))
        return bool(values) and all(self._makes(value, classes) for value in values)

    def _parsed_into(self, obj: cst.BaseExpression, classes: set[str]) -> bool:
        """obj is unpacked, in its function, from what a parser built from dataclasses returns, at
        the position of one of the classes: `(cfg,) = HfArgumentParser(DataArgs)
        .parse_args_into_dataclasses()`, `model_args, data_args = HfArgumentParser((ModelArgs,
        DataArgs)).parse_args_into_dataclasses()`."""
        if not isinstance(obj, cst.Name):
            return False
        fn = self.index.enclosing_function(obj)
        for assign in self.index.nodes(cst.Assign):
            if self.index.enclosing_function(assign) is not fn or len(assign.targets) != 1:
                continue
            target, value = assign.targets[0].target, assign.value
            if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, cst.Call)
                    and isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Call)
                    and value.func.value.args and value.func.attr.value.startswith("parse")):
                continue
            names = [e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements]
            if obj.value not in names:
                continue
            given = value.func.value.args[0].value
            types = [e.value for e in given.elements] if isinstance(given, (cst.Tuple, cst.List)) else [given]
            at = names.index(obj.value)
            if at < len(types) and self.ctx.dotted(types[at]) in classes:
                return True
        return False

    def _annotated(self, obj: cst.BaseExpression, classes: set[str]) -> bool:
        """obj is a parameter of its function, or a variable, annotated with one of the classes."""
        if not isinstance(obj, cst.Name):
            return False
        fn = self.index.enclosing_function(obj)
        annotation = parameter_annotation(fn, obj.value) if fn is not None else None
        return annotation is not None and self.ctx.dotted(annotation) in classes

    def _makes(self, value: cst.BaseExpression, classes: set[str]) -> bool:
        """value builds an instance of the classes: `Config(...)`, or a call handed the class."""
        if not isinstance(value, cst.Call):
            return False
        if self.ctx.dotted(value.func) in classes:
            return True
        receiver = value.func.value if isinstance(value.func, cst.Attribute) else None
        handed = [arg.value for arg in value.args]
        if isinstance(receiver, cst.Call):  # `HfArgumentParser(Config).parse_args_into_dataclasses()`
            handed += [arg.value for arg in receiver.args]
        return any(self.ctx.dotted(v) in classes for v in handed)
