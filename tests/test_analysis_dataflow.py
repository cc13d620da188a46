"""Shared analyses refined from the ecosystem triage (docs/ecosystem.md): each case is a shape
seen in real code where a rule was wrong."""

import libcst as cst
import pytest

from trainlint.analysis.context import FileContext
from trainlint.analysis.literals import UNKNOWN


def _ctx(code: str) -> FileContext:
    return FileContext("t.py", code, cst.parse_module(code), None)


def _calls(ctx, name):
    return [c for c in ctx.index.nodes(cst.Call) if ctx.dotted(c.func) == name]


def test_constructs_follows_inherited_init_only():
    ctx = _ctx(
        "from torch.utils.data import DataLoader as DL\n"
        "class Fake(DL):\n    def __init__(self):\n        super().__init__([], batch_size=1)\n"
        "class Loop(DL):\n    def __init__(self, *a, **kw):\n        super().__init__(*a, **kw)\n"
        "class Plain(DL):\n    pass\n"
        "class Deeper(Plain):\n    pass\n"
        "Fake(); Loop(ds); Plain(ds); Deeper(ds); DL(ds)\n"
    )
    q = "torch.utils.data.DataLoader"
    got = {name: ctx.names.constructs(_calls(ctx, name)[0].func, q) for name in ("Fake", "Loop", "Plain", "Deeper", "DL")}
    assert got == {"Fake": False, "Loop": True, "Plain": True, "Deeper": True, "DL": True}


def test_builtin_collection():
    ctx = _ctx(
        "def f():\n    a = list(range(3))\n    b = make()\n    c = [1, 2]\n    c = (x for x in y)\n"
        "    use(a, b, c, range(4), [], (), tuple([1]), ds)\n"
    )
    use = _calls(ctx, "use")[0]
    got = [ctx.is_builtin_collection(a.value) for a in use.args]
    assert got == [True, False, False, True, True, True, True, False]


def test_loops_over_assigned_name_and_steps():
    ctx = _ctx(
        "def train():\n    dl = DataLoader(ds)\n    for epoch in range(3):\n        for i, b in enumerate(dl):\n"
        "            loss = model(b)\n            loss.backward()\n            opt.step()\n"
        "def predict():\n    dl = DataLoader(ds)\n    for b in tqdm(dl):\n        model(b)\n"
        "def build():\n    return DataLoader(ds)\n"
    )
    train_call, predict_call, build_call = _calls(ctx, "DataLoader")
    loops = ctx.loops
    assert [loops.runs_steps(l) for l in loops.loops_over(train_call)] == [True]
    assert [loops.runs_steps(l) for l in loops.loops_over(predict_call)] == [False]
    assert loops.loops_over(build_call) == []


def test_loops_over_follows_wrappers_not_other_calls():
    ctx = _ctx(
        "def check():\n    dl = DataLoader(ds, shuffle=True)\n    prepared = accelerator.prepare(dl)\n"
        "    for b in prepared:\n        items.append(b)\n"
        "def train():\n    dl = DataLoader(ds)\n    model, dl2 = accelerator.prepare(model, dl)\n    n = len(dl)\n"
        "    for i in range(n):\n        pass\n    for b in dl2:\n        model(b).backward()\n"
    )
    check_call, train_call = _calls(ctx, "DataLoader")
    loops = ctx.loops
    assert [loops.runs_steps(l) for l in loops.loops_over(check_call)] == [False]
    assert [loops.runs_steps(l) for l in loops.loops_over(train_call)] == [True]


def test_a_plain_alias_of_a_loader_is_one_of_its_names():
    # `train_dl = loader` (also of an attribute: `dl = self.loader`): the loops over the alias, and
    # the functions it is handed to, go over the loader. A name only read from it (`n = len(dl)`) is not.
    ctx = _ctx(
        "def run_epoch(model, dl):\n    for b in dl:\n        model(b).backward()\n"
        "def main(ds, model):\n    loader = DataLoader(ds)\n    train_dl = loader\n    n = len(train_dl)\n"
        "    for epoch in range(3):\n        run_epoch(model, train_dl)\n"
        "class Trainer:\n    def __init__(self, ds):\n        self.loader = DataLoader(ds)\n"
        "    def fit(self):\n        dl = self.loader\n        for b in dl:\n            self.model(b).backward()\n"
    )
    main_call, trainer_call = _calls(ctx, "DataLoader")
    run_epoch, main = ctx.index.nodes(cst.FunctionDef)[:2]
    fit = ctx.index.nodes(cst.FunctionDef)[-1]
    assert ("train_dl", main) in ctx.loops.names_of(main_call)
    assert ("dl", run_epoch) in ctx.loops.names_of(main_call)
    assert all(name != "n" for name, _ in ctx.loops.names_of(main_call))
    assert [ctx.loops.runs_steps(l) for l in ctx.loops.loops_over(main_call)] == [True]
    assert ("dl", fit) in ctx.loops.names_of(trainer_call)
    assert [ctx.loops.runs_steps(l) for l in ctx.loops.loops_over(trainer_call)] == [True]


def test_stray_draws_are_batches_taken_outside_the_loops_and_draws_seen():
    ctx = _ctx(
        "def train():\n    dl = DataLoader(ds)\n    pbar = tqdm(dl)\n    for b in pbar:\n        step(b)\n"
        "    it = iter(dl)\n    for i in range(9):\n        b = next(it)\n        step(next(it))\n"
        "    for i, b in tqdm(enumerate(dl), total=len(dl)):\n        step(b)\n"
        "    probe = next(iter(dl))\n    with tqdm(dl) as bar:\n        pass\n    bars = tqdm(enumerate(dl))\n"
    )
    (loader,) = _calls(ctx, "DataLoader")
    got = [ctx.code(node) for node in ctx.loops.stray_draws(loader)]
    # `pbar = tqdm(dl)`, `b = next(it)` in a loop and the loop over `tqdm(enumerate(dl))` are seen.
    assert got == ["next(iter(dl))", "tqdm(dl)", "tqdm(enumerate(dl))", "next(it)"]


def test_a_loader_a_local_function_returns_is_followed_into_its_callers_loops():
    ctx = _ctx(
        "def make_loaders(ds, vs):\n    train = DataLoader(ds)\n    val = DataLoader(vs)\n"
        "    def inner():\n        return val\n    return train, val\n"
        "def build(ds):\n    return DataLoader(ds)\n"
        "def fit():\n    train_dl, val_dl = make_loaders(ds, vs)\n    loader = build(ds)\n"
        "    for b in train_dl:\n        model(b).backward()\n    for b in val_dl:\n        evaluate(b)\n"
        "    for b in loader:\n        model(b).backward()\n"
        "def other():\n    for b in train_dl:\n        pass\n"
    )
    train, val, built = _calls(ctx, "DataLoader")
    loops = ctx.loops
    assert loops.returned_to(train) == [("train_dl", ctx.index.nodes(cst.FunctionDef)[3])]
    assert [loops.runs_steps(l) for l in loops.loops_over(train)] == [True]  # not `other`'s loop
    assert [loops.runs_steps(l) for l in loops.loops_over(val)] == [False]  # position 1, not the nested return
    assert [loops.runs_steps(l) for l in loops.loops_over(built)] == [True]
    # A caller that hands the loader on: its loops are not all seen, so none are taken (the
    # evaluation loop alone would make a training loader look like an evaluation one).
    handed = _ctx(
        "def load(ds):\n    dl = DataLoader(ds)\n    return dl\n"
        "def fit():\n    train_dl = load(ds)\n    eval_dl = load(vs)\n    run_training(train_dl)\n"
        "    for b in tqdm(eval_dl):\n        evaluate(b)\n")
    (call,) = _calls(handed, "DataLoader")
    assert handed.loops.returned_to(call) == [] and handed.loops.loops_over(call) == []
    # A helper making one loader or the other by a flag (simpletransformers' `evaluate=True`): a
    # call whose arguments make a loader's branch false does not get that loader back.
    flagged = _ctx(
        "def load(ds, evaluate=False):\n    if not evaluate:\n        dl = DataLoader(ds, shuffle=True)\n"
        "    else:\n        dl = DataLoader(ds)\n    return dl\n"
        "def fit(mode):\n    train_dl = load(ds)\n    eval_dl = load(vs, evaluate=True)\n    other = load(vs, mode)\n"
        "    for b in train_dl:\n        model(b).backward()\n        opt.step()\n"
        "    for b in eval_dl:\n        evaluate(b)\n")
    train, evaluation = _calls(flagged, "DataLoader")
    fit = flagged.index.nodes(cst.FunctionDef)[1]
    assert flagged.loops.returned_to(train) == [("train_dl", fit), ("other", fit)]
    assert flagged.loops.returned_to(evaluation) == [("eval_dl", fit), ("other", fit)]
    assert [flagged.loops.runs_steps(loop) for loop in flagged.loops.loops_over(evaluation)] == [False]
    # Returned through two helpers (`make_loader` to `setup`, `setup` to `main`): followed to the
    # names the outer caller binds (one call level only before: nothing was seen).
    chained = _ctx(
        "def make_loader():\n    return DataLoader(ds, num_workers=4)\n"
        "def setup():\n    train_loader = make_loader()\n    return train_loader, None\n"
        "def main():\n    train_loader, _ = setup()\n    for epoch in range(3):\n"
        "        for b in train_loader:\n            model(b).backward()\n            opt.step()\n"
        "def other():\n    loader = make_loader()\n    run(loader)\n")
    (call,) = _calls(chained, "DataLoader")
    setup, main = chained.index.nodes(cst.FunctionDef)[1:3]
    assert {("train_loader", setup), ("train_loader", main)} <= set(chained.loops.returned_to(call, escaping=True))
    assert chained.loops.returned_to(call) == []  # `other` hands it to a function not seen
    chained = _ctx(chained.text.split("def other")[0])
    (call,) = _calls(chained, "DataLoader")
    assert [chained.loops.runs_steps(l) for l in chained.loops.loops_over(call)] == [True]
    # Iterated as the call of the function returning it: a new loader each time that loop starts.
    direct = _ctx(
        "def make_loader(ds):\n    return DataLoader(ds, num_workers=2)\n"
        "def fit(ds):\n    for epoch in range(3):\n        for b in make_loader(ds):\n            model(b).backward()\n")
    (call,) = _calls(direct, "DataLoader")
    loops = direct.loops.loops_over(call)
    assert [direct.loops.runs_steps(l) for l in loops] == [True]
    assert direct.loops.repeating_loops(loops[0])[0] in direct.loops.loops_around(call)  # rebuilt every epoch
    # Handed on to a module-local function that takes only it: followed into that function's loop.
    local = _ctx(
        "def load(ds):\n    return DataLoader(ds)\n"
        "def run_training(dl):\n    for b in dl:\n        model(b).backward()\n"
        "def fit():\n    train_dl = load(ds)\n    run_training(train_dl)\n")
    (call,) = _calls(local, "DataLoader")
    assert [local.loops.runs_steps(l) for l in local.loops.loops_over(call)] == [True]


