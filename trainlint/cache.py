"""The results cache: a file whose content, settings and trainlint code are unchanged since the
last run is not parsed again; its findings come from `.trainlint_cache/`.

One small JSON entry per checked file, named by a key that hashes everything the findings depend
on: the file's bytes, its absolute path (rules and per-file-ignores see the path), the settings
fingerprint and root, and the code fingerprint (trainlint's version plus the size and mtime of
every module of trainlint and of every loaded rule pack). Any change gives a new key, so nothing
is ever invalidated in place; old entries just stop being read, and `trainlint clean` removes
them. The code fingerprint exists because a version number alone would keep serving stale
findings to anyone running trainlint from a checkout while editing a rule.

Entries are JSON, not pickle: the folder sits in the user's tree and loading it must never run
code. A missing, unreadable or malformed entry is a miss; a write that fails does not stop the
run (a read-only checkout still lints, just without the speed-up), but the first failure is kept
in `write_error` for the command line to warn about once.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import click

from trainlint import __version__
from trainlint.diagnostics import Applicability, Diagnostic, Edit, FileError, Fix, Location
from trainlint.registry import checkout_rules, pack_entry_points

DEFAULT_DIR = ".trainlint_cache"
ENV_DIR = "TRAINLINT_CACHE_DIR"
# Bump when the entry layout changes, so an older trainlint's entries are never misread.
FORMAT = 1

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by trainlint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
GITIGNORE = "# Created by trainlint automatically.\n*\n"


def default_dir(isolated: bool = False) -> str:
    """The cache folder when none is named: TRAINLINT_CACHE_DIR, else `.trainlint_cache` in the
    project root: the folder of the configuration file that governs the current folder (found
    upward), else the current folder. Runs from any subfolder share one cache, as Ruff's
    `.ruff_cache` sits at the project root."""
    if os.environ.get(ENV_DIR):
        return os.environ[ENV_DIR]
    from trainlint.config import find_config

    config = None if isolated else find_config(os.getcwd(), {})
    return os.path.relpath(os.path.join(os.path.dirname(config) if config else ".", DEFAULT_DIR))


_code_fingerprint: str | None = None


def _py_files(folder: str) -> list[str]:
    out = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        out.extend(os.path.join(root, n) for n in names if n.endswith(".py"))
    return out


def _rule_pack_sources() -> tuple[list[str], list[str]]:
    """(source files, identities) of every rule pack, found without importing any of them: a
    rule module imports libcst, which a run answered from the cache should never load."""
    from importlib.util import find_spec

    files: list[str] = []
    identities: list[str] = []
    # The folder the registry loads the built-in rules from: a checkout's own rules/ first (an
    # editable install of another checkout maps `trainlint.rules` to that one's folder, whose
    # mtimes would then stand for rules this run never loads: edits to the rules in use were
    # served stale findings).
    checkout = checkout_rules()
    try:
        spec = None if checkout is not None else find_spec("trainlint.rules")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            files.extend(_py_files(folder))
    else:  # a source checkout (installed or not): the registry loads ../rules
        files.extend(_py_files(checkout or os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rules")))
    for ep in pack_entry_points():
        dist = getattr(ep, "dist", None)
        identities.append(f"{ep.name}={ep.value} {getattr(dist, 'name', '')} {getattr(dist, 'version', '')}")
        # The pack's sources too, so someone developing a pack (version unchanged) sees its edits.
        try:
            top = find_spec(ep.module.split(".")[0])
        except (ImportError, ValueError):
            top = None
        if top is not None and top.submodule_search_locations:
            for folder in top.submodule_search_locations:
                files.extend(_py_files(folder))
        elif top is not None and top.origin:
            files.append(top.origin)
    return files, identities


def code_fingerprint() -> str:
    """trainlint's version and the identity (path, size, mtime) of every module that can change
    findings: trainlint itself and every rule pack (built-in and entry points)."""
    global _code_fingerprint
    if _code_fingerprint is None:
        files = set(_py_files(os.path.dirname(os.path.abspath(__file__))))
        pack_files, identities = _rule_pack_sources()
        files.update(os.path.abspath(f) for f in pack_files)
        h = hashlib.sha256(f"{__version__}\0{FORMAT}\0{sorted(identities)}".encode())
        for path in sorted(files):
            try:
                st = os.stat(path)
            except OSError:
                continue
            h.update(f"\0{path}\0{st.st_size}\0{st.st_mtime_ns}".encode())
        _code_fingerprint = h.hexdigest()[:16]
    return _code_fingerprint


def settings_fingerprint(settings) -> str:
    """Everything in the settings that can change findings. Like Settings.fingerprint() but
    without asking the registry for the rule list (that imports every rule, and libcst): the
    rules are covered by code_fingerprint(). The root stays in: per-file-ignores and excludes
    are relative to it."""
    data = {k: v for k, v in vars(settings).items() if k != "config_path"}
    data["root"] = os.path.abspath(settings.root)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=repr).encode()).hexdigest()[:16]


class Cache:
    """Lookup and store of per-file results under one cache folder."""

    def __init__(self, directory: str | None = None) -> None:
        self.named = directory or default_dir()  # as the user gave it, for messages
        self.directory = os.path.abspath(self.named)
        self._settings_fp: dict = {}
        self._prepared: bool | None = None  # None: not tried yet
        # Why the first write failed (None: none did): a cache that silently stays empty makes
        # every run as slow as the first, with nothing to say why.
        self.write_error: str | None = None
        self.hits = 0
        self.misses = 0

    # -- keys ----------------------------------------------------------------------------

    def _fingerprint(self, settings) -> str:
        # Settings are frozen and hashable; fingerprint() serialises them, so do it once each.
        fp = self._settings_fp.get(settings)
        if fp is None:
            fp = self._settings_fp[settings] = settings_fingerprint(settings)
        return fp

    def key(self, path: str, digest: str, settings) -> str:
        raw = "\0".join((code_fingerprint(), self._fingerprint(settings), os.path.abspath(path), digest))
        return hashlib.sha256(raw.encode("utf-8", "surrogateescape")).hexdigest()

    def _entry_path(self, key: str) -> str:
        return os.path.join(self.directory, f"v{FORMAT}", key[:2], key[2:] + ".json")

    # -- read ----------------------------------------------------------------------------

    def get(self, path: str, digest: str, settings) -> tuple[list[Diagnostic], FileError | None] | None:
        """(diagnostics, error) stored for this file content and settings, or None on a miss.
        The diagnostics carry `path` as given now, whatever it was when they were stored."""
        try:
            with open(self._entry_path(self.key(path, digest, settings)), "rb") as fh:
                data = json.loads(fh.read())
            diagnostics = [_diagnostic(d, path) for d in data["diagnostics"]]
            error = FileError(path, data["error"]) if data.get("error") is not None else None
        except (OSError, ValueError, KeyError, TypeError):
            self.misses += 1
            return None
        self.hits += 1
        return diagnostics, error

    # -- write ---------------------------------------------------------------------------

    def _prepare(self) -> bool:
        """Creates the folder with its CACHEDIR.TAG (backup tools skip it) and a .gitignore
        holding `*` (git never shows it, wherever the user put it). Tried once: a folder that
        cannot be made for the first file cannot for the next thousand either."""
        if self._prepared is None:
            try:
                os.makedirs(self.directory, exist_ok=True)
                for name, text in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", GITIGNORE)):
                    target = os.path.join(self.directory, name)
                    if not os.path.exists(target):
                        _atomic_write(target, text.encode())
                self._prepared = True
            except OSError as exc:
                self._write_failed(exc)
                self._prepared = False
        return self._prepared

    def put(self, path: str, digest: str, settings, diagnostics: list[Diagnostic], error: FileError | None) -> None:
        if not self._prepare():
            return
        data = {
            "diagnostics": [_diagnostic_dict(d) for d in diagnostics],
            "error": error.reason if error is not None else None,
        }
        target = self._entry_path(self.key(path, digest, settings))
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            _atomic_write(target, json.dumps(data, separators=(",", ":")).encode())
        except OSError as exc:
            self._write_failed(exc)

    def _write_failed(self, exc: OSError) -> None:
        if self.write_error is None:
            self.write_error = exc.strerror or str(exc)


def _atomic_write(target: str, data: bytes) -> None:
    # Two concurrent runs may store the same entry: each writes its own temporary file and
    # renames it into place, so a reader sees either a whole entry or none.
    import tempfile  # here: a run answered from the cache writes nothing

    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# -- (de)serialising diagnostics -------------------------------------------------------------


def _loc(loc: Location) -> list[int]:
    return [loc.row, loc.column]


def _diagnostic_dict(d: Diagnostic) -> dict:
    out = {
        "code": d.code, "name": d.name, "message": d.message, "url": d.url,
        "start": _loc(d.start), "end": _loc(d.end), "offsets": [d.start_offset, d.end_offset],
    }
    if d.fix is not None:
        out["fix"] = {
            "applicability": d.fix.applicability.value,
            "message": d.fix.message,
            "edits": [[e.start, e.end, e.content, _loc(e.start_loc), _loc(e.end_loc)] for e in d.fix.edits],
        }
    return out


def _diagnostic(data: dict, path: str) -> Diagnostic:
    fix = None
    if "fix" in data:
        f = data["fix"]
        fix = Fix(
            Applicability(f["applicability"]),
            f["message"],
            tuple(Edit(s, e, c, Location(*sl), Location(*el)) for s, e, c, sl, el in f["edits"]),
        )
    return Diagnostic(
        code=data["code"], name=data["name"], message=data["message"], path=path,
        start=Location(*data["start"]), end=Location(*data["end"]),
        start_offset=data["offsets"][0], end_offset=data["offsets"][1], fix=fix, url=data["url"],
    )


# -- trainlint clean --------------------------------------------------------------------------


def is_cache_dir(directory: str) -> bool:
    """Only a folder trainlint made (its CACHEDIR.TAG says so) is ever deleted."""
    try:
        with open(os.path.join(directory, "CACHEDIR.TAG"), encoding="utf-8") as fh:
            return "created by trainlint" in fh.read()
    except OSError:
        return False


def clean(directory: str) -> bool:
    """Removes the cache folder; True if there was one. Raises ValueError for a folder that is
    not a trainlint cache (so `--cache-dir ~` can never delete a home folder)."""
    if not os.path.lexists(directory):
        return False
    if os.path.islink(directory) or not os.path.isdir(directory) or not is_cache_dir(directory):
        raise ValueError(f"{directory}: not a trainlint cache folder (no trainlint CACHEDIR.TAG); left alone")
    import shutil

    shutil.rmtree(directory)
    return True


@click.command()
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar=ENV_DIR, default=None,
              help="The cache folder to remove [default: the project root's .trainlint_cache, and "
                   "every trainlint cache below the current folder].")
def clean_command(cache_dir: str | None) -> None:
    """Remove the results cache."""
    folders = [cache_dir] if cache_dir is not None else [default_dir()] + _caches_below(".")
    removed = []
    try:
        for folder in dict.fromkeys(os.path.normpath(f) for f in folders):
            if clean(folder):
                removed.append(folder)
    except (ValueError, OSError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    for folder in removed:
        click.echo(f"Removed {folder}")
    if not removed:
        click.echo(f"No cache at {cache_dir or default_dir()}")


def _caches_below(top: str) -> list[str]:
    """trainlint's cache folders under top (runs from subfolders before caches were kept at the
    project root, or with other settings), as `ruff clean` finds its own."""
    found = []
    for root, dirs, _files in os.walk(top):
        if DEFAULT_DIR in dirs and is_cache_dir(os.path.join(root, DEFAULT_DIR)):
            found.append(os.path.join(root, DEFAULT_DIR))
        dirs[:] = [d for d in dirs if d != DEFAULT_DIR and not d.startswith(".git")]
    return found
