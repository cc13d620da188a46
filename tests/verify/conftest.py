"""Shared helpers for the verifier's tests: real scripts, real torch, run through the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verify"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def verify(tmp_path):
    """Run `trainlint verify ARGS` in-process (the script runs in its own processes).

    Returns (click result, JSON report or None).
    """
    pytest.importorskip("torch")  # the scripts it runs train with torch (the linter needs none)
    from trainlint.verify.command import verify_command

    def run(*args: str, json_report: bool = True):
        out = tmp_path / "report.json"
        argv = [str(a) for a in args]
        if json_report:
            argv += ["--json", str(out)]
        result = CliRunner().invoke(verify_command, argv, catch_exceptions=False)
        data = json.loads(out.read_text()) if json_report and out.exists() else None
        return result, data

    return run
