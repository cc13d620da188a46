"""The shared analyses: qualified names through every alias form, hot loops, interval guards."""

import libcst as cst
import pytest

from trainlint.analysis.context import FileContext
from trainlint.analysis.literals import UNKNOWN
from trainlint.analysis.names import bound_names, local_names
from trainlint.analysis.tree import TreeIndex, named_parameters, parameter, parameter_names


def ctx_for(code):
    return FileContext("t.py", code, cst.parse_module(code), None)


@pytest.mark.parametrize(
    "imports,expr",
    [
        ("import torch", "torch.utils.data.DataLoader"),
        ("from torch.utils.data import DataLoader as DL", "DL"),
        ("import torch.utils.data as tud", "tud.DataLoader"),
        ("from torch.utils import data", "data.DataLoader"),
        ("from torch.utils.data.dataloader import DataLoader", "DataLoader"),
        ("import torch.utils.data", "torch.utils.data.DataLoader"),
    ],
)
def test_qualified_names(imports, expr):
    ctx = ctx_for(f"{imports}\nx = {expr}(ds)\n")
    call = ctx.index.nodes(cst.Call)[0]
    assert ctx.names.qualified(call.func) == "torch.utils.data.DataLoader"


def test_unimported_and_relative_names():
    ctx = ctx_for("from .data import DataLoader\nx = DataLoader(ds)\ny = Foo()\n")
    calls = ctx.index.nodes(cst.Call)
    assert ctx.names.qualified(calls[0].func) == ".data.DataLoader"
    assert ctx.names.qualified(calls[1].func) is None


def test_local_subclass():
    ctx = ctx_for("from torch.utils.data import DataLoader\nclass A(DataLoader): pass\nclass B(A): pass\nB(ds)\n")
    call = ctx.index.nodes(cst.Call)[0]
    assert ctx.names.is_a(call.func, "torch.utils.data.DataLoader")


HOT = """
def train_step(batch):
    loss = model(batch)
    loss.backward()
    optimizer.step()
    return loss

def log(loss):
    print(loss)

for epoch in range(3):
    scheduler.step()
    for i, batch in enumerate(loader):
        loss = train_step(batch)
        log(loss)
        if i % 10 == 0:
            marker_guarded = 1
        for p in params:
            marker_nested = 1
    marker_epoch = 1
"""


def _name(ctx, name):
    return next(n for n in ctx.index.nodes(cst.Name) if n.value == name)


def test_a_loop_over_items_written_out_is_no_hot_loop():
    """A loop over a tuple or list display (or a name assigned only one) runs a few cases, as a test
    checks a few settings: the loop around it repeats the steps, if there is one."""
    ctx = ctx_for(
        "import torch\n"
        "def test_dtypes(model, x):\n"
        "    grads = [x, 10 * x]\n"
        "    for dtype in (torch.float16, torch.bfloat16):\n"
        "        model(x.to(dtype)).sum().backward()\n"
        "    for grad in grads:\n"
        "        opt.step()\n"
        "def train(loader):\n"
        "    for x, y in loader:\n"
        "        for opt, part in ((opt_g, 'g'), (opt_d, 'd')):\n"
        "            model(x, part).backward()\n"
        "            opt.step()\n"
        "        for x2 in [*extra]:\n"
        "            opt_e.step()\n"
        "def fit(first):\n"
        "    data = [first]\n"
        "    data.extend(more())\n"
        "    for x3 in data:\n"
        "        opt.step()\n")
    hot = sorted(ctx.code(loop.target) for loop in ctx.loops.hot_loops)
    assert hot == ["x, y", "x2", "x3"]


def test_a_loop_over_optimizers_is_no_hot_loop():
    """A loop whose rounds each step the optimizer they take (the loop's target, or an item its
    index picks: sentence-transformers' loop over training objectives) is part of one step: the
    loop around it repeats the steps. A loop over batches that picks an optimizer otherwise
    (`optimizers[i % 2]`), or steps one it does not take, is the hot loop itself."""
    ctx = ctx_for(
        "def fit(models, optimizers, schedulers):\n"
        "    for _ in range(steps):\n"
        "        for idx in range(len(models)):\n"
        "            optimizer = optimizers[idx]\n"
        "            models[idx](x).backward()\n"
        "            scaler.step(optimizer)\n"
        "            schedulers[idx].step()\n"
        "def gan(loader, opts):\n"
        "    for x in loader:\n"
        "        for opt in opts:\n"
        "            model(x).backward()\n"
        "            opt.step()\n"
        "def alternate(loader):\n"
        "    for i, x in enumerate(loader):\n"
        "        opt = opts[i % 2]\n"
        "        model(x).backward()\n"
        "        opt.step()\n"
        "def fixed(loader):\n"
        "    for i in range(n):\n"
        "        for part in parts:\n"
        "            model(part).backward()\n"
        "            optimizer.step()\n"
        "def alone(opts):\n"
        "    for opt_a in opts:\n"
        "        opt_a.step()\n"
        "def retried(opts):\n"
        "    while True:\n"
        "        try:\n"
        "            for opt_b in opts:\n"
        "                opt_b.step()\n"
        "        except RuntimeError:\n"
        "            continue\n"
        "        return loss\n")
    hot = sorted(ctx.code(loop.target) for loop in ctx.loops.hot_loops)
    # Nothing around it that repeats steps: the loop over optimizers stays the hot loop.
    assert hot == ["_", "i, x", "opt_a", "opt_b", "part", "x"]


