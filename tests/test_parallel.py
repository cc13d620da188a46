"""--jobs N reports exactly what one job reports, in the same order, and fixes the same way."""

import os

import pytest
from click.testing import CliRunner

from trainlint.cli import cli
from trainlint.config import Settings, SettingsResolver
from trainlint.registry import all_rules
from trainlint.runner import Mode, _execute, run


@pytest.fixture
def project(tmp_path, monkeypatch):
    """Every rule's invalid cases as files of very different sizes (so size-ordered scheduling
    really reorders them), plus clean, broken and undecodable files."""
    monkeypatch.chdir(tmp_path)
    n = 0
    for rule in all_rules():
        for case in rule.invalid:
            n += 1
            folder = tmp_path / f"pkg{n % 3}"
            folder.mkdir(exist_ok=True)
            padding = "\n".join(f"x{i} = {i}" for i in range((n * 37) % 400))
            (folder / f"case_{rule.code}_{n}.py").write_text(case.code + "\n" + padding + "\n")
    (tmp_path / "clean.py").write_text("import os\n")
    (tmp_path / "broken.py").write_text("from torch.utils.data import DataLoader\ndef f(:\n")
    (tmp_path / "latin.py").write_bytes(b"# DataLoader \xff\xfe\n")
    return tmp_path


def _summary(result):
    return (
        [f.path for f in result.files],
        [(d.path, d.code, d.start, d.end, d.message, d.fix) for d in result.diagnostics],
        [str(e) for e in result.errors],
    )


def _resolver():
    resolver = SettingsResolver()
    resolver.fixed = Settings(select=("ALL",))
    return resolver


@pytest.mark.parametrize("jobs", [2, 3, 8])
def test_same_findings_as_one_job(project, jobs):
    one = run(["."], _resolver(), jobs=1)
    many = run(["."], _resolver(), jobs=jobs)
    assert _summary(many) == _summary(one)
    assert len(one.diagnostics) > 10 and one.errors  # the fixture exercises findings and errors


def test_results_keep_discovery_order(project):
    result = run(["."], _resolver(), jobs=2)
    paths = [f.path for f in result.files]
    assert paths == sorted(paths)


def test_cli_output_identical(project):
    runner = CliRunner()
    one = runner.invoke(cli, ["check", "--no-cache", "--select", "ALL", "--jobs", "1", "."])
    two = runner.invoke(cli, ["check", "--no-cache", "--select", "ALL", "--jobs", "2", "."])
    assert one.exit_code == two.exit_code == 2  # findings, and files that could not be checked
    assert one.output == two.output


def test_fix_with_jobs_writes_the_same(project, tmp_path_factory):
    before = {p: open(p, "rb").read() for p in _py_files(project)}
    run(["."], _resolver(), Mode(fix=True, unsafe_fixes=True), jobs=1)
    after_one = {p: open(p, "rb").read() for p in _py_files(project)}
    for path, data in before.items():
        with open(path, "wb") as fh:
            fh.write(data)
    run(["."], _resolver(), Mode(fix=True, unsafe_fixes=True), jobs=2)
    after_two = {p: open(p, "rb").read() for p in _py_files(project)}
    assert after_two == after_one
    assert after_one != before


def test_pool_runs_in_other_processes(project, tmp_path_factory, monkeypatch):
    """jobs > 1 really fans out (the work is done in worker processes), and jobs=1 does not."""
    import trainlint.runner as runner

    log = tmp_path_factory.mktemp("pids") / "pids.txt"
    real = runner._check_file

    def recording(path, settings, mode):
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        return real(path, settings, mode)

    monkeypatch.setattr(runner, "_check_file", recording)
    items = [(i, p, Settings(), Mode()) for i, p in enumerate(_py_files(project))]
    got = sorted(_execute(items, 2), key=lambda r: r[0])
    assert [r[1].path for r in got] == [p for _i, p, _s, _m in items]
    pids = set(log.read_text().split())
    assert str(os.getpid()) not in pids and len(pids) >= 1

    log.write_text("")
    list(_execute(items, 1))
    assert set(log.read_text().split()) == {str(os.getpid())}


def test_jobs_option_validated():
    out = CliRunner().invoke(cli, ["check", "--jobs", "0", "."])
    assert out.exit_code == 2
    assert "--jobs" in out.output


def _py_files(root):
    return sorted(os.path.join(r, n) for r, _d, ns in os.walk(root) for n in ns if n.endswith(".py"))


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_console_entry_point_output_and_status_are_whole(project, jobs):
    # The console entry point tunes the collector and leaves through os._exit after a check:
    # every finding must still reach a pipe, with the exit status, and no output is lost.
    import json
    import subprocess
    import sys

    from _paths import ROOT

    env = dict(os.environ, PYTHONPATH=ROOT)
    base = [sys.executable, "-m", "trainlint", "check", "--no-cache", "--select", "ALL", "--jobs", jobs]
    proc = subprocess.run(base + ["--output-format", "json", "."], capture_output=True, text=True, env=env)
    assert proc.returncode == 2, proc.stderr  # broken.py and latin.py cannot be checked
    found = json.loads(proc.stdout)
    expected = CliRunner().invoke(cli, ["check", "--no-cache", "--select", "ALL", "--jobs", "1",
                                        "--output-format", "json", "."])
    assert found == json.loads(expected.stdout) and len(found) > 20
    assert "broken.py" in proc.stderr
    clean = subprocess.run(base + ["clean.py"], capture_output=True, text=True, env=env)
    assert clean.returncode == 0 and "All checks passed" in clean.stdout


def test_a_worker_that_dies_costs_one_file_not_the_run(project, monkeypatch):
    """A worker killed while checking one file (the out-of-memory killer's SIGKILL; a crash in
    native code is the same to the parent): that file is reported as an internal error naming
    the signal, every other file is checked as with one job."""
    import signal

    import trainlint.runner as runner

    victim = sorted(_py_files("."))[3]
    real = runner._check_file

    def crashing(path, settings, mode):
        if os.path.samefile(path, victim):
            os.kill(os.getpid(), signal.SIGKILL)
        return real(path, settings, mode)

    one = run(["."], _resolver(), jobs=1)
    monkeypatch.setattr(runner, "_check_file", crashing)
    two = run(["."], _resolver(), jobs=2)
    crashed = [f for f in two.files if f.error is not None and f.error.internal]
    assert [os.path.normpath(f.path) for f in crashed] == [os.path.normpath(victim)]
    assert "was killed by SIGKILL" in str(crashed[0].error)
    keep = [f.path for f in one.files if os.path.normpath(f.path) != os.path.normpath(victim)]
    assert [d for d in two.diagnostics if d.path in keep] == [d for d in one.diagnostics if d.path in keep]
