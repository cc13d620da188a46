"""TL201-TL204 beyond their rule cases: the suggestions (display-only fixes, which the rule cases
cannot see since `--fix` never writes them) and, against real torch, that fixed code still
prints what the original printed."""

import contextlib
import io

import pytest

from trainlint.config import Settings
from trainlint.engine import lint_text
from trainlint.fixer import fix_text
from trainlint.rule import in_training_loop
from trainlint.textpos import apply_edits


def _findings(code: str, code_name: str):
    settings = Settings(select=(code_name,))
    return [d for d in lint_text(code, "t.py", settings.active_rules(), settings) if d.code == code_name]


def _suggested(code: str, code_name: str) -> list:
    """The code each finding's fix would produce (None where there is no fix)."""
    return [apply_edits(code, d.fix.edits) if d.fix and d.fix.edits else None for d in _findings(code, code_name)]


# -- TL201/TL203: an assignment moves under the interval only with the reads of its name ----------------

def test_tl201_suggestion_moves_the_reads_right_after_an_assignment():
    code = in_training_loop("l = float(loss)\nlosses.append(l)\nprint(step)")
    assert _suggested(code, "TL201") == [in_training_loop(
        "if step % 100 == 0:\n    l = float(loss)\n    losses.append(l)\nprint(step)")]


def test_tl201_no_suggestion_when_the_name_is_read_elsewhere():
    after_loop = in_training_loop("l = float(loss)") + "print(l)\n"
    after_work = in_training_loop("l = float(loss)\nopt.zero_grad()\nprint(l)")
    earlier = in_training_loop("if l > 10:\n    print('high')\nl = float(loss)")
    attribute = in_training_loop("self.l = float(loss)")
    for code in (after_loop, after_work, earlier, attribute):
        assert _suggested(code, "TL201") == [None], code


def test_tl201_assignment_read_by_nobody_still_moves_alone():
    code = in_training_loop("l = float(loss)")
    assert _suggested(code, "TL201") == [in_training_loop("if step % 100 == 0:\n    l = float(loss)")]


_TRAIN_FN = ("import torch\ndef train(model, opt, data):\n    {init}\n    for step, (x, y) in enumerate(data):\n"
             "        out = model(x)\n        loss = out.mean()\n        loss.backward()\n        opt.step()\n"
             "        {fill}\n    {after}\n")


def test_tl201_no_suggestion_for_a_container_filled_per_step_and_read_elsewhere():
    # Filled every N steps, the container would hold every N-th value: the mean of every tenth
    # loss, or a list of predictions shorter than its targets (a size mismatch after the loop).
    cases = [
        _TRAIN_FN.format(init="losses = []", fill="losses.append(loss.item())",
                         after="return sum(losses) / len(losses)"),
        _TRAIN_FN.format(init="preds, targets = [], []",
                         fill="preds.append(out.detach().sigmoid().cpu())\n        targets.append(y)",
                         after="return torch.cat(preds), torch.cat(targets)"),
        _TRAIN_FN.format(init="meter = AverageMeter()", fill="meter.update(loss.item(), x.size(0))",
                         after="return meter.avg"),
        _TRAIN_FN.format(init="by_step = {}", fill="by_step.setdefault(step, []).append(loss.item())",
                         after="return by_step"),
        # Read at an interval of its own: a window of the last N values would hold one.
        _TRAIN_FN.format(init="losses = []",
                         fill="losses.append(loss.item())\n        if step % 10 == 0:\n"
                              "            print(sum(losses[-10:]) / 10)",
                         after="pass"),
        # Handed in by the caller, or an attribute: read where this cannot see.
        _TRAIN_FN.format(init="pass", fill="history.append(loss.item())", after="pass").replace(
            "data):", "data, history):"),
        _TRAIN_FN.format(init="pass", fill="self.history['d'].append(loss.item())", after="pass"),
        # A module variable a function fills: another function may read it.
        "import torch\nlosses = []\n" + _TRAIN_FN.format(
            init="pass", fill="losses.append(loss.item())", after="pass").partition("\n")[2],
    ]
    for code in cases:
        assert _findings(code, "TL201"), code
        assert _suggested(code, "TL201") == [None] * len(_findings(code, "TL201")), code


