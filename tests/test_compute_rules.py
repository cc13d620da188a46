"""TL601/TL602 against real torch: the fixed code computes what the original computed.

Each source below is hand-written attention in a shape seen in real code. The test lints it,
applies TL601's fix, executes the original and the fixed code on the same random tensors (CPU)
and compares the outputs to 1e-5.
"""


import pytest

torch = pytest.importorskip("torch")

from trainlint.config import Settings  # noqa: E402
from trainlint.engine import lint_text  # noqa: E402
from trainlint.fixer import fix_text  # noqa: E402

HEAD = "import math\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"


def _fix(code: str, select=("TL601",)) -> tuple[str, list]:
    settings = Settings(select=select)
    rules = settings.active_rules()
    found = lint_text(code, "attn.py", rules, settings)
    return fix_text(code, "attn.py", rules, settings, unsafe_fixes=True).text, found


def _run(code: str, call: str, env: dict):
    namespace: dict = {}
    exec(compile(code, "attn.py", "exec"), namespace)
    namespace.update(env)
    return eval(call, namespace)


def _inputs(L=5, S=7, E=8):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, L, E, generator=g)
    k = torch.randn(2, 3, S, E, generator=g)
    v = torch.randn(2, 3, S, E, generator=g)
    keep = torch.rand(2, 1, L, S, generator=g) > 0.3
    keep[..., 0] = True  # every query attends to at least one key
    return q, k, v, keep


FUNCTIONS = {
    "no-mask": (
        "def attend(q, k, v, mask):\n"
        "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
        "    att = F.softmax(scores, dim=-1)\n"
        "    return att @ v\n",
        "mask",
    ),
    "bool-mask-eq0": (
        "def attend(q, k, v, mask):\n"
        "    d_k = q.size(-1)\n"
        "    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)\n"
        "    scores = scores.masked_fill(mask == 0, -1e9)\n"
        "    p_attn = scores.softmax(dim=-1)\n"
        "    return torch.matmul(p_attn, v)\n",
        "int-mask",
    ),
    "bool-mask-invert": (
        "def attend(q, k, v, mask):\n"
        "    att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(k.size(-1)))\n"
        "    att.masked_fill_(~mask, float('-inf'))\n"
        "    return F.softmax(att, dim=-1) @ v\n",
        "bool-mask",
    ),
    "bool-mask-raw": (
        "def attend(q, k, v, mask):\n"
        "    att = q @ k.mT * 0.3\n"
        "    att = att.masked_fill(mask, float('-inf'))\n"
        "    return torch.softmax(att, -1) @ v\n",
        "drop-mask",
    ),
    "additive-mask": (
        "def attend(q, k, v, mask):\n"
        "    w = q @ k.transpose(-2, -1)\n"
        "    w = w / 8 ** 0.5\n"
        "    w = w + mask\n"
        "    w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)\n"
        "    return w @ v\n",
        "additive-mask",
    ),
    "conditional-mask": (
        "def attend(q, k, v, mask):\n"
        "    scores = q @ k.transpose(2, 3) / math.sqrt(q.shape[-1])\n"
        "    if mask is not None:\n"
        "        scores = scores.masked_fill(mask == 0, float('-inf'))\n"
        "    return F.softmax(scores, dim=-1) @ v\n",
        "int-mask",
    ),
    "conditional-mask-none": (
        "def attend(q, k, v, mask):\n"
        "    scores = q @ k.transpose(2, 3) / math.sqrt(q.shape[-1])\n"
        "    if mask is not None:\n"
        "        scores = scores.masked_fill(mask == 0, float('-inf'))\n"
        "    return F.softmax(scores, dim=-1) @ v\n",
        "none",
    ),
    "no-scale-inline": (
        "def attend(q, k, v, mask):\n"
        "    return F.softmax(q @ k.transpose(-2, -1), dim=-1) @ v\n",
        "mask",
    ),
    "custom-scale-inline": (
        "def attend(q, k, v, mask):\n"
        "    out = F.dropout(F.softmax(q @ k.transpose(-2, -1) * 0.2, dim=-1), p=0.1, training=False) @ v\n"
        "    return out\n",
        "mask",
    ),
    "bmm-3d": (
        "def attend(q, k, v, mask):\n"
        "    q, k, v = q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1)\n"
        "    a = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.size(-1))\n"
        "    a = F.softmax(a, dim=-1)\n"
        "    return torch.bmm(a, v)\n",
        "mask",
    ),
}


