"""The harness inside the script's process: where the script runs, what it records, seeding."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainlint.verify.runner import RunSettings, Variant, run_once

pytest.importorskip("torch")  # every case runs a real training script


def _settings(script: Path, **kw) -> RunSettings:
    base = dict(script=str(script), script_args=[], steps=8, warmup=1, nproc=None, threads=1)
    base.update(kw)
    return RunSettings(**base)


def _run_with_logged_losses(tmp_path: Path, source: str, steps: int):
    """Runs source, a script that prints each loss it steps on to the file `logged` beside it, for
    `steps` steps after one of warm-up; checks that the harness recorded one loss a step, the ones
    the script logged, and returns the record."""
    script = tmp_path / "train.py"
    script.write_text(source)
    rec = run_once(_settings(script, steps=steps, warmup=1), Variant("o", [], str(script)), 0, tmp_path)
    logged = [float(v) for v in (tmp_path / "logged").read_text().split()]
    assert len(rec.losses) == steps + 1
    assert rec.losses == pytest.approx(logged[:steps + 1], rel=1e-6)
    return rec


def test_runs_from_the_scripts_directory(verify, fixtures, tmp_path, monkeypatch):
    # Sibling imports and relative data paths work whatever the caller's directory is.
    monkeypatch.chdir(tmp_path)
    script = fixtures / "project" / "train.py"
    result, data = verify(script, "--fixed", script, "--steps", "5", "--warmup", "1",
                          "--repeats", "1")
    assert result.exit_code == 0, result.output
    assert data["losses_identical"]
    assert len(data["before"]["losses"]) == 6


def test_records_one_loss_per_optimizer_step_with_accumulation(fixtures, tmp_path):
    # Eight backward calls per step: the step's loss is their mean, read once at the end.
    script = fixtures / "ddp_accum.py"
    s = _settings(script, nproc=1, steps=2, warmup=1, script_args=["--accum", "4"])
    rec = run_once(s, Variant("original", [], str(script)), 0, tmp_path)
    assert len(rec.losses) == 3
    assert len(rec.step_s) == 2
    assert rec.ranks == 1
    assert all(loss > 0 for loss in rec.losses)


def test_pinned_sampler_keeps_data_order_with_persistent_workers(fixtures, tmp_path):
    """persistent_workers draws the loader's base seed once instead of every epoch; the global RNG
    then drifts and later epochs shuffle differently. Pinning the sampler's generator (the
    verifier's default, in both versions) keeps the order, so the losses are bit-identical."""
    orig = Variant("original", [], str(fixtures / "short_epochs.py"))
    fixed = Variant("fixed", [], str(fixtures / "short_epochs_persistent.py"))
    # 16 steps = 4 epochs of 4 batches.
    pinned = _settings(fixtures / "short_epochs.py", steps=15, warmup=1)
    a = run_once(pinned, orig, 0, tmp_path)
    b = run_once(pinned, fixed, 0, tmp_path)
    assert a.losses == b.losses
    loose = _settings(fixtures / "short_epochs.py", steps=15, warmup=1, pin_loader_rng=False)
    a = run_once(loose, orig, 0, tmp_path)
    b = run_once(loose, fixed, 0, tmp_path)
    # First epoch alike, later epochs reshuffled differently: the problem pinning solves.
    assert a.losses[:4] == b.losses[:4]
    assert a.losses != b.losses


def test_importing_the_command_does_not_import_torch():
    code = ("import sys, trainlint.verify.command, trainlint.verify.report, "
            "trainlint.verify.profile; print('torch' in sys.modules)")
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True)
    assert out.stdout.strip() == "False"


def test_profile_run_on_cpu_reports_the_loader_share(fixtures, tmp_path):
    # The breakdown is meant for GPUs; on a CPU it still runs and sees the data loader, and says
    # that it saw no device work (None), not that the device did nothing (0%).
    script = fixtures / "loader_bound.py"
    rec = run_once(_settings(script, steps=4, warmup=1), Variant("original", [], str(script)),
                   0, tmp_path, profile_steps=2)
    assert rec.profile["steps"] == 2
    assert rec.loader_batches >= 3  # each step it ran drew a batch
    assert rec.profile["device"] is False
    assert rec.profile["shares"]["data loader"] > 0.05
    assert rec.profile["shares"]["kernels"] is None and rec.profile["compute_time_ratio"] is None


