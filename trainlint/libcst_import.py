"""Importing libcst with the code its dataclasses generate kept, like bytecode, between runs.

libcst defines about 190 node classes as dataclasses. For each one the stdlib's dataclasses module
writes __init__, __repr__, __eq__, __hash__ and friends as source text and compiles that text
with exec(): some 620 compiles, close to half of libcst's import time, and the import is on the
critical path of every cold run (a pre-commit run over a few files is mostly start-up) and the
serial start of every --jobs run. The texts are the same on every run, so their code objects are
stored in one marshal file next to trainlint's own bytecode (its __pycache__ folder) and handed to
exec in place of the text on later runs. `python bench/libcst_import.py` measures the difference.

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
import marshal
import os
import sys
from importlib.util import MAGIC_NUMBER

CACHE_FILE = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "__pycache__",
    f"libcst-dataclasses.{sys.implementation.cache_tag}.marshal",
)


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
    code_type = type(_load.__code__)
    return {k: v for k, v in table.items() if type(k) is str and type(v) is code_type}


def _store(path: str, table: dict[str, object]) -> None:
    from trainlint.atomic import write_atomic

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomic(path, _header() + marshal.dumps(table))
        # Readable as trainlint's own files are (mkstemp makes it owner-only), so a shared
        # install's other users can use it too.
        os.chmod(path, os.stat(__file__).st_mode & 0o666)
    except OSError:
        pass  # a read-only install: every run compiles, as without this module


# What the last import_libcst() with a cache file did: texts taken from the file, texts compiled.
last_import = {"kept": 0, "compiled": 0}


def import_libcst(cache_file: str | None = CACHE_FILE):
    """Imports libcst (if it is not imported yet) with the generated dataclass code from
    `cache_file`, and returns the module. cache_file=None: a plain import."""
    if "libcst" in sys.modules or cache_file is None:
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