def test_a_loader_handed_to_local_functions_is_followed_into_their_loops():
    ctx = _ctx(
        "def train_step(model, batch):\n    model(batch).backward()\n    opt.step()\n"
        "def train(model, loader):\n    for b in loader:\n        train_step(model, b)\n"
        "def fit(model, data):\n    train(model, data)\n"
        "def check(model, loader):\n    for b in loader:\n        model(b)\n"
        "def run_epoch(loader):\n    for b in loader:\n        model(b).backward()\n"
        "def main():\n    train_dl = DataLoader(ds)\n    val_dl = DataLoader(vs)\n    other = DataLoader(os)\n"
        "    for epoch in range(3):\n        fit(model, data=train_dl)\n        check(model, val_dl)\n"
        "        run_epoch(train_dl)\n        run_epoch(other)\n"
    )
    train_dl, val_dl, other = _calls(ctx, "DataLoader")
    loops = ctx.loops
    # Two calls down, by keyword; not run_epoch's loop, which two loaders go through.
    assert [loops.runs_steps(l) for l in loops.loops_over(train_dl)] == [True]
    assert [ctx.index.enclosing_function(l).name.value for l in loops.loops_over(train_dl)] == ["train"]
    assert [loops.runs_steps(l) for l in loops.loops_over(val_dl)] == [False]
    assert loops.loops_over(other) == []
    # Written as the argument of the function's one call.
    inline = _ctx("def train(loader):\n    for b in loader:\n        model(b).backward()\n"
                  "def check(loader):\n    for b in loader:\n        model(b)\n"
                  "train(DataLoader(ds))\ncheck(DataLoader(vs))\ncheck(DataLoader(ts))\n")
    train, *checked = _calls(inline, "DataLoader")
    assert [inline.loops.runs_steps(l) for l in inline.loops.loops_over(train)] == [True]
    assert [inline.loops.loops_over(c) for c in checked] == [[], []]  # two calls: which is whose is not followed


def test_a_function_several_loaders_go_through_steps_on_the_calls_its_conditions_allow():
    ctx = _ctx(
        "def run_epoch(model, loader, optimizer=None, mode='train'):\n"
        "    training = optimizer is not None\n"
        "    for b in loader:\n"
        "        loss = model(b)\n"
        "        if training:\n            loss.backward()\n            optimizer.step()\n"
        "def fit(model, loader, opt, train):\n    run_epoch(model, loader, opt if train else None)\n"
        "def main():\n"
        "    a = DataLoader(ds)\n    b = DataLoader(vs)\n    c = DataLoader(ts)\n"
        "    opt = SGD(model.parameters())\n"
        "    for epoch in range(3):\n"
        "        run_epoch(model, a, opt)\n        run_epoch(model, b)\n        fit(model, c, opt, False)\n"
    )
    a, b, c = _calls(ctx, "DataLoader")
    loops = ctx.loops
    run_loop = ctx.index.nodes(cst.For)[0]
    # Not every call passes the same loader: not loops_over's, but each loader's on its own calls.
    assert loops.loops_over(a) == loops.loops_over(b) == []
    assert [loop for loop, _ in loops.shared_loops(a)] == [run_loop]
    (_, path_a), = loops.shared_loops(a)
    (_, path_b), = loops.shared_loops(b)
    assert loops.steps_on(run_loop, path_a) is True  # `opt` is a call's result: not None
    assert loops.steps_on(run_loop, path_b) is False  # the default None
    # Through fit: the argument is a conditional expression, not read.
    (_, path_c), = loops.shared_loops(c)
    assert len(path_c.calls) == 2 and loops.steps_on(run_loop, path_c) is None


def test_a_guard_that_leaves_before_the_step_is_read_on_each_call():
    # `if not train: continue` before the step (the step itself under no `if`): the opposite
    # condition; a guard not known on the call (`if batch is None: continue`) skips some
    # iterations only.
    ctx = _ctx(
        "def run_epoch(model, loader, opt, train=True):\n"
        "    for b in loader:\n"
        "        if b is None:\n            continue\n"
        "        loss = model(b)\n"
        "        if not train:\n            continue\n"
        "        loss.backward()\n        opt.step()\n"
        "def evaluate(model, loader, opt=None):\n"
        "    for b in loader:\n"
        "        if opt is None: return\n"
        "        opt.step()\n"
        "def main(opt):\n"
        "    a = DataLoader(ds)\n    b = DataLoader(vs)\n    c = DataLoader(ts)\n    d = DataLoader(es)\n"
        "    e = DataLoader(fs)\n"
        "    run_epoch(model, a, opt)\n    run_epoch(model, b, opt, train=False)\n"
        "    run_epoch(model, c, opt, train=flag)\n"
        "    evaluate(model, d)\n    evaluate(model, e, opt)\n"
    )
    verdicts = [[ctx.loops.steps_on(loop, path) for loop, path in ctx.loops.shared_loops(c)]
                for c in _calls(ctx, "DataLoader")]
    # c: `train=flag` is not known, so neither is the guard: taken for one that skips some
    # iterations; e: `opt` a parameter main's callers would give, the same.
    assert verdicts == [[True], [False], [True], [False], [True]]


def test_a_loader_held_in_a_dict_or_list_is_followed_to_the_loops_that_pick_it():
    ctx = _ctx(
        "loaders = {'train': DataLoader(a), 'val': DataLoader(b)}\n"
        "pair = [DataLoader(c), DataLoader(d)]\n"
        "by_phase = {p: DataLoader(sets[p]) for p in ['train', 'val']}\n"
        "def fit(held):\n    for x in held['val']:\n        pass\n"
        "for x in loaders['train']:\n    pass\n"
        "for name in loaders:\n    pass\n"
        "for phase in ['train', 'val']:\n    for x in loaders[phase]:\n        pass\n"
        "for x in pair[1]:\n    pass\n"
        "for x in by_phase[phase]:\n    pass\n"
        "fit(loaders)\n"
    )
    train, val, first, second, per_phase = _calls(ctx, "DataLoader")
    loops = ctx.index.nodes(cst.For)  # in fit, by 'train', by name (keys), by phase, pair[1], by_phase[phase]
    found = lambda call: sorted(loops.index(l) for l in ctx.loops.loops_over(call))
    # By literal key or position; not `for name in loaders` (its keys); through a function it is
    # handed to. `loaders[phase]` under `for phase in ['train', 'val']` is each one's on its own
    # iterations (phase given its key).
    assert found(train) == [1]
    assert found(val) == [0]
    assert [(loops.index(l), [(n, v) for n, _, v in p.given]) for l, p in ctx.loops.shared_loops(train)] == [
        (4, [("phase", "train")])]
    assert [(loops.index(l), [(n, v) for n, _, v in p.given]) for l, p in ctx.loops.shared_loops(val)] == [
        (4, [("phase", "val")])]
    assert found(first) == [] and found(second) == [5]
    assert found(per_phase) == [6]
    # The dict is not the loader: frameworks' `fit(model, loaders)` does not name it.
    assert ctx.loops.names_of(train) == []


