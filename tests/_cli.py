"""The command line in-process, from a given working directory: what the CLI tests share. A module
of its own, like _paths, so that any test module can import it."""

import os

from click.testing import CliRunner

from trainlint.cli import cli


def run_cli(args, cwd, **kwargs):
    """`trainlint ARGS` run in `cwd` through click's runner (exceptions propagate unless
    `catch_exceptions=True` is passed)."""
    kwargs.setdefault("catch_exceptions", False)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, args, **kwargs)
    finally:
        os.chdir(old)
