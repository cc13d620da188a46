"""TL501 beyond its cases: the precision cases seen in real loops, the helper the fix adds
(exercised directly with a slow writer, so a torn snapshot would show), and the checkpoint
fixture fixed and run for real: every checkpoint holds exactly the state of the step it names."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from trainlint.api import fix_source, lint_source

from _paths import ROOT

FIXTURE = os.path.join(ROOT, "fixtures", "checkpoint", "checkpoint_every_step.py")


def found(text):
    return lint_source(textwrap.dedent(text), select=["TL501"])


# -- what is flagged ------------------------------------------------------------------------

def test_hf_style_save_under_should_save_through_methods():
    text = """
    import torch
    import transformers
    class Trainer:
        def __init__(self):
            self.model = transformers.AutoModelForCausalLM.from_pretrained("m")  # a transformers model
        def _save_checkpoint(self, step):
            self.model.save_pretrained(f"{self.out}/checkpoint-{step}")
            torch.save(self.optimizer.state_dict(), f"{self.out}/checkpoint-{step}/optimizer.pt")
        def train(self):
            for step, batch in enumerate(self.loader):
                loss = self.model(**batch).loss
                loss.backward()
                self.optimizer.step()
                if self.control.should_save:
                    self._save_checkpoint(step)
    """
    diags = found(text)
    assert [d.start.row for d in diags] == [16]  # the call site in the loop, once
    assert "_save_checkpoint()" in diags[0].message
    fixed = "".join(fix_source(textwrap.dedent(text), select=["TL501"]).split())  # layout aside
    assert "_trainlint_async_save(self.model.save_pretrained,f\"{self.out}/checkpoint-{step}\"," \
           "state_dict=self.model.state_dict(),)" in fixed
    assert "_trainlint_async_save(torch.save,self.optimizer.state_dict()," in fixed


@pytest.mark.parametrize("text", [
    # Per epoch, after the inner hot loop.
    """
    for epoch in range(3):
        for x, y in loader:
            loss = model(x, y); loss.backward(); opt.step()
        if rank == 0:
            torch.save(model.state_dict(), f"e{epoch}.pt")
    """,
    # A function that trains a whole epoch, saved by its caller between epochs.
    """
    def train_epoch():
        for x, y in loader:
            loss = model(x, y); loss.backward(); opt.step()
    for epoch in range(3):
        train_epoch()
        torch.save(model.state_dict(), "last.pt")
    """,
    # Once, at the last step.
    """
    for i, (x, y) in enumerate(loader):
        loss = model(x, y); loss.backward(); opt.step()
        if i == len(loader) - 1:
            torch.save(model.state_dict(), "final.pt")
    """,
    # Tokenizer and config saves next to a model save outside the loop.
    """
    for x, y in loader:
        loss = model(x, y); loss.backward(); opt.step()
        if step % 100 == 0:
            tokenizer.save_pretrained(out)
            model.config.save_pretrained(out)
    """,
])
def test_not_flagged(text):
    assert found("import torch\n" + textwrap.dedent(text)) == []


def test_rank_guard_is_not_an_interval():
    text = """
    import torch
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        opt.step()
        if rank == 0:
            torch.save(model.state_dict(), "latest.pt")
    """
    assert "every training step" in found(text)[0].message
    fixed = fix_source(textwrap.dedent(text), select=["TL501"])
    # The interval joins the rank test that holds only the save (no second `if` inside it).
    assert "    if rank == 0 and step % 1000 == 0:\n        _trainlint_async_save(torch.save," in fixed


def test_a_per_step_save_takes_the_interval_of_the_loops_other_save():
    # The other save goes through a helper, under an interval named nothing like a save setting.
    text = """
    import torch
    def save_ckpt(path):
        torch.save(model.state_dict(), path)
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        opt.step()
        torch.save(ema.state_dict(), "ema.pt")
        if step % args.ckpt_every_n == 0:
            save_ckpt(f"ckpt-{step}.pt")
    """
    per_step = [d for d in found(text) if "every training step" in d.message]
    assert len(per_step) == 1 and "save every `args.ckpt_every_n` steps" in per_step[0].message
    fixed = fix_source(textwrap.dedent(text), select=["TL501"], unsafe_fixes=True)
    assert "    if step % args.ckpt_every_n == 0:\n        _trainlint_async_save(torch.save, ema.state_dict()" in fixed
    assert fixed.count("if step % args.ckpt_every_n == 0:") == 2


def test_save_every_option_sets_the_interval():
    from trainlint.config import Settings
    from trainlint.engine import ActiveRule
    from trainlint.fixer import fix_text
    from trainlint.registry import get_rule

    text = "import torch\nfor i in range(10):\n    loss = f(); loss.backward(); opt.step()\n    torch.save(m, 'x.pt')\n"
    rules = [ActiveRule(get_rule("TL501"), {"save-every": 5})]
    fixed = fix_text(text, "x.py", rules, Settings(select=("TL501",)), unsafe_fixes=True).text
    # (`or i == 9`: in a range loop the last step saves too.)
    assert "    if i % 5 == 0 or i == 9:\n        _trainlint_async_save(torch.save, m, 'x.pt')\n" in fixed


MIXED_NEWLINES = (
    "import torch\r\n\r\n\r\ndef train(model, opt, data):\r\n    for step, batch in enumerate(data):\r\n"
    "        loss = model(batch).sum()\r\n        loss.backward()\r\n        opt.step()\r\n"
    "        print(loss.item())\n        torch.save({'model': model.state_dict()}, 'ckpt.pt')\n\n\n"
    "train(None, None, [])\n"
)


def test_a_file_whose_first_lines_end_in_crlf_and_later_ones_in_lf_is_fixed():
    # The edit after the loop repeated its last lines with their LF turned into CRLF (the
    # file's first line break), so it overlapped the edit of the save on that line, and the
    # engine dropped the fix: reported without a fix and without saying why.
    [diag] = lint_source(MIXED_NEWLINES, select=["TL501"])
    assert diag.fix is not None and "not fixed" not in diag.message
    fixed = fix_source(MIXED_NEWLINES, select=["TL501"], unsafe_fixes=True)
    assert "        if step % 1000 == 0:\r\n            _trainlint_async_save(torch.save, " in fixed
    # the loop's own lines kept LF; the wait and the final save after the loop (a loader's loop
    # has no last step to test) take the file's first line break
    assert ("'ckpt.pt')\n    _trainlint_wait_for_save()\r\n"
            "    torch.save({'model': model.state_dict()}, 'ckpt.pt')\r\n\n\ntrain(") in fixed


def test_a_fix_the_engine_drops_says_why(monkeypatch):
    # A fix whose edits overlap is dropped; the finding kept a message written for a fix that
    # was never offered, with no "not fixed:" reason.
    import trainlint.engine

    monkeypatch.setattr(trainlint.engine, "edits_overlap", lambda edits: True)
    [diag] = lint_source(MIXED_NEWLINES, select=["TL501"])
    assert diag.fix is None and diag.message.endswith("; not fixed: trainlint could not make this fix's edits "
                                                      "fit together (please report this)")


@pytest.mark.parametrize(("save", "file_object"), [
    ("with open('ckpt.pt', 'wb') as fh:\n        torch.save(model.state_dict(), fh)", "fh"),
    ("torch.save(model.state_dict(), open('last.pt', 'wb'))", "open('last.pt', 'wb')"),
    ("torch.save(model.state_dict(), f=io.BytesIO())", "io.BytesIO()"),
])
def test_a_save_into_a_file_object_is_only_put_under_an_interval(save, file_object):
    # The helper would write a file object blocking all the same: the message promises no
    # background write, says why, and the fix adds no helper. It saves once more after the loop
    # (a loader's loop has no last step to test).
    text = ("import io\nimport torch\nfor step, x in enumerate(loader):\n    model(x).sum().backward()\n"
            "    opt.step()\n    " + save + "\n")
    [finding] = found(text)
    assert "snapshot" not in finding.message and finding.message.endswith(
        "save every `1000` steps, and once more after the loop (the fix does only that; no background write is "
        f"offered: `{file_object}` is a file object, written before the save returns)")
    fixed = fix_source(text, select=["TL501"], unsafe_fixes=True)
    assert "_trainlint_async_save" not in fixed and "    if step % 1000 == 0:\n        " + save.replace(
        "\n", "\n    ") + "\n" in fixed and fixed.endswith("\n" + save.replace("\n    ", "\n") + "\n")


# -- the file used after the save ------------------------------------------------------------

def test_a_method_of_the_saved_path_uses_the_file():
    # pathlib's atomic write: `tmp.rename(path)` is handed the file as the object of its method.
    text = """
    import torch
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        opt.step()
        torch.save(model.state_dict(), tmp)
        tmp.rename(out / "ckpt.pt")
    """
    fixed = fix_source(textwrap.dedent(text), select=["TL501"], unsafe_fixes=True)
    assert "_trainlint_async_save" not in fixed
    assert "    if step % 1000 == 0:\n        torch.save(model.state_dict(), tmp)\n" \
           "        tmp.rename(out / \"ckpt.pt\")\n" in fixed


def test_other_saves_into_the_same_folder_do_not_use_the_file():
    # transformers (whose models' save_pretrained takes `state_dict=`): the tokenizer and the optimizer written beside the model are not reads.
    text = """
    import os
    import torch
    import transformers
    model = transformers.AutoModelForCausalLM.from_pretrained("m")
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        loss.backward()
        opt.step()
        if step % 500 == 0:
            model.save_pretrained(out)
            tokenizer.save_pretrained(out)
            torch.save(opt.state_dict(), os.path.join(out, "optimizer.pt"))
    """
    fixed = "".join(fix_source(textwrap.dedent(text), select=["TL501"], unsafe_fixes=True).split())  # layout aside
    assert "_trainlint_async_save(model.save_pretrained,out,state_dict=model.state_dict())" in fixed
    assert "_trainlint_async_save(torch.save,opt.state_dict(),os.path.join(out,\"optimizer.pt\"))" in fixed


def test_saving_again_or_making_the_folder_does_not_use_the_file():
    text = """
    import os
    import torch
    import transformers
    model = transformers.AutoModelForCausalLM.from_pretrained("m")
    def save_all(out):
        model.save_pretrained(out)
        os.makedirs(os.path.join(out, "extra"), exist_ok=True)
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        loss.backward()
        opt.step()
        if step % 500 == 0:
            save_all(f"ckpt-{step}")
            save_all(f"ckpt-{step}")
    """
    fixed = fix_source(textwrap.dedent(text), select=["TL501"], unsafe_fixes=True)
    assert "_trainlint_async_save(model.save_pretrained, out, state_dict=model.state_dict())" in fixed


def test_a_helper_shared_with_a_caller_that_uses_the_file_waits_first():
    # The async fix rewrites the helper for all its callers: one that then moves the file kept it
    # blocking; now the fix waits right after that call (a call run once after the loop), so the
    # move finds the file complete, and the loop's saves are written in the background.
    text = """
    import os
    import torch
    def save_ckpt(path):
        torch.save(model.state_dict(), path)
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        opt.step()
        if step % 100 == 0:
            save_ckpt(f"ckpt-{step}.pt")
    save_ckpt("final.tmp")
    os.replace("final.tmp", "final.pt")
    """
    assert found(text)
    fixed = fix_source(textwrap.dedent(text), select=["TL501"], unsafe_fixes=True)
    assert fixed.endswith('        save_ckpt(f"ckpt-{step}.pt")\n_trainlint_wait_for_save()\nsave_ckpt("final.tmp")\n'
                          '_trainlint_wait_for_save()\nos.replace("final.tmp", "final.pt")\n')
    assert "    _trainlint_async_save(torch.save, model.state_dict(), path)\n" in fixed


ATOMIC = """
import os
import sys
import torch
out = sys.argv[1]
model = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(8, 64)).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    torch.save(model.state_dict(), os.path.join(out, "ckpt.pt.tmp"))
    os.replace(os.path.join(out, "ckpt.pt.tmp"), os.path.join(out, "ckpt.pt"))