def test_an_item_of_a_loaders_dict_assigned_to_a_name_is_followed_through_it():
    ctx = _ctx(
        "def build(cfg):\n    return {'train': DataLoader(a), 'val': DataLoader(b)}\n"
        "def main(cfg):\n"
        "    loaders = build(cfg)\n"
        "    train_loader = loaders['train']\n"
        "    for x in train_loader:\n        pass\n"
        "    for phase in ['train', 'val']:\n"
        "        loader = loaders[phase]\n"
        "        for x in loader:\n            pass\n"
        "    some = loaders[cfg.phase]\n"
        "    for x in some:\n        pass\n"
    )
    train, val = _calls(ctx, "DataLoader")
    by_name, _phases, by_phase, by_unknown = ctx.index.nodes(cst.For)
    # Returned in a dict to main; its item at the loader's own key is the loader always; the one
    # picked by phase on that phase's iterations; by a key not known, maybe.
    assert ctx.loops.loops_over(train) == [by_name] and ctx.loops.loops_over(val) == []
    shared = lambda call: [(ctx.index.nodes(cst.For).index(l), [(n, v) for n, _, v in p.given])
                           for l, p in ctx.loops.shared_loops(call)]
    assert sorted(shared(train)) == [(2, [("phase", "train")]), (3, [])]
    assert sorted(shared(val)) == [(2, [("phase", "val")]), (3, [])]


def test_a_loop_over_zipped_displays_binds_each_loader_with_its_phase():
    ctx = _ctx(
        "a = DataLoader(ds)\nb = DataLoader(vs)\n"
        "for phase, loader in zip(['train', 'val'], [a, b]):\n"
        "    for x in loader:\n        if phase == 'train':\n            model(x).backward()\n            opt.step()\n"
        "for dl, n in zip([a, b], [1]):\n    pass\n"
    )
    a, b = _calls(ctx, "DataLoader")
    zipped, inner, uneven = ctx.index.nodes(cst.For)
    # The zip loops go over the loaders themselves, not their batches (zip stops at the shorter
    # display: the second binds `a` alone).
    assert ctx.loops.loops_over(a) == ctx.loops.loops_over(b) == []
    assert [(l, ctx.loops.steps_on(l, p)) for l, p in ctx.loops.shared_loops(a)] == [(inner, True)]
    assert [(l, ctx.loops.steps_on(l, p)) for l, p in ctx.loops.shared_loops(b)] == [(inner, False)]
    assert [(p.name, [(n, v) for n, _, v in p.given]) for p in ctx.loops.paths_of(a)][-1] == ("dl", [("n", 1)])
    assert [p.name for p in ctx.loops.paths_of(b)] == ["b", "loader"]


def test_a_method_called_on_an_instance_of_a_class_of_the_module_is_followed():
    ctx = _ctx(
        "class Trainer:\n    def fit(self, loader):\n        for x in loader:\n            pass\n"
        "class Other:\n    def run(self, loader):\n        pass\n"
        "def main():\n"
        "    la = DataLoader(a)\n    lb = DataLoader(b)\n"
        "    t = Trainer()\n    t.fit(la)\n"
        "    Trainer().fit(lb)\n"
        "    t.run(DataLoader(c))\n"  # Trainer has no `run`
        "    u = make()\n    u.fit(DataLoader(d))\n"  # not built here
        "    v = Trainer()\n    v = Other()\n    v.fit(DataLoader(e))\n"  # assigned twice
    )
    calls = [c for c in ctx.index.nodes(cst.Call) if isinstance(c.func, cst.Attribute)]
    assert [ctx.loops.local_callee_name(c) for c in calls] == ["fit", "fit", None, None, None]
    fit_loop = ctx.index.nodes(cst.For)[0]
    a, b, *_ = _calls(ctx, "DataLoader")
    # Two calls hand fit two loaders: each loader's loop on its own call.
    assert [l for l, _ in ctx.loops.shared_loops(a)] == [fit_loop] == [l for l, _ in ctx.loops.shared_loops(b)]


def test_batches_drawn_with_next_are_found_in_their_loops():
    ctx = _ctx(
        "loader = DataLoader(ds)\nother = DataLoader(vs)\n"
        "it = iter(loader)\nwarm = next(it)\n"
        "def train(steps):\n    for step in range(steps):\n        batch = next(it, None)\n"
        "while True:\n    x, y = next(iter_other)\n"
    )
    loader, other = _calls(ctx, "DataLoader")
    loop = ctx.index.nodes(cst.For)[0]
    # In a loop only (the warm-up draw is one batch); through the module's iterator read in train.
    assert [(l, ctx.dotted(t)) for l, t in ctx.loops.next_draws(loader)] == [(loop, "batch")]
    assert ctx.loops.next_draws(other) == []  # `iter_other` is not a name of it


def test_a_loop_over_pairs_binds_each_loader_with_its_phase():
    ctx = _ctx(
        "a = DataLoader(ds)\nb = DataLoader(vs)\nheld = {'fit': DataLoader(ts)}\n"
        "def run(loader, train):\n    for x in loader:\n        if train:\n            model(x).backward()\n"
        "for epoch in range(3):\n"
        "    for phase, loader in [('train', a), ('val', b)]:\n"
        "        for x in loader:\n            if phase == 'train':\n                model(x).backward()\n"
        "    for key, dl in held.items():\n        run(dl, key == 'fit')\n"
        "run(b, False)\n"
    )
    a, b, fit = _calls(ctx, "DataLoader")
    loops = ctx.loops
    run_loop, epochs, pairs, phase_loop = ctx.index.nodes(cst.For)[:4]
    # Not loops_over's (the display loop goes over the loaders themselves, not their batches).
    assert loops.loops_over(a) == loops.loops_over(b) == []
    (loop, path), = loops.shared_loops(a)
    assert loop is phase_loop and [(n, v) for n, _, v in path.given] == [("phase", "train")]
    assert loops.steps_on(loop, path) is True and loops.repeats_on(loop, path) == [epochs]
    # b: the "val" phase, and run(b, False) once after the epochs; neither steps.
    b_paths = loops.shared_loops(b)
    assert [l for l, _ in b_paths] == [phase_loop, run_loop]
    assert [loops.steps_on(l, p) for l, p in b_paths] == [False, False]
    assert [loops.repeats_on(l, p) for l, p in b_paths] == [[epochs], []]
    # Through a dict's items into a function: the key read in the call's argument.
    (loop, path), = loops.shared_loops(fit)
    assert loop is run_loop and loops.steps_on(loop, path) is True and loops.repeats_on(loop, path) == [epochs]


def test_conditions_read_on_calls():
    ctx = _ctx(
        "MODE = 'train'\n"
        "def f(x, train=True, opt=None, mode=MODE, *, flag=False):\n"
        "    is_train = mode == 'train'\n"
        "    again = x\n    again = 1\n"
        "    probe(train, not train, opt is None, opt, is_train and flag, is_train or flag, again, x is 3, x)\n"
        "f(1)\nf(2, False, SGD(), 'eval', flag=True)\nf(*args)\n"
    )
    probe = _calls(ctx, "probe")[0]
    fn = ctx.index.nodes(cst.FunctionDef)[0]
    first, second, starred = _calls(ctx, "f")
    truth = ctx.loops.conditions.truth
    tests = [arg.value for arg in probe.args]
    assert [truth(t, fn, (first,)) for t in tests] == [True, False, True, False, False, True, UNKNOWN, UNKNOWN, True]
    assert [truth(t, fn, (second,)) for t in tests] == [False, True, False, UNKNOWN, False, True, UNKNOWN, UNKNOWN, True]
    assert {truth(t, fn, (starred,)) for t in tests} == {UNKNOWN}
    assert {truth(t, fn, ()) for t in tests} == {UNKNOWN}  # no call: parameters are not known


def test_a_module_loader_is_followed_into_functions_that_read_it():
    ctx = _ctx(
        "trainloader = DataLoader(ds)\ntestloader = DataLoader(vs)\n"
        "def train(epoch):\n    for b in trainloader:\n        model(b).backward()\n"
        "def shadowed(trainloader):\n    for b in trainloader:\n        pass\n"
        "def rebinds():\n    global testloader\n    testloader = make()\n    for b in testloader:\n        pass\n"
        "def local():\n    testloader = make()\n    for b in testloader:\n        pass\n"
        "def nested():\n    testloader = make()\n    def inner():\n        for b in testloader:\n            pass\n"
    )
    trainloader, testloader = _calls(ctx, "DataLoader")
    loops = ctx.loops
    # A parameter of the same name is another value; `global` makes the name the module's again.
    assert [ctx.index.enclosing_function(l).name.value for l in loops.loops_over(trainloader)] == ["train"]
    assert [ctx.index.enclosing_function(l).name.value for l in loops.loops_over(testloader)] == ["rebinds"]