def test_torchrun_rank_exit_still_finishes_the_scripts_threads_and_atexit(tmp_path):
    # Ranks leave before interpreter finalization (gloo's teardown can abort there), yet a
    # pending background save and the script's atexit handlers still complete, with its exit code.
    code = f"""
import atexit, threading, time
from pathlib import Path
from trainlint.verify.harness import _exit_before_finalization
out = Path({str(tmp_path)!r})
def save():
    time.sleep(0.3)
    (out / "thread").write_text("done")
threading.Thread(target=save).start()
atexit.register(lambda: (out / "atexit").write_text("done"))
_exit_before_finalization(3)
raise AssertionError("unreachable")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert (tmp_path / "thread").read_text() == "done"
    assert (tmp_path / "atexit").read_text() == "done"


HOOK_PARTS = """
import sys, torch, torch.optim.optimizer as optimizer_module, torch.utils.data.dataloader as dl
from trainlint.verify import harness
if sys.argv[1] == "registry":
    # A torch whose optimizers have no step entry point to run at: the global post-hook is used.
    # (Optimizer.step still calls the attribute, so it stays there, but not as a method.)
    torch.optim.Optimizer._optimizer_step_code = property(lambda self: (lambda: None))
def torch_functions():
    return (torch.autograd.backward, dl.DataLoader.__iter__, dl._BaseDataLoaderIter.__next__,
            torch.optim.Optimizer._optimizer_step_code, len(optimizer_module._global_optimizer_post_hooks))
originals = torch_functions()
cfg = {"steps": 100, "warmup": 1, "seed": 0}
state = harness._State(cfg)
hooks = harness._install(cfg, state)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def step():
    opt.zero_grad()
    model(torch.ones(4, 2)).sum().backward()
    opt.step()
def seen():
    return len(state.losses), len(state.step_ends)
step()
print("all", seen(), torch.autograd.backward is not originals[0])
hooks.enable(("backward",))
step()
print("backward", seen(), dl.DataLoader.__iter__ is originals[1])
hooks.enable(("step",))
step()
print("step", seen(), torch.autograd.backward is originals[0])
hooks.disable()
step()
print("off", seen(), torch_functions() == originals)
"""


@pytest.mark.parametrize("entry", ["step code", "registry"])
def test_hooks_enable_one_part_at_a_time_and_disable_restores_torch(entry):
    # The overhead benchmark times each part alone through enable(parts); disable() must leave
    # torch exactly as it was. The step hook runs at the optimizer's step entry point where torch
    # has one, else as a global step post-hook.
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    out = subprocess.run([sys.executable, "-c", HOOK_PARTS, entry], capture_output=True, text=True,
                         env=env, check=True).stdout.splitlines()
    assert out == [
        "all (1, 1) True",  # loss captured and step seen
        "backward (2, 1) True",  # loss captured, no step hook, loader left alone
        "step (2, 2) True",  # step seen, backward not patched
        "off (2, 2) True",  # nothing recorded, torch's own functions back
    ]


_SPAWN_LOADER = '''
import os, torch
from torch.utils.data import DataLoader, Dataset
HERE = os.path.dirname(os.path.abspath(__file__))
class DS(Dataset):
    def __len__(self): return 64
    def __getitem__(self, i):
        # read in the worker, relative to the module's own file
        with open(os.path.join(HERE, "target.txt")) as f:
            target = float(f.read())
        return torch.ones(4), torch.tensor([TARGET * target])
if __name__ == "__main__":
    m = torch.nn.Linear(4, 1); o = torch.optim.SGD(m.parameters(), 0.01)
    dl = DataLoader(DS(), batch_size=8, num_workers=1, multiprocessing_context="spawn")
    for x, y in dl:
        o.zero_grad(); torch.nn.functional.mse_loss(m(x), y).backward(); o.step()
'''


def test_spawned_loader_workers_run_the_fixed_code(tmp_path):
    # Before: the fixed version ran with __file__ = the original script, and spawn workers
    # re-import __main__ from that file, so the fixed run's workers executed the ORIGINAL
    # __getitem__ (a fix there measured as "no measurable change").
    project = tmp_path / "project"
    project.mkdir()
    (project / "target.txt").write_text("1")
    script = project / "train.py"
    script.write_text(_SPAWN_LOADER.replace("TARGET", "1.0"))
    fixed = tmp_path / "fixed.py"  # elsewhere, as --fixed FILE or the work folder's copy
    fixed.write_text(_SPAWN_LOADER.replace("TARGET", "100.0"))
    s = _settings(script, steps=2, warmup=1)
    a = run_once(s, Variant("original", [], str(script)), 0, tmp_path)
    b = run_once(s, Variant("fixed", [], str(fixed)), 0, tmp_path)
    assert b.losses[0] > 100 * a.losses[0]  # the workers served the fixed targets
    assert sorted(p.name for p in project.iterdir()) == ["target.txt", "train.py"]  # copy removed


_SCALER = """
import sys, torch
torch.manual_seed(0)
m = torch.nn.Linear(4, 1)
o = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(16, 4); y = 100 * x[:, :1]  # one batch: a skipped step leaves the loss as it was
scaler = torch.amp.GradScaler("cpu", init_scale=float(sys.argv[1]), enabled=sys.argv[1] != "0")
for step in range(50):
    loss = (m(x) - y).pow(2).mean()
    o.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(o)
    scaler.update()