def test_tl201_container_read_by_nobody_else_still_moves():
    code = _TRAIN_FN.format(init="losses = []", fill="losses.append(loss.item())", after="pass")
    assert _suggested(code, "TL201") == [code.replace(
        "        losses.append(loss.item())", "        if step % 100 == 0:\n            losses.append(loss.item())")]


def test_tl201_no_interval_suggested_inside_a_remainder_test():
    # `if step % 100 == 0:` inside `if step % log_every:` would hold on no step when log_every divides 100.
    code = in_training_loop("if step % log_every:\n    print(loss.item())")
    assert _suggested(code, "TL201") == [None]


def test_tl201_reports_a_copy_to_the_host_once():
    # `.cpu()` is the wait; what it copied is in host memory, and reading it again waits for nothing.
    code = in_training_loop("preds = model(x).argmax(-1).cpu()\nhits = preds.tolist()\narr = preds.numpy()")
    assert [d.message.split(" ", 1)[0] for d in _findings(code, "TL201")] == ["`.cpu()`"]


@pytest.mark.parametrize("copy", ['.to("cpu")', '.to(device="cpu")', '.to(torch.device("cpu"))'])
def test_tl201_reports_a_copy_to_the_host_spelled_to_cpu_once(copy):
    # `.to("cpu")` is `.cpu()`: the copy is the one wait, reported at the copy, not again at
    # `.numpy()` of what it gave (it was reported there alone) nor at reads of its result.
    chained = in_training_loop(f"preds = model(x).argmax(-1).detach(){copy}.numpy()")
    kept = in_training_loop(f"preds = model(x).argmax(-1){copy}\nhits = preds.tolist()\narr = preds.numpy()")
    for code in (chained, kept):
        assert [d.message.split(" waits", 1)[0] for d in _findings(code, "TL201")] == [f"`{copy}`"], code


def test_tl201_suggestion_uses_the_scripts_interval_constant():
    # A user's `PRINT_FREQ = 20` gave `if step % 100 == 0:`.
    code = in_training_loop("losses.append(loss.item())").replace("import torch\n", "import torch\nPRINT_FREQ = 20\n")
    assert _suggested(code, "TL201") == [in_training_loop(
        "if step % PRINT_FREQ == 0:\n    losses.append(loss.item())").replace("import torch\n", "import torch\nPRINT_FREQ = 20\n")]
    assert "every `PRINT_FREQ` steps" in _findings(code, "TL201")[0].fix.message


def test_tl201_fix_title_names_an_interval_expression_without_its_parentheses():
    # The loop's own `if step % (args.log_interval * 2) == 0:`: "every `(args.log_interval * 2)` steps".
    code = in_training_loop("if step % (args.log_interval * 2) == 0:\n    print(step)\nprint(loss.item())")
    title = _findings(code, "TL201")[0].fix.message
    assert "every `args.log_interval * 2` steps" in title and "(`if step % (args.log_interval * 2) == 0:`)" in title


def test_tl201_an_attribute_named_like_the_counter_is_not_the_loops_interval_test():
    # `args.step` is not the loop's `step`: its remainder is no test of the loop's steps to reuse
    # (its `.step` matched the counter, and the fix guarded the read with it).
    code = in_training_loop("if args.step % 10 == 0:\n    print(step)\nprint(loss.item())")
    [finding] = _findings(code, "TL201")
    assert "(`if step % 100 == 0:`)" in finding.message and "args.step" not in finding.fix.message


_AGENT_LOOP = ("import gym\nimport torch\nenv = gym.make('CartPole-v1')\nq_net = torch.nn.Linear(4, 2).cuda()\n"
               "obs = env.reset()\nfor step in range(1000):\n    q = q_net(torch.as_tensor(obs).cuda())\n    {act}\n"
               "    loss = q.pow(2).mean()\n    loss.backward()\n    opt.step()\n")