def test_a_function_loader_is_followed_into_closures_that_read_it():
    ctx = _ctx(
        "def main():\n    loader = DataLoader(ds)\n"
        "    def train():\n        for b in loader:\n            pass\n"
        "    def shadowed():\n        loader = other()\n        def inner():\n            for b in loader:\n                pass\n"
        "def elsewhere():\n    for b in loader:\n        pass\n"
    )
    (loader,) = _calls(ctx, "DataLoader")
    # Not through a function that binds its own `loader`, nor in another function.
    assert [ctx.index.enclosing_function(l).name.value for l in ctx.loops.loops_over(loader)] == ["train"]


def test_the_loops_that_repeat_a_node_are_found_through_calls():
    ctx = _ctx(
        "def inner():\n    for b in loader:\n        use(b)\n"
        "def train(epoch):\n    inner()\n"
        "def once():\n    for b in other:\n        use(b)\n"
        "for epoch in range(3):\n    train(epoch)\n"
        "while True:\n    train(0)\n"
        "once()\n"
    )
    inner_loop, once_loop, epochs = ctx.index.nodes(cst.For)
    loops = ctx.loops
    assert loops.repeating_loops(inner_loop) == [epochs, ctx.index.nodes(cst.While)[0]]  # two calls up
    assert loops.repeating_loops(once_loop) == []
    assert loops.repeating_loops(_calls(ctx, "use")[0]) == [inner_loop]


def test_offline_script_by_path_and_no_hot_loop():
    prep = "class DS(Dataset):\n    def __getitem__(self, i):\n        return torchaudio.load(self.paths[i])\n"
    train = prep + "for x in loader:\n    model(x).backward()\n    opt.step()\n"

    def offline(path, code):
        return FileContext(path, code, cst.parse_module(code), None).is_offline_script

    assert offline("examples/speech_to_text/prep_covost_data.py", prep)
    assert offline("MMPT/scripts/video_feature_extractor/videoreader.py", prep)
    assert offline("wav2vec/vq-wav2vec_featurize.py", prep)
    assert not offline("scripts/train.py", train)  # trains: not offline
    assert not offline("litgpt/data/base.py", prep)  # a library dataset: used for training elsewhere
    assert not offline("preparation_notes/ds.py", prep)


def test_precision_resolves_a_device_name_given_to_a_scaler():
    # Found by the corpus sweep (trainer-0.0.36): the device table was read before it was built.
    ctx = _ctx("import torch\ndev = 'cuda'\nscaler = torch.amp.GradScaler(dev)\n"
               "with torch.amp.autocast(device_type=dev):\n    pass\n")
    assert [s.device for s in ctx.precision.scalers] == ["cuda"]
    assert [a.device for a in ctx.precision.autocasts] == ["cuda"]


def test_early_exit_interval_guards_end_per_step_code():
    # torchtitan's train_step: `if not should_log: return` before the metric reads.
    ctx = _ctx(
        "def train_step(batch):\n    loss = model(batch)\n    loss.backward()\n    opt.step()\n"
        "    early = loss.item()\n    if not should_log:\n        return\n    late = loss.item()\n"
        "for step, batch in enumerate(loader):\n    train_step(batch)\n"
        "    if step % log_every != 0:\n        continue\n    logged = float(loss)\n"
        "    if step == 0:\n        continue\n"
    )
    items = [c for c in ctx.index.nodes(cst.Call) if ctx.dotted(c.func) in ("loss.item", "float")]
    assert [ctx.loops.is_per_step(c) for c in items] == [True, False, False]


def test_the_branch_that_steps_the_optimizer_runs_every_training_step():
    # Gradient accumulation (torchtune's recipes, HF's `if do_sync_step:`): the interval guard
    # around the optimizer step is the step itself. A host sync there stalls every training step
    # (is_per_step with optimizer_steps); the accumulation analysis still sees one iteration in
    # `accum` (is_per_step alone). A logging interval inside it, and a guard without the
    # optimizer step, still limit their code.
    ctx = _ctx(
        "def step_fn():\n    opt.step()\n"
        "for i, batch in enumerate(loader):\n    model(batch).backward()\n"
        "    if (i + 1) % accum == 0:\n        step_fn()\n        global_step += 1\n        a = loss.item()\n"
        "        if global_step % 50 == 0:\n            b = loss.item()\n"
        "    if i % 100 == 0:\n        c = loss.item()\n"
        "for i, batch in enumerate(loader2):\n    model(batch).backward()\n"
        "    if (i + 1) % accum != 0:\n        continue\n    opt.step()\n    d = loss.item()\n"
    )
    items = [c for c in ctx.index.nodes(cst.Call) if ctx.dotted(c.func) == "loss.item"]
    assert [ctx.loops.is_per_step(c, optimizer_steps=True) for c in items] == [True, False, False, True]
    assert [ctx.loops.is_per_step(c) for c in items] == [False, False, False, False]
    regions = [ctx.loops.step_region(c) for c in items]
    assert [len(r) if r is not None else None for r in regions] == [4, 4, None, 2]


def test_framework_hooks_run_every_step():
    # The loop is the framework's: Lightning's training_step and batch-end callbacks, a
    # transformers or trl Trainer's compute_loss, a TrainerCallback's on_step_end. Only through
    # base classes the module can name (a local subclass chain is followed).
    ctx = _ctx(
        "import pytorch_lightning as pl\nfrom lightning.pytorch.callbacks import Callback\n"
        "from transformers import Trainer, TrainerCallback\nfrom trl import SFTTrainer\nfrom mylib import Trainer as Other\n"
        "class Base(pl.LightningModule):\n    pass\n"
        "class M(Base):\n    def training_step(self, b, i):\n        pass\n"
        "    def validation_step(self, b, i):\n        pass\n"
        "class C(Callback):\n    def on_train_batch_end(self, *a):\n        pass\n"
        "class T(Trainer):\n    def compute_loss(self, model, inputs):\n        pass\n"
        "class S(SFTTrainer):\n    def training_step(self, model, inputs):\n        pass\n"
        "class TC(TrainerCallback):\n    def on_step_end(self, *a):\n        pass\n    def on_log(self, *a):\n        pass\n"
        "class O(Other):\n    def training_step(self, b):\n        pass\n"
        "def training_step(b):\n    pass\n"
    )
    hooks = {f"{ctx.index.parent[ctx.index.parent[fn]].name.value}.{fn.name.value}"
             if isinstance(ctx.index.parent.get(ctx.index.parent.get(fn)), cst.ClassDef) else fn.name.value
             for fn in ctx.index.nodes(cst.FunctionDef) if ctx.loops.is_step_hook(fn)}
    assert hooks == {"M.training_step", "C.on_train_batch_end", "T.compute_loss", "S.training_step", "TC.on_step_end"}


def test_a_step_hook_gives_the_frameworks_counter_and_interval():
    # Guards inside a hook read the framework's own counter and logging interval, named by the
    # hook's parameters; none without the parameter, in a helper the hook calls, or in a hot loop
    # of the hook's own.
    ctx = _ctx(
        "import lightning as L\nfrom transformers import Trainer, TrainerCallback\n"
        "class M(L.LightningModule):\n    def training_step(self, b, i):\n        a = 1\n"
        "class C(L.Callback):\n    def on_train_batch_end(self, tr, module, out, b, i):\n        a = 2\n"
        "class T(Trainer):\n    def compute_loss(self, model, inputs):\n        a = 3\n"
        "class TC(TrainerCallback):\n    def on_step_end(self, args, st, control, **kw):\n        a = 4\n"
        "class TD(TrainerCallback):\n    def on_step_end(self, *args):\n        a = 5\n        helper()\n"
        "        for x in xs:\n            model(x).backward()\n            a = 7\n"
        "def helper():\n    a = 6\n"
    )
    sites = sorted((n for n in ctx.index.nodes(cst.Assign)), key=lambda n: ctx.code(n.value))
    assert [ctx.loops.step_hook(n) for n in sites] == [
        ("self.global_step", "self.trainer.log_every_n_steps", "self.log"),
        ("tr.global_step", "tr.log_every_n_steps", "module.log"),
        ("self.state.global_step", "self.state.logging_steps", None),
        ("st.global_step", "st.logging_steps", None),
        None, None, None,
    ]


def test_tl201_reports_a_conversion_chain_once():
    from trainlint.api import lint_source

    code = ("for x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n"
            "    logs['loss'] = loss.cpu().detach().numpy().item()\n")
    assert [d.code for d in lint_source(code, select=["TL201"])] == ["TL201"]


def test_a_remainder_is_not_an_interval_flag():
    # simpletransformers' resume: skipping already-seen batches is not an interval guard.
    ctx = _ctx(
        "steps_left = global_step % steps_per_epoch\nshould_log = global_step % 10 == 0\n"
        "for step, batch in enumerate(loader):\n    if steps_left > 0:\n        steps_left -= 1\n        continue\n"
        "    loss = model(batch)\n    total += loss.item()\n    loss.backward()\n    opt.step()\n"
        "    if should_log:\n        print(loss.item())\n"
    )
    items = _calls(ctx, "loss.item")
    assert [ctx.loops.is_per_step(c) for c in items] == [True, False]


