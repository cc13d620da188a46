"""User errors: a plain message and exit status 2, never a traceback."""

from __future__ import annotations

import json


def _assert_user_error(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback (most recent call last)" not in result.stdout
    text = result.stderr
    for needle in needles:
        assert needle in text, text


def test_crashing_script_shows_its_stderr_tail(verify, fixtures):
    result, data = verify(fixtures / "crash.py", "--fixed", fixtures / "crash.py",
                          "--repeats", "1")
    # The script's own traceback is part of its stderr tail; the verifier adds none of its own.
    _assert_user_error(result, "the original script exited with status 1",
                       "loading the dataset from ./missing-data", "FileNotFoundError")
    # The traceback starts at the script: runpy's and the harness's frames were shown above it.
    tail = result.stderr.split("Traceback (most recent call last):", 1)[1]
    assert tail.lstrip().startswith(f'File "{fixtures / "crash.py"}"'), tail
    assert "harness.py" not in result.stderr and "runpy" not in result.stderr
    # The JSON report is written on an error too (nothing was written), with the error in it.
    assert data["verdict"] == "error" and "FileNotFoundError" in data["error"]
    assert data["speedup"] is None and data["rows"] == [] and data["warmup"] == 5


def test_every_report_has_the_same_keys(verify, fixtures, tmp_path):
    # "nothing to fix" lacked script_args, cwd, fixed_file, warmup, seed and rows, and --report
    # DIR wrote nothing for it; a refused option wrote no JSON at all.
    measured, data = verify(fixtures / "tight_loop.py", "--fixed", fixtures / "tight_loop.py",
                            "--steps", "2", "--warmup", "1", "--repeats", "1")
    assert measured.exit_code == 0, measured.output
    keys = set(data)
    measured_rows = data["rows"]
    assert data["error"] is None
    nothing, data = verify(fixtures / "tight_loop.py", "--rule", "TL101", "--report",
                           tmp_path / "out")
    assert nothing.exit_code == 0, nothing.output
    assert set(data) == keys and data["verdict"] == "nothing to fix"
    assert data["rows"][0]["note"].startswith("TL101 found nothing to fix")
    # ... and so does every row: a "nothing to fix" row had five of the measured row's keys.
    assert set(data["rows"][0]) == set(measured_rows[0]) and data["rows"][0]["after"] is None
    assert measured_rows[0]["after"]["step_s"] and measured_rows[0]["after"]["losses"]
    assert (tmp_path / "out" / "verify.json").exists()
    refused, data = verify(fixtures / "tight_loop.py", "--fixed", fixtures / "tight_loop.py",
                           "--steps", "0")
    assert refused.exit_code == 2
    assert set(data) == keys and data["error"] == "--steps must be at least 1 (got 0)"


def test_script_without_optimizer_step_is_said_plainly(verify, fixtures):
    result, _ = verify(fixtures / "no_optimizer.py", "--fixed", fixtures / "no_optimizer.py",
                       "--repeats", "1")
    _assert_user_error(result, "without a single optimizer step")


def test_script_that_stops_early_is_said_plainly(verify, fixtures):
    result, _ = verify(fixtures / "few_steps.py", "--fixed", fixtures / "few_steps.py",
                       "--steps", "10", "--warmup", "2", "--repeats", "1")
    _assert_user_error(result, "finished after 3 optimizer steps, fewer than the 12 asked for")


def test_missing_script(verify, tmp_path):
    result, _ = verify(tmp_path / "nope.py", "--fixed", tmp_path / "nope.py")
    _assert_user_error(result, "nope.py: no such file")


def test_a_notebook_is_not_run(verify, tmp_path):
    notebook = tmp_path / "train.ipynb"
    notebook.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n')
    result, _ = verify(notebook, "--rule", "TL101")
    _assert_user_error(result, "train.ipynb: a notebook cannot be run as a script", "nbconvert --to script")


def test_rule_and_fixed_together(verify, fixtures):
    result, _ = verify(fixtures / "tight_loop.py", "--rule", "TL101", "--fixed",
                       fixtures / "tight_loop_noop.py")
    _assert_user_error(result, "--rule and --fixed both name the fixed version: give one of them")


def test_neither_rule_nor_fixed(verify, fixtures):
    result, _ = verify(fixtures / "tight_loop.py")
    _assert_user_error(result, "name the fixed version: --rule CODES (trainlint's fixes) or --fixed FILE")


def test_the_fixed_version_named_after_the_script_args_is_said_so(verify, fixtures):
    # Everything after `--` goes to the script: the user named --fixed, only in the wrong place.
    result, _ = verify(fixtures / "tight_loop.py", "--", "--steps", "50", "--fixed", fixtures / "tight_loop_noop.py")
    _assert_user_error(result, "name the fixed version before `--`: `--fixed` came after it, which hands it to the script")


def test_a_fixed_file_that_does_not_compile_is_refused_before_any_run(verify, fixtures, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\ndef f(:\n    pass\n")
    result, _ = verify(fixtures / "tight_loop.py", "--fixed", broken, "--steps", "5", "--warmup", "1", "--repeats", "1")
    _assert_user_error(result, "broken.py: cannot be run: invalid syntax")
    assert "repeat 1/1" not in result.output  # no run of the original first


def test_each_without_rules(verify, fixtures):
    result, _ = verify(fixtures / "tight_loop.py", "--fixed", fixtures / "tight_loop_noop.py",
                       "--each")
    _assert_user_error(result, "--each needs --rule")


def test_bad_numbers(verify, fixtures):
    for args, needle in ((("--steps", "0"), "--steps must be at least 1"),
                         (("--warmup", "0"), "--warmup must be at least 1"),
                         (("--repeats", "0"), "--repeats must be at least 1"),
                         (("--loss-rtol", "-1"), "--loss-rtol must be"),
                         # accepted before, then every run "did not finish within 0 s"
                         (("--timeout", "0"), "--timeout must be a number of seconds above 0")):
        result, _ = verify(fixtures / "tight_loop.py", "--fixed", fixtures / "tight_loop_noop.py",
                           *args)
        _assert_user_error(result, needle)


def test_script_that_does_not_compile(verify, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def broken(:\n")
    result, _ = verify(bad, "--fixed", bad)
    _assert_user_error(result, "cannot be run")


def test_unknown_rule_code(verify, fixtures):
    result, _ = verify(fixtures / "tight_loop.py", "--rule", "TL999")
    _assert_user_error(result, "unknown rule code(s): TL999")


def test_rule_that_finds_nothing_measures_nothing(verify, fixtures):
    # tight_loop.py has no DataLoader: nothing to fix, nothing is run.
    result, data = verify(fixtures / "tight_loop.py", "--rule", "TL101")
    assert result.exit_code == 0, result.output
    assert "found nothing to fix" in result.stdout
    assert data["verdict"] == "nothing to fix"


def test_timeout_stops_the_run(verify, fixtures):
    result, _ = verify(fixtures / "hang.py", "--fixed", fixtures / "hang.py", "--repeats", "1",
                       "--timeout", "4")
    _assert_user_error(result, "did not finish 25 steps within 4 s")


RAISES_AT_STEP_7 = """
import torch
m = torch.nn.Linear(2, 1); o = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(1, 100):
    m(torch.ones(2, 2)).sum().backward(); o.step(); o.zero_grad()
    if step == 7:
        raise RuntimeError("bad batch")
"""


def test_a_failure_says_how_many_steps_the_run_made(verify, tmp_path):
    # The message said only "exited with status 1": not whether the script died at its first
    # step or near the end (the harness recorded nothing on a failure).
    script = tmp_path / "train.py"
    script.write_text(RAISES_AT_STEP_7)
    result, data = verify(script, "--fixed", script, "--repeats", "1")
    _assert_user_error(result, "exited with status 1 after 7 of 25 optimizer steps",
                       "RuntimeError: bad batch")
    assert "after 7 of 25 optimizer steps" in data["error"]


HANGS_AFTER_STEP_5 = """
import time, torch
m = torch.nn.Linear(2, 1); o = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(1, 100):
    m(torch.ones(2, 2)).sum().backward(); o.step(); o.zero_grad()
    if step == 5:
        time.sleep(600)
"""


def test_a_timeout_says_how_far_the_run_got(verify, tmp_path):
    # "did not finish 25 steps within N s" alone did not tell a script that hung before its
    # first step from one that stopped mid-way.
    script = tmp_path / "train.py"
    script.write_text(HANGS_AFTER_STEP_5)
    result, _ = verify(script, "--fixed", script, "--repeats", "1", "--timeout", "12")
    _assert_user_error(result, "within 12 s: it reached 5 of 25 optimizer steps, then no step for")


LOGS_TO_STDOUT = """
import logging, sys, torch
logging.basicConfig(stream=sys.stdout, level=logging.INFO)
m = torch.nn.Linear(2, 1); o = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(20):
    m(torch.ones(2, 2)).sum().backward(); o.step(); o.zero_grad()
    if step == 2:
        logging.error("could not open shard 7")
        sys.exit(1)
"""


def test_a_script_that_logs_its_error_to_stdout_shows_it(verify, tmp_path):
    # Only stderr's tail was shown, empty here: "Its stderr ends with:" and nothing after it.
    script = tmp_path / "train.py"
    script.write_text(LOGS_TO_STDOUT)
    result, _ = verify(script, "--fixed", script, "--repeats", "1")
    _assert_user_error(result, "exited with status 1", "Its stdout ends with:",
                       "ERROR:root:could not open shard 7")


PRINTS_THEN_HANGS = """
import sys, time
print("waiting for the data server", flush=True)
print("still waiting", file=sys.stderr)
time.sleep(600)
"""


def test_timeout_shows_what_the_script_printed(verify, tmp_path):
    # The timeout message said only how long it waited, not where the script was.
    script = tmp_path / "train.py"
    script.write_text(PRINTS_THEN_HANGS)
    result, _ = verify(script, "--fixed", script, "--repeats", "1", "--timeout", "4")
    _assert_user_error(result, "within 4 s", "still waiting", "waiting for the data server")


def test_verifier_without_the_linter(fixtures, tmp_path):
    """A GPU machine may have torch but not libcst: --fixed still runs, --rule says what is missing."""
    import subprocess
    import sys

    blocked = "import sys; sys.modules['libcst'] = None; import runpy; " \
              "runpy.run_module('trainlint.verify', run_name='__main__')"
    script = fixtures / "tight_loop.py"

    def run(*args):
        return subprocess.run([sys.executable, "-c", blocked, str(script), *args],
                              capture_output=True, text=True, timeout=300)

    by_rule = run("--rule", "TL101")
    assert by_rule.returncode == 2, by_rule.stderr
    assert "--rule needs trainlint's linter" in by_rule.stderr
    assert "--fixed FILE" in by_rule.stderr and "Traceback" not in by_rule.stderr

    report = tmp_path / "r.json"
    by_file = run("--fixed", str(script), "--steps", "3", "--warmup", "1", "--repeats", "1",
                  "--json", str(report))
    assert by_file.returncode == 0, by_file.stderr
    assert report.exists()


RANK_CRASH = """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for it in range(20):
    model(torch.randn(2, 4)).pow(2).mean().backward(); opt.step(); opt.zero_grad()
    if it == 2 and dist.get_rank() == 1: raise ValueError("rank 1 broke")
"""


def test_a_crash_on_one_rank_shows_that_ranks_traceback(verify, tmp_path):
    # Before: the rank aborted in finalization (SIGABRT, "terminate called without an active
    # exception") and the message was the tail of torchrun's summary, without the ValueError.
    script = tmp_path / "ddp_crash.py"
    script.write_text(RANK_CRASH)
    result, _ = verify(script, "--fixed", script, "--nproc-per-node", "2", "--steps", "5",
                       "--warmup", "1", "--repeats", "1")
    _assert_user_error(result, "torchrun exited with status 1: rank 1 failed first",
                       'raise ValueError("rank 1 broke")', "ValueError: rank 1 broke")
    assert "harness.py" not in result.stderr


def test_a_rank_that_calls_sys_exit_is_named_with_its_exit_code(verify, tmp_path):
    # Before: rank 1's sys.exit(2) left no record, and the message named rank 0, whose gloo
    # "Connection closed by peer" came after rank 1 had gone.
    script = tmp_path / "ddp_exit.py"
    # Its stdout (why it exits) was left out of the message too: the run's stdout mixes every
    # rank's lines, and only the traceback was shown.
    script.write_text(RANK_CRASH.replace('raise ValueError("rank 1 broke")',
                                         'print("[rank1] data shard exhausted", flush=True); '
                                         "sys.exit(2)")
                      .replace("import torch,", "import sys, torch,"))
    result, _ = verify(script, "--fixed", script, "--nproc-per-node", "2", "--steps", "5",
                       "--warmup", "1", "--repeats", "1")
    # The headline's status is torchrun's (1): "exited with status 1: rank 1 failed first" and
    # then "exit status 2" read as a contradiction; it now says whose status and what the rank did.
    _assert_user_error(result, "torchrun exited with status 1: rank 1 called sys.exit(2) first, "
                       "after 3 of 6 optimizer steps", "the rank's exit status 2",
                       "Its stdout ends with:\n[rank1] data shard exhausted")


WRITES_BESIDE = """
import torch
m = torch.nn.Linear(2, 1); o = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(10):
    m(torch.ones(2, 2)).sum().backward(); o.step(); o.zero_grad()
    torch.save({"step": step}, "last.pt")  # a checkpoint a later run could resume from
"""


def test_a_script_that_writes_into_its_directory_is_warned_about(verify, tmp_path):
    # Runs that leave files a later run reads (resuming from last.pt) influence each other;
    # nothing said so before.
    project = tmp_path / "project"
    project.mkdir()
    script = project / "train.py"
    script.write_text(WRITES_BESIDE)
    result, data = verify(script, "--fixed", script, "--steps", "2", "--warmup", "1",
                          "--repeats", "1")
    assert result.exit_code == 0, result.output
    assert data["directory_writes"] == ["last.pt"]
    assert "wrote into its working directory (last.pt)" in result.stdout


QUIET_SCRIPT = WRITES_BESIDE.replace('    torch.save({"step": step}, "last.pt")  # a checkpoint a later run could resume from\n', "")


def test_the_verifiers_own_output_redirected_beside_the_script_is_not_its_write(tmp_path):
    # `trainlint verify train.py ... > verify.log 2>&1` from the project folder: the log the
    # verifier's progress lines grow is no file the script wrote (it was warned about).
    import subprocess
    import sys
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(QUIET_SCRIPT)
    with open(project / "verify.log", "wb") as log:
        proc = subprocess.run([sys.executable, "-m", "trainlint", "verify", "train.py", "--fixed", "train.py",
                               "--steps", "2", "--warmup", "1", "--repeats", "1", "--json", str(tmp_path / "r.json")],
                              cwd=project, stdout=log, stderr=subprocess.STDOUT)
    output = (project / "verify.log").read_text()
    assert proc.returncode == 0, output
    assert "wrote into its working directory" not in output
    assert json.loads((tmp_path / "r.json").read_text())["directory_writes"] == []


MP_SPAWN = """
import torch, torch.multiprocessing as mp
def worker(rank):
    m = torch.nn.Linear(2, 1); o = torch.optim.SGD(m.parameters(), lr=0.1)
    for _ in range(3):
        m(torch.ones(1, 2)).sum().backward(); o.step()
if __name__ == "__main__":
    mp.spawn(worker, nprocs=1)
"""


def test_a_script_that_spawns_its_own_training_processes_is_said_so(verify, tmp_path):
    # The message said "a hand-written update loop cannot be measured ... run it with
    # --nproc-per-node N": neither was the cause (the steps happen in the script's children).
    script = tmp_path / "mps.py"
    script.write_text(MP_SPAWN)
    result, _ = verify(script, "--fixed", script, "--steps", "1", "--warmup", "1",
                       "--repeats", "1")
    _assert_user_error(result, "processes the script starts itself", "cannot time")
    assert "hand-written update loop" not in result.stderr


READS_FROM_ROOT = """
import torch
scale = float(open("data/scale.txt").read())  # written for `python scripts/train.py` from the root
m = torch.nn.Linear(2, 1); o = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(6):
    (m(torch.ones(2, 2)).sum() * scale).backward(); o.step(); o.zero_grad()
"""


def test_cwd_runs_a_script_written_for_the_repository_root(verify, tmp_path):
    # The runs start in the script's directory; a script reading paths relative to the
    # repository's root crashed with FileNotFoundError and nothing said how to run it.
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "data" / "scale.txt").write_text("0.5")
    script = root / "scripts" / "train.py"
    script.write_text(READS_FROM_ROOT)
    args = ("--fixed", script, "--steps", "2", "--warmup", "1", "--repeats", "1")

    result, _ = verify(script, *args)
    assert result.exit_code == 2
    assert "FileNotFoundError" in result.output and "--cwd DIR" in result.output

    result, data = verify(script, *args, "--cwd", root)
    assert result.exit_code == 0, result.output
    assert data["cwd"] == str(root.resolve())
    assert data["verdict"] == "no measurable change" or data["losses_match"], data


def test_cwd_must_be_a_directory(verify, fixtures, tmp_path):
    result, _ = verify(fixtures / "tight_loop.py", "--fixed", fixtures / "tight_loop.py",
                       "--cwd", tmp_path / "missing", json_report=False)
    assert result.exit_code == 2
    assert "missing" in result.output


HANGS_WHEN_FIXED = """
import os, sys, time, torch
HANG = False  # True in the fixed version only
m = torch.nn.Linear(2, 1); o = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(8):
    m(torch.ones(2, 2)).sum().backward(); o.step(); o.zero_grad()
    if step == 2 and HANG:
        open(sys.argv[1], "w").write(str(os.getpid()))
        time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] == "Z"  # a zombie has ended
    except FileNotFoundError:
        return True


def test_sigterm_ends_the_run_and_removes_the_copies(tmp_path):
    """SIGTERM (a timeout, a CI cancel, scancel) ended the verifier alone: the script's process
    group ran on orphaned, and the hidden copy beside the script and the temp folder stayed."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import pytest

    pytest.importorskip("torch")
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(HANGS_WHEN_FIXED)
    (project / "train_fixed.py").write_text(HANGS_WHEN_FIXED.replace("HANG = False", "HANG = True"))
    temp = tmp_path / "temp"
    temp.mkdir()
    pid_file = tmp_path / "script.pid"
    env = {**os.environ, "TMPDIR": str(temp)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainlint.verify", str(project / "train.py"), "--fixed",
         str(project / "train_fixed.py"), "--steps", "3", "--warmup", "1", "--repeats", "1",
         "--timeout", "300", "--", str(pid_file)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    script_pid = None
    try:
        deadline = time.monotonic() + 240
        while not (pid_file.exists() and pid_file.read_text()) and proc.poll() is None:
            assert time.monotonic() < deadline, "the fixed version never started"
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()
        script_pid = int(pid_file.read_text())
        assert [p.name for p in project.iterdir() if p.name.startswith(".trainlint-verify-")]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert "stopped by SIGTERM" in err
        assert sorted(p.name for p in project.iterdir()) == ["train.py", "train_fixed.py"]
        assert not [p for p in temp.iterdir() if p.name.startswith("trainlint-verify-")]
        deadline = time.monotonic() + 30
        while not _gone(script_pid):
            assert time.monotonic() < deadline, "the script's process outlived the verifier"
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if script_pid is not None and not _gone(script_pid):
            os.killpg(script_pid, signal.SIGKILL)  # the script leads its own process group


def test_a_crashing_fixed_version_names_its_file_not_the_hidden_copy(verify, tmp_path):
    # The traceback named `.trainlint-verify-XXXX-train.py`, a copy already deleted.
    script = tmp_path / "train.py"
    script.write_text(HANGS_WHEN_FIXED)
    fixed = tmp_path / "train_fixed.py"
    fixed.write_text(HANGS_WHEN_FIXED.replace("HANG = False", "HANG = True").replace(
        "time.sleep(600)", "raise RuntimeError('broken fix')"))
    result, _ = verify(script, "--fixed", fixed, "--steps", "3", "--warmup", "1", "--repeats", "1",
                       "--", tmp_path / "pid")
    _assert_user_error(result, "RuntimeError: broken fix", f'File "{fixed}"')
    assert ".trainlint-verify-" not in result.stderr


def test_a_scripts_option_before_the_double_dash_is_explained(verify, fixtures):
    # click said only "No such option: --epochs".
    result, _ = verify(fixtures / "tight_loop.py", "--fixed", fixtures / "tight_loop.py",
                       "--epochs", "1", json_report=False)
    assert result.exit_code == 2
    assert "No such option" in result.output and "go after `--`" in result.output


def test_a_report_path_that_cannot_be_written_is_refused_before_any_run(verify, fixtures, tmp_path):
    # Before: the runs went through (minutes on a real script) and only then did writing fail,
    # losing the measurement.
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("")
    for option, target in (("--json", blocker / "out.json"), ("--report", blocker / "out")):
        result, _ = verify(fixtures / "tight_loop.py", "--fixed", fixtures / "tight_loop.py",
                           option, target, json_report=False)
        _assert_user_error(result, f"cannot write the report {option} {target}: "
                           f"{blocker} is not a folder")
        assert "repeat 1/" not in result.stderr  # nothing ran


def test_a_fixed_file_the_same_as_the_script_is_said(verify, fixtures):
    # Before: the table said "no measurable change" as for a real fix, with no remark.
    same, _ = verify(fixtures / "tight_loop.py", "--fixed", fixtures / "tight_loop.py",
                     "--steps", "2", "--warmup", "1", "--repeats", "1")
    assert same.exit_code == 0, same.output
    assert "is the same as tight_loop.py: the runs measure run-to-run noise" in same.stderr
    other, _ = verify(fixtures / "tight_loop.py", "--fixed", fixtures / "tight_loop_noop.py",
                      "--steps", "2", "--warmup", "1", "--repeats", "1")
    assert other.exit_code == 0 and "run-to-run noise" not in other.stderr