"""


def test_fixed_atomic_write_runs(tmp_path):
    # The asynchronous fix once left os.replace without its file (FileNotFoundError): the fixed
    # script saves and replaces together, every 1000 steps, blocking.
    pytest.importorskip("torch")
    fixed = fix_source(ATOMIC, select=["TL501"], unsafe_fixes=True)
    assert "_trainlint_async_save" not in fixed and "if step % 1000 == 0" in fixed
    script, shim = tmp_path / "atomic.py", tmp_path / "slow_save.py"
    script.write_text(fixed)
    shim.write_text(SLOW_SAVE)
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run([sys.executable, str(shim), str(script), str(out)], capture_output=True, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(os.listdir(out)) == ["ckpt.pt"]


# -- the helper the fix adds ----------------------------------------------------------------

def _helper():
    from trainlint.rules.checkpoint.async_save_helper import HELPER_CODE

    namespace = {}
    exec(compile(HELPER_CODE, "helper", "exec"), namespace)
    return namespace["_trainlint_async_save"]


def test_helper_snapshots_before_returning(tmp_path):
    pytest.importorskip("torch")
    import threading
    import time

    import torch

    save = _helper()
    started = threading.Event()

    def slow_save(obj, path):
        started.set()
        time.sleep(0.3)  # training goes on meanwhile
        torch.save(obj, path)

    weights = torch.zeros(1000)
    state = {"w": weights, "nested": [weights[:10], (1, "a")], "step": 0}
    save(slow_save, state, tmp_path / "a.pt")
    weights.add_(1)  # the next step mutates the live tensors in place
    state["step"] = 1
    started.wait(5)
    save(slow_save, state, tmp_path / "b.pt")  # waits for a.pt first
    save.thread.join()
    a, b = torch.load(tmp_path / "a.pt"), torch.load(tmp_path / "b.pt")
    assert a["step"] == 0 and torch.equal(a["w"], torch.zeros(1000)) and torch.equal(a["nested"][0], torch.zeros(10))
    assert a["nested"][1] == (1, "a")
    assert b["step"] == 1 and torch.equal(b["w"], torch.ones(1000))


def test_helper_keeps_tensors_that_share_memory_shared(tmp_path):
    # Tied weights (an embedding and the output layer of GPT-2 style models) are one storage in
    # the state dict: the snapshot copied each tensor apart, so the file held the weights twice
    # and loaded them untied. Each storage is now copied once, each tensor the same view of it.
    pytest.importorskip("torch")
    import torch

    save = _helper()
    model = torch.nn.Sequential(torch.nn.Embedding(50, 16), torch.nn.Linear(16, 50, bias=False))
    model[1].weight = model[0].weight
    state = model.state_dict()
    state["window"] = model[0].weight.detach()[2:5]  # a view into the same storage
    torch.save(state, tmp_path / "blocking00.pt")  # names of one length: the archive stores entries under it
    save(torch.save, state, tmp_path / "background.pt")
    with torch.no_grad():
        model[0].weight.add_(1)  # training goes on
    save.thread.join()
    loaded = torch.load(tmp_path / "background.pt")
    assert (tmp_path / "background.pt").stat().st_size == (tmp_path / "blocking00.pt").stat().st_size
    ptr = loaded["0.weight"].untyped_storage().data_ptr()
    assert loaded["1.weight"].untyped_storage().data_ptr() == ptr == loaded["window"].untyped_storage().data_ptr()
    assert torch.equal(loaded["window"], loaded["0.weight"][2:5])
    assert torch.equal(loaded["0.weight"] + 1, model[0].weight.detach())  # the state of the save's step


def test_helper_keeps_parameters_requires_grad_and_identity(tmp_path):
    # The snapshot turned an nn.Parameter into a plain tensor (`fresh.ctx = torch.load(...)` then
    # raised TypeError), dropped requires_grad, and copied a tensor stored twice (`sd["alias"] =
    # sd["weight"]`) into two objects; torch.save keeps all three, and so does the snapshot now.
    pytest.importorskip("torch")
    import torch

    save = _helper()
    ctx = torch.nn.Parameter(torch.randn(4, 8))
    frozen = torch.nn.Parameter(torch.randn(3), requires_grad=False)
    leaf = torch.randn(5, requires_grad=True)
    state = {"ctx": ctx, "frozen": frozen, "leaf": leaf, "plain": torch.randn(2), "alias": ctx}
    state["window"] = ctx.detach()[1:3]  # a view into the Parameter's memory
    torch.save(state, tmp_path / "blocking00.pt")  # names of one length: the archive stores entries under it
    save(torch.save, state, tmp_path / "background.pt")
    save.thread.join()
    expected, loaded = torch.load(tmp_path / "blocking00.pt"), torch.load(tmp_path / "background.pt")
    assert (tmp_path / "background.pt").stat().st_size == (tmp_path / "blocking00.pt").stat().st_size
    for key, value in expected.items():
        assert type(loaded[key]) is type(value), key
        assert loaded[key].requires_grad == value.requires_grad, key
        assert loaded[key].is_leaf and torch.equal(loaded[key], value), key
    assert type(loaded["ctx"]) is torch.nn.Parameter and loaded["leaf"].requires_grad
    assert loaded["alias"] is loaded["ctx"]
    assert loaded["window"].untyped_storage().data_ptr() == loaded["ctx"].untyped_storage().data_ptr()
    save(torch.save, ctx, tmp_path / "ctx.pt")  # a Parameter alone, as `torch.save(model.ctx, ...)`
    save.thread.join()
    fresh = torch.nn.Linear(2, 2)
    fresh.ctx = torch.load(tmp_path / "ctx.pt")  # a Parameter: registered, no TypeError
    assert "ctx" in dict(fresh.named_parameters())


def test_helper_writes_safetensors_and_raises_its_refusal_of_shared_memory(tmp_path):
    # safetensors' save_file refuses tensors that share memory; from the snapshot it does too
    # (raised by the next save or the wait), and writes what it wrote before otherwise.
    pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    import threading

    import torch

    save = _helper()
    wait = save.__globals__["_trainlint_wait_for_save"]
    plain = {"w": torch.randn(4, 3), "b": torch.zeros(3)}
    save(safetensors_torch.save_file, plain, str(tmp_path / "a.safetensors"))
    wait()
    loaded = safetensors_torch.load_file(str(tmp_path / "a.safetensors"))
    assert loaded.keys() == plain.keys() and all(torch.equal(loaded[k], plain[k]) for k in plain)
    tied = {"emb": plain["w"], "out": plain["w"]}
    with pytest.raises(RuntimeError, match="share memory"):
        safetensors_torch.save_file(tied, str(tmp_path / "blocking.safetensors"))
    hook, threading.excepthook = threading.excepthook, lambda args: None  # keep the test's output clean
    try:
        save(safetensors_torch.save_file, tied, str(tmp_path / "b.safetensors"))
        with pytest.raises(RuntimeError, match="share memory"):
            wait()
    finally:
        threading.excepthook = hook


def test_helper_saves_live_modules_blocking_and_reraises_write_errors(tmp_path):
    pytest.importorskip("torch")
    import torch

    save = _helper()
    model = torch.nn.Linear(2, 2)
    calls = []
    save(lambda obj, path: calls.append((obj, threading_name())), {"model": model}, "x.pt")
    assert calls and calls[0][0]["model"] is model and calls[0][1] == "MainThread"

    def failing(obj, path):
        raise OSError("disk full")

    import threading
    hook, threading.excepthook = threading.excepthook, lambda args: None  # keep the test's output clean
    try:
        save(failing, {"w": torch.ones(1)}, "y.pt")
        with pytest.raises(OSError, match="disk full"):
            save(torch.save, {"w": torch.ones(1)}, tmp_path / "z.pt")
    finally:
        threading.excepthook = hook


LAST_SAVE_FAILS = """
import atexit, sys
import torch
atexit.register(print, "the script's own exit handler ran")
def failing(obj, path):
    raise OSError("disk full")