def test_a_name_assigned_python_numbers_is_not_a_tensor_whatever_its_name():
    ctx = _ctx(
        "def train():\n    current_loss = loss.item()\n    tr_loss = 0.0\n    tr_loss += loss.item()\n"
        "    run_loss = 0\n    run_loss += loss\n    use(current_loss, tr_loss, run_loss, loss)\n"
    )
    use = _calls(ctx, "use")[0]
    assert [ctx.tensors.is_tensor(a.value) for a in use.args] == [False, False, True, True]


@pytest.mark.parametrize(("loaded", "ema_is_tensor"), [("state['ema']", False), ("torch.load(path)['ema']", True)])
def test_what_a_function_of_the_file_returns_is_a_number_when_its_arguments_make_it_one(loaded, ema_is_tensor):
    # speechbrain's update_average: the running average it returns is what it was handed, plus
    # numbers. Handed a float, a float; handed a tensor, a tensor. An attribute of self is judged
    # by every value its class gives it; what yaml parsed holds no tensor, what torch.load gives may.
    ctx = _ctx(
        "import yaml, torch\n"
        "def add_to(avg_loss, loss):\n"
        "    avg_loss += float(loss)\n"
        "    return avg_loss\n"
        "def train(loss):\n"
        "    a_loss = add_to(0.0, loss)\n"
        "    b_loss = add_to(loss.detach(), loss)\n"
        "    use(a_loss, b_loss)\n"
        "class Brain:\n"
        "    def __init__(self):\n"
        "        self.step = 0\n"
        "        self.avg_loss = None\n"
        "        self.ema_loss = 0.0\n"
        "    def fit(self, loss):\n"
        "        self.step += 1\n"
        "        self.avg_loss = add_to(self.avg_loss, loss) / self.step\n"
        "        self.ema_loss = 0.9 * self.ema_loss + 0.1 * float(loss)\n"
        "        use(self.avg_loss, self.ema_loss)\n"
        "    def recover(self, path):\n"
        "        state = yaml.safe_load(open(path))\n"
        "        self.step = state['step']\n"
        f"        self.ema_loss = {loaded}\n"
    )
    first, second = _calls(ctx, "use")
    assert [ctx.tensors.is_tensor(a.value) for a in first.args] == [False, True]
    assert [ctx.tensors.is_tensor(a.value) for a in second.args] == [False, ema_is_tensor]


def test_a_long_chain_of_operators_is_read_once_per_operand(monkeypatch):
    # diffusers: `AttentionProcessor = A | B | ... ` of 40 classes. Each side of each operator was
    # asked twice whether it is a number, so the questions doubled with every operator (the
    # --deep sweep never finished the file). Counted, not timed: each name is asked about a
    # bounded number of times.
    names = [f"Proc{i}" for i in range(40)]
    ctx = _ctx("".join(f"class {n}: pass\n" for n in names) + "proc_loss = " + " | ".join(names) + "\nuse(proc_loss)\n")
    asked = []
    import trainlint.analysis.tensors as tensors_module
    reaching = tensors_module.reaching_value
    monkeypatch.setattr(tensors_module, "reaching_value",
                        lambda index, use, name: asked.append(name) or reaching(index, use, name))
    ctx.tensors.is_tensor(_calls(ctx, "use")[0].args[0].value)
    assert 0 < len(asked) <= 2 * len(names)


def test_attributes_given_each_others_values_in_many_methods_are_looked_up_a_bounded_number_of_times(monkeypatch):
    # Every value a class gives an attribute is read, and each may name other attributes: four
    # attributes given sums of each other in 12 methods took 36337 lookups for one question.
    # Past the bound (_NUMBER_LOOKUPS) the answer is "not known" (a tensor by its name), never slow.
    attrs = [f"self.l{i}_loss" for i in range(4)]
    methods = "".join(
        f"    def m{m}(self, x):\n        print(self.l0_loss)\n"
        + "".join(f"        {a} = {attrs[(i + 1) % 4]} + {attrs[(i + 2) % 4]} * x + {attrs[(i + 3) % 4]}\n"
                  for i, a in enumerate(attrs))
        for m in range(12))
    ctx = _ctx("class Meter:\n    def __init__(self):\n" + "".join(f"        {a} = 0.0\n" for a in attrs) + methods)
    lookups = []
    assigned = ctx.tensors._assigned_numbers
    monkeypatch.setattr(ctx.tensors, "_assigned_numbers", lambda *a: lookups.append(a[0]) or assigned(*a))
    ctx.tensors.is_tensor(_calls(ctx, "print")[0].args[0].value)
    assert 0 < len(lookups) <= 300


def test_a_name_turned_into_a_number_is_one_from_there_on():
    # simpletransformers: `similarity_loss = similarity_loss.item()` and then f-strings of it.
    ctx = _ctx(
        "def f(batch):\n"
        "    sim_loss = model(batch)\n"
        "    before = sim_loss\n"
        "    sim_loss = sim_loss.item()\n"
        "    if show:\n"
        "        after = sim_loss\n"
        "    other_loss = model(batch)\n"
        "    if clip:\n"
        "        other_loss = other_loss.item()\n"
        "    maybe = other_loss\n"
        "    total_loss = 0.0\n"
        "    for b in batches:\n"
        "        again = total_loss\n"
        "        total_loss = model(b)\n"
    )
    values = {ctx.code(a.targets[0].target): a.value for a in ctx.index.nodes(cst.Assign)}
    got = {name: ctx.tensors.is_tensor(values[name]) for name in ("before", "after", "maybe", "again")}
    # `maybe` may still be a tensor (the `.item()` is on one path); `again` sees the loop's tensor.
    assert got == {"before": True, "after": False, "maybe": True, "again": True}


def test_an_attribute_or_a_closure_read_name_turned_into_a_number_is_one_from_there_on():
    # What keeps tensors' own reaching-value walk beside variables.variable_uses (plain names, and
    # none when a closure reads them).
    ctx = _ctx(
        "def f(self, batch):\n"
        "    self.running = model(batch)\n"
        "    self.running = self.running.item()\n"
        "    attr = self.running\n"
        "    step_loss = model(batch)\n"
        "    step_loss = step_loss.item()\n"
        "    report = lambda: step_loss\n"
        "    name = step_loss\n"
    )
    values = {ctx.code(a.targets[0].target): a.value for a in ctx.index.nodes(cst.Assign)}
    assert [ctx.tensors.is_tensor(values[name]) for name in ("attr", "name")] == [False, False]


def test_exception_handlers_are_not_per_step():
    ctx = _ctx(
        "for batch in loader:\n    try:\n        loss = model(batch)\n        loss.backward()\n        opt.step()\n"
        "        torch.cuda.synchronize()\n    except RuntimeError:\n        torch.cuda.empty_cache()\n"
    )
    calls = [c for c in ctx.index.nodes(cst.Call) if (ctx.dotted(c.func) or "").startswith("torch.cuda")]
    assert [ctx.loops.is_per_step(c) for c in calls] == [True, False]


def test_tl402_pairs_the_scaler_with_training_autocasts_only():
    # simpletransformers: one GradScaler in train(), fp16 autocasts in train() and predict().
    from trainlint.api import lint_source

    code = ("import torch\ndef train(loader):\n    scaler = torch.cuda.amp.GradScaler()\n    for x in loader:\n"
            "        with torch.cuda.amp.autocast():\n            loss = model(x)\n"
            "        scaler.scale(loss).backward()\n        scaler.step(opt)\n        scaler.update()\n"
            "def predict(x):\n    with torch.cuda.amp.autocast():\n        return model(x)\n")
    found = [d for d in lint_source(code, select=["TL402"])]
    assert [d.start.row for d in found] == [5]
    ctx = _ctx(code)
    autocasts = _calls(ctx, "torch.cuda.amp.autocast")
    assert [ctx.loops.in_training_step(c) for c in autocasts] == [True, False]


def test_evaluation_every_n_steps_is_not_a_training_step():
    ctx = _ctx(
        "def evaluate():\n    with autocast():\n        return model(val)\n"
        "for step, x in enumerate(loader):\n    with autocast():\n        loss = model(x)\n    loss.backward()\n"
        "    opt.step()\n    if step % 100 == 0:\n        evaluate()\n"
    )
    autocasts = _calls(ctx, "autocast")
    assert [ctx.loops.in_training_step(c) for c in autocasts] == [False, True]


def test_cache_miss_paths():
    ctx = _ctx(
        "def load(path):\n    if os.path.exists(path) and not reprocess:\n        feats = torch.load(path)\n"
        "    else:\n        feats = build()\n        if not no_cache:\n            torch.save(feats, path)\n"
        "    if not Path(path).is_file():\n        torch.save(feats, path)\n"
        "    if step % 10 == 0:\n        torch.save(model.state_dict(), 'ckpt.pt')\n"
    )
    saves = _calls(ctx, "torch.save")
    assert [ctx.loops.on_cache_miss(c) for c in saves] == [True, True, False]


