"""Reading a file into text the engine can analyse, and remembering how to write it back.

A fix must keep the file's declared encoding, BOM, line endings and mode, and must not
overwrite a file that changed since it was read; SourceFile carries what that takes.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import os
import stat
import tokenize
from dataclasses import dataclass

from trainlint.notebook import Notebook, NotebookError, is_notebook

# Bigger files are reported, not parsed: libcst would spend minutes and gigabytes on them.
MAX_BYTES = 10 * 1024 * 1024
# The name of source read from standard input when --stdin-filename gives none (as in Ruff).
STDIN_NAME = "-"


class SourceError(Exception):
    """A file that cannot be checked; the message is the reason shown to the user."""


@dataclass
class SourceFile:
    path: str
    text: str
    encoding: str  # codec used to decode (and re-encode) the file
    bom: bool
    mode: int
    mtime_ns: int
    size: int
    digest: str  # sha256 of the raw bytes, for the cache and the changed-on-disk check
    # A Jupyter notebook: `text` is its code cells as Python, and writing goes through it.
    notebook: Notebook | None = None


def digest_bytes(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def decode(raw: bytes, path: str) -> tuple[str, str, bool]:
    """Decode bytes as Python would (PEP 263 cookie, BOM); returns (text, encoding, bom)."""
    if b"\0" in raw[:8192]:
        raise SourceError("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:
        if "unknown encoding" in str(exc) or "encoding problem" in str(exc):
            raise SourceError(f"cannot determine encoding: {exc}") from None
        # Undecodable bytes in the first two lines: let the UTF-8 decode below say which byte.
        encoding = "utf-8"
    bom = raw.startswith(codecs.BOM_UTF8)
    body = raw[len(codecs.BOM_UTF8):] if bom else raw
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        hint = "" if codec != "utf-8" else "; declare the file's encoding (PEP 263) or re-save it as UTF-8"
        raise SourceError(
            f"cannot decode as {codec}: invalid byte 0x{body[exc.start]:02x} at offset {exc.start + (3 if bom else 0)} "
            f"(line {line}){hint}"
        ) from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r} in the coding declaration") from None
    return text, codec, bom


def load(raw: bytes, path: str) -> tuple[str, str, bool, Notebook | None]:
    """(text, encoding, bom, notebook) of a file's bytes: a Python file as Python decodes it, a
    notebook (.ipynb) as the Python of its code cells."""
    if not is_notebook(path):
        return (*decode(raw, path), None)
    try:
        notebook = Notebook.parse(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise SourceError(f"not a notebook: cannot decode as UTF-8: invalid byte at offset {exc.start}") from None
    except NotebookError as exc:
        raise SourceError(str(exc)) from None
    return notebook.text, "utf-8", raw.startswith(codecs.BOM_UTF8), notebook


def _missing(path: str) -> SourceError:
    if os.path.islink(path):  # the link is there, what it points to is not
        return SourceError(f"broken symbolic link (to {os.readlink(path)})")
    return SourceError("no such file (it may have been deleted during the run)")


def read_source(path: str) -> SourceFile:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise _missing(path) from None
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from None
    if not stat.S_ISREG(st.st_mode):
        raise SourceError("not a regular file")
    if st.st_size > MAX_BYTES:
        raise SourceError(f"file too large ({st.st_size} bytes; the limit is {MAX_BYTES})")
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise _missing(path) from None
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    text, encoding, bom, notebook = load(raw, path)
    return SourceFile(
        path=path,
        text=text,
        encoding=encoding,
        bom=bom,
        mode=stat.S_IMODE(st.st_mode),
        mtime_ns=st.st_mtime_ns,
        size=len(raw),
        digest=digest_bytes(raw),
        notebook=notebook,
    )


def encode(source: SourceFile, text: str) -> bytes:
    """The bytes to write for `text` (for a notebook, its JSON with the cells of `text`)."""
    if source.notebook is not None:
        try:
            text = source.notebook.render(text)
        except NotebookError as exc:
            raise SourceError(str(exc)) from None
    data = text.encode(source.encoding)
    return codecs.BOM_UTF8 + data if source.bom else data
