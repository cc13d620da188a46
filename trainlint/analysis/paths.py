"""What a file path is built from, to tell whether two expressions may name the same file.

`os.path.join(out, "last.pt")`, `f"{out}/last.pt"`, `str(out) + "/last.pt"` and
`Path(out) / "last.pt"` write one file four ways, and none of them is the text of another: what
they share is their parts, the variable `out` and the name `last.pt`. A fix that must not let a
later call touch a file still being written (TL501's background save) compares those parts, so
that any later argument built from every part of the saved path counts as that path (and one built
from a different file name in the same folder does not). A variable is followed to the values
assigned to it, one step, through the shared binding table (variables.Bindings).
"""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.names import dotted
from trainlint.analysis.variables import is_variable

# Calls that only join or convert paths, and methods of paths and strings that build one path
# from another: their parts are those of their arguments (and object).
_JOINS = frozenset({
    "os.path.join", "posixpath.join", "ntpath.join", "os.fspath", "builtins.str", "pathlib.Path",
    "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath", "os.path.abspath", "os.path.realpath",
    "os.path.normpath", "os.path.expanduser",
})
_PATH_METHODS = frozenset({
    "joinpath", "with_name", "with_stem", "with_suffix", "resolve", "absolute", "expanduser", "as_posix",
    "__fspath__", "format", "strip", "rstrip", "lstrip",
})

Part = tuple[str, str]  # ("name", dotted name), ("text", a component of a string), ("expr", code of anything else)


def path_parts(ctx, expr: cst.BaseExpression) -> frozenset[Part]:
    """The variables (dotted, as written) and the path components of the strings expr is built
    from, through joins, string formatting and concatenation, `/` and `%`; any other call or
    expression is a part of its own (its code), and its inner parts count too."""
    out: set[Part] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        name = dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
        if name is not None:
            out.add(("name", name))
        elif isinstance(node, cst.SimpleString):
            out |= _components(node.evaluated_value)
        elif isinstance(node, cst.FormattedString):
            for piece in node.parts:
                if isinstance(piece, cst.FormattedStringText):
                    out |= _components(piece.value)
                else:
                    stack.append(piece.expression)
        elif isinstance(node, (cst.ConcatenatedString, cst.BinaryOperation)):
            stack += [node.left, node.right]
        elif isinstance(node, cst.Call):
            stack += [arg.value for arg in node.args]
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _PATH_METHODS \
                    and ctx.names.qualified(func) is None:
                stack.append(func.value)  # `out.joinpath("x")`, `"{}/x".format(out)`
            elif ctx.names.qualified(func) not in _JOINS:
                out.add(("expr", ctx.code(node)))  # `ckpt_path(step)`: the call itself is the part
        else:
            out.add(("expr", ctx.code(node)))
            stack += _subexpressions(node)
    return frozenset(out)


def path_forms(ctx, expr: cst.BaseExpression) -> list[frozenset[Part]]:
    """The ways the path expr holds may be written: its own parts, and for a variable, the parts
    of each value assigned to it (`ckpt = os.path.join(out, "last.pt")`)."""
    forms = [path_parts(ctx, expr)]
    if isinstance(expr, cst.Name):
        forms += [path_parts(ctx, value) for value in _assigned(ctx, expr)]
    return [form for form in forms if form]


def may_name(ctx, forms: list[frozenset[Part]], expr: cst.BaseExpression) -> bool:
    """expr may name the path of forms (path_forms): it is built from every part of one of them,
    its variables taken with the values assigned to them (`shutil.copyfile(os.path.join(out,
    "last.pt"), best)`, `upload(str(path))`, `os.replace(tmp, path)` with `tmp = path + ".tmp"`)."""
    parts = set(path_parts(ctx, expr))
    for node in _walk_expressions(expr):
        if isinstance(node, cst.Name):
            for value in _assigned(ctx, node):
                parts |= path_parts(ctx, value)
    return any(form <= parts for form in forms)


def path_variables(ctx, expr: cst.BaseExpression) -> set[str]:
    """The variables expr reads, and those read by the values assigned to them (one step): what
    the path it holds is built from (`out` for `ckpt` after `ckpt = os.path.join(out, "x.pt")`)."""
    names = set()
    for node in _walk_expressions(expr):
        if isinstance(node, cst.Name):
            names.add(node.value)
            for value in _assigned(ctx, node):
                names |= {n.value for n in _walk_expressions(value) if isinstance(n, cst.Name)}
    return names


def _assigned(ctx, name: cst.Name) -> list[cst.BaseExpression]:
    if not is_variable(ctx.index, name) or name not in ctx.index.parent:
        return []  # a node a fix built, or not a variable
    bindings = ctx.bindings.seen_from(name) or []
    return [value for kind, value in bindings if kind == "assign" and value is not None]


def _components(text: str | bytes) -> set[Part]:
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    return {("text", piece) for piece in text.replace("\\", "/").split("/") if piece not in ("", ".")}


def _subexpressions(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The expressions directly inside node (through arguments, elements and subscripts)."""
    out = []
    for child in node.children:
        if isinstance(child, cst.Arg):
            out.append(child.value)
        elif isinstance(child, cst.BaseExpression):
            if not (isinstance(node, cst.Attribute) and child is node.attr):
                out.append(child)
        else:
            out += _subexpressions(child)
    return out


def _walk_expressions(expr: cst.BaseExpression):
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack += _subexpressions(node)