"""


def test_a_grad_scalers_loss_is_recorded_unscaled(tmp_path):
    # Before: backward saw scaler.scale(loss), the loss times the scale, so a fix changing the
    # scale (TL403) or removing the scaler (TL402) was rejected with bit-identical real losses.
    script = tmp_path / "scaled.py"
    script.write_text(_SCALER)
    runs = [run_once(_settings(script, steps=6, warmup=1, script_args=[scale]),
                     Variant(scale, [], str(script)), 0, tmp_path) for scale in ("256", "4096", "0")]
    assert runs[0].losses == runs[1].losses == runs[2].losses


def test_a_step_the_grad_scaler_skips_is_still_one_iteration(tmp_path):
    # Before: a skipped step (inf gradients, no optimizer.step) merged its loss into the next
    # step's, so the curve lost an iteration. Now each iteration is a step: the model does not
    # change over the skipped ones, so their losses repeat the first one.
    script = tmp_path / "scaled.py"
    script.write_text(_SCALER)
    s = _settings(script, steps=8, warmup=1, script_args=[str(2.0 ** 127)])
    skipping = run_once(s, Variant("skip", [], str(script)), 0, tmp_path)
    plain = run_once(_settings(script, steps=8, warmup=1, script_args=["0"]),
                     Variant("plain", [], str(script)), 0, tmp_path)
    assert len(skipping.losses) == 9
    skipped = next(i for i, v in enumerate(skipping.losses) if v != plain.losses[0])
    assert skipped >= 2  # the overflowing steps and the first real one saw the same model
    assert skipping.losses[skipped:] == pytest.approx(plain.losses[1:9 - skipped + 1], rel=1e-5)


_STAGES = """
import torch
torch.manual_seed(0)
body = torch.nn.Linear(4, 8); head = torch.nn.Linear(8, 1)
def run(opt, steps):
    for _ in range(steps):
        opt.zero_grad(); head(body(torch.randn(8, 4))).pow(2).mean().backward(); opt.step()
run(torch.optim.SGD(head.parameters(), lr=0.01), 3)  # stage 1: the head alone
run(torch.optim.SGD([*body.parameters(), *head.parameters()], lr=0.01), 50)  # stage 2
"""

_GAN = """
import torch
torch.manual_seed(0)
g = torch.nn.Linear(2, 4); d = torch.nn.Linear(4, 1)
og = torch.optim.SGD(g.parameters(), lr=0.01); od = torch.optim.SGD(d.parameters(), lr=0.01)
for _ in range(30):
    od.zero_grad(); d(g(torch.randn(8, 2)).detach()).mean().backward(); od.step()
    og.zero_grad(); (-d(g(torch.randn(8, 2)))).mean().backward(); og.step()
"""


def test_a_new_optimizer_that_takes_over_is_counted(tmp_path):
    # Before: only the first optimizer's steps counted: a 3-step first stage "finished after 3
    # optimizer steps, fewer than asked" although stage 2 trained on for 50.
    script = tmp_path / "stages.py"
    script.write_text(_STAGES)
    rec = run_once(_settings(script, steps=8, warmup=1), Variant("o", [], str(script)), 0, tmp_path)
    assert len(rec.losses) == 9
    assert rec.extra["optimizer_switches"] == 1
    # Two optimizers that step in turn (a GAN) still count the first one, one step an iteration.
    script = tmp_path / "gan.py"
    script.write_text(_GAN)
    rec = run_once(_settings(script, steps=8, warmup=1), Variant("o", [], str(script)), 0, tmp_path)
    assert len(rec.losses) == 9
    assert rec.extra["optimizer_switches"] == 0
    assert rec.extra["other_optimizer_steps"] >= 8


_GAN_LOGGED = """
import os, torch
torch.manual_seed(0)
log = open(os.path.join(os.path.dirname(__file__), "logged"), "w")
g = torch.nn.Linear(2, 4); d = torch.nn.Linear(4, 1)
og = torch.optim.SGD(g.parameters(), lr=0.01); od = torch.optim.SGD(d.parameters(), lr=0.01)
for _ in range(30):
    od.zero_grad(); loss_d = d(g(torch.randn(8, 2)).detach()).pow(2).mean() + 1.0
    loss_d.backward(); print(loss_d.item(), file=log, flush=True); od.step()
    og.zero_grad(); (-d(g(torch.randn(8, 2)))).mean().backward(); og.step()