def test_hot_loop_through_a_called_function():
    ctx = ctx_for(HOT)
    loops = ctx.loops
    assert len(loops.hot_loops) == 1
    (hot,) = loops.hot_loops
    assert isinstance(hot, cst.For) and ctx.code(hot.target) == "i, batch"
    assert ctx.is_per_step(_name(ctx, "marker_nested"))
    assert not ctx.is_per_step(_name(ctx, "marker_guarded"))
    assert not ctx.is_per_step(_name(ctx, "marker_epoch"))
    # Code in a function called per step is per step.
    prints = [c for c in ctx.index.nodes(cst.Call) if ctx.code(c.func) == "print"]
    assert ctx.is_per_step(prints[0])


@pytest.mark.parametrize(
    "guard",
    ["step % 10 == 0", "(step + 1) % args.log_every == 0", "should_log", "accelerator.sync_gradients",
     "step == 0", "is_last_micro_batch", "flag", "ni - last_opt_step >= self.accumulate",
     "micro >= args.gradient_accumulation_steps", "step in {1, 10, 100}",
     "i in [0, 99]"],
)
def test_interval_guards(guard):
    code = (f"flag = step % 5 == 0\nfor step, b in enumerate(loader):\n    model(b).backward()\n    opt.step()\n"
            f"    if {guard}:\n        marker = 1\n")
    ctx = ctx_for(code)
    assert not ctx.loops.is_per_step(_name(ctx, "marker"))
    # accelerate's flag is true exactly when the optimizer steps (inside `accumulate`): the
    # iterations it guards are the training steps, where a host sync stalls each one.
    assert ctx.is_per_step(_name(ctx, "marker")) == (guard == "accelerator.sync_gradients")


@pytest.mark.parametrize("guard", [
    "step not in {1, 10, 100}",  # all but three steps
    "step in milestones",  # a collection of unknown length
    "step in range(0, 10**9)",
    "x in {1, 2}",  # not a step counter
])
def test_guards_that_hold_on_most_steps(guard):
    code = (f"for step, b in enumerate(loader):\n    model(b).backward()\n    opt.step()\n"
            f"    if {guard}:\n        marker = 1\n")
    ctx = ctx_for(code)
    assert ctx.loops.is_per_step(_name(ctx, "marker"))


@pytest.mark.parametrize("test", [
    "step % 10", "step % 10 != 0", "(step + 1) % args.log_every > 0", "0 != step % n", "0 < step % n",
    "step % n >= 1", "not (step % 10 == 0)", "step % 10 != 3",
])
def test_a_remainder_that_holds_on_most_steps_limits_only_its_else(test):
    # `if step % n:` holds on all but one step in N: its body runs on most steps, its `else:` (and
    # an `elif`) every N steps; so does what `step % n and ...` or a conditional expression guards.
    code = (f"for step, b in enumerate(loader):\n    model(b).backward()\n    opt.step()\n"
            f"    if {test}:\n        marker_body = 1\n    else:\n        marker_else = 1\n"
            f"    ({test}) and print(marker_and)\n    print(marker_exp) if {test} else None\n")
    ctx = ctx_for(code)
    for name in ("marker_body", "marker_and", "marker_exp"):
        assert ctx.loops.is_per_step(_name(ctx, name)), name
    assert not ctx.loops.is_per_step(_name(ctx, "marker_else"))
    assert ctx.loops.else_interval(ctx.index.nodes(cst.If)[0].test) is not None


@pytest.mark.parametrize("test,per_step", [
    ("step % 10 == 0 and ready", False), ("ready and step % 10 == 0", False),
    ("step % 10 != 0 and ready", True), ("step % 10 or ready", True), ("not step % 10", False),
])
def test_remainder_tests_combined(test, per_step):
    code = (f"for step, b in enumerate(loader):\n    model(b).backward()\n    opt.step()\n"
            f"    if {test}:\n        marker = 1\n")
    ctx = ctx_for(code)
    assert ctx.loops.is_per_step(_name(ctx, "marker")) is per_step


@pytest.mark.parametrize("ending,per_step", [
    ("break", False),  # leaves the training loop: runs at most once (litgpt's "epochs reached")
    ("return", False),
    ("raise StopTraining()", False),
    ("continue", True),
    ("pass", True),
])
def test_a_branch_that_leaves_the_loop_runs_once(ending, per_step):
    code = ("def train():\n    for step, b in enumerate(loader):\n        model(b).backward()\n        opt.step()\n"
            f"        if b is None:\n            marker = 1\n            {ending}\n")
    ctx = ctx_for(code)
    assert ctx.is_per_step(_name(ctx, "marker")) is per_step


