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

import re

import libcst as cst

from trainlint.analysis.names import dotted
from trainlint.analysis.variables import is_variable, with_items

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


# Calls that only compute with a path's text, never touching the file (a part of a name, its
# length, its text shown another way).
_TEXT_ONLY = frozenset({
    "os.path.basename", "os.path.dirname", "os.path.relpath", "os.path.split", "os.path.splitext",
    "builtins.repr", "builtins.format", "builtins.len",
})


def only_text(ctx, call: cst.Call) -> bool:
    """call only builds or shows a path from the path it is handed (`str(path)`,
    `os.path.basename(path)`, `out.joinpath("x")`) and does not touch the file, unlike
    `os.path.getsize(path)` or `open(path)`: inside a print or log line, only such a call is harmless."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _PATH_METHODS and ctx.names.qualified(func) is None:
        return True
    return ctx.names.qualified(func) in _JOINS | _TEXT_ONLY


# Calls that hand on the path they are given as it is (a conversion, no component added).
_SAME_PATH = frozenset({"os.fspath", "builtins.str", "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"})
_JOIN_CALLS = frozenset({"os.path.join", "posixpath.join", "ntpath.join"})


def folders(ctx, expr: cst.BaseExpression, levels: int = 2) -> set[str]:
    """The variables (dotted, as written) that name the folders the path expr lies in, up to
    `levels` folders up: `out` of `os.path.join(out, "last.pt")`, `f"{out}/last.pt"`, `Path(out) /
    "last.pt"`, `out + "/last.pt"`, `out.joinpath("last.pt")`; a variable is followed to the values
    assigned to it (`ckdir = os.path.join(out_dir, f"step{n}")` puts `out_dir` above `ckdir`). A
    call handed one of them (`shutil.make_archive(ckdir, "zip", ckdir)`, an upload of the folder)
    reads the file too."""
    out: set[str] = set()
    level = [expr]
    for _ in range(levels):
        parents = [parent for e in level for parent in _parents(ctx, e)]
        out |= {name for parent in parents if (name := _name(ctx, parent)) is not None}
        level = parents
    return out


# What a call that reads a whole folder is named (its last name part): archives, copies, moves,
# uploads and syncs, and the commands that run one. A call of another name handed the folder
# (`save_model_args(output_dir)`, writing a file of its own there) is not taken for a reader.
_FOLDER_READER = re.compile(
    r"(archive|tar|zip|upload|sync|copy|move|rename|replace|artifact|push|rsync|^system$|^run$|^call$"
    r"|^Popen$|^check_call$|^check_output$|rmtree|^add_dir$|^add_files$|^add_folder$)", re.IGNORECASE)
# What opens an archive being built, whose `add`/`write` reads what it is handed.
_ARCHIVES = frozenset({"tarfile.open", "tarfile.TarFile", "tarfile.TarFile.open", "zipfile.ZipFile",
                       "zipfile.PyZipFile"})


def reads_folder(ctx, names: set[str], call: cst.Call) -> bool:
    """call reads one of the folders `names` as a whole (paths.folders gives them): a call named
    as an archive, copy, move, upload, sync or command is (`shutil.make_archive(out, "zip", out)`,
    `mlflow.log_artifacts(out)`, `subprocess.run(["aws", "s3", "sync", out, dest])`, a wandb
    artifact's `add_dir(out)`, `HfApi().upload_folder(folder_path=out)`) handed the folder itself
    (hands_folder); so is a listing of it (lists_folder)."""
    if lists_folder(ctx, names, call):
        return True
    func = call.func
    name = ctx.names.qualified(func) or dotted(func) or (func.attr.value if isinstance(func, cst.Attribute) else "")
    last = name.rsplit(".", 1)[-1]
    # `tar.add(folder)` / `zf.write(...)` on an archive being built (by its name, or what opened it).
    archive = last in ("add", "write") and isinstance(func, cst.Attribute) and (
        re.search(r"tar|zip|archive", name.rsplit(".", 1)[0], re.IGNORECASE) or _opens_archive(ctx, func.value))
    return bool(_FOLDER_READER.search(last) or archive) and any(
        hands_folder(ctx, names, arg.value) for arg in call.args if not arg.star)


# What lists a folder's files: `out.glob("*.pt")`, `out.rglob(...)`, `out.iterdir()` on a path,
# `os.listdir(out)`, `os.scandir(out)`, `os.walk(out)`, `glob.glob(os.path.join(out, "*.pt"))`.
_LIST_METHODS = frozenset({"glob", "rglob", "iterdir"})
_LISTS = frozenset({"os.listdir", "os.scandir", "os.walk"})
_GLOBS = frozenset({"glob.glob", "glob.iglob"})
# What a keep-last-N rotation does with the files it lists: deletes them (and logs it).
_DELETES = frozenset({"unlink", "remove", "rmtree", "rmdir", "print", "info", "debug", "warning", "log"})


def lists_folder(ctx, names: set[str], call: cst.Call) -> bool:
    """call lists one of the folders `names` (_LIST_METHODS, _LISTS, _GLOBS): a file still being
    written there is missing from the listing, or found partial (`shutil.copy2(max(out.glob("*.pt"),
    key=os.path.getmtime), "latest.pt")` copied the previous checkpoint, or a truncated one). Not a
    listing that a `for` only deletes from (rotation_only)."""
    func = call.func
    qualified = ctx.names.qualified(func)
    if isinstance(func, cst.Attribute) and func.attr.value in _LIST_METHODS and qualified is None:
        listed = hands_folder(ctx, names, func.value)
    elif qualified in _LISTS or qualified in _GLOBS:
        first = call.args[0].value if call.args and not call.args[0].star and call.args[0].keyword is None else None
        listed = first is not None and (hands_folder(ctx, names, first)
                                        or qualified in _GLOBS and bool(folders(ctx, first, 1) & names))
    else:
        return False
    return listed and not rotation_only(ctx, call)


def rotation_only(ctx, call: cst.Call) -> bool:
    """call (a listing) is in the iterable of a `for` whose body only deletes files and logs: a
    keep-last-N rotation (`for old in sorted(out.glob("ckpt_*.pt"))[:-2]: old.unlink()`), which a
    file still being written does not disturb (it is the newest, and kept)."""
    for anc in ctx.index.ancestors(call):
        if isinstance(anc, cst.For):
            if not ctx.index.contains(anc.iter, call):
                return False
            calls = [n for n in ctx.index.walk(anc.body) if isinstance(n, cst.Call)]
            return bool(calls) and all(_deletes(c) or any(isinstance(a, cst.Call) and _deletes(a)
                                                          for a in ctx.index.ancestors(c) if ctx.index.contains(anc.body, a))
                                       for c in calls)
        if isinstance(anc, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
    return False


def _deletes(call: cst.Call) -> bool:
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    return name in _DELETES


def _opens_archive(ctx, receiver: cst.BaseExpression) -> bool:
    """receiver is a variable bound to an archive being built: by a `with` around its use
    (`with tarfile.open(path, "w") as tf:`) or assigned (`zf = zipfile.ZipFile(path, "w")`)."""
    if not isinstance(receiver, cst.Name):
        return False
    values = [*_assigned(ctx, receiver), *with_items(ctx.index, receiver)]
    return any(isinstance(v, cst.Call) and ctx.names.qualified(v.func) in _ARCHIVES for v in values)


def hands_folder(ctx, names: set[str], expr: cst.BaseExpression) -> bool:
    """expr hands on one of the folders `names` itself, not a path inside it: the variable, as
    it is or converted (`str(out)`), or in a list, tuple or f-string of a command (`["aws", "s3",
    "sync", out, dest]`, `f"tar czf ckpt.tgz {out}"`)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if _name(ctx, node) in names:
            return True
        if isinstance(node, (cst.List, cst.Tuple)):
            stack += [element.value for element in node.elements]
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            # A command built by concatenation (`"aws s3 sync " + out + " s3://b"`), or the folder
            # with a trailing slash (`out + "/"`); not a path inside it (`out + "/model.pt"`).
            right = node.right.evaluated_value if isinstance(node.right, cst.SimpleString) else None
            if not (isinstance(right, str) and right.startswith("/") and right != "/"):
                stack += [node.left, node.right]
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo) \
                and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)):
            stack.append(node.right)  # `"aws s3 sync %s s3://b" % out`
        elif isinstance(node, cst.FormattedString):
            pieces = list(node.parts)
            for i, piece in enumerate(pieces):
                following = pieces[i + 1] if i + 1 < len(pieces) else None
                inside = isinstance(following, cst.FormattedStringText) and following.value.startswith("/")
                if isinstance(piece, cst.FormattedStringExpression) and not inside:
                    stack.append(piece.expression)
    return False