def _mask(kind, keep, L, S):
    if kind == "int-mask":
        return keep.long()
    if kind == "bool-mask":
        return keep
    if kind == "drop-mask":
        return ~keep
    if kind == "additive-mask":
        return torch.zeros(keep.shape).masked_fill(~keep, float("-inf")) + torch.randn(keep.shape) * 0.1
    return None


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_fix_matches_original(name):
    body, mask_kind = FUNCTIONS[name]
    code = HEAD + body
    fixed, found = _fix(code)
    assert [d.code for d in found] == ["TL601"], found
    assert "scaled_dot_product_attention" in fixed and "softmax" not in fixed, fixed
    q, k, v, keep = _inputs()
    env = {"q": q, "k": k, "v": v, "mask": _mask(mask_kind, keep, 5, 7)}
    before = _run(code, "attend(q, k, v, mask)", env)
    after = _run(fixed, "attend(q, k, v, mask)", env)
    torch.testing.assert_close(after, before, atol=1e-5, rtol=1e-5)


CAUSAL_MODULE = HEAD + """
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=16, n_head=2, block_size=12, dropout=0.1):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(dropout)
        self.n_head = n_head
        self.n_embd = n_embd
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        # causal self-attention
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)
"""

TRIU_MODULE = HEAD + """
class Block(nn.Module):
    def __init__(self, d=16, heads=4, max_len=32):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.p = 0.0
        self.register_buffer("mask", torch.triu(torch.ones(max_len, max_len, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scale = (d // self.heads) ** -0.5
        dots = torch.matmul(q, k.transpose(-1, -2)) * scale
        dots = dots.masked_fill(self.mask[:n, :n], float("-inf"))
        attn = dots.softmax(dim=-1)
        attn = F.dropout(attn, p=self.p, training=self.training)
        out = torch.matmul(attn, v)
        return out.transpose(1, 2).reshape(b, n, d)
"""


@pytest.mark.parametrize("source,cls,shape", [
    (CAUSAL_MODULE, "CausalSelfAttention", (2, 10, 16)),
    (TRIU_MODULE, "Block", (3, 9, 16)),
])
def test_causal_modules(source, cls, shape):
    fixed, found = _fix(source)
    assert [d.code for d in found] == ["TL601"]
    assert "is_causal=True" in fixed and "softmax" not in fixed, fixed
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    outputs = []
    for code in (source, fixed):
        namespace: dict = {}
        exec(compile(code, "block.py", "exec"), namespace)
        torch.manual_seed(0)
        module = namespace[cls]().eval()  # eval: dropout off, so outputs are comparable
        with torch.no_grad():
            outputs.append(module(x))
    torch.testing.assert_close(outputs[1], outputs[0], atol=1e-5, rtol=1e-5)


def test_module_dropout_keeps_modules_p():
    fixed, _ = _fix(CAUSAL_MODULE)
    assert "dropout_p=self.attn_dropout.p if self.training else 0.0" in fixed
    fixed, _ = _fix(TRIU_MODULE)
    assert "dropout_p=self.p if self.training else 0.0" in fixed
    # The buffer and the comment stay; only the attention statements go.
    assert '# causal self-attention' in _fix(CAUSAL_MODULE)[0]


