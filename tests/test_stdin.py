"""Source from standard input (`--stdin-filename PATH`, or `-`), as editors and formatters' hooks
call linters: findings name PATH; with --fix the fixed source is standard output, byte for byte
in the input's encoding and line endings, the report goes to standard error, and input that
cannot be fixed comes back unchanged. Run as a real process: stdin and stdout are bytes here."""

import os
import subprocess
import sys

import pytest

from _paths import ROOT

# TL102 has a safe fix, and once the loader pins memory TL108 has one too; TL101's fix is unsafe.
LOOP = (
    "from torch.utils.data import DataLoader\n"
    "loader = DataLoader(ds, batch_size=4)\n"
    "for x in loader:\n"
    "    x = x.cuda()\n"
    "    model(x).backward()\n"
    "    opt.step()\n"
)
FIXED = LOOP.replace("batch_size=4)", "batch_size=4, pin_memory=True)").replace(".cuda()", ".cuda(non_blocking=True)")


def trainlint(args, data: bytes, cwd):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "trainlint", *args], input=data, capture_output=True, cwd=cwd,
                          env=env, timeout=120)


def test_findings_name_the_given_path(tmp_path):
    proc = trainlint(["check", "--stdin-filename", "src/train.py"], LOOP.encode(), tmp_path)
    assert proc.returncode == 1
    out = proc.stdout.decode()
    assert "src/train.py:2:10: TL101 " in out and "src/train.py:2:10: TL102 [*]" in out
    assert not (tmp_path / "src").exists()  # nothing read or written on disk


def test_a_dash_reads_standard_input(tmp_path):
    proc = trainlint(["-", "--output-format", "json"], LOOP.encode(), tmp_path)
    assert proc.returncode == 1
    assert b'"filename": "-"' in proc.stdout


def test_fix_writes_the_fixed_source_to_stdout_and_the_report_to_stderr(tmp_path):
    proc = trainlint(["check", "--fix", "--stdin-filename", "train.py"], LOOP.encode(), tmp_path)
    assert proc.stdout.decode() == FIXED
    assert "TL101" in proc.stderr.decode() and "2 fixed" in proc.stderr.decode()
    assert proc.returncode == 1  # TL101 remains (its fix is unsafe)
    # TL101 adds workers to a script whose training runs under a `__main__` guard (see TL101's docs).
    guarded = ("from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=4)\n"
               "def train():\n    for x in loader:\n        x = x.cuda()\n        model(x).backward()\n"
               "        opt.step()\nif __name__ == '__main__':\n    train()\n")
    unsafe = trainlint(["check", "--fix", "--unsafe-fixes", "--stdin-filename", "train.py"], guarded.encode(), tmp_path)
    assert b"num_workers=" in unsafe.stdout and unsafe.returncode == 0, unsafe.stderr
    assert not list(tmp_path.iterdir())


def test_fix_keeps_encoding_bom_and_line_endings(tmp_path):
    text = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + LOOP
    raw = text.replace("\n", "\r\n").encode("latin-1")
    proc = trainlint(["check", "--fix", "--stdin-filename", "train.py"], raw, tmp_path)
    expected = ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + FIXED).replace("\n", "\r\n").encode("latin-1")
    assert proc.stdout == expected
    bom = b"\xef\xbb\xbf" + LOOP.encode()
    proc = trainlint(["check", "--fix", "--stdin-filename", "train.py"], bom, tmp_path)
    assert proc.stdout == b"\xef\xbb\xbf" + FIXED.encode()


@pytest.mark.parametrize("data,reason", [
    (b"def broken(:\n", "syntax error"),
    (b"x = '\xff'\n", "cannot decode as utf-8"),
])
def test_input_that_cannot_be_checked_comes_back_unchanged(tmp_path, data, reason):
    proc = trainlint(["check", "--fix", "--stdin-filename", "train.py"], data, tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == data
    assert proc.stderr.decode().startswith("train.py:") and reason in proc.stderr.decode()


def test_clean_input_comes_back_unchanged(tmp_path):
    data = b"import torch\r\nx = torch.ones(2)\r\n"
    proc = trainlint(["check", "--fix", "--stdin-filename", "train.py"], data, tmp_path)
    assert proc.returncode == 0 and proc.stdout == data


def test_the_name_picks_configuration_and_excludes(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nignore = ["TL101"]\nexclude = ["vendor/**"]\n')
    proc = trainlint(["check", "--stdin-filename", "train.py"], LOOP.encode(), tmp_path)
    assert b"TL102" in proc.stdout and b"TL101" not in proc.stdout
    # An excluded name is checked unless --force-exclude (as with files named on the command line).
    named = trainlint(["check", "--stdin-filename", "vendor/train.py"], LOOP.encode(), tmp_path)
    assert named.returncode == 1
    forced = trainlint(["check", "--force-exclude", "--fix", "--stdin-filename", "vendor/train.py"], LOOP.encode(),
                       tmp_path)
    assert forced.returncode == 0 and forced.stdout == LOOP.encode()


def test_diff_reads_standard_input(tmp_path):
    proc = trainlint(["check", "--diff", "--stdin-filename", "train.py"], LOOP.encode(), tmp_path)
    assert proc.returncode == 1
    assert b"+loader = DataLoader(ds, batch_size=4, pin_memory=True)" in proc.stdout


@pytest.mark.parametrize("args", [["-", "other.py"], ["--stdin-filename", "a.py", "b.py"], ["-", "--add-noqa"]])
def test_standard_input_is_checked_alone(tmp_path, args):
    proc = trainlint(["check", *args], LOOP.encode(), tmp_path)
    assert proc.returncode == 2
    assert b"standard input" in proc.stderr
