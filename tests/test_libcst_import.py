"""trainlint.libcst_import: libcst imported with kept dataclass code is the libcst a plain import
gives, and the kept file is used, refreshed and ignored when it should be.

Each case imports libcst in a fresh interpreter (a subprocess), since an import happens once per
process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# Prints, as JSON: what import_libcst did, and a fingerprint of every function the dataclasses
# of libcst generated (compiled from text, so their file name is "<string>"): bytecode, constants,
# names, flags, annotations and defaults, recursively for nested code.
PROBE = r"""
import json, sys, types
from trainlint import libcst_import
cache = sys.argv[1] if sys.argv[1] != "-" else None
libcst = libcst_import.import_libcst(cache)

def const_print(c):
    if isinstance(c, types.CodeType):
        return code_print(c)
    if isinstance(c, frozenset):  # its repr's order follows string hashing, which differs per process
        return ["frozenset", sorted(map(repr, c))]
    return repr(c)

def code_print(code):
    consts = [const_print(c) for c in code.co_consts]
    return [code.co_code.hex(), consts, code.co_names, code.co_varnames, code.co_freevars,
            code.co_cellvars, code.co_argcount, code.co_kwonlyargcount, code.co_flags,
            getattr(code, 'co_qualname', code.co_name), code.co_filename]  # co_qualname: 3.11+

seen = {}
for name, module in sorted(sys.modules.items()):
    if not name.startswith("libcst"):
        continue
    for cls in vars(module).values():
        if not isinstance(cls, type) or "__dataclass_fields__" not in vars(cls):
            continue
        for attr, value in sorted(vars(cls).items()):
            code = getattr(value, "__code__", None)
            if code is None or code.co_filename != "<string>":
                continue
            seen[f"{cls.__module__}.{cls.__qualname__}.{attr}"] = [
                code_print(code), repr(value.__annotations__), repr(value.__defaults__),
                repr(value.__kwdefaults__),
            ]
print(json.dumps({"last_import": libcst_import.last_import, "functions": seen}))
"""


def probe(cache_file, *flags: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # -B says it here
    out = subprocess.run(
        [sys.executable, *flags, "-c", PROBE, str(cache_file) if cache_file else "-"],
        capture_output=True, text=True, check=True, env=env,
    ).stdout
    return json.loads(out)


# How many texts libcst's import compiles at least: one per generated function up to Python 3.12
# (about 620), one per class from 3.13 (about 130), whose dataclasses build a class's methods together.
MANY_TEXTS = 500 if sys.version_info < (3, 13) else 100


@pytest.fixture(scope="module")
def plain() -> dict:
    return probe(None)


def test_kept_code_gives_the_same_functions_as_a_plain_import(tmp_path, plain):
    cache_file = tmp_path / "kept.marshal"
    first = probe(cache_file)
    assert cache_file.exists()
    second = probe(cache_file)

    # The fingerprint sees the generated functions at all (a probe that finds none proves nothing).
    assert len(plain["functions"]) > 500
    assert first["last_import"]["compiled"] > MANY_TEXTS and first["last_import"]["kept"] == 0
    assert second["last_import"] == {"kept": first["last_import"]["compiled"], "compiled": 0}
    assert first["functions"] == plain["functions"]
    assert second["functions"] == plain["functions"]


def test_a_foreign_or_broken_file_means_a_plain_import_and_is_rewritten(tmp_path, plain):
    cache_file = tmp_path / "kept.marshal"
    for junk in (b"", b"not marshal at all", b"\x00" * 64):
        cache_file.write_bytes(junk)
        result = probe(cache_file)
        assert result["last_import"]["kept"] == 0
        assert result["functions"] == plain["functions"]
        assert probe(cache_file)["last_import"]["compiled"] == 0  # rewritten, now used


def test_nothing_is_written_when_python_is_told_not_to_write_bytecode(tmp_path, plain):
    cache_file = tmp_path / "kept.marshal"
    result = probe(cache_file, "-B")
    assert result["functions"] == plain["functions"]
    assert not cache_file.exists()


def test_an_unwritable_place_is_not_an_error(tmp_path, plain):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = probe(blocker / "kept.marshal")  # its folder cannot be created
    assert result["functions"] == plain["functions"]
    assert result["last_import"]["compiled"] > MANY_TEXTS


def test_where_the_file_is_kept(monkeypatch, tmp_path):
    from trainlint import libcst_import

    monkeypatch.setenv("TRAINLINT_CODE_CACHE", str(tmp_path / "here"))
    chosen = libcst_import.default_cache_file()
    assert os.path.dirname(chosen) == str(tmp_path / "here")
    assert sys.implementation.cache_tag in os.path.basename(chosen)

    monkeypatch.setenv("TRAINLINT_CODE_CACHE", "")
    assert libcst_import.default_cache_file() is None

    monkeypatch.delenv("TRAINLINT_CODE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert os.path.dirname(libcst_import.default_cache_file()) == str(tmp_path / "xdg" / "trainlint")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    chosen = libcst_import.default_cache_file()
    assert os.path.dirname(chosen) == str(tmp_path / "home" / ".cache" / "trainlint")
    # Never inside an installed package: pip would leave it behind on uninstall.
    assert not chosen.startswith(os.path.dirname(libcst_import.__file__))


def test_the_cli_imports_libcst_through_the_kept_file(tmp_path):
    """The console command's first libcst import is import_libcst's (a plain `import libcst`
    somewhere earlier would silently lose the speed-up)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["TRAINLINT_CODE_CACHE"] = str(tmp_path / "kept")
    (tmp_path / "train.py").write_text("from torch.utils.data import DataLoader\nDataLoader(ds)\n")
    for jobs in ("1", "2"):
        subprocess.run([sys.executable, "-m", "trainlint", "check", "--no-cache", "--jobs", jobs, "train.py"],
                       cwd=tmp_path, env=env, capture_output=True, check=False)
    kept = list((tmp_path / "kept").iterdir())
    assert len(kept) == 1 and kept[0].stat().st_size > 100_000