def test_a_break_out_of_an_inner_loop_still_runs_every_step():
    code = ("for step, b in enumerate(loader):\n    model(b).backward()\n    opt.step()\n"
            "    for p in params:\n        if p.grad is None:\n            marker = 1\n            break\n")
    ctx = ctx_for(code)
    assert ctx.is_per_step(_name(ctx, "marker"))


def test_recursive_functions_terminate():
    ctx = ctx_for("def f():\n    f()\n    loss.backward()\nfor b in loader:\n    f()\n")
    assert ctx.loops.hot_loops
    ctx.loops.in_hot_loop(ctx.index.nodes(cst.Call)[0])


@pytest.mark.parametrize(
    "expr,expected",
    [("loss", True), ("model(x)", True), ("torch.zeros(3)", True), ("x.mean()", True),
     ("loss.item()", False), ("args.lr", False), ("torch.cuda.is_available()", False), ("len(loader)", False)],
)
def test_tensor_inference(expr, expected):
    ctx = ctx_for(f"import torch\nvalue = {expr}\n")
    assign = ctx.index.nodes(cst.Assign)[0]
    assert ctx.tensors.is_tensor(assign.value) is expected


@pytest.mark.parametrize(
    "expr,expected",
    [("1_000", 1000), ("0x10", 16), ("1e-3", 1e-3), ("-1", -1), ("+0.5", 0.5), ("-(-2)", 2), ("2 ** 16", 65536),
     ("2.0 ** -1", 0.5), ("1 << 13", 8192), ("1 / 2", 0.5), ("3 - 4 * 2", -5),
     ("True", None), ("-True", None), ("'a' + 'b'", None), ("x + 1", None), ("1 / 0", None), ("2 ** 100", None),
     ("(-8) ** 0.5", None), ("1.0 << 2", None), ("((10 ** 64) ** 64) ** 64", None), ("7 // 2", None)],
)
def test_number(expr, expected):
    value = FileContext.number(cst.parse_expression(expr))
    assert value == expected and type(value) is type(expected)


def test_literal_reads_numbers_as_number_does():
    assert FileContext.literal(cst.parse_expression("-1")) == -1
    assert FileContext.literal(cst.parse_expression("'a'")) == "a"
    assert FileContext.literal(cst.parse_expression("x")) is UNKNOWN


@pytest.mark.parametrize(
    "code,bound",
    [
        ("a = b", {"a"}),
        ("a, (b, *c) = t", {"a", "b", "c"}),
        ("self.x[i] += 1", {"self.x", "self", "x", "i"}),
        ("for k, v in d.items(): total: int = v", {"k", "v", "total"}),
        ("with open(p) as f, lock: pass", {"f"}),
        ("import numpy as np", {"np"}),
        ("y = [z for z in range(3) if (w := z)]", {"y", "z", "w"}),
        ("if q: r = 1\nelse: s = 2", {"r", "s"}),
        ("print(a.b)\nf(x=1)", set()),
    ],
)
def test_bound_names_over_approximates_what_a_block_may_rebind(code, bound):
    assert bound_names(cst.parse_module(code)) == bound


def test_preceding_lists_each_blocks_earlier_statements_nearest_first():
    module = cst.parse_module("a = 1\nb = 2\nif x:\n    c = 3\n    d = c\n")
    index = TreeIndex(module)
    use = [n for n in index.nodes(cst.Name) if n.value == "c"][-1]
    seen = [(type(anc).__name__, [module.code_for_node(s).strip() for s in earlier])
            for anc, earlier in index.preceding(use) if earlier or isinstance(anc, (cst.IndentedBlock, cst.Module))]
    assert seen == [("IndentedBlock", ["c = 3"]), ("Module", ["b = 2", "a = 1"])]
    first = index.nodes(cst.Name)[0]  # `a`: nothing ran before it
    assert [earlier for _anc, earlier in index.preceding(first) if earlier] == []


def test_returns_and_is_generator_read_a_functions_own_body_only():
    module = cst.parse_module(
        "def outer(x):\n"
        "    def inner():\n"
        "        yield x\n"
        "        return 1\n"
        "    class Box:\n"
        "        def get(self):\n"
        "            return 2\n"
        "    if x:\n"
        "        return\n"
        "    f = lambda: 3\n"
        "    return inner, Box\n"
        "def gen():\n"
        "    yield from range(3)\n"
        "def nothing():\n"
        "    pass\n")
    index = TreeIndex(module)
    fns = {fn.name.value: fn for fn in index.nodes(cst.FunctionDef)}

    def returned(name):
        return [None if r.value is None else module.code_for_node(r.value) for r in index.returns(fns[name])]

    assert returned("outer") == [None, "inner, Box"]
    assert returned("inner") == ["1"] and returned("get") == ["2"]
    assert returned("gen") == [] and returned("nothing") == []
    assert [name for name in fns if index.is_generator(fns[name])] == ["inner", "gen"]