_trainlint_async_save(torch.save, {"w": torch.ones(1)}, sys.argv[1])
_trainlint_async_save(failing, {"w": torch.ones(1)}, sys.argv[1])
print("training finished")
"""


def test_helper_fails_the_process_when_the_last_save_fails(tmp_path):
    # No later save re-raises the last one's error: at exit it makes the process fail, as the
    # blocking save would have (exit status 1), once the script's own exit handlers have run.
    from trainlint.rules.checkpoint.async_save_helper import HELPER_CODE

    pytest.importorskip("torch")
    script = tmp_path / "last_save_fails.py"
    script.write_text(HELPER_CODE + LAST_SAVE_FAILS)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "a.pt")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "OSError: disk full" in proc.stderr
    assert proc.stdout.splitlines() == ["training finished", "the script's own exit handler ran"]
    # ... and a run whose saves all succeed still exits 0.
    script.write_text(HELPER_CODE + LAST_SAVE_FAILS.replace("raise OSError", "return  # "))
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "b.pt")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and (tmp_path / "b.pt").exists(), proc.stderr[-3000:]


def test_helper_writes_file_objects_before_returning():
    pytest.importorskip("torch")
    import io

    import torch

    save = _helper()
    buffer = io.BytesIO()
    save(torch.save, {"w": torch.ones(3)}, buffer)  # the caller reads the buffer right after
    buffer.seek(0)
    assert torch.equal(torch.load(buffer)["w"], torch.ones(3))


def threading_name():
    import threading

    return threading.current_thread().name


# -- the fixture, fixed and run -------------------------------------------------------------

SLOW_SAVE = """
import runpy, sys, time
import torch
_save = torch.save
def slow_save(*args, **kwargs):
    time.sleep(0.05)  # a slow disk: training moves on while a background write is pending
    _save(*args, **kwargs)
