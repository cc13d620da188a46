"""The results cache: hits and misses, what invalidates an entry, its folder, `trainlint clean`."""

import errno
import json
import os

import pytest
from click.testing import CliRunner

import trainlint.cache as cache_mod
import trainlint.engine
from trainlint.cache import Cache, clean
from trainlint.cli import cli
from trainlint.config import Settings, SettingsResolver
from trainlint.runner import Mode, run

FLAGGED = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)\n"
CLEAN = "import os\nprint(os.getcwd())\n"


def _resolver(settings=None):
    resolver = SettingsResolver()
    if settings is not None:
        resolver.fixed = settings
    return resolver


def _lint(paths, cache, settings=None, mode=Mode()):
    return run([str(p) for p in paths], _resolver(settings), mode, jobs=1, cache=cache)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(FLAGGED)
    (tmp_path / "util.py").write_text(CLEAN)
    return tmp_path


def _refuse_parsing(monkeypatch):
    """Makes any real analysis fail, to prove a result came from the cache."""

    def refuse(text):
        raise AssertionError("parsed although the cache should have answered")

    monkeypatch.setattr(trainlint.engine, "parse", refuse)


def _codes(result):
    return [(d.path, d.code, d.start.row, d.start.column) for d in result.diagnostics]


def test_second_run_hits_and_matches(project, monkeypatch):
    cache = Cache(str(project / "c"))
    first = _lint(["."], cache)
    assert (cache.hits, cache.misses) == (0, 2)
    assert _codes(first), "the fixture file should have a finding"

    again = Cache(str(project / "c"))
    _refuse_parsing(monkeypatch)
    second = _lint(["."], again)
    assert (again.hits, again.misses) == (2, 0)
    assert _codes(second) == _codes(first)
    # Everything a reporter reads survives the round trip, fixes included.
    assert second.diagnostics == first.diagnostics
    assert second.source_of(second.diagnostics[0].path) == FLAGGED


def test_content_change_misses(project):
    _lint(["."], Cache("c"))
    (project / "util.py").write_text(CLEAN + "x = 1\n")
    cache = Cache("c")
    _lint(["."], cache)
    assert (cache.hits, cache.misses) == (1, 1)


def test_settings_change_misses(project):
    _lint(["."], Cache("c"), Settings())
    cache = Cache("c")
    result = _lint(["."], cache, Settings(ignore=("TL101",)))
    assert cache.hits == 0
    assert "TL101" not in {d.code for d in result.diagnostics}
    # Back to the first settings: their entries are still there.
    cache = Cache("c")
    _lint(["."], cache, Settings())
    assert cache.hits == 2


def test_config_file_change_misses(project):
    (project / "pyproject.toml").write_text("[tool.trainlint]\nignore = []\n")
    _lint(["."], Cache("c"))
    (project / "pyproject.toml").write_text('[tool.trainlint]\nignore = ["TL101"]\n')
    cache = Cache("c")
    result = _lint(["."], cache)
    assert cache.hits == 0
    assert "TL101" not in {d.code for d in result.diagnostics}


def test_version_change_misses(project, monkeypatch):
    _lint(["."], Cache("c"))
    monkeypatch.setattr(cache_mod, "__version__", "999.0")
    monkeypatch.setattr(cache_mod, "_code_fingerprint", None)
    cache = Cache("c")
    _lint(["."], cache)
    assert (cache.hits, cache.misses) == (0, 2)


def test_code_change_misses(project, monkeypatch):
    """Editing trainlint or a rule (seen as another size or mtime) must not serve old findings."""
    _lint(["."], Cache("c"))
    real_stat = os.stat
    rule_file = os.path.abspath(trainlint.engine.__file__)

    def touched(path, *args, **kwargs):
        st = real_stat(path, *args, **kwargs)
        if os.path.abspath(path) == rule_file:
            return os.stat_result((*st[:8], st.st_mtime + 1, st.st_ctime))
        return st

    monkeypatch.setattr(cache_mod, "_code_fingerprint", None)
    monkeypatch.setattr(cache_mod.os, "stat", touched)
    cache = Cache("c")
    _lint(["."], cache)
    assert cache.hits == 0


def test_hit_reports_the_path_as_given_now(project, monkeypatch):
    # A config file fixes the settings root; without one the root is the working folder,
    # which is part of the key (per-file-ignores are relative to it).
    (project / "pyproject.toml").write_text("[tool.trainlint]\nignore = []\n")
    (project / "pkg").mkdir()
    (project / "pkg" / "train.py").write_text(FLAGGED)
    _lint([os.path.join("pkg", "train.py")], Cache(str(project / "c")))
    monkeypatch.chdir(project / "pkg")
    cache = Cache(str(project / "c"))
    result = _lint(["train.py"], cache)
    assert cache.hits == 1
    assert {d.path for d in result.diagnostics} == {"train.py"}


