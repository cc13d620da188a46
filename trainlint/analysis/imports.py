"""Edits fixes need at module level: an import, or a helper definition placed after the imports."""

from __future__ import annotations

import re
import sys

import libcst as cst

from trainlint.analysis.names import dotted
from trainlint.analysis.tree import walk
from trainlint.analysis.variables import is_variable


def is_docstring(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and bool(stmt.body) and isinstance(stmt.body[0], cst.Expr) \
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


def after_imports(ctx, code: str, blank_lines_after: int = 0):
    """A replacement that inserts code (complete lines) after the module's leading imports.

    The anchor is the last import of the first run of top-level imports (or the docstring), so
    the inserted code sees every import it may use and precedes the code that uses it. Blank
    lines are added after code until the next statement has `blank_lines_after` before it.
    """
    code = in_file_indent(ctx, code)
    body = list(ctx.module.body)
    anchor = ctx.last_import()
    if anchor is None and body and is_docstring(body[0]):
        anchor = body[0]
    following = body[body.index(anchor) + 1] if anchor is not None and body.index(anchor) + 1 < len(body) \
        else (body[0] if anchor is None and body else None)
    if following is not None:
        code += ctx.module.default_newline * max(0, blank_lines_after - blank_lines_above(following))
    if anchor is None:
        if following is None:
            return None
        return (following, code + ctx.code(following))
    return (anchor, ctx.code(anchor) + code)


# Calls that end the script: a handler or branch that makes one leaves nothing after it to run.
_EXITS = {"sys.exit", "os._exit", "builtins.exit", "builtins.quit"}


def module_binding(ctx, name: str) -> tuple[cst.CSTNode | None, str | None]:
    """The first module-level statement after which an import has bound `name` on every path
    that goes on (a plain `import torch`; a `try:` importing it in its body or `else:` whose
    handlers exit, raise or import it too, or whose `finally:` imports it; an `if` importing it in
    every branch; a `with` block importing it; a `match` importing it in every case, one of them
    catching everything), and None; or None and why there is none.

    Code a fix writes at module level that uses `name` goes after this statement as well as after
    the leading imports: after `import sys` alone it ran before `try: import torch / except
    ImportError: sys.exit(...)` (NameError). A name imported only on some paths (an `if` without
    an `else`, a handler binding `torch = None`) gets no such code at all."""
    binds = lambda node: name in _import_bound(node)  # noqa: E731
    partial = None
    for stmt in ctx.module.body:
        outcome = _outcome(ctx, stmt, binds)
        if outcome == "bound":
            return stmt, None
        if partial is None and outcome is None and _imports_somewhere(stmt, binds):
            kind = "an `if`" if isinstance(stmt, cst.If) else "a `try:` whose handler neither exits nor imports it" \
                if isinstance(stmt, cst.Try) else "a `match` with no case that catches everything" \
                if isinstance(stmt, cst.Match) else "a `with` that suppresses errors" \
                if isinstance(stmt, cst.With) else "a block"
            partial = f"`{name}` is imported only on some paths (under {kind})"
    return None, partial or f"no module-level import binds `{name}`"


def guarded_import(ctx, package: str) -> tuple[cst.CSTNode, cst.CSTNode | None] | None:
    """Where the module first imports from `package` when that is inside a module-level compound
    statement (`try: from torch import nn / except ImportError: sys.exit(...)`) every path through
    which that goes on has imported from it: (that statement, the line of a `try:`'s own body that
    imports from it, or None where the import is deeper or elsewhere); None when the first such
    import is a plain line, or there is none, or it may not have run.

    An `import torch` a fix adds goes just above that line, under the handler that exits (else
    after the statement), and code reading torch at module level after the statement: among the
    leading imports above it, a missing torch raised ImportError before the script's own message."""
    def binds(node) -> bool:
        modules = [_module_name(a.name) for a in node.names] if isinstance(node, cst.Import) \
            else [] if node.relative or node.module is None else [_module_name(node.module)]
        return any(m == package or m.startswith(package + ".") for m in modules)

    for stmt in ctx.module.body:
        if not _imports_somewhere(stmt, binds):
            continue
        if isinstance(stmt, cst.SimpleStatementLine) or _outcome(ctx, stmt, binds) != "bound":
            return None
        inner = None
        if isinstance(stmt, cst.Try) and isinstance(stmt.body, cst.IndentedBlock):
            inner = next((line for line in stmt.body.body if isinstance(line, cst.SimpleStatementLine)
                          and any(isinstance(small, (cst.Import, cst.ImportFrom)) and binds(small)
                                  for small in line.body)), None)
        return stmt, inner
    return None


def _module_name(expr) -> str:
    return dotted(expr) or ""


def _outcome(ctx, stmt: cst.CSTNode, binds) -> str | None:
    """"bound" when every path through the module-level stmt that goes on has run an import for
    which binds() holds, "exits" when none goes on (a raise, sys.exit()), else None."""
    if isinstance(stmt, cst.SimpleStatementLine):
        return _small_outcome(ctx, stmt.body, binds)
    if isinstance(stmt, cst.Try):
        # A `finally:` that binds or exits decides every path; else the body runs on into its
        # `else:` (a binding there is seen after the try), and each handler is a path of its own.
        final = _block_outcome(ctx, stmt.finalbody.body, binds) if stmt.finalbody is not None else None
        if final is not None:
            return final
        body = _block_outcome(ctx, stmt.body, binds)
        if body is None and stmt.orelse is not None:
            body = _block_outcome(ctx, stmt.orelse.body, binds)
        paths = [body] + [_block_outcome(ctx, h.body, binds) for h in stmt.handlers]
    elif isinstance(stmt, cst.If):
        orelse = stmt.orelse
        rest = None if orelse is None else _outcome(ctx, orelse, binds) if isinstance(orelse, cst.If) \
            else _block_outcome(ctx, orelse.body, binds)
        paths = [_block_outcome(ctx, stmt.body, binds), rest]
    elif isinstance(stmt, cst.With):
        # contextlib.suppress(ImportError) goes on after a failed import: nothing is bound.
        if any(isinstance(item.item, cst.Call) and ctx.names.qualified(item.item.func) == "contextlib.suppress"
               for item in stmt.items):
            return None
        paths = [_block_outcome(ctx, stmt.body, binds)]
    elif isinstance(stmt, cst.Match):
        # A subject no case matches goes on past the match: only a last case that catches
        # everything (`case _:`, `case name:`, no guard) leaves no such path.
        last = stmt.cases[-1].pattern if stmt.cases else None
        if not (isinstance(last, cst.MatchAs) and last.pattern is None and stmt.cases[-1].guard is None):
            return None
        paths = [_block_outcome(ctx, case.body, binds) for case in stmt.cases]
    else:
        return None
    if None in paths:
        return None
    return "exits" if all(p == "exits" for p in paths) else "bound"


def _block_outcome(ctx, block: cst.BaseSuite, binds) -> str | None:
    """A block's outcome: that of its first statement that binds or exits."""
    if isinstance(block, cst.SimpleStatementSuite):
        return _small_outcome(ctx, block.body, binds)
    for stmt in block.body:
        outcome = _outcome(ctx, stmt, binds)
        if outcome is not None:
            return outcome
    return None


def _small_outcome(ctx, smalls, binds) -> str | None:
    for small in smalls:
        if isinstance(small, (cst.Import, cst.ImportFrom)) and binds(small):
            return "bound"
        if isinstance(small, cst.Raise) or (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                                            and ctx.names.qualified(small.value.func) in _EXITS):
            return "exits"
    return None


def _import_bound(node: cst.Import | cst.ImportFrom) -> set[str]:
    """The names an import statement binds (`torch` for `import torch.nn`, `th` for `... as th`)."""
    if isinstance(node.names, cst.ImportStar):
        return set()
    out = set()
    for alias in node.names:
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            out.add(alias.asname.name.value)
        elif isinstance(node, cst.Import):
            out.add((dotted(alias.name) or "").split(".")[0])
        elif isinstance(alias.name, cst.Name):
            out.add(alias.name.value)
    return out


# A def's or a class's own imports bind nothing at module level.
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def _imports_somewhere(stmt: cst.CSTNode, binds) -> bool:
    """Whether a module-level statement holds an import for which binds() holds that binds at
    module level (under an `if` or a `try:` too; not one inside a def or a class)."""
    if isinstance(stmt, _SCOPES):
        return False
    return any(isinstance(n, (cst.Import, cst.ImportFrom)) and binds(n) for n in walk(stmt, skip=_SCOPES))


def blank_lines_above(stmt: cst.CSTNode) -> int:
    """How many blank lines stmt's own leading lines start with (those above its first comment)."""
    count = 0
    for line in getattr(stmt, "leading_lines", ()):
        if line.comment is not None:
            break
        count += 1
    return count


def in_file_indent(ctx, code: str) -> str:
    """code (complete statements, written with four spaces a level) with its blocks, and the lines
    continuing a bracket inside them, indented as the module's are (a tab a level in a
    tab-indented file), its strings as they were; code as it is when the module indents so too,
    or when code does not parse alone. Written as it came, a helper's spaces in a tab-indented
    file became the indentation libcst reads for the whole file (its first block's), and later
    fixes mixed the two."""
    indent = ctx.module.default_indent
    try:
        snippet = cst.parse_module(code)
    except cst.ParserSyntaxError:
        return code
    if snippet.default_indent == indent:
        return code
    return snippet.visit(_ContinuationLevels(snippet.default_indent, indent)).with_changes(default_indent=indent).code


class _ContinuationLevels(cst.CSTTransformer):
    """A bracket's continuation line one level past its block's (`return f(\n    a\n)`): that
    level in the module's own indentation."""

    def __init__(self, written: str, indent: str) -> None:
        self.written, self.indent = written, indent

    def leave_ParenthesizedWhitespace(self, original, updated):
        extra = updated.last_line.value
        levels, rest = divmod(len(extra), len(self.written)) if extra else (0, 1)
        if not updated.indent or rest or extra != self.written * levels:
            return updated
        return updated.with_changes(last_line=cst.SimpleWhitespace(self.indent * levels))


def imported_name(ctx, qualified: str) -> str | None:
    """The local name of `from module import name` (alias included), if imported that way, or
    `module.name` through a local name bound to the module; module-level imports only, as for
    Names.module_alias (a function's own import binds nothing where a fix may write)."""
    module, _, name = qualified.rpartition(".")
    local = ctx.names.module_alias(module)
    if local is not None:
        return f"{local}.{name}"
    for local, target in ctx.names.module_aliases.items():
        if target == qualified:
            return local
    return None


def is_stdlib(module: str) -> bool:
    return module in getattr(sys, "stdlib_module_names", frozenset())


def third_party_import_place(ctx, module: str) -> tuple[str, cst.CSTNode] | None:
    """Where isort would put `import <module>` (not a standard-library module): ("before", stmt)
    among the top-level `import x` lines of other such modules in alphabetical order, else
    ("after", the last of them), else ("before", the first `from x import ...` of one: isort puts a
    section's plain imports first, as in `import torch` above `from torch.utils.data import
    DataLoader`), else ("section", the last import) after a standard-library block, a section of
    its own. None when no import is there to place it by (none at all, or the last is a
    first-party one): after the imports."""
    imports = [s for s in ctx.module.body if isinstance(s, cst.SimpleStatementLine) and s.body
               and isinstance(s.body[0], (cst.Import, cst.ImportFrom))]

    def root(stmt) -> str | None:
        node = stmt.body[0]
        if isinstance(node, cst.Import):
            return (ctx.dotted(node.names[0].name) or "").split(".")[0]
        if node.relative or node.module is None:
            return None  # `from . import x`: the first-party section
        return (ctx.dotted(node.module) or "").split(".")[0]

    section = [s for s in imports if root(s) and root(s) != "__future__" and not is_stdlib(root(s))]
    plain = [s for s in section if isinstance(s.body[0], cst.Import)]
    later = [s for s in plain if (ctx.dotted(s.body[0].names[0].name) or "") > module]
    if later:
        return "before", later[0]
    if plain:
        return "after", plain[-1]
    if section:
        return "before", section[0]
    last = ctx.last_import()
    if last is not None and last in imports and root(last) is not None:
        return "section", last
    return None


def insert_third_party_import(ctx, module: str):
    """Replacement inserting `import <module>` where `third_party_import_place` says (a blank line
    above it when it starts a section); None when it says after the imports: the caller adds it
    there."""
    place = third_party_import_place(ctx, module)
    if place is None:
        return None
    where, stmt = place
    line = f"import {module}"
    if where == "before":
        return ctx.insert_before(stmt, line)
    newline = ctx.module.default_newline
    return (stmt, ctx.code(stmt) + (newline if where == "section" else "") + line + newline)


def insert_stdlib_import(ctx, module: str):
    """Replacement inserting `import <module>` (a standard-library module) where isort would put
    it: among the top-level standard-library `import x` lines in alphabetical order, else before
    the first import (after the docstring and `__future__` imports; in its section when that is a
    standard-library `from` import), else at the top."""
    body = ctx.module.body
    newline = ctx.module.default_newline
    imports = [s for s in body if isinstance(s, cst.SimpleStatementLine) and s.body
               and isinstance(s.body[0], (cst.Import, cst.ImportFrom))]
    plain_std = [s for s in imports if isinstance(s.body[0], cst.Import)
                 and is_stdlib((ctx.dotted(s.body[0].names[0].name) or "").split(".")[0])]
    later = [s for s in plain_std if (ctx.dotted(s.body[0].names[0].name) or "") > module]
    if later:
        return ctx.insert_before(later[0], f"import {module}")
    if plain_std:
        anchor = plain_std[-1]
        return (anchor, ctx.code(anchor) + f"import {module}" + newline)
    regular = [s for s in imports if not (isinstance(s.body[0], cst.ImportFrom) and s.body[0].module is not None
                                          and ctx.dotted(s.body[0].module) == "__future__")]
    # Before the first import (or statement), a blank line between it and the new import, unless
    # that import is a standard-library `from` import, in whose section isort puts `import x` first.
    if not regular:
        # No import to stand before: after the docstring and `__future__` imports (before them it
        # turned the docstring into a plain string, and a `__future__` import not first is a
        # SyntaxError), two blank lines above a def or class right below.
        return ctx.insert_after_imports(f"import {module}")
    first = regular[0]
    same_section = first in imports and isinstance(first.body[0], cst.ImportFrom) and not first.body[0].relative \
        and first.body[0].module is not None and is_stdlib((ctx.dotted(first.body[0].module) or "").split(".")[0])
    return ctx.insert_before(first, f"import {module}" + ("" if same_section else newline))


def remove_unused_imports(ctx, removed: list[cst.CSTNode], new_code: str) -> list:
    """Replacements deleting the imports a fix leaves unused (imports_left_unused, and the names of
    `from m import a, b` lines: from_names_left_unused). An import
    that opens the module takes the next line's blank lines along, so the module does not start
    with a blank line (only when that line is a simple statement, which no other edit touches)."""
    out: list = []
    body = list(ctx.module.body)
    whole, partly = from_names_left_unused(ctx, removed, new_code)
    for stmt, kept in partly:
        names = list(kept)
        names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        out.append((stmt.body[0], stmt.body[0].with_changes(names=names)))
    for stmt in [*imports_left_unused(ctx, removed, new_code), *whole]:
        i = body.index(stmt)
        following = body[i + 1] if i + 1 < len(body) else None
        if i == 0 and not stmt.leading_lines and isinstance(following, cst.SimpleStatementLine) \
                and following.leading_lines and all(line.comment is None for line in following.leading_lines) \
                and following not in removed:
            out += [(stmt, ""), (following, ctx.code(following.with_changes(leading_lines=())))]
        else:
            out += ctx.remove_statements([stmt])
    return out


def imports_left_unused(ctx, removed: list[cst.CSTNode], new_code: str) -> list[cst.CSTNode]:
    """The top-level `import m` lines (one plain module each, no alias) whose every use in the
    module lies inside the nodes a fix removes or replaces, and that the code it writes instead
    does not name: the fix leaves them unused (TL601's `math.sqrt(d)` scale goes into
    scaled_dot_product_attention). A name used anywhere else, or in a string (`__all__`), stays."""
    out = []
    for stmt in ctx.module.body:
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.Import) and len(stmt.body[0].names) == 1):
            continue
        alias = stmt.body[0].names[0]
        if alias.asname is not None or not isinstance(alias.name, cst.Name):
            continue
        name = alias.name.value
        if re.search(rf"\b{re.escape(name)}\b", new_code):
            continue
        uses = name_uses(ctx, name)
        if uses and all(any(ctx.index.contains(r, n) for r in removed) for n in uses) \
                and not named_in_string(ctx, name):
            out.append(stmt)
    return out