def test_a_training_run_is_not_one_step():
    # timm's optimizer tests: one loss before a loop of optimizer steps makes the function a training
    # run, not a step, so a loop calling it is no hot loop and the run's setup is not per step. A train
    # step that accumulates over micro-batches, or steps each optimizer in a loop, is still one step.
    ctx = _ctx(
        "def run(opt, fn):\n    first = fn().item()\n    for _ in range(200):\n        opt.step(fn)\n"
        "    last = fn().item()\n"
        "def train_step(batches, opts):\n    for mb in batches:\n        model(mb).backward()\n"
        "    opt.step()\n    for o in opts:\n        o.step()\n    done = loss.item()\n"
        "def fn():\n    loss = model(x)\n    loss.backward()\n    return loss\n"
        "for cfg in cfgs:\n    run(make(cfg), fn)\n"
        "for batch in loader:\n    train_step(batch, opts)\n"
    )
    reads = [c for c in ctx.index.nodes(cst.Call) if isinstance(c.func, cst.Attribute) and c.func.attr.value == "item"
             and isinstance(c.func.value, cst.Call) and ctx.dotted(c.func.value.func) == "fn"]
    assert [ctx.loops.is_per_step(c) for c in reads] == [False, False]
    assert [ctx.loops.is_per_step(c) for c in _calls(ctx, "loss.item")] == [True]


def test_tensors_on_device():
    # Where a dataset's tensors live (batches.dataset_on_device): moved, made there, or kept there.
    ctx = _ctx(
        "import torch\ndevice = torch.device('cuda')\n"
        "a = torch.randn(4).to(device)\nb = torch.randn(4, device=device)\nc = torch.randn(4, device='cpu')\n"
        "d = a[0].float() * 2\ne = torch.randn(4).to(torch.float16)\nf = a.cpu()\ng = torch.zeros(4)\n"
        "if torch.cuda.is_available():\n    g = g.cuda()\n"
        "use(a, b, c, d, e, f, g, torch.ones(2).cuda(), torch.tensor([1], device=torch.device('cpu')))\n"
    )
    use = _calls(ctx, "use")[0]
    got = [ctx.tensors.on_device(a.value) for a in use.args]
    assert got == [True, True, False, True, False, False, True, True, False]


def test_tensors_on_device_loaded_or_returned():
    # torch.load's map_location, lists appended device tensors, torch functions and models of them,
    # and what the module's functions return (a parameter read as what the call passes).
    ctx = _ctx(
        "import torch\ndevice = torch.device('cuda')\n"
        "def extract(encoder, images):\n    feats = []\n    for x in images:\n"
        "        feats.append(encoder(x.to(device)))\n    return join(feats)\n"
        "def join(parts):\n    return torch.cat(parts)\n"
        "def host(encoder, images):\n    return torch.cat([encoder(x.cuda()).cpu() for x in images])\n"
        "def hidden(images):\n    out = {}\n    out['x'] = model(images.cuda())\n    return out\n"
        "a = torch.load('a.pt', map_location=device)\nb = torch.load('b.pt', map_location='cpu')\n"
        "c = torch.load('c.pt', map_location=lambda storage, loc: storage)\nd = torch.load('d.pt')\n"
        "e = extract(encoder, images)\nf = host(encoder, images)\ng = hidden(images)\n"
        "use(a['x'], b['x'], c, d, e, f, join([b, a]), g['x'])\n"
    )
    use = _calls(ctx, "use")[0]
    got = [ctx.tensors.on_device(a.value) for a in use.args]
    assert got == [True, False, False, False, True, False, True, False]
    # A helper that copies to the device somewhere in it: its result may be on the device.
    got = [ctx.tensors.from_device_helper(a.value) for a in use.args]
    assert got == [False, False, False, False, True, True, False, True]


def test_tensors_on_host_through_the_files_functions():
    # What a function of the file returns on the host (`.cpu()`) is on the host where it is called,
    # and a parameter that every call hands such a value is too, down a chain of helpers (each
    # parameter worked out once, from a fixed depth: the answers do not depend on the order of the
    # questions). A helper also handed on as a callback, a parameter a call leaves to its default,
    # or helpers handing their parameters round in a cycle are not known.
    code = (
        "import torch\ndef step(batch):\n    loss = model(batch.cuda()).sum()\n    return loss.detach().cpu()\n"
        "def device_step(batch):\n    return model(batch.cuda()).sum()\n"
        "def check(x):\n    return inner(x)\ndef inner(y):\n    use(y)\n    return y\n"
        "def handed(z):\n    use(z)\ndef defaulted(w=None):\n    use(w)\n"
        "def ping(p):\n    use(p)\n    pong(p)\ndef pong(q):\n    ping(q)\n"
        "for batch in loader:\n    loss = step(batch)\n    check(loss)\n    handed(loss)\n    hooks.append(handed)\n"
        "    defaulted(loss)\n    defaulted()\n    ping(loss)\n    use(device_step(batch))\n"
    )
    names = ["y", "z", "w", "p", "device_step(batch)"]
    for order in (names, names[::-1]):
        ctx = _ctx(code)
        uses = {ctx.code(c.args[0].value): c.args[0].value for c in _calls(ctx, "use")}
        got = {name: ctx.tensors.on_host(uses[name]) for name in order}
        assert got == {"y": True, "z": False, "w": False, "p": False, "device_step(batch)": False}, order
    ctx = _ctx(code)
    assert ctx.tensors.on_host(_calls(ctx, "check")[0].args[0].value)


def test_tensors_on_host_from_a_module_kept_on_the_host():
    # A torch.nn module built here with no device, which nothing moves, gives a host tensor for
    # host inputs (a CPU unit test in a file that uses CUDA elsewhere); so does a factory told a
    # device that is the CPU, also through a parameter every call leaves to its CPU default.
    # Moved (`.cuda()`, `.to(device)`), handed to a function of the file, wrapped in DataParallel,
    # built under `with torch.device("meta")` or in a file that sets the default device, or a
    # container holding a module that is not known to be on the host, or handed to a call that may
    # place it (`accelerator.prepare(model)`; not `copy.deepcopy`): not known.
    code = (
        "import copy\nimport torch\nfrom torch import nn\n"
        "def host_case(device=torch.device('cpu')):\n"
        "    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(inplace=True), nn.Linear(3, 1))\n"
        "    net.to(device)\n    x = torch.tensor([0.1, 0.2], device=device)\n"
        "    y = torch.ones(2, device='cpu')\n    use(net(x), y, net(x).sum())\n"
        "def moved(device):\n    net = nn.Linear(2, 1)\n    net.to(device)\n    use(net(torch.ones(2)))\n"
        "def helped():\n    other = nn.Linear(2, 1)\n    place(other)\n    use(other(torch.ones(2)))\n"
        "def replicated():\n    dp = nn.DataParallel(nn.Linear(2, 1))\n    use(dp(torch.ones(2)))\n"
        "def meta():\n    with torch.device('meta'):\n        lazy = nn.Linear(2, 1)\n    use(lazy(torch.ones(2)))\n"
        "def device_input(device):\n    small = nn.Linear(2, 1)\n    use(small(torch.ones(2, device=device)))\n"
        "def wrapped(hidden):\n    enc = make_encoder().cuda()\n    head = nn.Linear(hidden, 1)\n"
        "    bad = nn.Sequential(enc, nn.ReLU())\n    good = nn.Sequential(head, nn.ReLU())\n"
        "    use(bad(torch.ones(2)), good(torch.ones(2)))\n"
        "def handed(accelerator):\n    kept = nn.Linear(2, 1)\n    spare = copy.deepcopy(kept)\n"
        "    prepared = nn.Linear(2, 1)\n    accelerator.prepare(prepared)\n"
        "    use(kept(torch.ones(2)), prepared(torch.ones(2)))\n"
        "def place(m):\n    m.cuda()\n"
        "host_case()\nhost_case()\n"
    )
    ctx = _ctx(code)
    got = [ctx.tensors.on_host(a.value) for call in _calls(ctx, "use") for a in call.args]
    assert got == [True, True, True, False, False, False, False, False, False, True, True, False]
    # The same CPU default, but one call hands a device: not known to be the CPU.
    ctx = _ctx(code + "host_case(torch.device('cuda'))\n")
    assert [ctx.tensors.on_host(a.value) for a in _calls(ctx, "use")[0].args] == [False, True, False]
    ctx = _ctx("import torch\ntorch.set_default_device('cuda')\nnet = torch.nn.Linear(2, 1)\n"
               "use(net(torch.ones(2)), torch.ones(2))\n")
    assert [ctx.tensors.on_host(a.value) for a in _calls(ctx, "use")[0].args] == [False, False]