def test_folder_has_cachedir_tag_and_gitignore(project):
    _lint(["."], Cache("c"))
    tag = (project / "c" / "CACHEDIR.TAG").read_text()
    assert tag.startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (project / "c" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_corrupt_entry_is_a_miss(project):
    _lint(["."], Cache("c"))
    for root, _dirs, names in os.walk(project / "c"):
        for name in names:
            if name.endswith(".json"):
                with open(os.path.join(root, name), "w") as fh:
                    fh.write('{"diagnostics": [{"code": ')
    cache = Cache("c")
    result = _lint(["."], cache)
    assert (cache.hits, cache.misses) == (0, 2)
    assert result.diagnostics


def test_unwritable_cache_still_lints(project):
    (project / "c").write_text("a file where the folder should be")
    cache = Cache("c")
    result = _lint(["."], cache)
    assert result.diagnostics and not result.errors
    assert cache.write_error is not None  # kept for the command line's warning; a library run prints nothing


def test_an_unwritable_cache_is_warned_about_once(project):
    # Every file's entry fails to be written; one warning says so, rather than none (every run
    # as slow as the first, unexplained) or one per file.
    (project / "more.py").write_text(FLAGGED)
    (project / "blocker").write_text("a file where the cache's folder should be made")
    out = CliRunner().invoke(cli, ["check", "--cache-dir", "blocker/c", "."])
    assert out.exit_code == 1 and "train.py" in out.stdout and "more.py" in out.stdout
    assert out.stderr.count("warning: cannot write the cache") == 1
    assert out.stderr.startswith(f"warning: cannot write the cache at blocker/c: {os.strerror(errno.ENOTDIR)}\n")
    assert CliRunner().invoke(cli, ["check", "-s", "--cache-dir", "blocker/c", "."]).output == ""
    assert "warning" not in CliRunner().invoke(cli, ["check", "--cache-dir", "c", "."]).stderr


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="running as root: permission bits do not stop root from writing (CAP_DAC_OVERRIDE)")
def test_a_read_only_cache_folder_is_warned_about(project):
    assert CliRunner().invoke(cli, ["check", "--cache-dir", "c", "."]).exit_code == 1  # made and filled
    (project / "new.py").write_text(FLAGGED)  # a miss: its entry would be written
    folders = [root for root, _, _ in os.walk(project / "c")]
    for folder in folders:
        os.chmod(folder, 0o555)
    try:
        out = CliRunner().invoke(cli, ["check", "--cache-dir", "c", "."])
    finally:
        for folder in folders:
            os.chmod(folder, 0o755)
    assert out.exit_code == 1 and "new.py" in out.stdout and "train.py" in out.stdout
    assert out.stderr == f"warning: cannot write the cache at c: {os.strerror(errno.EACCES)}\n"


def test_parse_errors_are_cached_too(project, monkeypatch):
    # The trigger word gets it past the text prefilter to the parser.
    (project / "broken.py").write_text("from torch.utils.data import DataLoader\ndef f(:\n")
    first = _lint(["broken.py"], Cache("c"))
    assert first.errors
    _refuse_parsing(monkeypatch)
    cache = Cache("c")
    second = _lint(["broken.py"], cache)
    assert cache.hits == 1
    assert [str(e) for e in second.errors] == [str(e) for e in first.errors]


def test_fix_mode_still_fixes_a_cached_file(project):
    (project / "loop.py").write_text(FLAGGED)
    _lint(["loop.py"], Cache("c"))
    result = _lint(["loop.py"], Cache("c"), mode=Mode(fix=True, unsafe_fixes=True))
    # The file was analysed again (not answered from the cache): fixable findings got fixed.
    assert result.fixed >= 1
    assert (project / "loop.py").read_text() != FLAGGED


def test_clean_removes_only_a_trainlint_cache(project, tmp_path):
    _lint(["."], Cache("c"))
    assert clean(str(project / "c")) is True
    assert not (project / "c").exists()
    assert clean(str(project / "c")) is False
    other = tmp_path / "precious"
    other.mkdir()
    (other / "data.txt").write_text("keep me")
    with pytest.raises(ValueError):
        clean(str(other))
    assert (other / "data.txt").exists()


def test_cli_cache_options_and_clean(project):
    runner = CliRunner()
    out = runner.invoke(cli, ["check", "--no-cache", "--cache-dir", "c1", "."])
    assert out.exit_code == 1, out.output
    assert not (project / "c1").exists()

    out = runner.invoke(cli, ["check", "--cache-dir", "c2", "."])
    assert out.exit_code == 1, out.output
    assert (project / "c2" / "CACHEDIR.TAG").is_file()
    again = runner.invoke(cli, ["check", "--cache-dir", "c2", "."])
    assert again.output == out.output

    out = runner.invoke(cli, ["clean", "--cache-dir", "c2"])
    assert out.exit_code == 0 and not (project / "c2").exists()
    out = runner.invoke(cli, ["clean", "--cache-dir", "."])
    assert out.exit_code == 2 and (project / "train.py").exists()


