"""TL301-TL303 beyond their cases: the analyses they stand on, and the TL301/TL302 fix run for
real under torchrun (2 processes, gloo, CPU) with the same final parameters as the original."""

import os
import socket
import subprocess
import sys
import textwrap

import pytest

from trainlint.api import fix_source, lint_source

from _paths import ROOT

FIXTURE = os.path.join(ROOT, "fixtures", "distributed", "ddp_accumulation.py")
NESTED_FIXTURE = os.path.join(ROOT, "fixtures", "distributed", "ddp_accumulation_nested.py")
# no_sync() around the backward alone: the fix moves the forward into it.
LATE_FIXTURE = os.path.join(ROOT, "fixtures", "distributed", "ddp_late_no_sync.py")
# The backward in a per-micro-batch helper, the step in the `else:` of the accumulation test.
HELPER_FIXTURE = os.path.join(ROOT, "fixtures", "distributed", "ddp_micro_step_helper.py")
# An optimizer named as no optimizer is (`adam`), known by its construction (`torch.optim.AdamW(...)`).
ADAMW_FIXTURE = os.path.join(ROOT, "fixtures", "distributed", "ddp_adamw_accumulation.py")
# FSDP2: a trainer class holding a model that a builder function shards in place (`fully_shard(m)`).
FSDP2_FIXTURE = os.path.join(ROOT, "fixtures", "distributed", "fsdp2_trainer_class.py")


def codes(text, select=("TL301",)):
    return [d.code for d in lint_source(textwrap.dedent(text), select=list(select))]


# -- what TL301 recognises ------------------------------------------------------------------

LOOP = (
    "for i, batch in enumerate(loader):\n"
    "    loss = {model}(batch).mean()\n"
    "    loss.backward()\n"
    "    if (i + 1) % accum == 0:\n"
    "        opt.step()\n"
    "        opt.zero_grad()\n"
)
_METHOD_LOOP = "".join("        " + line + "\n" for line in LOOP.format(model="self.model").splitlines())


@pytest.mark.parametrize("setup,model", [
    ("from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)", "model"),
    ("import torch\nmodel = torch.nn.parallel.DistributedDataParallel(net)", "model"),
    ("import torch.nn as nn\nmodel = nn.DistributedDataParallel(net)", "model"),
    ("import torch\nmodel = torch.compile(torch.nn.parallel.DistributedDataParallel(net))", "model"),
    ("from torch.distributed.fsdp import FullyShardedDataParallel\nmodel = FullyShardedDataParallel(net)", "model"),
    ("from torch.nn.parallel import DistributedDataParallel as DDP\n"
     "class WrappedModel(DDP):\n    pass\nmodel = WrappedModel(net)", "model"),
    ("from torch.nn.parallel import DistributedDataParallel as DDP\n"
     "def setup(m, rank):\n    ddp = DDP(m, device_ids=[rank])\n    return ddp\nengine = setup(net, 0)", "engine"),
    # FSDP2 shards in place: a builder that calls `fully_shard(m)` and returns m, or returns the call.
    ("from torch.distributed.fsdp import fully_shard\n"
     "def build(net):\n    for layer in net:\n        fully_shard(layer)\n    fully_shard(net)\n    return net\n"
     "model = build(net)", "model"),
    ("from torch.distributed.fsdp import fully_shard\ndef build(net):\n    return fully_shard(net)\n"
     "model = build(net)", "model"),
    ("from torch.nn.parallel import DistributedDataParallel as DDP\n"
     "class Trainer:\n    def __init__(self, net):\n        self.model = DDP(net)\n"
     "    def fit(self, loader, opt, accum):\n" + _METHOD_LOOP, None),
    # accelerate and Fabric hand the model back wrapped; whatever else they prepared is not a model.
    ("from accelerate import Accelerator\naccelerator = Accelerator()\n"
     "loader, model, opt = accelerator.prepare(loader, net, opt)", "model"),
    ("import accelerate\nacc = accelerate.Accelerator()\nmodel = acc.prepare_model(net)", "model"),
    ("from lightning.fabric import Fabric\nfabric = Fabric()\nmodel, opt = fabric.setup(net, opt)", "model"),
    ("import lightning as L\nrunner = L.Fabric(devices=2)\nmodel = runner.setup_module(net)", "model"),
    ("class Trainer:\n    def __init__(self, accelerator, net, opt):\n        self.accelerator = accelerator\n"
     "        self.model, self.opt = self.accelerator.prepare(net, opt)\n"
     "    def fit(self, loader, opt, accum):\n" + _METHOD_LOOP, None),
])
def test_wrapping_forms(setup, model):
    text = setup + "\n" + (LOOP.format(model=model) if model else "")
    assert codes(text) == ["TL301"], text


