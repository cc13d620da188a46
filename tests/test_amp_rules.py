"""TL401-TL404 beyond their own cases: the fixed fp16 fine-tune runs on CPU with no deprecation
warning, the target-gpu variant of TL402, and the precision questions the rules share."""

import os
import re
import subprocess
import sys

import pytest

from _paths import ROOT
from trainlint.analysis.context import FileContext
from trainlint.api import fix_source, lint_source
from trainlint.config import Settings
from trainlint.diagnostics import Applicability
from trainlint.engine import parse

FIXTURE = os.path.join(ROOT, "fixtures", "amp", "fp16_finetune.py")


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _start(path, *warning_filters):
    args = [sys.executable]
    for f in warning_filters:
        args += ["-W", f]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=ROOT)
    return subprocess.Popen(args + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _finish(proc) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _run(path, *warning_filters):
    return _finish(_start(path, *warning_filters))


@pytest.fixture(scope="module")
def fixed_script(tmp_path_factory):
    pytest.importorskip("torch")
    path = tmp_path_factory.mktemp("amp") / "fp16_finetune_fixed.py"
    path.write_text(_read(FIXTURE[:-3] + ".fixed"), encoding="utf-8")
    return str(path)


def test_fixed_runs_without_deprecation_warnings(fixed_script):
    # The original warns (the rule is right to fire)...
    original = _start(FIXTURE, "always::FutureWarning")
    # ...the fixed script does not: deprecation warnings are errors. Without CUDA, autocast("cuda") is
    # disabled by the script (enabled=use_amp), so no "CUDA is not available" UserWarning either.
    proc = _start(fixed_script, "error::FutureWarning", "error::DeprecationWarning", "error::UserWarning")
    original, proc = _finish(original), _finish(proc)
    assert original.returncode == 0, original.stderr[-3000:]
    assert "torch.cuda.amp.GradScaler(args...)` is deprecated" in original.stderr
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Same losses: on CPU the AMP pieces are disabled in both, so the fix must not change the computation.
    assert proc.stdout == original.stdout


def test_fixed_snapshot_keeps_the_settings_the_issue_asks_for():
    fixed = _read(FIXTURE[:-3] + ".fixed")
    assert "from torch.cuda.amp import" not in fixed and "GradScaler(enabled" not in fixed
    assert ('torch.amp.GradScaler(\n        "cuda", enabled=use_amp and amp_dtype == torch.float16\n    )'
            in fixed)  # split at its brackets, as Black does: on one line it took 90 columns
    assert 'torch.amp.autocast("cuda", enabled=use_amp, dtype=amp_dtype)' in fixed
    assert "torch.cuda.is_bf16_supported(including_emulation=False)" in fixed
    assert "optimizer.zero_grad()" in fixed


def test_target_gpu_ampere_drops_the_scaler(tmp_path):
    pytest.importorskip("torch")
    settings = Settings(target_gpu="ampere")
    fixed = fix_source(_read(FIXTURE), path="fp16_finetune.py", settings=settings, unsafe_fixes=True)
    assert "torch.amp.autocast(\"cuda\", enabled=use_amp, dtype=torch.bfloat16)" in fixed
    for gone in ("scaler.scale(", "scaler.step(", "scaler.update()", "scaler.unscale_(", "is_bf16_supported"):
        assert gone not in fixed, gone
    assert "        loss.backward()\n" in fixed and "            optimizer.step()\n" in fixed
    # The script still reads the scaler (get_scale) at the end: it is kept, disabled.
    assert 'torch.amp.GradScaler("cuda", enabled=False)' in fixed
    path = tmp_path / "ampere.py"
    path.write_text(fixed, encoding="utf-8")
    proc = _run(str(path), "error::FutureWarning")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Idempotent, and nothing left for TL402.
    assert fix_source(fixed, path="fp16_finetune.py", settings=settings, unsafe_fixes=True) == fixed
    assert not [d for d in lint_source(fixed, settings=settings) if d.code == "TL402"]


def test_tl403_and_tl404_are_off_by_default_and_enabled_by_select():
    code = ("import torch\nscaler = torch.amp.GradScaler('cuda')\nmodel = Net().cuda()\n"
            "for x in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\n")
    assert not {d.code for d in lint_source(code)} & {"TL403", "TL404"}
    assert {d.code for d in lint_source(code, select=["TL403", "TL404"])} == {"TL403", "TL404"}
    bf16 = code.replace("    model(", "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        model(")
    # A prefix takes the rules on by default only; the off-by-default one needs its code.
    assert {d.code for d in lint_source(bf16, select=["TL4"])} == set()
    assert {d.code for d in lint_source(bf16, select=["TL4", "TL403"])} == {"TL403"}


def test_configured_init_scale_range(tmp_path):
    cfg = tmp_path / "trainlint.toml"
    cfg.write_text('select = ["TL403"]\n[TL403]\nmin-init-scale = 256\nmax-init-scale = 2048\n', encoding="utf-8")
    from trainlint.config import settings_from_file

    settings = settings_from_file(str(cfg))
    code = "import torch\nscaler = torch.amp.GradScaler('cuda', init_scale=4096)\n"
    found = lint_source(code, settings=settings)
    assert [d.code for d in found] == ["TL403"] and "init_scale=2048" in found[0].message
    assert fix_source(code, settings=settings) == code.replace("4096", "2048")


def test_tl403_fix_is_unsafe():
    # Before: the fix was safe, so a plain --fix lowered init_scale, and an fp16 run that had
    # skipped an overflowing first step at 65536 took it at 8192 (other weights after 5 steps).
    direct = "import torch\nscaler = torch.amp.GradScaler('cuda')\n"
    named = ("import torch\nINIT_SCALE = 2**16\n"
             "scaler = torch.amp.GradScaler('cuda', init_scale=INIT_SCALE)\n")
    for code in (direct, named):
        found = [d for d in lint_source(code, select=["TL403"]) if d.code == "TL403"]
        assert [d.fix.applicability for d in found] == [Applicability.UNSAFE], code
        assert fix_source(code, select=["TL403"], unsafe_fixes=False) == code
        assert "8192" in fix_source(code, select=["TL403"], unsafe_fixes=True)


def _precision(code):
    module = parse(code)
    return FileContext("x.py", code, module, Settings()).precision


@pytest.mark.parametrize("code,expected", [
    ("import torch\nwith torch.autocast('cuda'):\n    pass\n", {"float16"}),
    ("import torch\nwith torch.autocast('cpu'):\n    pass\n", {"bfloat16"}),
    ("import torch\nDT = torch.half\nwith torch.autocast('cuda', dtype=DT):\n    pass\n", {"float16"}),
    ("import torch\nwith torch.autocast('cuda', torch.bfloat16 if ok else torch.float16):\n    pass\n",
     {"bfloat16", "float16"}),
    ("from torch.cuda import amp\nwith amp.autocast(True, torch.float16):\n    pass\n", {"unknown"}),
    ("import torch\nfrom torch.cuda import amp\nwith amp.autocast(True, torch.float16):\n    pass\n", {"float16"}),
    ("import torch\nwith torch.autocast(device.type):\n    pass\n", {"unknown"}),
    ("import torch\ns = torch.amp.GradScaler()\nwith torch.autocast(device.type):\n    pass\n", {"float16"}),
    # Through a name bound to a partial of autocast: its arguments come first, the call's keywords win.
    ("import functools\nimport torch\nctx = functools.partial(torch.amp.autocast, 'cuda', torch.bfloat16)\n"
     "with ctx():\n    pass\n", {"bfloat16"}),
    ("from functools import partial\nimport torch\nctx = partial(torch.autocast, 'cuda')\n"
     "with ctx(torch.bfloat16):\n    pass\n", {"bfloat16"}),
    ("from functools import partial\nimport torch\nctx = partial(torch.autocast, 'cuda', dtype=torch.bfloat16)\n"
     "with ctx(dtype=torch.half):\n    pass\n", {"float16"}),
    ("from functools import partial\nimport torch\nctx = partial(torch.autocast, device_type='cpu')\n"
     "with ctx():\n    pass\n", {"bfloat16"}),
    ("import torch\nctx = torch.cuda.amp.autocast\nwith ctx():\n    pass\n", {"float16"}),
    # `dtype=None` is the device's default, as when it is left out; so is a name that may be None.
    ("import torch\nwith torch.autocast('cuda', dtype=None):\n    pass\n", {"float16"}),
    ("import torch\nwith torch.autocast('cpu', None):\n    pass\n", {"bfloat16"}),
    ("import torch\nDT = torch.bfloat16 if ok else None\nwith torch.autocast('cuda', dtype=DT):\n    pass\n",
     {"bfloat16", "float16"}),
    ("from functools import partial\nimport torch\nctx = partial(torch.autocast, 'cuda', dtype=None)\n"
     "with ctx():\n    pass\n", {"float16"}),
])
def test_autocast_dtypes(code, expected):
    prec = _precision(code)
    assert prec.autocast_dtypes(prec.autocasts[0]) == expected


@pytest.mark.parametrize("code,found", [
    ("import functools\nimport torch\nctx = functools.partial(torch.amp.autocast, 'cuda')\nwith ctx():\n    pass\n",
     [("torch.amp.autocast", "cuda", False)]),
    ("import contextlib, torch\nctx = torch.cuda.amp.autocast if amp else contextlib.nullcontext\nwith ctx():\n"
     "    pass\n", [("torch.cuda.amp.autocast", "cuda", True)]),
    # Not every binding of the name is autocast, a partial of something else, a partial not from functools.
    ("import functools\nimport torch\nctx = functools.partial(torch.amp.autocast, 'cuda')\nctx = other\n"
     "with ctx():\n    pass\n", []),
    ("import functools\nimport torch\nctx = functools.partial(torch.no_grad)\nwith ctx():\n    pass\n", []),
    ("from mylib import partial\nimport torch\nctx = partial(torch.autocast, 'cuda')\nwith ctx():\n    pass\n", []),
])
def test_autocast_through_a_bound_name(code, found):
    prec = _precision(code)
    assert [(a.qualname, a.device, a.optional) for a in prec.autocasts] == found


def test_autocast_disabled_and_dtype_position_through_a_partial():
    prec = _precision("import functools\nimport torch\n"
                      "off = functools.partial(torch.amp.autocast, 'cuda', torch.float16, False)\n"
                      "on = functools.partial(torch.amp.autocast, 'cuda')\nwith off():\n    pass\nwith on(None, False):\n"
                      "    pass\nwith torch.autocast('cuda', torch.float16):\n    pass\n")
    off, on, plain = prec.autocasts
    assert prec.autocast_is_disabled(off) and prec.autocast_is_disabled(on) and not prec.autocast_is_disabled(plain)
    assert [prec.dtype_position(u) for u in (off, on, plain)] == [None, 0, 1]


@pytest.mark.parametrize("code,chooses", [
    ("import torch\nbf = torch.cuda.is_bf16_supported()\n", True),
    ("import torch\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    pass\n", True),
    ("import torch\ns = torch.amp.GradScaler(enabled=dt == torch.float16)\n", True),
    ("import torch\nwith torch.autocast('cuda'):\n    pass\n", False),
    ("import torch\nwith torch.autocast('cpu', dtype=torch.bfloat16):\n    pass\n", False),
])
def test_chooses_bf16(code, chooses):
    assert _precision(code).chooses_bf16 is chooses


def test_scaler_names():
    code = ("import torch\nclass T:\n    def __init__(self):\n        self.scaler = torch.amp.GradScaler()\n"
            "def f(s: torch.amp.GradScaler):\n    pass\ng = torch.cuda.amp.GradScaler() if amp else None\n")
    assert _precision(code).scaler_names == {"self.scaler", "s", "g"}


@pytest.mark.parametrize("code,found", [
    ("from transformers import TrainingArguments\nTrainingArguments('o', fp16=True)\n", ["transformers"]),
    ("from transformers.training_args import TrainingArguments as TA\nTA('o', fp16=1 == 1)\n", []),
    ("from sentence_transformers import SentenceTransformerTrainingArguments as A\nA(fp16=True)\n", ["transformers"]),
    ("from trl import DPOConfig\nDPOConfig(fp16=True)\n", ["transformers"]),
    ("from trl import ModelConfig\nModelConfig(fp16=True)\n", []),
    ("import lightning.pytorch as pl\npl.Trainer(precision='16-mixed')\n", ["lightning"]),
    ("from lightning.fabric import Fabric\nFabric(precision='16')\n", ["lightning"]),
    ("from lightning import Trainer\nTrainer(precision='bf16-mixed')\n", []),
    ("from accelerate import Accelerator\nAccelerator(mixed_precision='fp16')\n", ["accelerate"]),
    ("from accelerate import Accelerator\nAccelerator(mixed_precision=args.mp)\n", []),
])
def test_framework_fp16_settings(code, found):
    assert [u.framework for u in _precision(code).framework_fp16] == found


def test_tl402_leaves_a_framework_setting_in_a_test_file_alone():
    # A test that sets float16 tests the float16 path (accelerate's test_script.py).
    code = "from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='fp16')\n"
    assert [d.code for d in lint_source(code, path="train.py", select=["TL402"])] == ["TL402"]
    assert lint_source(code, path="tests/test_fp16.py", select=["TL402"]) == []
    assert lint_source(code, path="test_script.py", select=["TL402"]) == []


def test_findings_sharing_one_fix_are_all_fixed_in_one_round():
    # TL402 fixes every framework setting of a file with one change: each finding counts as
    # fixed (the edits are applied once), none is left to vanish in a later round.
    from trainlint.fixer import fix_text

    code = ("import torch\nfrom accelerate import Accelerator\nimport lightning as L\n"
            "accelerator = Accelerator(mixed_precision='fp16')\ntrainer = L.Trainer(precision='16-mixed')\n")
    settings = Settings(select=("TL402",))
    outcome = fix_text(code, "train.py", settings.active_rules("train.py"), settings, unsafe_fixes=True)
    assert [d.code for d in outcome.applied] == ["TL402", "TL402"]
    assert outcome.remaining == [] and outcome.text.count("is_bf16_supported") == 2


def test_the_import_a_fix_leaves_unused_is_not_counted_as_another_fixed_finding():
    # TL401 removes `from torch.cuda.amp import GradScaler, autocast` in the rounds after the
    # rewrites, as findings of its own; counted, `--fix` said "Found 4 errors (4 fixed)" where
    # `check` had shown 2. They are follow-ups: applied, not counted. A file whose unused
    # deprecated import is there from the start still counts its removal.
    from trainlint.fixer import fix_text

    code = ("import torch\nfrom torch.cuda.amp import GradScaler, autocast\n"
            "scaler = GradScaler(enabled=False)\nwith autocast(enabled=False):\n    y = model(x)\n")
    settings = Settings(select=("TL401",))
    outcome = fix_text(code, "train.py", settings.active_rules("train.py"), settings, unsafe_fixes=True)
    assert "from torch.cuda.amp" not in outcome.text and outcome.remaining == []
    assert [d.message.split("`")[1] for d in outcome.applied] == ["GradScaler", "autocast"]
    assert len(outcome.follow_ups) == 2 and all(d.fixed for d in outcome.follow_ups)
    unused = fix_text("from torch.cuda.amp import autocast\n", "train.py", settings.active_rules("train.py"),
                      settings, unsafe_fixes=True)
    assert unused.text == "" and len(unused.applied) == 1 and unused.follow_ups == []


def test_tl402_after_tl501_spells_torch_as_the_module_imports_it():
    # TL501's fix adds a save helper whose body has its own `import torch`; in the next round that
    # import must not be taken for the module's name for torch, which is `th` (a NameError before).
    code = (
        "import torch as th\n\n"
        "def train(net, opt, loader):\n"
        "    scaler = th.cuda.amp.GradScaler(init_scale=4096)\n"
        "    for step, (x, y) in enumerate(loader):\n"
        "        with th.cuda.amp.autocast():\n"
        "            loss = net(x, y)\n"
        "        scaler.scale(loss).backward(); scaler.step(opt); scaler.update()\n"
        "        if step % 1000 == 0:\n"
        "            th.save(net.state_dict(), 'ckpt.pt')\n"
    )
    fixed = fix_source(code, select=["ALL"], unsafe_fixes=True)
    helper, train = fixed.split("\ndef train(", 1)
    assert "def _trainlint_async_save(" in helper and "    import torch\n" in helper
    assert "th.bfloat16" in train and "dtype=amp_dtype" in train
    assert re.search(r"(?<![\w.])torch\.", train) is None, train
