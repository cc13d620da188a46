"""Importing libcst with the code its dataclasses generate kept, like bytecode, between runs.

libcst defines about 190 node classes as dataclasses. For each one the stdlib's dataclasses module
writes __init__, __repr__, __eq__, __hash__ and friends as source text and compiles that text
with exec(): some 620 compiles, close to half of libcst's import time, and the import is on the
critical path of every cold run (a pre-commit run over a few files is mostly start-up) and the
serial start of every --jobs run. The texts are the same on every run, so their code objects are
stored in one marshal file in the user's cache folder (as Black keeps its cache) and handed to exec
in place of the text on later runs. `python bench/libcst_import.py` measures the difference.

Where: $TRAINLINT_CODE_CACHE if set (empty: keep nothing), else $XDG_CACHE_HOME/trainlint or
~/.cache/trainlint; one file per interpreter version and libcst install, so two environments never
overwrite each other's. Not next to the installed package: pip does not know the file, and a
folder it leaves behind after uninstalling shadows a later editable install.

Why the result is exactly what a plain import gives: the same interpreter compiles the same text
to the same code object. The file is keyed by the bytecode magic number and the optimisation level
(as .pyc files are), a text is looked up whole, and a text not in the file is compiled here with no
inherited __future__ flags, as dataclasses' own exec() compiles it (this module's
`from __future__ import annotations` must not leak into libcst's __init__ annotations).
tests/test_libcst_import.py compares every generated function of every libcst dataclass, code and
annotations, with a plain import's. Only dataclasses' module-level name `exec` is shadowed, and only
for the duration of the import; nothing else about the import changes.

The file is written only when the import compiled something it did not hold (a first run, another
libcst), atomically, and never when Python is told not to write bytecode; it holds only the texts
the last import used, so it does not grow with upgrades. A missing, unreadable or foreign file just
means a plain import.
"""

from __future__ import annotations

import builtins
import hashlib
import marshal
import os
import sys
import types
from importlib.util import MAGIC_NUMBER, find_spec

ENV_DIR = "TRAINLINT_CODE_CACHE"


def default_cache_file() -> str | None:
    """The kept file for this interpreter and this libcst install, or None to keep nothing."""
    folder = os.environ.get(ENV_DIR)
    if folder is None:
        home = os.path.expanduser("~")
        if home.startswith("~"):
            return None  # no home folder to keep it in (never a folder named "~" here)
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
        folder = os.path.join(base, "trainlint")
    if not folder:
        return None
    try:
        spec = find_spec("libcst")
    except (ImportError, ValueError):
        spec = None
    where = spec.origin if spec is not None and spec.origin else ""
    install = hashlib.sha256(os.path.abspath(where).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return os.path.join(folder, f"libcst-dataclasses-{sys.implementation.cache_tag}-{install}.marshal")


def _header() -> bytes:
    return MAGIC_NUMBER + bytes([sys.flags.optimize & 0xFF])


def _load(path: str) -> dict[str, object]:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return {}
    header = _header()
    if not data.startswith(header):
        return {}
    try:
        table = marshal.loads(data[len(header):])
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if type(k) is str and type(v) is types.CodeType}


def _store(path: str, table: dict[str, object]) -> None:
    from trainlint.atomic import write_atomic

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomic(path, _header() + marshal.dumps(table))
    except OSError:
        pass  # no writable cache folder: every run compiles, as without this module


# What the last import_libcst() with a cache file did: texts taken from the file, texts compiled.
last_import = {"kept": 0, "compiled": 0}


_DEFAULT = object()


def import_libcst(cache_file=_DEFAULT):
    """Imports libcst (if it is not imported yet) with the generated dataclass code kept in
    `cache_file` (default: default_cache_file()), and returns the module. None: a plain import."""
    if "libcst" in sys.modules:
        import libcst

        return libcst
    if cache_file is _DEFAULT:
        cache_file = default_cache_file()
    if cache_file is None:
        import libcst

        return libcst
    import dataclasses

    known = _load(cache_file)
    used: dict[str, object] = {}
    compiled = 0

    def cached_exec(source, *args, **kwargs):
        nonlocal compiled
        if type(source) is str:
            code = known.get(source)
            if code is None:
                code = known[source] = compile(source, "<string>", "exec", dont_inherit=True)
                compiled += 1
            used[source] = code
            source = code
        return builtins.exec(source, *args, **kwargs)

    # dataclasses calls exec() by its global name, so a module attribute shadows the builtin.
    shadowed = "exec" in vars(dataclasses)
    if not shadowed:
        dataclasses.exec = cached_exec
    try:
        import libcst
    finally:
        if not shadowed:
            del dataclasses.exec
    last_import.update(kept=len(used) - compiled, compiled=compiled)
    if compiled and not sys.dont_write_bytecode:
        _store(cache_file, used)
    return libcst