torch.save = slow_save
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
"""


def _run(script, out, record, tmp_path):
    shim = tmp_path / "slow_save.py"
    shim.write_text(SLOW_SAVE)
    cmd = [sys.executable, str(shim), str(script), "--out", str(out), "--record", str(record)]
    proc = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _assert_same_state(saved, recorded):
    import torch

    assert saved.keys() == recorded.keys()
    for key in saved:
        if isinstance(saved[key], dict):
            _assert_same_state(saved[key], recorded[key])
        elif isinstance(saved[key], torch.Tensor):
            assert torch.equal(saved[key], recorded[key]), key
        else:
            assert saved[key] == recorded[key], key


def test_fixed_checkpoint_fixture_writes_the_state_of_each_step(tmp_path):
    pytest.importorskip("torch")
    import torch

    with open(FIXTURE, encoding="utf-8") as f:
        original = f.read()
    fixed = fix_source(original, select=["TL501"], unsafe_fixes=True)
    assert len(re.findall(r"_trainlint_async_save\(\s*torch\.save,", fixed)) == 2
    assert "if step % args.save_every == 0 or step == args.steps - 1:" in fixed
    script = tmp_path / "checkpoint_every_step_fixed.py"
    script.write_text(fixed)

    out, record = tmp_path / "ckpt", tmp_path / "history.pt"
    _run(script, out, record, tmp_path)
    history = torch.load(record)
    # 12 steps, --save-every 4: snapshots at steps 0, 4, 8, and latest.pt now every 4 steps too,
    # and at the last step: it ends with the state training ends with, as the original's did (an
    # interval alone left it at step 8).
    assert sorted(os.listdir(out)) == ["latest.pt", "step-0.pt", "step-4.pt", "step-8.pt"]
    for step in (0, 4, 8):
        saved = torch.load(out / f"step-{step}.pt")
        assert saved.pop("step") == step
        _assert_same_state(saved, history[step])
    latest = torch.load(out / "latest.pt")
    assert latest.pop("step") == 11
    _assert_same_state(latest, history[11])
    # Training itself is untouched: the final state equals the original script's.
    original_out, original_record = tmp_path / "orig", tmp_path / "orig_history.pt"
    _run(FIXTURE, original_out, original_record, tmp_path)
    _assert_same_state(torch.load(original_record)[11], history[11])
    _assert_same_state(torch.load(original_out / "step-8.pt"), torch.load(out / "step-8.pt"))


def test_helper_tags_a_copy_with_the_device_of_what_it_copies(tmp_path):
    # A blocking torch.save tags each storage with its device, and torch.load puts it back there.
    # The snapshot is a CPU copy: written as such, a resumed EMA dict of GPU tensors loaded on the
    # CPU and the next `ema[k].add_(v)` with a GPU `v` failed. The helper registers a tagger that
    # gives each copy the tag of the storage it copied (filled in for GPU storages; a CPU-only
    # machine can still check that the tagger answers from that table and only there).
    pytest.importorskip("torch")
    import torch

    save = _helper()
    weights = torch.arange(4.0)
    save(torch.save, {"w": weights}, tmp_path / "cpu.pt")
    save.thread.join()
    seen = []

    def where(storage, location):
        seen.append(location)
        return storage

    torch.load(tmp_path / "cpu.pt", map_location=where)
    assert seen == ["cpu"]  # a CPU tensor keeps its tag
    copy = weights.clone()
    save.locations = {copy.untyped_storage().data_ptr(): "cuda:0"}  # as a snapshot of a GPU storage records it
    torch.save({"w": copy, "other": weights}, tmp_path / "tagged.pt")
    save.locations = {}
    seen.clear()
    loaded = torch.load(tmp_path / "tagged.pt", map_location=where)
    assert sorted(seen) == ["cpu", "cuda:0"] and torch.equal(loaded["w"], weights)


@pytest.mark.skipif(not __import__("importlib").util.find_spec("torch") or not __import__("torch").cuda.is_available(),
                    reason="needs a CUDA device: the snapshot of GPU storages")
def test_helper_checkpoint_of_gpu_tensors_loads_on_the_gpu(tmp_path):
    import torch

    save = _helper()
    model = torch.nn.Linear(8, 8).cuda()
    ema = {k: v.detach().clone() for k, v in model.state_dict().items()}
    state = {"model": model.state_dict(), "ema": ema, "step": 5}
    torch.save(state, tmp_path / "blocking.pt")
    save(torch.save, state, tmp_path / "backgrnd.pt")
    save.thread.join()
    blocking, background = torch.load(tmp_path / "blocking.pt"), torch.load(tmp_path / "backgrnd.pt")
    for part in ("model", "ema"):
        for key, value in blocking[part].items():
            assert background[part][key].device == value.device and value.is_cuda
            assert torch.equal(background[part][key], value)