def test_pin_memory_fix_unsafe_for_a_device_helpers_tensors():
    # TL102: features from a helper that copies to the device, where on_device cannot see what it
    # returns (an item assigned into a dict): the fix is offered as unsafe (pinning CUDA raises).
    from trainlint.api import lint_source
    from trainlint.config import Settings
    from trainlint.diagnostics import Applicability

    code = ("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\ndevice = torch.device('cuda')\n"
            "def features(images):\n    out = {}\n    out['x'] = encoder(images.to(device))\n    return out\n"
            "{feats}loader = DataLoader(TensorDataset(feats, labels), batch_size=64)\n"
            "for xb, yb in loader:\n    loss = model(xb.to(device), yb.to(device))\n    loss.backward()\n    opt.step()\n")
    fixes = {}
    for key, feats in (("helper", "feats = features(images)['x']\n"), ("plain", "feats = torch.randn(64, 8)\n")):
        found = [d for d in lint_source(code.replace("{feats}", feats), path="t.py", settings=Settings(select=("TL102",)))
                 if d.code == "TL102"]
        fixes[key] = [d.fix.applicability for d in found]
    assert fixes == {"helper": [Applicability.UNSAFE], "plain": [Applicability.SAFE]}


def test_pin_memory_fix_unsafe_for_a_dataset_changed_after_it_is_built():
    # TL102: a dataset given its tensors as an attribute after it is built, by a call not seen to
    # move them (`ds.tensors = tuple(prepare(t) for t in ds.tensors)`): they may be on the device,
    # so the fix is offered as unsafe; one of host tensors left as built keeps the safe fix.
    from trainlint.api import lint_source
    from trainlint.config import Settings
    from trainlint.diagnostics import Applicability

    code = ("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
            "ds = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))\n{change}"
            "loader = DataLoader(ds, batch_size=8)\n"
            "for xb, yb in loader:\n    loss = model(xb.cuda(), yb.cuda())\n    loss.backward()\n    opt.step()\n")
    fixes = {}
    for key, change in (("changed", "ds.tensors = tuple(prepare(t) for t in ds.tensors)\n"), ("plain", "")):
        found = [d for d in lint_source(code.replace("{change}", change), path="t.py",
                                        settings=Settings(select=("TL102",))) if d.code == "TL102"]
        fixes[key] = [d.fix.applicability for d in found]
    assert fixes == {"changed": [Applicability.UNSAFE], "plain": [Applicability.SAFE]}


def test_collate_fn_none_is_the_default_collate():
    # `collate_fn=None`, by keyword or by position, is DataLoader's default: TL108's fix is safe
    # there (the batch's tensors take non_blocking), as for a loader that does not pass it.
    from trainlint.api import lint_source
    from trainlint.config import Settings
    from trainlint.diagnostics import Applicability

    code = ("from torch.utils.data import DataLoader\nloader = DataLoader({args})\n"
            "for x, y in loader:\n    loss = model(x.cuda(), y)\n    loss.backward()\n    opt.step()\n")
    fixes = {}
    for key, args in (("keyword", "ds, pin_memory=True, collate_fn=None"),
                      ("positional", "ds, 8, True, None, None, 2, None, True"),
                      ("unset", "ds, pin_memory=True"), ("custom", "ds, pin_memory=True, collate_fn=collate")):
        found = lint_source(code.format(args=args), path="t.py", settings=Settings(select=("TL108",)))
        fixes[key] = [d.fix.applicability for d in found]
    assert fixes == {"keyword": [Applicability.SAFE], "positional": [Applicability.SAFE],
                     "unset": [Applicability.SAFE], "custom": [Applicability.UNSAFE]}


def test_replays_per_worker():
    # Iterable datasets that would yield every sample once per worker (batches.replays_per_worker).
    from trainlint.analysis.batches import is_loader, replays_per_worker

    ctx = _ctx(
        "from torch.utils.data import DataLoader, Dataset, IterableDataset\nfrom webdataset import ShardList\n"
        "from datasets import load_dataset\n"
        "class Plain(IterableDataset):\n    def __iter__(self):\n        yield from self.rows\n"
        "class Deeper(Plain):\n    pass\n"
        "class Split(IterableDataset):\n    def __iter__(self):\n        return self.rows(torch.utils.data.get_worker_info())\n"
        "class Theirs(ShardList):\n    def __iter__(self):\n        yield from self.rows\n"
        "class Seeded(IterableDataset):\n    def __iter__(self):\n        info = torch.utils.data.get_worker_info()\n"
        "        rng = random.Random(info.seed if info else 0)\n        yield from self.rows\n"
        "    def _mine(self):\n        return self.rows[get_worker_info().id::2]\n"
        "class Owned(Seeded):\n    def __iter__(self):\n        yield from self._mine()\n"
        "class Mapped(Dataset):\n    def __getitem__(self, i):\n        return i\n"
        "stream = load_dataset('c4', streaming=True)\n"
        "for ds in (Plain(), Deeper(), Split(), Theirs(), Mapped(), stream):\n    pass\n"
        "loaders = [DataLoader(Plain()), DataLoader(Deeper()), DataLoader(Split()), DataLoader(Theirs()),\n"
        "           DataLoader(Mapped()), DataLoader(stream), DataLoader(Plain(), worker_init_fn=split),\n"
        "           DataLoader(Seeded()), DataLoader(Owned())]\n"
    )
    got = [replays_per_worker(ctx, c) for c in ctx.index.nodes(cst.Call) if is_loader(ctx, c)]
    # Seeded asks for the worker info only for its seed (its split sits in a method `__iter__`
    # does not call); Owned's `__iter__` calls it.
    assert got == ["Plain", "Deeper", None, None, None, None, None, "Seeded", None]


def test_copy_takes_non_blocking_through_a_helper():
    # A helper of the module that returns the batch's copy is followed (batch_moves); a copy
    # guarded by `torch.is_tensor(v)` copies only tensors, whatever else the collate_fn returns.
    from trainlint.analysis.batches import copy_takes_non_blocking

    ctx = _ctx(
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "def collate(samples):\n    return {'x': torch.stack(samples), 'meta': describe(samples)}\n"
        "def guarded(b):\n    return {k: v.to(device) if torch.is_tensor(v) else v for k, v in b.items()}\n"
        "def plain(b):\n    return {k: v.cuda() for k, v in b.items()}\n"
        "def one(t):\n    return t.to(device)\n"
        "loader = DataLoader(ds, collate_fn=collate, pin_memory=True)\n"
        "other = DataLoader(ds, pin_memory=True)\n"
        "for batch in loader:\n    batch = guarded(batch)\n    plain(batch)\n    model(batch).backward()\n    opt.step()\n"
        "for x in other:\n    x = one(x)\n    model(x).backward()\n    opt.step()\n"
    )
    got = {name: copy_takes_non_blocking(ctx, _calls(ctx, name)[0]) for name in ("v.to", "v.cuda", "t.to")}
    assert got == {"v.to": True, "v.cuda": None, "t.to": True}


def test_a_call_through_a_name_bound_to_a_module_function_calls_it():
    ctx = _ctx(
        "import functools\nimport torch\n"
        "def train_step(model, opt, loader):\n    for batch in loader:\n        pass\n"
        "def make_step(model):\n    def step(loader):\n        pass\n    return step\n"
        "class T:\n    def __init__(self):\n        self.fit_fn = torch.compile(self.fit)\n"
        "        self.other = self.fit\n        self.other = print\n"
        "    def fit(self, loader):\n        pass\n"
        "    def run(self):\n        self.fit_fn(DataLoader(e))\n        self.other(DataLoader(f))\n"
        "def main(model, opt):\n"
        "    plain = train_step\n    plain(model, opt, DataLoader(a))\n"
        "    part = functools.partial(train_step, model, opt=opt)\n    part(DataLoader(b))\n"
        "    closure = make_step(model)\n    closure(DataLoader(c))\n"
        "    method = T().fit\n    method(DataLoader(d))\n"  # not `self.`: not followed
        "    either = train_step if model else print\n    either(DataLoader(g))\n"
    )
    loaders = _calls(ctx, "DataLoader")
    calls = [ctx.index.parent.get(ctx.index.parent.get(loader)) for loader in loaders]
    assert [ctx.loops.local_callee_name(c) for c in calls] == ["fit", None, "train_step", "train_step", "step",
                                                             None, None]
    # The partial binds model and opt: the loader it is called with is train_step's `loader`;
    # the compiled method takes `self` itself.
    assert [[p for p, _ in ctx.loops.bind_params(ctx.loops.local_callee_name(c), c)] for c in calls[:5]
            if ctx.loops.local_callee_name(c)] == [["loader"], ["model", "opt", "loader"], ["loader"], ["loader"]]
    # The loop of the function a partial calls goes over the loader the partial is called with.
    ctx = _ctx("import functools\ndef train(model, loader):\n    for batch in loader:\n        pass\n"
               "def main(model):\n    run = functools.partial(train, model)\n    run(DataLoader(ds))\n")
    assert ctx.loops.loops_over(_calls(ctx, "DataLoader")[0]) == ctx.index.nodes(cst.For)