def from_names_left_unused(ctx, removed: list[cst.CSTNode], new_code: str):
    """([whole statements], [(statement, the aliases it keeps)]) for the module's top-level `from m
    import a, b` lines (not `*`, not `__future__`) whose names a fix leaves unused: every use of the
    name lies inside the nodes it removes or replaces, and the code it writes does not name it
    (target-gpu ampere drops the GradScaler its import brought in)."""
    whole, partly = [], []
    for stmt in ctx.module.body:
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.ImportFrom) and not isinstance(stmt.body[0].names, cst.ImportStar)):
            continue
        node = stmt.body[0]
        if node.module is not None and ctx.dotted(node.module) == "__future__":
            continue
        kept = []
        for alias in node.names:
            local = alias.asname.name if alias.asname is not None else alias.name
            name = local.value if isinstance(local, cst.Name) else None
            uses = name_uses(ctx, name) if name else []
            if not name or re.search(rf"\b{re.escape(name)}\b", new_code) or not uses \
                    or not all(any(ctx.index.contains(r, n) for r in removed) for n in uses) \
                    or named_in_string(ctx, name) or is_reexport(alias):
                kept.append(alias)
        if not kept:
            whole.append(stmt)
        elif len(kept) < len(node.names):
            partly.append((stmt, kept))
    return whole, partly