def test_a_signatures_parameters_are_read_one_way():
    """Positional-only, positional and keyword-only parameters are named ones; `*args`/`**kw`
    are names the signature binds too, and a function's local names add what its body binds
    (several analyses spelled these, some leaving out keyword-only or positional-only ones)."""
    module = cst.parse_module("def f(a, /, b, *args, c=1, **kw):\n    d = a\n    return d\n"
                              "def g(*, e):\n    pass\ng2 = lambda x, *r: x\n")
    index = TreeIndex(module)
    f, g = index.nodes(cst.FunctionDef)
    lam = index.nodes(cst.Lambda)[0]
    assert [p.name.value for p in named_parameters(f)] == ["a", "b", "c"]
    assert parameter_names(f) == {"a", "b", "c", "args", "kw"}
    assert parameter(f, "c").default.value == "1" and parameter(f, "args") is None and parameter(f, "z") is None
    assert parameter(g, "e") is not None and parameter_names(g) == {"e"}
    assert local_names(f) == {"a", "b", "c", "args", "kw", "d"}
    assert parameter_names(lam) == {"x", "r"}


@pytest.mark.parametrize(("options", "expected"), [
    ("p.add_argument('--num-workers', type=int, default=0)", ("--num-workers", 0)),
    ("p.add_argument('-j', dest='num_workers', type=int, default=4)", ("-j", 4)),
    ("p.add_argument('--num_workers', action='store_true')", ("--num_workers", False)),
    ("p.add_argument('--num-workers', type=int, default=cpus())", ("--num-workers", UNKNOWN)),
    # Not known: no default, two options for one destination, a set_defaults that may set it.
    ("p.add_argument('--num-workers', type=int)", None),
    ("p.add_argument('--num-workers', default=0)\np.add_argument('--workers', dest='num_workers', default=2)", None),
    ("p.add_argument('--num-workers', default=0)\np.set_defaults(num_workers=8)", None),
    ("p.add_argument('--num-workers', default=0)\np.set_defaults(**config)", None),
])
def test_a_command_line_options_default(options, expected):
    from trainlint.analysis.command_line import option_default

    code = f"import argparse\np = argparse.ArgumentParser()\n{options}\nargs = p.parse_args()\nuse(args.num_workers)\n"
    ctx = ctx_for(code)
    read = next(n for n in ctx.index.nodes(cst.Attribute) if ctx.code(n) == "args.num_workers")
    found = option_default(ctx, read)
    if expected is None:
        assert found is None
    else:
        assert (found.flag, found.value) == expected


@pytest.mark.parametrize(("code", "expected"), [
    # Variables: one assignment in the scope the read looks in (innermost first, class bodies skipped).
    ("N = 0\ndef f():\n    use(N)\n", ("variable", "N", 0)),
    ("def f():\n    n = 3\n    def g():\n        use(n)\n", ("variable", "n", 3)),
    ("N = 0\ndef f():\n    N = 2\n    use(N)\n", ("variable", "N", 2)),
    ("N = 0\nclass C:\n    N = 5\n    def m(self):\n        use(N)\n", ("variable", "N", 0)),
    ("N = 0\ndef f():\n    n = N\n    use(n)\n", ("variable", "N", 0)),
    ("a, n = 1, 0\nuse(n)\n", ("variable", "n", 0)),
    # Not known: assigned twice, augmented, a loop target, a parameter, declared global elsewhere,
    # an expression, an import.
    ("n = 0\nif x:\n    n = 4\nuse(n)\n", None),
    ("n = 0\nn += 1\nuse(n)\n", None),
    ("for n in range(3):\n    use(n)\n", None),
    ("def f(n=0):\n    use(n)\n", None),
    ("N = 0\ndef g():\n    global N\n    N = 4\ndef f():\n    use(N)\n", None),
    ("n = cpus()\nuse(n)\n", None),
    ("from cfg import n\nuse(n)\n", None),
    # Command-line options (command_line.py) and configuration fields.
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--n', type=int, default=0)\n"
     "args = p.parse_args()\nuse(args.n)\n", ("option", "--n", 0)),
    ("class C:\n    n: int = 0\ndef f(c: C):\n    use(c.n)\n", ("field", "C.n", 0)),
    ("class C:\n    n = 1\n    def m(self):\n        use(self.n)\n", ("field", "C.n", 1)),
    ("class C:\n    n = 1\nclass D(C):\n    def m(self):\n        use(self.n)\n", ("field", "C.n", 1)),
    ("import dataclasses\n@dataclasses.dataclass\nclass C:\n    n: int = dataclasses.field(default=2)\n"
     "c = C(m=1)\nuse(c.n)\n", ("field", "C.n", 2)),
    ("class C:\n    n = 1\nc = HfArgumentParser(C).parse_args_into_dataclass()\nuse(c.n)\n", ("field", "C.n", 1)),
    # Not known: another object, the field set or passed, a default from a factory.
    ("class C:\n    n = 1\nclass D:\n    def m(self):\n        use(self.n)\n", None),
    ("class C:\n    n = 1\nc = C()\nsetattr(c, key, 3)\nuse(c.n)\n", None),
    ("class C:\n    n = 1\nc = C(**overrides)\nuse(c.n)\n", None),
    ("class C:\n    n = 1\nc = C() if x else load()\nuse(c.n)\n", None),
    ("import dataclasses\nclass C:\n    n: list = dataclasses.field(default_factory=list)\nuse(C.n)\n", None),
])
def test_where_a_setting_written_as_a_name_gets_its_value(code, expected):
    ctx = ctx_for(code)
    use = next(c for c in ctx.index.nodes(cst.Call) if ctx.dotted(c.func) == "use")
    source = ctx.sources.source(use.args[0].value)
    if expected is None:
        assert source is None
        assert ctx.sources.value(use.args[0].value) is UNKNOWN
    else:
        assert (source.kind, source.name, source.value) == expected
        assert ctx.sources.value(use.args[0].value) == expected[2]
        assert ctx.sources.value(use.args[0].value, certain=True) == (
            expected[2] if expected[0] == "variable" else UNKNOWN)
        assert ctx.literal(source.node) == expected[2]  # the literal a fix replaces


