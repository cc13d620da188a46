"""The one traversal of a parsed module.

libcst's visitor machinery rebuilds every node as it walks; this walk reads the dataclass
fields directly (about 10x faster) and skips whitespace and punctuation, which no rule reads.
It records each node's parent and an index of nodes by type in document order, so rules
iterate only over the node types they ask for.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import libcst as cst

# Fields that only hold formatting; rules never look inside them.
_SKIP_FIELDS = frozenset(
    {
        "lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators",
        "header", "footer", "trailing_whitespace", "first_line", "empty_lines", "last_line",
        "dot", "colon", "equal", "whitespace", "asynchronous", "newline", "indent",
    }
)

_FIELDS: dict[type, tuple[str, ...]] = {}


def walk(root: cst.CSTNode, skip: tuple[type, ...] = ()):
    """Nodes under root (root included), in document order, skipping formatting fields; needs no
    index, so it also walks nodes a fix builds. Nodes of the `skip` types under root are left
    out with all they hold (a def's body, for a question about module-level code)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        children = []
        for name in _child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                children.append(value)
            elif type(value) in (list, tuple):
                children.extend(v for v in value if isinstance(v, cst.CSTNode))
        if skip:
            children = [c for c in children if not isinstance(c, skip)]
        children.reverse()
        stack.extend(children)


def last_statement(block: cst.BaseSuite) -> cst.CSTNode | None:
    """The last statement a block runs: the last small statement of its last line (`continue` of
    `x += 1; continue`), or its last compound statement; None for an empty block."""
    body = block.body
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    return last


# Methods that add elements to a list: `x.append(v)`, `x.extend(vs)`, `x.insert(i, v)`.
LIST_ADDS = frozenset({"append", "extend", "insert"})


def conditional_values(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The values a conditional expression may give, each side in turn (nested ones too); else
    [value]: `A() if c else B()` gives A() and B()."""
    if isinstance(value, cst.IfExp):
        return [*conditional_values(value.body), *conditional_values(value.orelse)]
    return [value]


def is_none(value: cst.BaseExpression | None) -> bool:
    """value is the literal `None`."""
    return isinstance(value, cst.Name) and value.value == "None"


def named_parameters(fn: cst.FunctionDef | cst.Lambda) -> tuple[cst.Param, ...]:
    """The parameters of fn a caller hands by position or name, in order: positional-only,
    positional, keyword-only; not `*args`/`**kwargs`."""
    params = fn.params
    return (*params.posonly_params, *params.params, *params.kwonly_params)


def parameter_names(fn: cst.FunctionDef | cst.Lambda) -> set[str]:
    """Every name fn's signature binds: its named parameters, `*args` and `**kwargs`."""
    params = fn.params
    stars = [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    return {p.name.value for p in (*named_parameters(fn), *stars)}


def parameter(fn: cst.FunctionDef | cst.Lambda, name: str) -> cst.Param | None:
    """fn's named parameter called name (named_parameters), if it has one."""
    return next((p for p in named_parameters(fn) if p.name.value == name), None)


def parameter_annotation(fn: cst.FunctionDef | cst.Lambda, name: str) -> cst.BaseExpression | None:
    """The annotation of fn's named parameter called name (`DictConfig` of `cfg: DictConfig`);
    None when it has none, or fn has no such parameter."""
    param = parameter(fn, name)
    return param.annotation.annotation if param is not None and param.annotation is not None else None


def binding_targets(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The target expressions `node` binds: `a, b = ...`, `a += ...`, `a: T = ...`, `(a := ...)`,
    `for a in ...` (statements and comprehensions), `... as a`; [] for any other node. Walk a
    target to reach its names (a tuple target binds each element)."""
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    if isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.CompFor)):
        return [node.target]
    if isinstance(node, cst.AsName):
        return [node.name]
    return []


def assignments(index: "TreeIndex"):
    """(target, value, statement) for each target a value is assigned to: every target of `a = b =
    value`, then each annotated assignment with a value (`self.device: torch.device = device`;
    `x: int` alone assigns nothing). Targets are whole: assigned_pairs pairs a tuple's elements.
    Followers of assignments read both kinds here, so an annotation does not hide a value."""
    for node in index.nodes(cst.Assign):
        for target in node.targets:
            yield target.target, node.value, node
    for node in index.nodes(cst.AnnAssign):
        if node.value is not None:
            yield node.target, node.value, node


def assigned_pairs(target: cst.BaseExpression, value: cst.BaseExpression | None):
    """(target, value) pairs an assignment binds one by one: a tuple or list target with a display
    of as many elements on the right (`self.a, self.b = A(), B()`) binds each element its own
    value, nested displays too; anything else pairs the whole target with the whole value (None
    where the value is not one expression: `for`, `+=`). A star on either side keeps the pair whole."""
    displays = (cst.Tuple, cst.List)
    if isinstance(target, displays) and isinstance(value, displays) and len(target.elements) == len(value.elements) \
            and all(isinstance(e, cst.Element) for e in (*target.elements, *value.elements)):
        for t, v in zip(target.elements, value.elements):
            yield from assigned_pairs(t.value, v.value)
    else:
        yield target, value


def target_parts(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The expressions a target assigns: itself, or each element of a tuple or list target
    (nested, starred ones included): `self.a` and `self.b` of `self.a, *self.b = ...`."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [part for e in target.elements for part in target_parts(e.value)]
    return [target]


def _child_fields(node_type: type) -> tuple[str, ...]:
    fields = _FIELDS.get(node_type)
    if fields is None:
        fields = tuple(
            f.name
            for f in dataclasses.fields(node_type)
            if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace")
        )
        _FIELDS[node_type] = fields
    return fields


class TreeIndex:
    __slots__ = ("module", "parent", "by_type", "_own_exits", "_memo")

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.parent: dict[cst.CSTNode, cst.CSTNode] = {}
        self.by_type: dict[type, list[cst.CSTNode]] = defaultdict(list)
        parent = self.parent
        by_type = self.by_type
        CSTNode = cst.CSTNode
        stack: list[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            by_type[type(node)].append(node)
            children = []
            for name in _child_fields(type(node)):
                value = getattr(node, name)
                if isinstance(value, CSTNode):
                    children.append(value)
                elif type(value) in (list, tuple):
                    for item in value:
                        if isinstance(item, CSTNode):
                            children.append(item)
            for child in children:
                parent[child] = node
            children.reverse()
            stack.extend(children)
        self._own_exits: dict | None = None
        self._memo: dict = {}

    def memo(self, reading, node: cst.CSTNode):
        """reading(node), worked out once per node of this tree, for a pure reading of a subtree
        that analyses ask of the same statements again and again: following a name back to its
        assignment asks what each earlier statement binds, for every use below it, which is
        quadratic in a long module of top-level statements (an 800-line config took seconds)."""
        key = (reading, node)
        memo = self._memo
        if key not in memo:
            memo[key] = reading(node)
        return memo[key]

    def nodes(self, node_type: type) -> list[cst.CSTNode]:
        return self.by_type.get(node_type, [])

    def ancestors(self, node: cst.CSTNode):
        parent = self.parent
        node = parent.get(node)
        while node is not None:
            yield node
            node = parent.get(node)

    def enclosing(self, node: cst.CSTNode, types) -> cst.CSTNode | None:
        for anc in self.ancestors(node):
            if isinstance(anc, types):
                return anc
        return None

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        for anc in self.ancestors(node):
            if isinstance(anc, cst.FunctionDef):
                return anc
            if isinstance(anc, cst.Lambda):
                return None
        return None

    def returns(self, fn: cst.FunctionDef) -> list[cst.Return]:
        """fn's own `return` statements, in document order: not those of the functions and classes
        defined inside it. A bare `return` is in the list with its value None."""
        return self._exits().get(fn, ((), False))[0]

    def is_generator(self, fn: cst.FunctionDef) -> bool:
        """fn's own body yields (`yield`, `yield from`): a call gives a generator, whatever its
        `return`s say."""
        return self._exits().get(fn, ((), False))[1]

    def _exits(self) -> dict:
        """{function: (its own returns, whether it yields)}, built once for every function the
        first time any is asked (the analyses that ask, ask of many)."""
        if self._own_exits is None:
            table: dict = {}
            for node in self.nodes(cst.Return):
                fn = self.enclosing_function(node)
                if fn is not None:
                    table.setdefault(fn, ([], False))[0].append(node)
            for node in self.nodes(cst.Yield):
                fn = self.enclosing_function(node)
                if fn is not None:
                    table[fn] = (table.get(fn, ([], False))[0], True)
            self._own_exits = table
        return self._own_exits

    def enclosing_class(self, node: cst.CSTNode) -> cst.ClassDef | None:
        return self.enclosing(node, cst.ClassDef)

    def preceding(self, node: cst.CSTNode):
        """Walking up from node, what ran before it: (ancestor, earlier) for each ancestor, where
        `earlier` lists, nearest first, the statements of that block (module or indented body)
        before the one that holds node, and is empty for any other ancestor. A line of small
        statements (`a = f(b); c = a.to(d)`, also the body of `if x: a = 1; b = a`) counts as a block
        too: its earlier small statements ran first, and are listed on their own (they were once
        not listed at all, so an assignment earlier on the same line was missed). Callers that
        follow a value back to its assignment read the statements and decide at each ancestor (a
        loop, a function) whether to go on."""
        child = node
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                position = next(i for i, small in enumerate(anc.body) if small is child)
                yield anc, anc.body[position - 1::-1] if position else ()
            elif isinstance(anc, (cst.IndentedBlock, cst.Module)):
                position = next(i for i, stmt in enumerate(anc.body) if stmt is child)
                yield anc, anc.body[position - 1::-1] if position else ()
            else:
                yield anc, ()
            child = anc

    def contains(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        if outer is inner:
            return True
        return any(anc is outer for anc in self.ancestors(inner))

    def walk(self, root: cst.CSTNode):
        """Nodes under root (root included), in document order."""
        return walk(root)