"""


def test_a_gan_steps_loss_is_the_counted_optimizers_own(tmp_path):
    # Before: the generator's backward stayed pending until the discriminator's next step, so
    # each counted step's loss was the mean of D's loss and G's previous one (only the first
    # step's was D's alone). Now the losses before G's step are dropped: the curve is D's.
    rec = _run_with_logged_losses(tmp_path, _GAN_LOGGED, steps=6)
    assert rec.extra["other_optimizer_steps"] >= 6


def test_steps_of_an_optimizer_not_counted_are_shown(verify, tmp_path):
    # other_optimizer_steps was recorded and shown nowhere: a GAN's step time read as one
    # optimizer's step, though it spans the generator's step too.
    script = tmp_path / "gan.py"
    script.write_text(_GAN)
    result, data = verify(script, "--fixed", script, "--steps", "4", "--warmup", "1",
                          "--repeats", "1")
    assert result.exit_code == 0, result.output
    assert data["before"]["other_optimizer_steps"] == 4
    assert data["after"]["other_optimizer_steps"] == 4
    assert data["rows"][0]["other_optimizer_steps"] == 4
    assert ("steps of another optimizer were not counted as steps (original 4, fixed 4 in the "
            "first repeat)") in result.stdout


_BARE_EXCEPT = """
import os, torch
m = torch.nn.Linear(4, 1); o = torch.optim.SGD(m.parameters(), lr=0.01)
for step in range(2000):
    try:
        o.zero_grad(); m(torch.randn(8, 4)).pow(2).mean().backward(); o.step()
    except:  # noqa: E722
        continue
open(os.path.join(os.path.dirname(__file__), "ended"), "w").close()
"""


def test_a_script_that_catches_the_stop_is_ended_at_the_stop(tmp_path):
    # Before: a bare except swallowed StopRun; the script trained on to its end (or to
    # --timeout) and nothing said why.
    script = tmp_path / "bare.py"
    script.write_text(_BARE_EXCEPT)
    rec = run_once(_settings(script, steps=5, warmup=1), Variant("o", [], str(script)), 0, tmp_path)
    assert rec.extra["stop_caught"]
    assert len(rec.losses) == 6
    assert not (tmp_path / "ended").exists()


def test_a_caught_stop_is_in_the_json_report(verify, tmp_path):
    # It was said on stderr only; a CI job reading the report could not tell.
    script = tmp_path / "bare.py"
    script.write_text(_BARE_EXCEPT)
    result, data = verify(script, "--fixed", script, "--steps", "3", "--warmup", "1", "--repeats", "1")
    assert result.exit_code == 0, result.output
    assert data["before"]["stop_caught"] and data["after"]["stop_caught"]
    assert data["before"]["optimizer_switches"] == 0


_BACKWARD_FORMS = """
import torch
torch.manual_seed(0)
m = torch.nn.Linear(4, 2); o = torch.optim.SGD(m.parameters(), lr=0.01)
for step in range(20):
    per_sample = m(torch.randn(8, 4)).pow(2).mean(1)
    if step % 2:
        per_sample.backward(torch.full_like(per_sample, 1 / 8))  # the mean's gradient
    else:
        torch.autograd.backward([per_sample[:4].mean(), per_sample[4:].mean()])
    o.step(); o.zero_grad()
"""


def test_a_loss_given_as_a_gradient_or_a_list_is_recorded(tmp_path):
    # Before: t.backward(gradient) on a non-scalar and backward([l1, l2]) recorded nothing (nan).
    script = tmp_path / "forms.py"
    script.write_text(_BACKWARD_FORMS)
    rec = run_once(_settings(script, steps=5, warmup=1), Variant("o", [], str(script)), 0, tmp_path)
    assert len(rec.losses) == 6
    assert all(v > 0 for v in rec.losses)  # nan > 0 is False


_LOSS_SHAPES = """
import os, torch
torch.manual_seed(0)
log = open(os.path.join(os.path.dirname(__file__), "logged"), "w")
w = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(w.parameters(), lr=0.01)
for i in range(20):
    opt.zero_grad()
    loss = w(torch.randn(5, 3)).pow(2).mean()
    # One-element losses of every shape, one a float64: a mean per step needs no reshape per call.
    loss = [loss, loss.reshape(1), loss.reshape(1, 1), loss.double()][i % 4]
    loss.backward(); print(loss.item(), file=log, flush=True); opt.step()