def test_a_collate_fn_returning_local_tensors_gives_the_safe_copy_fix():
    # `ids = torch.stack(b)` then `{"input_ids": ids, "mask": (ids != 0).long()}`: tensors through
    # the local name and through a comparison (it once left TL108's fix unsafe-only).
    from trainlint.api import lint_source
    from trainlint.config import Settings
    from trainlint.diagnostics import Applicability

    code = ("import torch\nfrom torch.utils.data import DataLoader\n"
            "def collate(b):\n    ids = torch.stack(b)\n    return {'input_ids': ids, 'mask': (ids != 0).long()}\n"
            "loader = DataLoader(ds, pin_memory=True, collate_fn=collate)\n"
            "for batch in loader:\n    ids = batch['input_ids'].cuda()\n    mask = batch['mask'].cuda()\n"
            "    loss = model(ids, mask)\n    loss.backward()\n    opt.step()\n")
    found = lint_source(code, path="t.py", settings=Settings(select=("TL108",)))
    assert [d.fix.applicability for d in found] == [Applicability.SAFE, Applicability.SAFE]


def test_a_factory_method_of_an_object_handed_in_as_a_parameter_is_followed():
    # `m.make()` on a parameter: the class questions (which class m holds: every call of train
    # hands a Maker) are answered while the aliases are found. They read no alias; once they did,
    # and this file was an internal error (AttributeError: no `_aliases` yet).
    ctx = _ctx(
        "class Maker:\n    def make(self):\n        def step(b):\n            return b\n        return step\n"
        "def train(m, loader):\n    step_fn = m.make()\n    for b in loader:\n        step_fn(b).backward()\n"
        "train(Maker(), DataLoader(ds))\n"
    )
    call = next(c for c in ctx.index.nodes(cst.Call) if ctx.dotted(c.func) == "step_fn")
    assert ctx.loops.local_callee_name(call) == "step"
    assert [fn.name.value for fn in ctx.loops.callees(call)] == ["step"]


def test_a_modules_forward_is_no_factory():
    # `fn = model(x)` binds what forward returns; aliases are found without following module
    # calls, so a nested def forward returns is not taken as what `fn(...)` runs.
    ctx = _ctx(
        "import torch\nclass Net(torch.nn.Module):\n"
        "    def forward(self, x):\n        def inner(y):\n            return y\n        return inner\n"
        "model = Net()\nfn = model(x)\nfn(1)\n"
    )
    model_call, fn_call = [c for c in ctx.index.nodes(cst.Call) if ctx.dotted(c.func) in ("model", "fn")]
    assert ctx.loops.local_callee_name(model_call) == "forward"
    assert ctx.loops.local_callee_name(fn_call) is None


_SELF_RECURSIVE = (
    "class Visitor:\n    def visit(self, node):\n        pass\n"
    "def walk(node, visitor):\n    visitor.visit(node)\n    for child in node.children:\n        walk(child, visitor)\n"
    "walk(root, Visitor())\n"
)
_MUTUAL = (
    "class Ckpt:\n    def save(self):\n        pass\n"
    "def a(ckpt, n):\n    ckpt.save()\n    b(ckpt, n)\n"
    "def b(ckpt, n):\n    ckpt.save()\n    a(ckpt, n - 1)\n"
    "a(Ckpt(), 3)\n"
)


@pytest.mark.parametrize("code, receivers", [(_SELF_RECURSIVE, ["visitor"]), (_MUTUAL, ["ckpt", "ckpt"])])
@pytest.mark.parametrize("reverse", [False, True])
def test_a_parameter_handed_back_to_its_own_function_terminates_unknown(code, receivers, reverse):
    # The call that hands the parameter on is asked while the parameter's class is being worked
    # out (Loops._resolving_parameters): it hands nothing known, so the calls disagree and the
    # class stays unknown, whichever function is asked first.
    ctx = _ctx(code)
    calls = [c for c in ctx.index.nodes(cst.Call) if isinstance(c.func, cst.Attribute)
             and ctx.dotted(c.func.value) in receivers]
    assert len(calls) == len(receivers)
    for call in reversed(calls) if reverse else calls:
        assert ctx.loops.instance_methods(call) == ()
        assert ctx.loops.local_callee_name(call) is None


def test_a_parameter_handed_on_once_is_known():
    ctx = _ctx(
        "class Ckpt:\n    def save(self):\n        pass\n"
        "def inner(ckpt):\n    ckpt.save()\n"
        "def outer(ckpt):\n    inner(ckpt)\n"
        "outer(Ckpt())\n"
    )
    call = next(c for c in ctx.index.nodes(cst.Call) if ctx.dotted(c.func) == "ckpt.save")
    assert [m.name.value for m in ctx.loops.instance_methods(call)] == ["save"]
    assert ctx.loops.local_callee_name(call) == "save"


def test_a_factory_returning_its_own_call_terminates():
    ctx = _ctx("def make():\n    return make()\nstep = make()\nstep(1)\n")
    call = next(c for c in ctx.index.nodes(cst.Call) if ctx.dotted(c.func) == "step")
    assert ctx.loops.local_callee_name(call) is None


def test_instance_methods_of_an_object_of_one_of_several_classes():
    ctx = _ctx(
        "class LossLogger:\n    def on_step(self, loss):\n        pass\n"
        "class Saver:\n    def on_step(self, loss):\n        pass\n"
        "class Base:\n    def on_step(self, loss):\n        pass\n"
        "class Child(Base):\n    pass\n"
        "class Trainer:\n    def __init__(self):\n        self.callbacks = [Saver(), LossLogger(), Child()]\n"
        "    def fit(self):\n        for cb in self.callbacks:\n            cb.on_step(1)\n"
    )
    call = next(c for c in ctx.index.nodes(cst.Call) if ctx.dotted(c.func) == "cb.on_step")
    # Each class's method (an inherited one from its base), in the order of the class names.
    assert [ctx.index.enclosing_class(m).name.value for m in ctx.loops.instance_methods(call)] == \
        ["Base", "LossLogger", "Saver"]


def test_a_loaders_dataset_name_is_read_in_its_own_scope():
    # `dataset` in train() and `dataset` in evaluate() are two variables: each loader's builds are
    # its own function's (they were every assignment of the name in the module). A name the
    # function does not bind is the module's; an attribute is set in any method.
    from trainlint.analysis.batches import dataset_builds, dataset_class

    ctx = _ctx(
        "from torch.utils.data import DataLoader\n"
        "class Images: pass\nclass Tokens: pass\nclass Shared: pass\n"
        "shared = Shared()\n"
        "def train(root):\n    dataset = Images(root)\n    a = DataLoader(dataset, shuffle=True)\n"
        "def evaluate(path):\n    dataset = Tokens(path)\n    b = DataLoader(dataset)\n"
        "def probe():\n    c = DataLoader(shared)\n"
        "def unpacked(paths):\n    dataset, extra = Images(paths), Tokens(paths)\n    d = DataLoader(dataset)\n"
        "class Trainer:\n    def setup(self):\n        self.dataset = Images('x')\n"
        "    def fit(self):\n        e = DataLoader(self.dataset)\n"
    )
    loaders = _calls(ctx, "DataLoader")
    assert [[ctx.code(b) for b in dataset_builds(ctx, call)] for call in loaders] == [
        ["Images(root)"], ["Tokens(path)"], ["Shared()"], ["Images(paths)"], ["Images('x')"]]
    assert [dataset_class(ctx, call).name.value for call in loaders] == ["Images", "Tokens", "Shared", "Images", "Images"]


def test_tensors_in_host_memory_after_a_copy_from_the_device():
    # A tensor made on the host stays there whatever is copied into it (`.copy_()` never moves a
    # tensor): so does a view of it, and an attribute every assignment of which makes one. on_host
    # (its value readable without a wait) does not hold after such a copy. A device factory's, a
    # parameter's, or a name assigned nowhere here is not known.
    code = (
        "import torch\nclass T:\n    def __init__(self):\n        self.host = torch.zeros(1).pin_memory()\n"
        "def run(loader, param):\n    buf = torch.empty(4, device='cpu')\n    dev = torch.zeros(4, device='cuda')\n"
        "    for x in loader:\n        out = model(x.cuda())\n        buf.copy_(out)\n"
        "        use(buf, buf[:2], buf.view(-1), dev, param, unknown, T().host)\n"
    )
    ctx = _ctx(code)
    args = [a.value for a in _calls(ctx, "use")[0].args]
    assert [ctx.tensors.in_host_memory(a) for a in args[:6]] == [True, True, True, False, False, False]
    assert not ctx.tensors.on_host(args[0])
    host_attr = next(n for n in ctx.index.nodes(cst.Attribute) if ctx.dotted(n) == "self.host")
    assert ctx.tensors.in_host_memory(host_attr)