def _name(ctx, expr: cst.BaseExpression) -> str | None:
    """The dotted variable expr names, through conversions (`str(out)`, `Path(out)`)."""
    while isinstance(expr, cst.Call) and len(expr.args) == 1 and ctx.names.qualified(expr.func) in _SAME_PATH:
        expr = expr.args[0].value
    return dotted(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None


def _parents(ctx, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The expressions naming the folder the path expr lies in (a variable: through its values)."""
    while isinstance(expr, cst.Call) and len(expr.args) == 1 and ctx.names.qualified(expr.func) in _SAME_PATH:
        expr = expr.args[0].value
    if isinstance(expr, cst.Name):
        return [parent for value in _assigned(ctx, expr) for parent in _parents(ctx, value)
                if not isinstance(value, cst.Name)]
    if isinstance(expr, cst.Call):
        args = [a for a in expr.args if a.keyword is None]
        if ctx.names.qualified(expr.func) in _JOIN_CALLS and len(args) == 2 and not any(a.star for a in args):
            return [args[0].value]
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "joinpath" and len(args) == 1:
            return [expr.func.value]
        return []
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Divide):
            return [expr.left]
        if isinstance(expr.operator, cst.Add) and isinstance(expr.right, cst.SimpleString) \
                and str(expr.right.evaluated_value).startswith("/"):
            return [expr.left]
        return []
    if isinstance(expr, cst.FormattedString) and len(expr.parts) >= 2 \
            and isinstance(expr.parts[0], cst.FormattedStringExpression) \
            and isinstance(expr.parts[1], cst.FormattedStringText) and expr.parts[1].value.startswith("/"):
        return [expr.parts[0].expression]
    return []


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
    return ctx.bindings.assigned_values(name) or []


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