@pytest.mark.parametrize("act", ["env.step(q.argmax().item())", "action = q.argmax().item()\n    env.step(action)",
                                 "action = int(q.argmax())\n    obs, reward, done, info = env.step(action)"])
def test_tl201_an_action_the_environment_needs_gets_no_interval(act):
    # The environment needs the action every step: neither the message nor a suggestion may put
    # the read under an interval (all three were advised `if step % 100 == 0:`, and the first two
    # got it as a suggestion, which would have left env.step without an action on most steps).
    [finding] = _findings(_AGENT_LOOP.format(act=act), "TL201")
    assert "(passed to `env.step`)" in finding.message
    assert "% 100" not in finding.message and "logging interval" not in finding.message
    assert finding.fix is None


# A loop counting in `it`, a counter of its own (`global_step`), a framework's hook; the script's
# interval or none.
_COUNTERS = [
    "import torch\nfor it in range(n):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n    {stmt}\n",
    "import torch\nglobal_step = 0\nfor x in loader:\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"
    "    global_step += 1\n    {stmt}\n    if global_step % args.log_interval == 0:\n        log(global_step)\n",
    "import torch\nimport lightning as L\nclass M(L.LightningModule):\n    def training_step(self, batch, i):\n"
    "        loss = self(batch)\n        {stmt}\n        return loss\n",
]


@pytest.mark.parametrize("loop", _COUNTERS, ids=["range", "own-counter", "lightning-hook"])
@pytest.mark.parametrize(("code_name", "stmt"), [
    ("TL201", "print(loss.item())"),
    ("TL202", "print(f'loss {loss:.3f}')"),
    ("TL203", "print(torch.cuda.memory_allocated())"),
])
def test_the_message_names_the_guard_its_fix_writes(loop, code_name, stmt):
    # The message gave `if step % log_every == 0:` while the fix wrote `if it % 100 == 0:`.
    [finding] = _findings(loop.format(stmt=stmt), code_name)
    guard = finding.fix.message.split("(`", 1)[1].split("`)", 1)[0]
    assert guard.startswith("if ") and "step % log_every" not in guard
    assert f"(`{guard}`)" in finding.message


def test_tl203_moves_the_chain_of_reads():
    code = in_training_loop("m = torch.cuda.memory_allocated()\ngb = m / 2**30\nstats.append(gb)")
    settings = Settings(select=("TL203",))
    fixed = fix_text(code, "t.py", settings.active_rules(), settings, unsafe_fixes=True).text
    assert fixed == in_training_loop(
        "if step % 100 == 0:\n    m = torch.cuda.memory_allocated()\n    gb = m / 2**30\n    stats.append(gb)")


# -- TL204: `if <tensor>: raise` gets the same suggestion as `assert` ------------------------------------

def test_tl204_if_raise_suggests_assert_async():
    code = in_training_loop("# guard\nif torch.isnan(loss):\n    raise RuntimeError('loss is nan')")
    assert _suggested(code, "TL204") == [in_training_loop(
        "# guard\ntorch._assert_async(torch.logical_not(torch.isnan(loss)), 'loss is nan')")]
    negated = in_training_loop("if not torch.isfinite(loss).all():\n    raise ValueError(f'bad loss at {step}')")
    assert _suggested(negated, "TL204") == [in_training_loop("torch._assert_async(torch.isfinite(loss).all())")]
    aliased = in_training_loop("if loss > 1e4:\n    raise RuntimeError").replace("import torch\n", "import torch as th\n")
    assert _suggested(aliased, "TL204") == [
        in_training_loop("th._assert_async(th.logical_not(loss > 1e4))").replace("import torch\n", "import torch as th\n")]