@pytest.mark.parametrize(("code", "expected"), [
    ("kw = {'a': 1}\nf(**kw)\n", {"a"}),
    ("kw = dict(a=1, b=2)\nf(**kw)\n", {"a", "b"}),
    ("kw = {} if old else {'a': 1}\nkw['b'] = 2\nf(**kw)\n", {"a", "b"}),
    # Merged from another dict in view, read without a change, unpacked elsewhere too.
    ("kw = {'a': 1}\nif x:\n    more = {'b': 2}\n    kw.update(more)\n    other.update(more)\nf(**kw)\n", {"a", "b"}),
    ("kw = {'a': 1}\nkw.update({'b': 2}, c=3)\nn = kw.get('a', 0)\nok = 'a' in kw\ng(**kw)\nf(**kw)\n", {"a", "b", "c"}),
    # Not known: a key from elsewhere, a change that adds unknown keys, handed on, a parameter, *args.
    ("kw = {name: 1}\nf(**kw)\n", None),
    ("kw = {'a': 1}\nkw.setdefault('b', 2)\nf(**kw)\n", None),
    ("kw = {'a': 1}\nkw.update(defaults)\nf(**kw)\n", None),
    ("kw = {'a': 1}\ntune(kw)\nf(**kw)\n", None),
    ("kw = dict(base, a=1)\nf(**kw)\n", None),
    ("def g(kw):\n    f(**kw)\n", None),
    ("kw = {'a': 1}\nf(*args, **kw)\n", None),
])
def test_the_keys_a_star_star_dict_can_pass(code, expected):
    ctx = ctx_for(code)
    call = next(c for c in ctx.index.nodes(cst.Call) if ctx.dotted(c.func) == "f")
    assert ctx.star_keys(call) == (frozenset(expected) if expected is not None else None)


@pytest.mark.parametrize("step", ["opt.step(closure)", "opt.step(closure=closure)", "loss = opt.step(closure)"])
def test_a_closure_handed_to_the_optimizer_step_runs_per_step(step):
    code = ("def fit(model, opt, iters):\n    def closure():\n        opt.zero_grad()\n        loss = model()\n"
            "        loss.backward()\n        marker = 1\n        return loss\n    def unused():\n        other = 1\n"
            f"    for it in range(iters):\n        {step}\n")
    ctx = ctx_for(code)
    assert ctx.loops.is_per_step(_name(ctx, "marker")) and ctx.loops.in_hot_loop(_name(ctx, "marker"))
    assert not ctx.loops.in_hot_loop(_name(ctx, "other"))


def test_a_closure_is_the_function_its_name_reads_where_the_step_is():
    # The step hands `closure` of fit; the module's own `closure` (and a method so named) is not called.
    code = ("def closure():\n    outer = 1\nclass T:\n    def closure(self):\n        method = 1\n"
            "def fit(model, opt, iters):\n    def closure():\n        loss = model()\n        loss.backward()\n"
            "        inner = 1\n        return loss\n    for it in range(iters):\n        opt.step(closure)\n")
    ctx = ctx_for(code)
    assert ctx.loops.is_per_step(_name(ctx, "inner"))
    assert not ctx.loops.in_hot_loop(_name(ctx, "outer")) and not ctx.loops.in_hot_loop(_name(ctx, "method"))
    # A function of the module handed to the step of a loop in another function.
    ctx = ctx_for("def closure():\n    loss = model()\n    loss.backward()\n    marker = 1\n    return loss\n"
                  "def fit(opt, iters):\n    for it in range(iters):\n        opt.step(closure)\n")
    assert ctx.loops.is_per_step(_name(ctx, "marker"))