NOT_ATTENTION = [
    # Attention weights are returned: SDPA cannot give them back.
    "def f(q, k, v):\n    w = F.softmax(q @ k.transpose(-2, -1), dim=-1)\n    return w @ v, w\n",
    # Softmax over another dimension.
    "def f(q, k, v):\n    w = F.softmax(q @ k.transpose(-2, -1), dim=-2)\n    return w @ v\n",
    # Classifier probabilities times a matrix: no q @ k^T.
    "def f(x, W, V):\n    return F.softmax(x @ W, dim=-1) @ V\n",
    # masked_fill with 0 after softmax is not an attention mask.
    "def f(q, k, v, m):\n    s = q @ k.transpose(-2, -1)\n    s = s.masked_fill(m, 0.0)\n    return s.softmax(-1) @ v\n",
    # Scores stored for visualisation.
    "def f(self, q, k, v):\n    s = q @ k.transpose(-2, -1)\n    self.scores = s\n    return s.softmax(-1) @ v\n",
    # 4-d tensors swapped on the head axis: not the last two dimensions.
    "def f(q, k, v):\n    return (q @ k.transpose(1, 2)).softmax(-1) @ v\n",
]


@pytest.mark.parametrize("code", NOT_ATTENTION)
def test_not_attention(code):
    _, found = _fix(HEAD + code)
    assert found == []


def test_learnable_temperature_is_reported_without_fix():
    code = HEAD + ("class A(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                   "        self.t = nn.Parameter(torch.ones(()))\n"
                   "    def forward(self, q, k, v):\n        s = q @ k.transpose(-2, -1) * self.t.exp()\n"
                   "        return s.softmax(-1) @ v\n")
    fixed, found = _fix(code)
    assert [d.code for d in found] == ["TL601"] and found[0].fix is None
    assert fixed == code


@pytest.mark.parametrize("scores, key", [
    # timm's cross-covariance attention (EdgeNeXt): normalized q and k, a per-head temperature.
    ("(F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)) * self.temperature", "F.normalize(k, dim=-1)"),
    ("q @ k.transpose(-2, -1) / self.temperature", "k"),
])
def test_tensor_scale_advice_folds_into_the_query_exactly(scores, key):
    """The message's advice for a per-head temperature (no fix: `scale=` takes a float) is
    exact: SDPA of the query it shows, with `scale=1.0`, gives the module's output."""
    code = HEAD + ("class A(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                   "        self.temperature = nn.Parameter(torch.rand(3, 1, 1) + 0.5)\n"
                   f"    def forward(self, q, k, v):\n        s = {scores}\n        return s.softmax(-1) @ v\n")
    _fixed, found = _fix(code)
    assert [d.code for d in found] == ["TL601"] and found[0].fix is None
    folded = found[0].message.split("pass `", 1)[1].split("` as the query", 1)[0]
    namespace: dict = {}
    exec(compile(code, "attn.py", "exec"), namespace)
    module = namespace["A"]()
    q, k, v, _keep = _inputs(S=5)
    with torch.no_grad():
        expected = module(q, k, v)
        scope = {**namespace, "self": module, "q": q, "k": k}
        got = torch.nn.functional.scaled_dot_product_attention(eval(folded, scope), eval(key, scope), v, scale=1.0)
    assert torch.allclose(got, expected, atol=1e-5)


