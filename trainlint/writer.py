"""Atomic writes of fixed files: a reader sees the old file or the new one, never a mix."""

from __future__ import annotations

import os

from trainlint.source import SourceError, SourceFile, digest_bytes, encode


def write_fixed(source: SourceFile, text: str) -> None:
    """Replace source.path with `text`, keeping encoding, BOM, line endings (in text) and mode.

    Refuses when the file on disk is no longer the one that was read, so an editor's
    save between our read and our write is never lost.
    """
    path = source.path
    try:
        with open(path, "rb") as fh:
            current = fh.read()
    except OSError as exc:
        raise SourceError(f"not fixed: cannot re-read before writing: {exc.strerror or exc}") from None
    if digest_bytes(current) != source.digest:
        raise SourceError("not fixed: the file changed on disk since it was read")
    data = encode(source, text)
    directory = os.path.dirname(os.path.abspath(path))
    # Resolve a symlink so we replace its target, not the link itself.
    real = os.path.realpath(path)
    if not source.mode & 0o222:
        # A rename into a writable folder would replace a file its owner made read-only.
        raise SourceError("not fixed: the file is read-only")
    info = os.stat(real)
    if info.st_nlink > 1:
        # A file with other hard links: a rename would give this name a new file and leave the
        # others the old one. Written in place instead (not atomic, as editors save such files).
        try:
            with open(real, "r+b") as fh:
                fh.write(data)
                fh.truncate()
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise SourceError(f"not fixed: cannot write: {exc.strerror or exc}") from None
        return
    import tempfile  # here: only --fix writes, and a plain check should not pay for the import

    fd, tmp = tempfile.mkstemp(prefix=".trainlint-", suffix=".tmp", dir=os.path.dirname(real) or directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, source.mode)
        if (info.st_uid, info.st_gid) != (os.getuid(), os.getgid()):
            try:  # the new file is ours; keep the owner it had (possible as root, or for the group)
                os.chown(tmp, info.st_uid, info.st_gid)
            except OSError:
                pass
        os.replace(tmp, real)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise SourceError(f"not fixed: cannot write: {exc.strerror or exc}") from None