def test_default_folder_is_trainlint_cache(project):
    out = CliRunner().invoke(cli, ["check", "."], env={"TRAINLINT_CACHE_DIR": None})
    assert out.exit_code == 1, out.output
    assert (project / ".trainlint_cache" / "CACHEDIR.TAG").is_file()
    # The cache folder is never linted itself, and `trainlint clean` removes it.
    assert ".trainlint_cache" not in out.output
    assert CliRunner().invoke(cli, ["clean"], env={"TRAINLINT_CACHE_DIR": None}).exit_code == 0
    assert not (project / ".trainlint_cache").exists()


def test_runs_from_subfolders_share_the_project_roots_cache(project, monkeypatch):
    # As Ruff's .ruff_cache: at the folder of the configuration file, wherever the run starts.
    (project / "pyproject.toml").write_text("[tool.trainlint]\n")
    sub = project / "src" / "deep"
    sub.mkdir(parents=True)
    (sub / "t.py").write_text((project / "train.py").read_text())
    monkeypatch.chdir(sub)
    out = CliRunner().invoke(cli, ["check", "."], env={"TRAINLINT_CACHE_DIR": None})
    assert out.exit_code == 1, out.output
    assert (project / ".trainlint_cache" / "CACHEDIR.TAG").is_file()
    assert not (project / "src" / ".trainlint_cache").exists()
    # `trainlint clean` from the root removes it, and any trainlint cache below.
    CliRunner().invoke(cli, ["check", "--cache-dir", ".trainlint_cache", "."], env={"TRAINLINT_CACHE_DIR": None})
    assert (sub / ".trainlint_cache" / "CACHEDIR.TAG").is_file()
    monkeypatch.chdir(project)
    cleaned = CliRunner().invoke(cli, ["clean"], env={"TRAINLINT_CACHE_DIR": None})
    assert cleaned.exit_code == 0 and cleaned.output.splitlines() == [
        "Removed .trainlint_cache", "Removed src/deep/.trainlint_cache"]
    assert not (project / ".trainlint_cache").exists() and not (sub / ".trainlint_cache").exists()


def test_entries_are_plain_json(project):
    _lint(["."], Cache("c"))
    entries = [os.path.join(r, n) for r, _d, ns in os.walk(project / "c") for n in ns if n.endswith(".json")]
    assert len(entries) == 2
    for entry in entries:
        with open(entry) as fh:
            data = json.load(fh)
        assert set(data) == {"diagnostics", "error"}


WARM_NEVER_IMPORTS = ("importlib.metadata", "trainlint.verify", "trainlint.github_api", "urllib.request",
                      "multiprocessing", "trainlint.pool", "tempfile", "difflib")


def test_warm_run_never_imports_libcst(project):
    """A run answered entirely from the cache must not pay for importing libcst (a few hundred
    milliseconds, most of a warm run): nothing on that path may import the engine or a rule."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from trainlint.cli import cli\n"
        "try:\n"
        "    cli(['check', '--cache-dir', 'c', '--select', 'ALL', '.'], prog_name='trainlint')\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write('LIBCST=%s\\n' % ('libcst' in sys.modules))\n"
        f"heavy = sorted(m for m in {WARM_NEVER_IMPORTS!r} if m in sys.modules)\n"
        "sys.stderr.write('HEAVY=%s\\n' % heavy)\n"
    )
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=project)
    assert "LIBCST=True" in first.stderr, first.stderr  # the cold run really analysed
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=project)
    assert "LIBCST=False" in second.stderr, second.stderr
    # Nor the other imports a cached check does not need (each costs milliseconds of a ~0.1 s run):
    # plugin metadata when no third-party pack is installed, the verifier, the GitHub client, a pool,
    # what only writing (tempfile) or --diff (difflib) needs.
    assert "HEAVY=[]" in second.stderr, second.stderr
    assert second.stdout == first.stdout



def test_editing_the_rules_of_another_checkout_changes_the_fingerprint(tmp_path):
    """A second checkout run with PYTHONPATH (a worktree) beside an editable install of the first:
    the registry loads the second's rules/, so its edits must change the code fingerprint. Before
    the rules were imported, the fingerprint hashed the installed checkout's rules instead, and a
    warm run served findings of the rules as they were before the edit."""
    import shutil
    import subprocess
    import sys

    from _paths import ROOT

    other = tmp_path / "other_checkout"
    for part in ("trainlint", "rules"):
        shutil.copytree(os.path.join(ROOT, part), other / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), other / "pyproject.toml")
    env = {**os.environ, "PYTHONPATH": str(other)}
    code = "import trainlint.cache as c; print(c.code_fingerprint())"

    def fingerprint():
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout

    before = fingerprint()
    rule = other / "rules" / "dataloader" / "tl101_dataloader_no_workers.py"
    rule.write_text(rule.read_text().replace("loads batches in the training process", "EDITED MESSAGE"))
    assert fingerprint() != before