def test_a_keyword_of_a_class_statement_is_no_base_class():
    # `metaclass=Meta` names a class of the module, but T does not inherit Meta's methods.
    # (libcst keeps a class statement's keywords in ClassDef.keywords, apart from its bases, so
    # Loops._bases, which reads ClassDef.bases, never saw them: this pins that.)
    ctx = ctx_for("class Meta(type):\n    def fit(cls):\n        pass\nclass Base:\n    def step(self):\n        pass\n"
                  "class T(Base, metaclass=Meta):\n    pass\n")
    classes = {c.name.value: c for c in ctx.index.nodes(cst.ClassDef)}
    loops = ctx.loops
    assert loops.method_of(classes["T"], "fit") is None
    assert loops.method_of(classes["T"], "step") is not None
    assert loops.subclasses(classes["Meta"]) == []
    assert loops.subclasses(classes["Base"]) == [classes["T"]]


_HELD = """import torch
{imports}class Logger:
    def on_step_end(self, step, loss):
        marker = loss.item()
class Other:
    def on_step_end(self, step, loss):
        pass
class Trainer:
    def __init__(self):
        self.logger = Logger()
{more}    def fit(self):
        for step in range(10):
            loss = self.model(x)
            loss.backward()
            self.opt.step()
            self.logger.on_step_end(step, loss)
{after}"""


@pytest.mark.parametrize(
    "imports,more,after,followed",
    [
        # Every binding of `self.logger` is `Logger()`: its method runs per step (it was not
        # followed: the per-step `.item()` in it went unreported).
        ("", "", "", True),
        ("", "        if cfg.verbose:\n            self.logger = Logger()\n", "", True),
        # Another class of the file some of the time: the call runs one of the two methods, so
        # both are followed (as for a list of callbacks; it was left unknown before).
        ("", "        if cfg.quiet:\n            self.logger = Other()\n", "", "both"),
        # Another binding, or a name the file imports: unknown.
        ("", "        self.logger = make_logger()\n", "", False),
        ("", "", "trainer = Trainer()\ntrainer.logger = Other()\n", False),
        ("", "    logger = None\n", "", False),
        ("from loggers import Logger\n", "", "", False),
    ],
)
def test_a_method_of_an_object_kept_on_self_is_followed_only_when_its_class_is_known(imports, more, after, followed):
    ctx = ctx_for(_HELD.format(imports=imports, more=more, after=after))
    call = next(c for c in ctx.index.nodes(cst.Call) if ctx.code(c.func) == "self.logger.on_step_end")
    logger_method, other_method = ctx.index.nodes(cst.FunctionDef)[:2]
    expected = {True: [logger_method], "both": [logger_method, other_method], False: []}[followed]
    assert ctx.loops.callees(call) == expected
    assert ctx.is_per_step(_name(ctx, "marker")) is bool(followed)


@pytest.mark.parametrize("code, reason", [
    # A def's or a class's own import binds nothing at module level: not "imported on some paths".
    ("def f():\n    import torch\n", "no module-level import binds `torch`"),
    ("class C:\n    import torch\n", "no module-level import binds `torch`"),
    ("if True:\n    def f():\n        import torch\n", "no module-level import binds `torch`"),
    ("if fast:\n    import torch\n", "`torch` is imported only on some paths (under an `if`)"),
])
def test_module_binding_reason_counts_module_level_imports_only(code, reason):
    from trainlint.analysis.imports import module_binding

    assert module_binding(ctx_for(code), "torch") == (None, reason)


def test_module_binding_finds_the_import_that_binds_on_every_path():
    from trainlint.analysis.imports import module_binding

    code = "import os\ndef f():\n    import torch\ntry:\n    import torch\nexcept ImportError:\n    raise SystemExit(1)\n"
    ctx = ctx_for(code)
    stmt, reason = module_binding(ctx, "torch")
    assert reason is None and isinstance(stmt, cst.Try)


_CONSTRUCTED = """import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
class Trainer:
    def __init__(self, model, device{default}):
        self.model, self.device = model, device
{more}    def fit(self, x):
        return self.model(x.to(self.device))
{constructions}"""


@pytest.mark.parametrize(
    "default,more,constructions,picked",
    [
        # The one construction hands the device picked by CUDA's availability: the trainer's is too.
        ("", "", "Trainer(model, device).fit(x)\n", True),
        ("", "", "Trainer(model, device=device).fit(x)\n", True),
        # Every construction must hand one: a device written as "cuda", or left to a default.
        ("", "", "Trainer(model, device)\nTrainer(model, 'cuda')\n", False),
        ("='cuda'", "", "Trainer(model, device)\nTrainer(model)\n", False),
        # Not known: constructions passing `**kw`, a subclass, the class handed on, none at all.
        ("", "", "Trainer(model, **kw)\n", False),
        ("", "", "class Sub(Trainer):\n    pass\nTrainer(model, device)\n", False),
        ("", "", "Trainer(model, device)\nmake(Trainer)\n", False),
        ("", "", "", False),
        # A parameter re-bound in `__init__` is not what the construction handed in.
        ("", "        device = pick()\n", "Trainer(model, device)\n", False),
        # A class constructing itself with its own device: the question comes back to itself, and
        # ends (the hops are counted) with no answer for that construction, so none.
        ("", "    def again(self):\n        return Trainer(self.model, self.device)\n",
         "Trainer(model, device)\n", False),
    ],
)
def test_a_device_handed_to_a_constructor_is_followed_when_every_construction_agrees(default, more, constructions, picked):
    ctx = ctx_for(_CONSTRUCTED.format(default=default, more=more, constructions=constructions))
    move = next(c for c in ctx.index.nodes(cst.Call) if ctx.code(c.func) == "x.to")
    assert ctx.devices.picked_by_cuda_availability(move.args[0].value) is picked