def test_zero_grad_fix_runs():
    code = ("import torch\nmodel = torch.nn.Linear(3, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "model(torch.ones(1, 3)).sum().backward()\nopt.step()\nopt.zero_grad(set_to_none=False)\n")
    fixed, found = _fix(code, select=("TL602",))
    assert [d.code for d in found] == ["TL602"]
    namespace: dict = {}
    exec(fixed, namespace)
    assert all(p.grad is None for p in namespace["model"].parameters())


def test_transformer_fixture_fixed_trains_the_same(tmp_path):
    """The fixed fixture (SDPA) prints the losses the hand-written version prints (dropout is 0)."""
    import os
    import re
    import subprocess
    import sys

    from _paths import ROOT

    script = os.path.join(ROOT, "fixtures", "compute", "transformer_block.py")
    fixed = tmp_path / "transformer_block_fixed.py"
    with open(script[:-3] + ".fixed", encoding="utf-8") as fh:
        fixed.write_text(fh.read(), encoding="utf-8")
    assert ".softmax(" not in fixed.read_text() and fixed.read_text().count("F.scaled_dot_product_attention(") == 2
    env = dict(os.environ, OMP_NUM_THREADS="1")
    # Both scripts at once: each is mostly `import torch`, and there are two cores.
    procs = [subprocess.Popen([sys.executable, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for path in (script, str(fixed))]
    losses = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        losses.append([float(x) for x in re.findall(r"loss ([0-9.]+)", out)])
    assert len(losses[0]) == 4
    assert losses[1] == pytest.approx(losses[0], abs=1e-5)


def test_branches_that_rebind_the_weights_are_each_attention():
    # open_clip's shape: two hand-written variants in one method; the second rebinds `attn`.
    code = HEAD + (
        "class A(nn.Module):\n"
        "    def __init__(self, p=0.0):\n        super().__init__()\n        self.attn_drop = nn.Dropout(p)\n"
        "        self.logit_scale = nn.Parameter(torch.zeros(()))\n        self.scale = 0.3\n"
        "    def forward(self, q, k, v, attn_mask=None, cosine=False):\n"
        "        if cosine:\n"
        "            attn = torch.bmm(F.normalize(q, dim=-1), F.normalize(k, dim=-1).transpose(-1, -2))\n"
        "            logit_scale = torch.clamp(self.logit_scale, max=4.6).exp()\n"
        "            attn = attn * logit_scale\n"
        "            attn = attn.softmax(dim=-1)\n"
        "            x = torch.bmm(attn, v)\n"
        "        else:\n"
        "            q = q * self.scale\n"
        "            attn = torch.bmm(q, k.transpose(-1, -2))\n"
        "            if attn_mask is not None:\n"
        "                attn += attn_mask\n"
        "            attn = attn.softmax(dim=-1)\n"
        "            attn = self.attn_drop(attn)\n"
        "            x = torch.bmm(attn, v)\n"
        "        return x\n")
    fixed, found = _fix(code)
    assert [d.code for d in found] == ["TL601", "TL601"]
    assert found[0].fix is None  # tensor temperature: no float scale for SDPA
    assert fixed.count("scaled_dot_product_attention(") == 1
    assert "attn_mask=attn_mask,\n" in fixed  # not `attn_mask if attn_mask is not None else None`
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(6, 5, 8, generator=g) for _ in range(3))
    mask = torch.randn(6, 5, 5, generator=g)
    outs = []
    for src in (code, fixed):
        namespace: dict = {}
        exec(src, namespace)
        module = namespace["A"]().eval()
        outs.append((module(q, k, v, mask), module(q, k, v), module(q, k, v, cosine=True)))
    for a, b in zip(*outs):
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-5)


def test_upcast_softmax_with_additive_bias():
    # torchtune's T5 shape: no scale, `+=` bias, softmax of `.float()` cast back.
    body = ("def attend(q, k, v, mask):\n"
            "    attn_score = torch.matmul(q, k.transpose(-2, -1))\n"
            "    attn_score += mask\n"
            "    attn_weight = F.softmax(attn_score.float(), dim=-1).to(attn_score.dtype)\n"
            "    attn_out = torch.matmul(attn_weight, v)\n"
            "    return attn_out\n")
    fixed, found = _fix(HEAD + body)
    assert [d.code for d in found] == ["TL601"] and "scale=1.0" in fixed and "attn_mask=mask" in fixed
    q, k, v, keep = _inputs()
    env = {"q": q, "k": k, "v": v, "mask": torch.randn(keep.shape)}
    torch.testing.assert_close(_run(fixed, "attend(q, k, v, mask)", env), _run(HEAD + body, "attend(q, k, v, mask)", env),
                               atol=1e-5, rtol=1e-5)