@pytest.mark.parametrize("handled", [
    "    with model.no_sync():\n        loss = model(batch).mean()\n        loss.backward()\n",
    "    model.require_backward_grad_sync = (i + 1) % accum == 0\n    loss = model(batch).mean()\n    loss.backward()\n",
    "    with accelerator.accumulate(model):\n        loss = model(batch).mean()\n        loss.backward()\n",
    "    with fabric.no_backward_sync(model, enabled=(i + 1) % accum != 0):\n        loss = model(batch).mean()\n"
    "        loss.backward()\n",
    "    ctx = model.no_sync if (i + 1) % accum else contextlib.nullcontext\n    with ctx():\n"
    "        loss = model(batch).mean()\n        loss.backward()\n",
    # A project helper named after it (imported from elsewhere).
    "    with maybe_no_sync(model, sync=(i + 1) % accum == 0):\n        loss = model(batch).mean()\n"
    "        loss.backward()\n",
    "    with accelerator.no_sync(model):\n        loss = model(batch).mean()\n        loss.backward()\n",
])
def test_existing_sync_control_is_not_flagged(handled):
    text = ("from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)\n"
            "for i, batch in enumerate(loader):\n" + handled + "    if (i + 1) % accum == 0:\n        opt.step()\n")
    assert codes(text) == []


_DDP = "import contextlib\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
_IN_TRAIN = "".join("    " + line + "\n" for line in LOOP.format(model="model").splitlines())


@pytest.mark.parametrize("text", [
    # The flag cleared by a helper before the loop; the gradients all-reduced by hand before each step.
    _DDP + "def freeze_allreduce(m):\n    m.require_backward_grad_sync = False\n"
    "def train(model, loader, opt, accum):\n    freeze_allreduce(model)\n"
    + _IN_TRAIN.replace("            opt.step()\n", "            all_reduce_grads(model)\n            opt.step()\n")
    + "train(DDP(net), loader, opt, 4)\n",
    # A context factory built before the loop by a helper.
    _DDP + "def make_ctx(model):\n    return lambda last: contextlib.nullcontext() if last else model.no_sync()\n"
    "def train(model, loader, opt, accum):\n    sync_ctx = make_ctx(model)\n"
    + _IN_TRAIN.replace("        loss = model(batch).mean()\n        loss.backward()\n",
                        "        with sync_ctx((i + 1) % accum == 0):\n"
                        "            loss = model(batch).mean()\n            loss.backward()\n")
    + "train(DDP(net), loader, opt, 4)\n",
    # The flag set through an alias of the model (nanoGPT's `raw_model`), or on every model of a list.
    _DDP + "model = DDP(net)\nraw_model = model.module\n" + LOOP.format(model="model").replace(
        "    loss = model", "    raw_model.require_backward_grad_sync = (i + 1) % accum == 0\n    loss = model"),
    _DDP + "model = DDP(net)\n" + LOOP.format(model="model").replace(
        "    loss = model", "    for m in models:\n        m.require_backward_grad_sync = (i + 1) % accum == 0\n"
        "    loss = model"),
])
def test_sync_control_of_this_model_reaching_the_loop_is_kept(text):
    assert codes(text) == [], text
    # ... and it is what keeps the finding away.
    plain = text.replace("require_backward_grad_sync", "other_flag").replace("no_sync", "other_ctx")
    assert codes(plain) == ["TL301"], plain