def is_reexport(alias: cst.ImportAlias) -> bool:
    """`from m import a as a` (or `import a as a`): the typing convention for a name the module
    exports (PEP 484; Ruff's F401 keeps it too), to be kept even where this module no longer uses it."""
    if alias.asname is None or not isinstance(alias.asname.name, cst.Name):
        return False
    written = alias.name.value if isinstance(alias.name, cst.Name) else alias.name.attr.value
    return alias.asname.name.value == written


def name_uses(ctx, name: str) -> list[cst.Name]:
    """Where the module uses the imported name `name`: its variable spellings (not `x.name`, not
    the keyword of `f(name=...)`) other than the name an import binds. The head of a dotted
    import (`torch` of `import torch.nn.functional as F`) counts as a use: removing `import torch`
    there would be correct, but surprising to find in a fix's diff."""
    return [n for n in ctx.index.nodes(cst.Name) if n.value == name and is_variable(ctx.index, n)
            and not isinstance(ctx.index.parent.get(n), (cst.ImportAlias, cst.AsName))]


def named_in_string(ctx, name: str) -> bool:
    """A string literal is exactly `name` (`__all__ = ["autocast"]`), or a string annotation names
    it (`"GradScaler | None"`, `"Optional[GradScaler]"`): the import is still needed
    (`typing.get_type_hints` evaluates the annotation). Before, only a string that was exactly the
    name counted, and a fix removed an import such an annotation read."""
    if any(s.evaluated_value == name for s in ctx.index.nodes(cst.SimpleString)
           if isinstance(s.evaluated_value, str)):
        return True
    word = re.compile(rf"\b{re.escape(name)}\b")
    return any(name in annotation_string_names(expr) if expr is not None else bool(word.search(str(s.evaluated_value)))
               for s, expr in string_annotations(ctx))