def test_tl204_a_suggestion_too_long_for_its_line_is_laid_out_as_black_would():
    # It was shown on one line of 110 characters (fixtures/host_sync/moe_forward_stats.py).
    code = in_training_loop("if torch.isnan(loss).any():\n    raise FloatingPointError('the loss of this step is not a number')")
    assert _suggested(code, "TL204") == [in_training_loop(
        "torch._assert_async(\n    torch.logical_not(torch.isnan(loss).any()),\n"
        "    'the loss of this step is not a number',\n)")]
    short = in_training_loop("assert torch.isfinite(loss).all(), 'the loss of this step is not a number at all'")
    assert _suggested(short, "TL204") == [in_training_loop(
        "torch._assert_async(\n    torch.isfinite(loss).all(), 'the loss of this step is not a number at all'\n)")]


def test_tl204_no_suggestion_where_python_still_needs_a_bool():
    for body in ("if torch.isnan(loss) or torch.isinf(loss):\n    raise RuntimeError('x')",
                 "if 0 < loss < 10:\n    raise RuntimeError('x')",
                 "if torch.isnan(loss):\n    print('nan')\n    raise RuntimeError('x')",
                 "if torch.isnan(loss):\n    break",
                 "if torch.isnan(loss):\n    raise RuntimeError('x')\nelse:\n    print(step)"):
        assert _suggested(in_training_loop(body), "TL204") == [None], body


# -- against real torch --------------------------------------------------------------------------------

ACCUMULATE = (
    "import torch\n"
    "torch.manual_seed(0)\n"
    # `.to(...)`: a script that names no device trains on the CPU and is not reported.
    "model = torch.nn.Linear(4, 1).to('cpu')\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.01)\n"
    "loader = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(30)]\n"
    "total, seen = 0.0, []\n"
    "for step, (x, y) in enumerate(loader):\n"
    "    loss = torch.nn.functional.mse_loss(model(x), y)\n"
    "    opt.zero_grad()\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    total += loss.item()\n"
    "    if step % 10 == 9:\n"
    "        print(f'avg {total / 10:.4f}', '%.4f' % total, round(total, 4), total > 1)\n"
    "        seen.append(round(total, 4))\n"
    "        total = 0.0\n"
    "print('last', total, seen)\n"
)


def _stdout(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "t.py", "exec"), {})
    return out.getvalue()


def test_tl201_accumulator_fix_prints_what_the_original_printed():
    pytest.importorskip("torch")
    settings = Settings(select=("TL201",))
    fixed = fix_text(ACCUMULATE, "t.py", settings.active_rules(), settings, unsafe_fixes=True).text
    assert "total += loss.detach()" in fixed and "float(total) / 10" in fixed
    assert "round(float(total), 4)" in fixed and "print('last', float(total), seen)" in fixed
    original, after = _stdout(ACCUMULATE), _stdout(fixed)
    assert "tensor(" not in after
    assert original == after


def test_tl204_suggestion_raises_on_the_device_check():
    torch = pytest.importorskip("torch")
    code = in_training_loop("if torch.isnan(loss):\n    raise RuntimeError('loss is nan')")
    (suggested,) = _suggested(code, "TL204")
    check = suggested.splitlines()[-1].strip()
    with pytest.raises(RuntimeError, match="loss is nan"):
        eval(check, {"torch": torch, "loss": torch.tensor(float("nan"))})
    eval(check, {"torch": torch, "loss": torch.tensor(1.0)})


def test_tl201_no_guard_suggested_for_a_value_lightning_logs():
    # `self.log("y", loss.item() * 2)`, `self.log("x", loss.cpu())`: the advice is to log the
    # tensor; a guard (it was suggested) would leave steps out of what Lightning reduces.
    hook = ("import torch\nimport lightning as L\nclass M(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n        loss = self.model(batch)\n"
            "        {log}\n        return loss\n")
    for log in ("self.log('y', loss.item() * 2)", "self.log('x', loss.cpu())", "self.log_dict({'n': int(loss)})"):
        code = hook.format(log=log)
        assert _suggested(code, "TL201") == [None], code