@pytest.mark.parametrize("elsewhere", [
    # Another training loop of the same function.
    "    for batch in other_loader:\n        with model.no_sync():\n            model(batch).mean().backward()\n"
    "        opt.step()\n",
    # A function the loop never reaches.
    "def probe(model, batch):\n    with model.no_sync():\n        model(batch).mean().backward()\n",
    # Another wrapped model.
    "    ema = DDP(ema_net)\n    ema.require_backward_grad_sync = False\n",
])
def test_sync_control_elsewhere_does_not_hide_the_finding(elsewhere):
    text = (_DDP + "def train(model, loader, opt, accum):\n" + _IN_TRAIN + elsewhere
            + "train(DDP(net), loader, opt, 4)\n")
    assert codes(text) == ["TL301"], text


@pytest.mark.parametrize("setup", [
    # Only the optimizer and the loader went through accelerate: the model is a plain module.
    "from accelerate import Accelerator\naccelerator = Accelerator()\nopt, loader = accelerator.prepare(opt, loader)",
    # `prepare`/`setup` of objects that are neither an Accelerator nor a Fabric.
    "import torch\nmodel = torch.accelerator.prepare(net)",
    "model = builder.setup(net)",
])
def test_other_preparations_do_not_wrap_the_model(setup):
    assert codes(setup + "\n" + LOOP.format(model="model")) == []


def test_accelerate_fix_uses_the_accelerator_the_loop_holds():
    text = ("from accelerate import Accelerator\n"
            "def train(acc, model, opt, loader, accum):\n"
            + "".join("    " + line + "\n" for line in LOOP.format(model="model").replace(
                "loss.backward()", "acc.backward(loss)").splitlines())
            + "def main():\n    accelerator = Accelerator()\n"
            "    model, opt, loader = accelerator.prepare(net, opt, loader)\n    train(accelerator, model, opt, loader, 4)\n")
    fixed = fix_source(text, select=["TL301"], unsafe_fixes=True)
    assert "acc.no_sync(model)" in fixed, fixed


def test_nanogpt_style_loop_is_not_flagged():
    text = """
    from torch.nn.parallel import DistributedDataParallel as DDP
    if ddp:
        model = DDP(model, device_ids=[ddp_local_rank])
    while True:
        for micro_step in range(gradient_accumulation_steps):
            if ddp:
                model.require_backward_grad_sync = (micro_step == gradient_accumulation_steps - 1)
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
            X, Y = get_batch('train')
            scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    """
    assert codes(text) == []


def test_nested_loop_with_break_is_reported_without_fix():
    text = """
    import contextlib
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(net)
    for step in range(10):
        for micro in range(accum):
            loss = model(next(it)).mean()
            loss.backward()
            if done:
                break
        opt.step()
    """
    text = textwrap.dedent(text)
    found = lint_source(text, select=["TL301"])
    assert [d.code for d in found] == ["TL301"] and found[0].fix is None


def test_contextlib_import_goes_where_isort_puts_standard_library_imports():
    text = textwrap.dedent('''\
        """Train."""
        from __future__ import annotations

        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(net, gradient_as_bucket_view=True)
        ''') + LOOP.format(model="model")
    fixed = fix_source(text, select=["TL301"], unsafe_fixes=True)
    # Its own section before the third-party imports, after the docstring and __future__ imports.
    assert fixed.startswith('"""Train."""\nfrom __future__ import annotations\n\nimport contextlib\n\nimport torch\n'
                            "from torch.nn.parallel import DistributedDataParallel as DDP\n\nmodel = DDP(")
    compile(fixed, "fixed.py", "exec")
    # Among other standard-library imports, in alphabetical order.
    fixed = fix_source(text.replace("import torch\n", "import os\nimport torch\n"), select=["TL301"],
                       unsafe_fixes=True)
    assert "from __future__ import annotations\n\nimport contextlib\nimport os\nimport torch\n" in fixed


def test_wrapped_model_elsewhere_is_not_flagged():
    # No wrapping visible in this module: the model may not be data-parallel at all.
    assert codes("import torch.distributed as dist\n" + LOOP.format(model="model")) == []


# -- TL302 / TL303 ---------------------------------------------------------------------------

