"""Real installs in a fresh virtual environment without torch: `pip install .` and `pip install -e .`
both import the built-in rules as trainlint.rules, and README's first command works there."""

import shutil
import subprocess
import venv

import pytest

from _paths import ROOT

from trainlint.registry import all_rules


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    path = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=True).create(path)
    return path / "bin"


def _run(args, **kw):
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, **kw)
    return proc


@pytest.mark.parametrize("editable", [False, True], ids=["regular", "editable"])
def test_install_imports_rules_and_runs_without_torch(fresh_venv, tmp_path, editable):
    src = tmp_path / "src"
    # Build from a copy so the checkout is not touched by build artefacts.
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "*.egg-info", "build", "__pycache__",
                                                               ".pytest_cache", ".trainlint_cache"))
    pip = [str(fresh_venv / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    proc = _run(pip + (["-e", str(src)] if editable else [str(src)]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Every rule of the checkout, so a rule family's package missing from pyproject's `packages`
    # (each family is a package of its own) fails here.
    expected = sorted(rule.code for rule in all_rules())
    check = ("import sys, trainlint.rules as r, trainlint.registry as reg\n"
             "codes = sorted(x.code for x in reg.all_rules())\n"
             f"assert codes == {expected!r}, codes\n"
             "print(r.__file__)\n"
             "import importlib.util\n"
             "assert importlib.util.find_spec('torch') is None, 'torch is installed'\n")
    proc = _run([str(fresh_venv / "python"), "-c", check], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rules_file = proc.stdout.strip()
    if editable:
        assert rules_file == str(src / "rules" / "__init__.py")
    else:
        assert "site-packages" in rules_file
    # README: `pip install . && trainlint fixtures/` (findings -> exit 1, nothing crashes).
    proc = _run([str(fresh_venv / "trainlint"), "fixtures/"], cwd=src)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "TL101" in proc.stdout and "Traceback" not in proc.stderr