_KEPT_LOADER = """from torch.utils.data import DataLoader
class Trainer:
    def __init__(self, model, loader):
        self.model, self.loader = model, loader
    def fit(self):
        for x in self.loader:
            self.model(x).backward()
train_dl = DataLoader(ds)
other_dl = DataLoader(ds)
{constructions}"""


@pytest.mark.parametrize(
    "constructions,followed",
    [
        ("Trainer(model, train_dl).fit()\n", True),
        ("Trainer(model, loader=train_dl).fit()\nTrainer(model, train_dl).fit()\n", True),
        # Two trainers, two loaders: which one a method's `self.loader` reads is not known.
        ("Trainer(model, train_dl).fit()\nTrainer(model, other_dl).fit()\n", False),
        ("Trainer(*args).fit()\nTrainer(model, train_dl).fit()\n", False),
    ],
)
def test_a_loader_kept_by_a_constructor_is_followed_into_its_methods(constructions, followed):
    ctx = ctx_for(_KEPT_LOADER.format(constructions=constructions))
    loader = next(c for c in ctx.index.nodes(cst.Call) if ctx.code(c.func) == "DataLoader")
    loop = next(iter(ctx.index.nodes(cst.For)))
    assert ctx.loops.loops_over(loader) == ([loop] if followed else [])


@pytest.mark.parametrize(
    "text,expected,absent",
    [
        # humps and whole runs: a device library's class names both ways
        ("DistributedDataParallel", {"distributed", "data", "parallel", "distributeddataparallel"}, set()),
        ("use_cuda", {"use", "cuda"}, {"use_cuda"}),
        ('cuda:0', {"cuda"}, set()),
        ("GPUs", {"gpus"}, set()),
        ("HTTPServer", {"http", "server"}, set()),
        # digits: kept where a word list names them (f1), dropped where the word is the stem (gpu0)
        ("f1_score", {"f1", "score"}, set()),
        ("gpu0", {"gpu", "gpu0"}, set()),
        ("addScalar", {"add", "scalar"}, set()),
        # underscores split: no word runs across them
        ("interval_dl", {"interval", "dl"}, {"intervaldl"}),
    ],
)
def test_the_words_of_a_name(text, expected, absent):
    from trainlint.analysis.words import words

    assert expected <= words(text)
    assert not absent & words(text)


_HANDED_DOWN = '''
class Ckpt:
    def save(self):
        pass
class Runner:
    def fit(self, ckpt):
        ckpt.save()
def train(runner, ckpt):
    runner.fit(ckpt)
def stage(runner, ckpt):
    train(runner, ckpt)
def main(runner, ckpt):
    stage(runner, ckpt)
main(Runner(), Ckpt())
'''


@pytest.mark.parametrize("first", ["ckpt.save()", "runner.fit(ckpt)"])
def test_an_instance_handed_down_through_parameters_is_known_whatever_is_asked_first(first):
    # The memo of a parameter's classes kept the answer of its first question at the depth it was
    # asked; building the tables asked first, deep, so `runner` and `ckpt` (handed down from main
    # through three functions) were never known and both calls ran nothing of the file.
    ctx = ctx_for(_HANDED_DOWN)
    calls = {ctx.code(c): c for c in ctx.index.nodes(cst.Call)}
    second = next(text for text in ("ckpt.save()", "runner.fit(ckpt)") if text != first)
    found = {text: [fn.name.value for fn in ctx.loops.instance_methods(calls[text])] for text in (first, second)}
    assert found == {"ckpt.save()": ["save"], "runner.fit(ckpt)": ["fit"]}


def test_a_parameter_handed_back_and_forth_is_not_followed_forever():
    ctx = ctx_for(_HANDED_DOWN + "def ping(ckpt):\n    pong(ckpt)\n    ckpt.save()\n"
                  "def pong(ckpt):\n    ping(ckpt)\nping(Ckpt())\n")
    call = [c for c in ctx.index.nodes(cst.Call) if ctx.code(c) == "ckpt.save()"][-1]
    # (ping's ckpt comes from the module's call and from pong, which has it from ping: the cycle
    # hands nothing known, so the calls disagree and the answer is empty rather than endless)
    assert ctx.loops.instance_methods(call) == ()