_CASTS = ("typing.cast", "typing_extensions.cast")


def _in_cast_type(ctx, s: cst.SimpleString) -> bool:
    """s is (or is inside) the type argument of `typing.cast` (`cast("Optional[GradScaler]", x)`):
    a type written as a string that type checkers and `eval` read like a string annotation.
    Before, only annotations counted, and a fix removed the import such a string names."""
    child: cst.CSTNode = s
    for node in ctx.index.ancestors(s):
        if isinstance(node, cst.Call) and isinstance(child, cst.Arg):
            if ctx.names.qualified(node.func) not in _CASTS:
                return False
            first = child is node.args[0] and child.keyword is None
            return first or (child.keyword is not None and child.keyword.value == "typ")
        if isinstance(node, (cst.BaseStatement, cst.BaseSmallStatement, cst.Lambda)):
            return False
        child = node
    return False


def string_annotations(ctx) -> list[tuple[cst.SimpleString, cst.BaseExpression | None]]:
    """Each string inside a type annotation (`x: "GradScaler | None"`, `Optional["GradScaler"]`)
    or the type argument of `typing.cast` (`cast("GradScaler", s)`), with the expression it
    holds, parsed; None where it is no expression, or its text has escapes (the parse would not be
    the source's text to rewrite)."""
    out = []
    for s in ctx.index.nodes(cst.SimpleString):
        if ctx.index.enclosing(s, cst.Annotation) is None and not _in_cast_type(ctx, s):
            continue
        value = s.evaluated_value
        expr = None
        if isinstance(value, str) and value == s.raw_value and "\n" not in value:
            try:
                expr = cst.parse_expression(value.strip())
            except cst.ParserSyntaxError:
                expr = None
        out.append((s, expr))
    return out


def annotation_string_names(expr: cst.BaseExpression | None) -> set[str]:
    """The variable names an expression parsed from a string annotation reads (`Optional`,
    `GradScaler`; not the `GradScaler` of `amp.GradScaler`)."""
    if expr is None:
        return set()
    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False  # the attribute's own name is no variable

        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    expr.visit(_Names())
    return found