def test_ddp_keyword_fix_keeps_other_arguments():
    text = ("from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "model = DDP(model, device_ids=[rank], find_unused_parameters=True)\n")
    fixed = fix_source(text, select=["TL302"])
    assert "device_ids=[rank]," in fixed and "find_unused_parameters=True," in fixed
    assert "gradient_as_bucket_view=True" in fixed
    compile(fixed, "fixed.py", "exec")


def test_data_parallel_suggestion_is_never_written():
    text = "import torch\nmodel = torch.nn.DataParallel(model)\n"
    found = lint_source(text, select=["TL303"])
    assert found[0].fix.applicability.value == "display-only"
    assert "DistributedDataParallel(" in found[0].fix.edits[0].content
    assert fix_source(text, select=["TL303"], unsafe_fixes=True) == text


# -- the fix, run for real ------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Runs the original and the fixed script one after the other in the same two torchrun workers
# (one launch: starting torch costs more than this training), counting gradient all-reduces with
# a comm hook that all-reduces exactly as DDP does by default, and FSDP2's gradient
# reduce-scatters (it calls torch.distributed.reduce_scatter_single). The scripts' own
# init/destroy_process_group calls share one process group: gloo cannot re-initialise in-process.
RUNNER = """
import json, os, runpy, sys
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

count = [0]
_init = DistributedDataParallel.__init__

def init(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    def hook(state, bucket):
        count[0] += 1
        return default_hooks.allreduce_hook(None, bucket)
    self.register_comm_hook(None, hook)

DistributedDataParallel.__init__ = init
_reduce_scatter = dist.reduce_scatter_single

def reduce_scatter(*args, **kwargs):
    count[0] += 1
    return _reduce_scatter(*args, **kwargs)

dist.reduce_scatter_single = reduce_scatter
_init_pg, _destroy_pg = dist.init_process_group, dist.destroy_process_group
dist.init_process_group = lambda *a, **k: None if dist.is_initialized() else _init_pg(*a, **k)
dist.destroy_process_group = lambda *a, **k: None
out_dir, scripts = sys.argv[1], sys.argv[2:]
counts = []
for i, script in enumerate(scripts):
    count[0] = 0
    sys.argv = [script, "--out", os.path.join(out_dir, f"params{i}.pt")]
    runpy.run_path(script, run_name="__main__")
    counts.append(count[0])
with open(os.path.join(out_dir, f"counts{os.environ['RANK']}.json"), "w") as f:
    json.dump(counts, f)
dist.barrier()
_destroy_pg()
# Leave without interpreter finalization: the scripts' DDP reducers still hold the gloo group,
# and tearing down its worker threads during finalization can abort the process
# ("terminate called without an active exception", seen once in CI) after all results are written.
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
"""


def _torchrun(scripts, tmp_path):
    """Final parameters (from rank 0) and per-rank all-reduce counts of each script."""
    import json

    import torch

    runner = tmp_path / "run_both.py"
    runner.write_text(RUNNER)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=ROOT)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--nnodes", "1",
           "--monitor-interval", "0.1", "--master-addr", "127.0.0.1", "--master-port", str(_free_port()),
           str(runner), str(tmp_path), *scripts]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    params = [torch.load(tmp_path / f"params{i}.pt") for i in range(len(scripts))]
    counts = [json.loads((tmp_path / f"counts{r}.json").read_text()) for r in range(2)]
    return params, counts


def test_fixed_fsdp2_fixture_trains_the_same_with_fewer_reduce_scatters(tmp_path):
    """FSDP2 has no no_sync(): the fix switches `set_requires_gradient_sync` per micro-batch, on a
    model a builder function sharded in place and a trainer class holds as `self.model`."""
    pytest.importorskip("torch")
    scripts = _fixed_copies([FSDP2_FIXTURE], tmp_path, "self.model.set_requires_gradient_sync(")
    _assert_same_training_with_fewer_all_reduces(scripts, tmp_path)


def _fixed_copies(fixtures, tmp_path, context):
    """[original, fixed, original, fixed, ...]: each fixture and trainlint's fix of it."""
    scripts = []
    for fixture in fixtures:
        with open(fixture, encoding="utf-8") as f:
            original = f.read()
        fixed = fix_source(original, select=["TL301", "TL302"], unsafe_fixes=True)
        assert context in fixed
        with open(fixture[:-3] + ".fixed", encoding="utf-8") as f:
            assert f.read() == fix_source(original, unsafe_fixes=True)  # the snapshot is this fix
        fixed_path = tmp_path / ("fixed_" + os.path.basename(fixture))
        fixed_path.write_text(fixed)
        scripts += [fixture, str(fixed_path)]
    return scripts


