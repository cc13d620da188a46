"""Linting never imports torch nor the code it checks."""

import os
import subprocess
import sys

from _paths import ROOT


def test_lint_api_does_not_import_torch(tmp_path):
    target = tmp_path / "train.py"
    target.write_text("import torch\nraise SystemExit('executed!')\nfrom torch.utils.data import DataLoader\n"
                      "DataLoader(ds)\n")
    code = (
        "import sys\n"
        "from trainlint.api import lint_paths\n"
        f"result = lint_paths([{str(target)!r}])\n"
        "assert [d.code for d in result.diagnostics] == ['TL101'], result.diagnostics\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_cli_does_not_import_torch(tmp_path):
    (tmp_path / "a.py").write_text("from torch.utils.data import DataLoader\nDataLoader(ds)\n")
    # The console entry point leaves through os._exit; made a SystemExit here to look afterwards.
    code = ("import os, sys, runpy\nsys.argv=['trainlint', 'a.py']\n"
            "def leave(code):\n    raise SystemExit(code)\nos._exit = leave\n"
            "try:\n    runpy.run_module('trainlint', run_name='__main__')\nexcept SystemExit as e:\n"
            "    assert e.code == 1, e.code\nassert 'torch' not in sys.modules\nprint('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("ok")