"""


def test_one_element_losses_of_any_shape_are_recorded(tmp_path):
    # The per-call capture keeps each loss as it comes (one detach, the overhead budget); the end
    # of the run makes the shapes equal. A (1,) loss beside a () one must still read back right.
    _run_with_logged_losses(tmp_path, _LOSS_SHAPES, steps=7)


_BACKWARD_ARGUMENTS = """
import inspect, sys, torch
from trainlint.verify import harness
if sys.argv[1] == "generic":
    # A torch whose backward takes other parameters: the hook must pass everything on as given.
    torch_backward = torch.autograd.backward
    def backward(tensors, *args, **kwargs):
        return torch_backward(tensors, *args, **kwargs)
    torch.autograd.backward = backward
cfg = {"steps": 100, "warmup": 1, "seed": 0}
state = harness._State(cfg)
harness._install(cfg, state)
print(list(inspect.signature(torch.autograd.backward).parameters))
a = torch.ones(2, requires_grad=True); b = torch.ones(2, requires_grad=True)
loss = (a * b * 3).sum()
loss.backward(retain_graph=True, inputs=[a])  # a's gradient only; the graph kept for another
torch.autograd.backward(loss, inputs=(b,), retain_graph=True)
torch.autograd.backward([loss * 2], None, None, False, None, [a])  # torch's order, positionally
print(a.grad.tolist(), b.grad.tolist(), [float(t) for t in state.losses])
"""


@pytest.mark.parametrize("signature", ["torch", "generic"])
def test_backward_arguments_reach_torch_as_given(signature):
    # The hook spells out torch's own parameters where they match (no argument tuple per call,
    # the overhead budget) and passes *args/**kwargs on otherwise; both must keep every argument.
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    out = subprocess.run([sys.executable, "-c", _BACKWARD_ARGUMENTS, signature], capture_output=True,
                         text=True, env=env, check=True).stdout.splitlines()
    params = ["tensors", "grad_tensors", "retain_graph", "create_graph", "grad_variables", "inputs"]
    assert out[0] == str(params if signature == "torch" else ["tensors", "grad_tensors", "args", "kwargs"])
    assert out[1] == "[9.0, 9.0] [3.0, 3.0] [6.0, 6.0, 12.0]"
    from trainlint.verify import harness

    assert harness._backward_parameters(lambda x, *rest: None) is None  # the generic wrapper then


_CPU_LOSSES = """
import torch
from trainlint.verify import harness
cfg = {"steps": 100, "warmup": 1, "seed": 0}
state = harness._State(cfg)
harness._install(cfg, state)
w = torch.ones(2, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for scale in (1.0, 2.0):
    opt.zero_grad()
    loss = (w * scale).sum()
    loss.backward()
    opt.step()
scaled = torch.amp.GradScaler("cpu")
opt.zero_grad()
scaled.scale((w * 3).sum()).backward()  # the scaler's path keeps a tensor, read at the end
scaled.step(opt)
print([type(v).__name__ for v in state.losses], harness._collect(state, "finished")["loss_per_step"])
"""


def test_a_cpu_loss_is_read_at_once_and_a_scaled_one_at_the_end():
    # A CPU loss kept as a tensor per step cost the tight loop more in the C heap than the rest of
    # the harness together (bench/verify_overhead.py --instructions): it is read at backward,
    # where there is no device to wait for. Tensors the other paths keep still read at the end.
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    out = subprocess.run([sys.executable, "-c", _CPU_LOSSES], capture_output=True, text=True,
                         env=env, check=True).stdout.splitlines()
    assert out[-1] == "['float', 'float', 'Tensor'] [2.0, 3.5999999046325684, 4.199999809265137]"


def test_data_waits_belong_to_the_step_they_end_before():
    # The loader hook only appends (end, length) of each wait; the steps are put together at the end.
    from trainlint.verify import harness

    state = harness._State({"steps": 3, "warmup": 0, "seed": 0})
    state.step_ends[:] = [1.0, 2.0, 3.0]
    # (end, length): two before the first step, one after the last
    state.waits[:] = [(0.5, 0.1), (0.9, 0.2), (1.5, 0.3), (2.5, 0.4), (3.5, 0.5)]
    assert harness._waits_per_step(state) == pytest.approx([0.3, 0.3, 0.4])