def _assert_same_training_with_fewer_all_reduces(scripts, tmp_path):
    import torch

    params, counts = _torchrun(scripts, tmp_path)
    assert counts[0] == counts[1]  # both ranks agree
    for i in range(0, len(scripts), 2):
        before, after = params[i], params[i + 1]
        assert before.keys() == after.keys()
        for name in before:
            torch.testing.assert_close(after[name], before[name], rtol=0, atol=1e-6)
        # 24 micro-batches, accumulation 4: every backward all-reduced before, one in four after.
        reduces_before, reduces_after = counts[0][i], counts[0][i + 1]
        assert reduces_before > 0 and reduces_after * 4 == reduces_before, scripts[i]


def test_fixed_ddp_fixtures_train_the_same_with_fewer_all_reduces(tmp_path):
    """Flat (`if (step + 1) % accum == 0`) and nested (inner micro-batch loop) accumulation, a
    no_sync() that held the backward alone (it all-reduced on every micro-batch all the same), and
    a micro-batch helper's call put under no_sync() (the step in the `else:` of the skip test), and
    an optimizer known by its construction (`adam = torch.optim.AdamW(...)`, `adam.step()`)."""
    pytest.importorskip("torch")
    scripts = _fixed_copies([FIXTURE, NESTED_FIXTURE, LATE_FIXTURE, HELPER_FIXTURE, ADAMW_FIXTURE], tmp_path,
                            "model.no_sync()")
    assert all("gradient_as_bucket_view=True" in open(s).read() for s in scripts[1::2])
    _assert_same_training_with_fewer_all_reduces(scripts, tmp_path)


@pytest.mark.parametrize("package,fixture,context", [
    # Flat accumulation; the fix spells the context manager through the loop's `accelerator`.
    ("accelerate", "accelerate_accumulation.py", "accelerator.no_sync(model)"),
    # An inner micro-batch loop in a training function that is handed `fabric` and the model.
    ("lightning_fabric", "fabric_accumulation.py", "fabric.no_backward_sync(model)"),
])
def test_fixed_framework_fixtures_train_the_same_with_fewer_all_reduces(package, fixture, context, tmp_path):
    """The real accelerate and Fabric wrap the model in DDP under torchrun; the fix's context
    manager must be theirs, and must skip DDP's all-reduce on the non-stepping micro-batches."""
    pytest.importorskip(package, reason=f"{package} is in the dev extra; TL301's fix for it runs against it")
    fixture = os.path.join(ROOT, "fixtures", "distributed", fixture)
    _assert_same_training_with_fewer_all_reduces(_fixed_copies([fixture], tmp_path, context), tmp_path)


def test_a_docstring_that_mentions_no_sync_does_not_hide_the_finding():
    from trainlint.api import lint_source
    from trainlint.registry import get_rule

    code = get_rule("TL301").invalid[0].code
    assert [d.code for d in lint_source(code, select=["TL301"])] == ["TL301"]
    documented = '"""Accumulates gradients; DDP\'s no_sync() would save the all-reduce."""\n' + code
    assert [d.code for d in lint_source(documented, select=["TL301"])] == ["TL301"]


def test_a_helper_parameter_is_the_wrapped_model_only_inside_that_helper():
    # ultralytics: `self.model` is trained in the loop, and also handed to `build_optimizer(model)`
    # elsewhere; `model` there is another variable, so the finding names one model and is fixable.
    code = textwrap.dedent("""\
        from torch.nn.parallel import DistributedDataParallel as DDP
        class Trainer:
            def __init__(self, net):
                self.model = DDP(net, gradient_as_bucket_view=True)
                self.opt = self.build_optimizer(self.model)
            def build_optimizer(self, model):
                return make_optimizer(model.parameters())
            def save(self):
                model = unwrap(self.model)
                save(model.state_dict())
            def fit(self, loader, accum):
                for i, batch in enumerate(loader):
                    loss = self.model(batch).mean()
                    loss.backward()
                    if (i + 1) % accum == 0:
                        self.opt.step()
                        self.save()
        """)
    (diag,) = lint_source(code, select=["TL301"])
    assert "gradients of `self.model` (DDP)" in diag.message
    assert diag.fix is not None
