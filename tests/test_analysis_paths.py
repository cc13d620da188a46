"""trainlint.analysis.paths: whether a later expression may name the path a save wrote."""

import libcst as cst
import pytest

from trainlint.analysis.context import FileContext
from trainlint.analysis.paths import may_name, path_forms


def _may_name(code: str) -> bool:
    """code calls `save(path)` and then `use(arg)`: does arg name the saved path?"""
    code = "import os\nfrom pathlib import Path\ndef f(out, step, other):\n    " + code.replace("\n", "\n    ") + "\n"
    ctx = FileContext("t.py", code, cst.parse_module(code), None)
    calls = {c.func.value: c for c in ctx.index.nodes(cst.Call) if isinstance(c.func, cst.Name)}
    return may_name(ctx, path_forms(ctx, calls["save"].args[0].value), calls["use"].args[0].value)


@pytest.mark.parametrize("code", [
    "save(out)\nuse(out)",
    "save(out)\nuse(os.path.join(out, 'x.json'))",  # a folder saved, then a file in it
    "ckpt = os.path.join(out, 'last.pt')\nsave(ckpt)\nuse(os.path.join(out, 'last.pt'))",
    "save(Path(out) / 'last.pt')\nuse(str(out) + '/last.pt')",
    "save(os.path.join(out, f'ckpt-{step}.pt'))\nuse(f'{out}/ckpt-{step}.pt')",
    "save(os.path.join(out, 'last.pt'))\nuse('%s/last.pt' % out)",
    "save(os.path.join(out, 'last.pt'))\nuse('{}/last.pt'.format(out))",
    "save(out / 'last.pt')\nsrc = out / 'last.pt'\nuse(src)",  # the later argument followed to its value
    "save(name_for(step))\nuse(upload_args(name_for(step)))",
])
def test_names_the_saved_path(code):
    assert _may_name(code)


@pytest.mark.parametrize("code", [
    "save(os.path.join(out, 'last.pt'))\nuse(os.path.join(out, 'metrics.json'))",  # another file of the folder
    "save(os.path.join(out, 'last.pt'))\nuse(os.path.join(other, 'last.pt'))",
    "save(name_for(step))\nuse(step)",
    "save(f'{out}/a')\nuse(f'{out}/ab')",  # a whole component, not a prefix
])
def test_names_another_path(code):
    assert not _may_name(code)