@pytest.mark.parametrize("made,runs", [
    ("Net() if small else Big()", ["forward"]),
    ("Net().cuda() if small else Big().to(device)", ["forward"]),
    ("(Net() if small else Big()).cuda()", ["forward"]),
    ("Net() if small else (Big() if big else Net())", ["forward"]),
    # a branch the file does not construct: what the name holds is not known
    ("Net() if small else torchvision.models.resnet18()", []),
    # `.cuda()` on an object that is no module may hand back anything
    ("(Plain() if small else Net()).cuda()", []),
])
def test_a_model_made_in_a_conditional_expression_runs_its_forward(made, runs):
    code = ("import torch\nimport torchvision\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
            "class Big(Net):\n    pass\nclass Plain:\n    def forward(self, x):\n        return x\n"
            f"model = {made}\nout = model(x)\n")
    ctx = ctx_for(code)
    call = next(c for c in ctx.index.nodes(cst.Call) if ctx.code(c) == "model(x)")
    assert [fn.name.value for fn in ctx.loops.module_call(call)] == runs


def test_a_model_kept_on_self_from_a_conditional_expression_runs_its_forward():
    code = ("import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
            "class Big(Net):\n    pass\nclass Trainer:\n    def __init__(self, small):\n"
            "        self.model = (Net() if small else Big()).cuda()\n    def fit(self, x):\n        return self.model(x)\n")
    ctx = ctx_for(code)
    call = next(c for c in ctx.index.nodes(cst.Call) if ctx.code(c) == "self.model(x)")
    assert [fn.name.value for fn in ctx.loops.module_call(call)] == ["forward"]


@pytest.mark.parametrize("use,escapes,unless_followed", [
    # handed back, stored or handed on inside a container: out of the function's sight
    ("return model, opt", True, False),  # a returned tuple's position: followed by returned_to
    ("return model.cuda(), opt", True, False),
    ("yield model, opt", True, False),
    ("yield from [model, opt]", True, True),
    ("return {'model': model, 'opt': opt}", True, True),
    ("return [model]", True, True),
    ("return (model, opt), cfg", True, True),  # nested: no position a caller's unpacking binds
    ("return *extra, model", True, True),  # after a starred element: no fixed position
    ("return {**extra, 'model': model}", True, True),
    ("state = (model, opt)", True, True),
    ("self.parts = [model]", True, True),
    ("parts += [model]", True, True),
    ("a, b = model, opt", True, True),  # unpacked into another name
    ("save({'model': model})", True, True),
    ("for m in (model, opt):\n        m.train()", True, True),
    # read where it stands, or unpacked back into its own name: still in sight
    ("model, opt = model.cuda(), opt", False, False),
    ("x = (model,)[0]", False, False),
    ("ok = model in (opt, cfg)", False, False),
    ("parts = [model.module, opt]", False, False),
    ("for model, opt in zip(extra, cfg):\n        pass", False, False),
])
def test_a_name_leaves_sight_as_an_element_of_a_container(use, escapes, unless_followed):
    # `return model, opt` hands the model to the caller as much as `return model` does; escapes
    # saw only the latter, so TL303 took a DataParallel returned beside its optimizer for one the
    # file never runs. With returns=False the caller asking follows the returns itself, as
    # _returned_at reads them: alone or at a fixed position of a returned tuple, not in a list or dict.
    code = f"def build(cfg, extra, save):\n    model = Net()\n    opt = Opt()\n    {use}\n"
    ctx = ctx_for(code)
    fn = next(iter(ctx.index.nodes(cst.FunctionDef)))
    assert ctx.loops.escapes("model", fn) is escapes
    assert ctx.loops.escapes("model", fn, returns=False) is unless_followed


@pytest.mark.parametrize("use,shared_escapes", [
    # where paths_of follows the value on through the container: the caller asking with shared
    # checks those paths too (TL106's fix moves the batches in `evaluate`'s loop)
    ("loaders = {'train': loader}", False),
    ("evaluate({'train': loader})", False),
    ("for phase, dl in [('train', loader), ('val', cfg)]:\n        pass", False),
    ("for phase, dl in zip(['train', 'val'], [loader, cfg]):\n        pass", False),
    # where it does not: nested, handed to another module's function, a loop's comprehension
    ("loaders = {'all': [loader]}", True),
    ("report({'train': loader})", True),
    ("xs = [x for dl in [loader, cfg] for x in dl]", True),
])
def test_a_name_in_a_container_that_paths_of_follows_stays_in_sight_of_a_shared_question(use, shared_escapes):
    code = (f"def evaluate(loaders):\n    for dl in loaders.values():\n        pass\n"
            f"def build(cfg, report):\n    loader = DataLoader(cfg)\n    {use}\n")
    ctx = ctx_for(code)
    fn = [f for f in ctx.index.nodes(cst.FunctionDef) if f.name.value == "build"][0]
    assert ctx.loops.escapes("loader", fn) is True
    assert ctx.loops.escapes("loader", fn, shared=True) is shared_escapes
