"""TL601 manual-attention: Hand-written `softmax(q @ k^T * scale) @ v` attention instead of
scaled_dot_product_attention."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from trainlint.analysis.context import FileContext
from trainlint.analysis.imports import remove_unused_imports
from trainlint.analysis.names import bound_names
from trainlint.analysis.tree import parameter
from trainlint.analysis.variables import is_variable, may_reach, role, variable_uses
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Rule, Valid, target_allows


_SOFTMAX = ("torch.softmax",)  # names.CANONICAL maps F.softmax and Tensor.softmax here
_DROPOUT_FN = ("torch.nn.functional.dropout",)
_DROPOUT_MODULE = ("torch.nn.Dropout",)
_SOFTMAX_MODULE = ("torch.nn.Softmax",)
_MATMUL_FN = ("torch.matmul", "torch.bmm")
_TRIL = "torch.tril"
_TRIU = "torch.triu"
# k.transpose(a, b) spellings that swap the last two dimensions (2, 3 assumes 4-d multi-head tensors,
# the layout of nearly all attention code; 1, 2 is accepted only under torch.bmm, which is 3-d).
_LAST_TWO = ({-2, -1}, {2, 3})
_INVERT = {
    cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal, cst.LessThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.LessThan, cst.GreaterThan: cst.LessThanEqual, cst.LessThanEqual: cst.GreaterThan,
}


# Hooks on a module's forward, which fire only where the module is called.
_HOOKS = frozenset({"register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
                    "register_full_backward_pre_hook", "register_backward_hook"})
_GLOBAL_HOOKS = frozenset({"torch.nn.modules.module.register_module_forward_hook",
                           "torch.nn.modules.module.register_module_forward_pre_hook",
                           "torch.nn.modules.module.register_module_full_backward_hook"})


# What a tensor tells of itself other than its values: an assertion of these checks no result.
_METADATA = frozenset({"shape", "size", "dtype", "device", "ndim", "dim", "numel", "is_contiguous"})


class _NoMatch(Exception):
    """Not manual attention (or not a shape this rule understands): stay quiet."""


# SDPA's scale= is a Python float.
_TENSOR_SCALE = "the scale is a tensor (a learned temperature), and `scale=` takes a Python float"


class _NoFix(Exception):
    """Manual attention, but no exact rewrite: report without a fix, saying why (the message
    reads "not fixed: <why>")."""

    def __init__(self, why: str = "the rewrite would not compute exactly the same") -> None:
        super().__init__(why)
        self.why = why


@dataclass
class _Op:
    kind: str  # "scale-mul", "scale-div", "fill", "add"
    expr: cst.BaseExpression | None = None  # the scale, the fill condition or the additive mask
    fill: cst.BaseExpression | None = None
    condition: cst.BaseExpression | None = None  # applied only `if condition:`


@dataclass
class _Attention:
    q: cst.BaseExpression | None = None
    k: cst.BaseExpression | None = None
    v: cst.BaseExpression | None = None
    ops: list[_Op] = field(default_factory=list)
    dropout_p: str | None = None  # the dropout probability's code
    dropout_when: list[cst.BaseExpression] = field(default_factory=list)  # conditions for it (else 0.0)
    consumed: list[cst.CSTNode] = field(default_factory=list)  # statements the fix deletes
    names: set[str] = field(default_factory=set)  # intermediate variables (scores, weights)
    bmm: bool = False
    unfixable: bool = False
    finite_fill: str | None = None  # a masked_fill value that is not -inf, made an attn_mask by the fix
    modules: list[str] = field(default_factory=list)  # module attributes called on the way (`self.attn_drop`)


def _int_literal(expr) -> int | None:
    """An integer written in the source (`-1`, `0x2`), not a float that equals one."""
    value = FileContext.number(expr)
    return value if isinstance(value, int) else None


def _atom(code: str, expr: cst.BaseExpression) -> str:
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float)) or expr.lpar:
        return code
    return f"({code})"


@dataclass
class _Rewrite:
    """One block's fix as made: the nodes it removes or replaces and the call it writes (to ask
    which imports it leaves unused), and its replacements apart from its import removals."""

    fix: object
    removed: list
    call: str
    own: list
    unused: list  # the imports this fix alone leaves unused


class ManualAttention(Rule):
    code = "TL601"
    name = "manual-attention"
    summary = "Hand-written `softmax(q @ k^T * scale) @ v` attention instead of scaled_dot_product_attention"
    source = "§2.1, §6.1"
    requires_torch = "2.0"  # scaled_dot_product_attention
    fix_applicability = "unsafe"
    triggers = ("softmax",)
    docs = """
## What it does
Flags attention written by hand, in one expression or across statements: `q @ k.transpose(-2, -1)`
(or `torch.matmul`, `k.mT`), an optional scale (`/ math.sqrt(d)`, `* self.scale`), an optional
mask (`masked_fill(mask == 0, float("-inf"))`, `masked_fill_`, an additive `+ mask`, possibly under
`if mask is not None:`, whose other statements may prepare the mask: `mask = mask.unsqueeze(1)`
stays), `softmax(dim=-1)` (or an `nn.Softmax(dim=-1)` module), optional dropout (also one applied
only `if self.dropout is not None:`), then `@ v`. Code that uses the attention weights for anything
else (returns or stores them) is not flagged, nor is a test's reference: attention written by hand
in a function named `test...` whose result (directly or through the names it is assigned to) an
assertion checks by value (`torch.testing.assert_close(pool(x), expected)`, `assert
torch.allclose(...)`; not a check of its shape), which SDPA would turn into a comparison of SDPA
with itself. So is one written in a helper that returns it (`def reference(q, k, v)`, nested in
the test or at the module's top level, a helper calling it too) when every call of the helper is
such a check in a test; a helper a model also calls is flagged. Nor is the hand-written path of a
function that also calls `scaled_dot_product_attention` (timm's `if self.fused_attn:` blocks), under
whatever name it is imported (`scaled_dot_product_attention as sdpa`): it is the deliberate fallback.

Scores scaled in place (`attn /= math.sqrt(d)`), a key transposed in a statement of its
own (`kT = k.transpose(-2, -1)`) and both products written with `torch.einsum`
(`"bhid,bhjd->bhij"`, then `"bhij,bhjd->bhid"`, any letters) match too. Where a local name hides the module's alias (`B, F, N,
C = x.shape`), the fix spells the module out. A finding without a fix says why: among the reasons,
a forward hook registered on the dropout or softmax module the attention calls (attention maps
read from `attn_drop`'s output), which would stop firing once SDPA replaces the call.

## Why is this bad?
The hand-written form materialises the full (L x S) score matrix in memory, several times
(scores, masked scores, probabilities, dropout), and launches one kernel per step.
`torch.nn.functional.scaled_dot_product_attention` dispatches to fused FlashAttention or
memory-efficient kernels that never store the matrix: less memory traffic, higher effective
compute ratio (§2.1), and room for longer sequences or larger batches.

## Example
```python
att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
att = F.softmax(att, dim=-1)
att = self.attn_dropout(att)
y = att @ v
```

## Use instead
```python
y = F.scaled_dot_product_attention(
    q, k, v, dropout_p=self.attn_dropout.p if self.training else 0.0, is_causal=True
)
```

## Fix safety
Unsafe: results agree to float rounding, not bit for bit, and dropout draws different random
masks. The fix maps each piece exactly: a `masked_fill(cond, -inf)` mask becomes a boolean
`attn_mask` that is True where attention is allowed (the inverse of `cond`; `mask.logical_not()`
becomes `mask.bool()`, as `mask` may be a float 0/1 mask, which SDPA would add); an additive mask
stays additive; a scale other than `1/sqrt(q.size(-1))` is passed as `scale=` (no scale at all
becomes `scale=1.0`); dropout becomes `dropout_p=... if self.training else 0.0` (its `p` read as
`getattr(self.attn_drop, "p", 0.0)` where the module may be an `nn.Identity()`, which has none). A mask sliced
from a lower-triangular buffer, `[..., :T, :T]`, becomes `is_causal=True`, which assumes queries and
keys have the same length (true for the self-attention this shape comes from).

Rows that are fully masked (every key masked out, as for a query at a left-padding position when
the padding mask is combined with a causal one) change beyond rounding: SDPA gives zeros there,
where the original gives NaN with a `-inf` fill and, with a finite fill (`-1e9`, `-1e4`,
`torch.finfo(dtype).min`), the plain average of all values, padding included. With a finite fill
this reaches the loss wherever those positions are scored (a left-padded toy language model whose
padding query predicts the first real token: loss 2.37183 became 2.37636), and the message says
so. Every other row agrees to rounding whatever the fill: a masked score of `-1e4` or less
weighs exactly 0 in the softmax, as `-inf` does, while the row's real scores stay far above it
(measured identical in float32, float16 and bfloat16). With
`target-torch` 2.0, a fix that needs `scale=` (PyTorch 2.1) is not offered; before 2.0 the rule is
off. An `import math` (a plain top-level import) that only the replaced code used, for its
`math.sqrt(d)` scale, is removed with it; where several blocks of the file use it, and only their
fixes together leave it unused, their findings share one fix that rewrites them all and removes it
(not in a file with suppression comments, where the import stays). A scale that is a tensor (a
learned temperature, `self.logit_scale.exp()`) has no fix, as `scale=` takes a Python float; the
message shows the query folded with it (`q * self.temperature`, with `scale=1.0`: timm's XCiT does
so), exact where the tensor holds one value or one per head, which it cannot tell from the code.
"""
    _HEAD = "import math\nimport torch\nimport torch.nn.functional as F\n\ndef attend(q, k, v, mask):\n"
    # The fixed code of a scale written with `math.sqrt`: the import only it used goes too.
    _NO_MATH = _HEAD.replace("import math\n", "")
    # A test checking a module against attention written by hand ({check} reads `expected`).
    _REFERENCE = ("import torch\n\ndef {name}(pool, x, q, k, v):\n"
                  "    attn = ((q * pool.scale) @ k.transpose(-2, -1)).softmax(dim=-1)\n"
                  "    expected = (attn @ v).transpose(1, 2)\n    expected = pool.proj(expected)[:, 0]\n"
                  "    {check}\n")
    valid = [
        # A test's reference for a module that uses SDPA: the fix would compare SDPA with itself
        # (timm's attention-pool tests were reported).
        Valid(_REFERENCE.format(name="test_pool_matches", check="torch.testing.assert_close(pool(x), expected)")),
        Valid(_REFERENCE.format(name="test_pool_matches", check="assert torch.allclose(pool(x), expected, atol=1e-5)")),
        # ... computed by a helper nested in the test, or one at the module's top level that only
        # tests' assertions call.
        Valid("import torch\n\ndef test_pool_matches(pool, x, q, k, v):\n    def reference(q, k, v):\n"
              "        attn = (q @ k.transpose(-2, -1) * pool.scale).softmax(dim=-1)\n        return attn @ v\n"
              "    torch.testing.assert_close(pool(x), reference(q, k, v))\n"),
        Valid("import torch\n\ndef _reference(q, k, v):\n    attn = (q @ k.transpose(-2, -1) * 0.125).softmax(dim=-1)\n"
              "    out = attn @ v\n    return out.transpose(1, 2)\n\ndef test_pool(pool, x, q, k, v):\n"
              "    expected = _reference(q, k, v)\n    assert torch.allclose(pool(x), expected)\n\n"
              "def test_pool_half(pool, x, q, k, v):\n    torch.testing.assert_close(pool(x.half()), _reference(q, k, v).half())\n"),
        Valid(_HEAD + "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n"),
        Valid(_HEAD + "    return torch.softmax(q @ k.transpose(-1, -2) * 0.125, -1) @ v\n",
              settings={"target_torch": "1.13"}),  # no scaled_dot_product_attention before PyTorch 2.0
        Valid(_HEAD + "    att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)\n"
                      "    return att @ v, att\n"),
        Valid(_HEAD + "    probs = F.softmax(logits, dim=-1)\n    return probs @ v\n"),
        Valid(_HEAD + "    att = F.softmax(q @ k.transpose(-2, -1), dim=1)\n    return att @ v\n"),
        Valid(_HEAD + "    att = F.softmax(q @ k, dim=-1)\n    return att @ v\n"),
        Valid(_HEAD + "    att = F.softmax(q @ k.transpose(-2, -1), dim=-1)\n    self.last_att = att\n"
                      "    return att @ v\n"),
        Valid(_HEAD + "    if fused:\n        return F.scaled_dot_product_attention(q, k, v)\n"
                      "    att = (q @ k.transpose(-2, -1) * 0.125).softmax(dim=-1)\n    return att @ v\n"),
        # ... also imported under another name: the hand-written path is the fallback.
        Valid("import torch\nfrom torch.nn.functional import scaled_dot_product_attention as sdpa\n\n"
              "def attend(q, k, v, fused):\n    if fused:\n        return sdpa(q, k, v)\n"
              "    att = (q @ k.transpose(-2, -1) * 0.125).softmax(dim=-1)\n    return att @ v\n"),
        # einsum products of other shapes: k not contracted on its last axis, or the output transposed.
        Valid(_HEAD + "    w = torch.einsum('bhid,bhdj->bhij', q, k).softmax(dim=-1)\n"
                      "    return torch.einsum('bhij,bhjd->bhid', w, v)\n"),
        Valid(_HEAD + "    w = torch.einsum('bhid,bhjd->bhij', q, k).softmax(dim=-1)\n"
                      "    return torch.einsum('bhij,bhjd->bhdi', w, v)\n"),
        # The scores kept between the softmax and `@ v` (a z-loss reads them): the fix deleted their
        # line and left the read (NameError).
        Valid(_HEAD + "    s = q @ k.transpose(-2, -1) * 0.125\n    w = s.softmax(dim=-1)\n    self.logits = s\n"
                      "    return w @ v\n"),
        # The weights are returned unless a flag drops them (transformers' DAB-DETR, Nystromformer):
        # the conditional rebinding does not make them dead, so SDPA cannot replace them.
        Valid(_HEAD + "    w = F.softmax(q @ k.transpose(-2, -1), dim=-1)\n    out = w @ v\n"
                      "    if not output_attentions:\n        w = None\n    return out, w\n"),
    ]
    invalid = [
        # ... but a model checking its own output, or a test that checks only the shape, is no
        # reference.
        Invalid(_REFERENCE.format(name="forward", check="assert torch.isfinite(expected).all()")),
        Invalid(_REFERENCE.format(name="test_pool_shape", check="assert expected.shape == (2, 64)")),
        # A helper a model also calls, or whose result a test only measures: no reference.
        Invalid("import torch\n\ndef attend(q, k, v):\n    attn = (q @ k.transpose(-2, -1) * 0.125).softmax(dim=-1)\n"
                "    return attn @ v\n\ndef test_attend(q, k, v, expected):\n"
                "    torch.testing.assert_close(attend(q, k, v), expected)\n\nclass Block(torch.nn.Module):\n"
                "    def forward(self, q, k, v):\n        return attend(q, k, v)\n"),
        Invalid("import torch\n\ndef test_speed(q, k, v):\n    def reference(q, k, v):\n"
                "        attn = (q @ k.transpose(-2, -1) * 0.125).softmax(dim=-1)\n        return attn @ v\n"
                "    out = reference(q, k, v)\n    assert out.shape == q.shape\n"),
        # The weights rebound in the other branch, or before a later read: dead after the attention.
        Invalid(_HEAD + "    if cross:\n        a = F.softmax(q @ k.transpose(-2, -1), dim=-1)\n        y = a @ v\n"
                        "    else:\n        a = F.softmax(q @ mask.transpose(-2, -1), dim=-1)\n        y = a @ v\n"
                        "    a = None\n    return y, a\n",
                fixed=_HEAD + "    if cross:\n        y = F.scaled_dot_product_attention(q, k, v, scale=1.0)\n"
                              "    else:\n        y = F.scaled_dot_product_attention(q, mask, v, scale=1.0)\n"
                              "    a = None\n    return y, a\n"),
        # A dropout module the fix cannot resolve (fairseq's FairseqDropout): still attention,
        # reported without a fix (this shape once escaped as an internal error).
        Invalid(_HEAD + "    att = F.softmax(q @ k.transpose(-2, -1), dim=-1)\n    att = self.dropout_module(att)\n"
                        "    return att @ v\n", fixed=NO_FIX),
        Invalid(
            _HEAD + "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
                    "    scores = scores.masked_fill(mask == 0, float('-inf'))\n"
                    "    att = F.softmax(scores, dim=-1)\n    return att @ v\n",
            fixed=_NO_MATH + "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask != 0)\n",
        ),
        # A local `F` (frames, in a video model) hides the module's alias: the fix spells the module
        # out (`F.scaled_dot_product_attention` once called a method of an int).
        Invalid(_HEAD + "    B, F, N, C = q.shape\n    s = (q @ k.transpose(-2, -1)) * C ** -0.5\n"
                        "    return s.softmax(dim=-1) @ v\n",
                fixed=_HEAD + "    B, F, N, C = q.shape\n"
                              "    return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=C ** -0.5)\n"),
        # A KV cache's key made by torch.cat: its size is a number (the scale was taken for a
        # tensor, "a learned temperature", and the fix dropped).
        Invalid(_HEAD + "    k = torch.cat([past_k, k], dim=2)\n    s = (q @ k.transpose(-2, -1)) * k.size(-1) ** -0.5\n"
                        "    return s.softmax(dim=-1) @ v\n",
                fixed=_HEAD + "    k = torch.cat([past_k, k], dim=2)\n    return F.scaled_dot_product_attention(q, k, v)\n"),
        # No fix, and the message says why.
        # A tensor scale folds into the query (as timm's XCiT does), which the message shows.
        Invalid(_HEAD + "    s = (q @ k.transpose(-2, -1)) * self.logit_scale.exp()\n    return s.softmax(-1) @ v\n",
                fixed=NO_FIX, message="; not fixed: the scale is a tensor (a learned temperature), and `scale=` takes a "
                                      "Python float; where it holds one value, or one per head, pass "
                                      "`q * self.logit_scale.exp()` as the query with `scale=1.0`"),
        # k transposed in a statement of its own.
        Invalid(_HEAD + "    kt = k.transpose(-2, -1)\n    s = (q @ kt) * 0.125\n    return s.softmax(dim=-1) @ v\n",
                fixed=_HEAD + "    return F.scaled_dot_product_attention(q, k, v, scale=0.125)\n"),
        # v computed after the softmax (Karpathy's `Head`): read where it stands, in the last line.
        Invalid(_HEAD + "    s = q @ k.transpose(-2, -1) * 0.125\n    p = F.softmax(s, dim=-1)\n    v = proj(x)\n"
                        "    return p @ v\n",
                fixed=_HEAD + "    v = proj(x)\n    return F.scaled_dot_product_attention(q, k, v, scale=0.125)\n"),
        # In-place scaling of the scores (`attn /= math.sqrt(d)`, `attn *= scale`).
        Invalid(_HEAD + "    s = q @ k.transpose(-2, -1)\n    s /= math.sqrt(q.size(-1))\n    return s.softmax(dim=-1) @ v\n",
                fixed=_NO_MATH + "    return F.scaled_dot_product_attention(q, k, v)\n"),
        Invalid(_HEAD + "    s = q @ k.transpose(-2, -1)\n    s *= 0.125\n    return s.softmax(dim=-1) @ v\n",
                fixed=_HEAD + "    return F.scaled_dot_product_attention(q, k, v, scale=0.125)\n"),
        # Dimensions written in hex (this once escaped as an internal error: int('0x1')).
        Invalid(_HEAD + "    s = (q @ k.transpose(0x2, 3)) * 0.1\n    p = F.softmax(s, dim=-0x1)\n    return p @ v\n",
                fixed=_HEAD + "    return F.scaled_dot_product_attention(q, k, v, scale=0.1)\n"),
        Invalid(
            _HEAD + "    return torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * 0.125, -1) @ v\n",
            fixed=_HEAD + "    return F.scaled_dot_product_attention(q, k, v, scale=0.125)\n",
        ),
        # target-torch 2.0: SDPA exists but takes no scale= (2.1): the finding, without a fix.
        Invalid(_HEAD + "    return torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * 0.125, -1) @ v\n",
                fixed=NO_FIX, settings={"target_torch": "2.0"}),
        # Its default scale needs no scale=: fixed for 2.0 too.
        Invalid(
            _HEAD + "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
                    "    att = F.softmax(scores, dim=-1)\n    return att @ v\n",
            fixed=_NO_MATH + "    return F.scaled_dot_product_attention(q, k, v)\n", settings={"target_torch": "2.0"},
        ),
        Invalid(
            _HEAD + "    w = q @ k.mT\n    w += mask\n    return w.softmax(dim=-1) @ v\n",
            fixed=_HEAD + "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0)\n",
        ),
        Invalid(
            _HEAD + "    d = q.shape[-1]\n    s = q @ k.transpose(2, 3) / d ** 0.5\n    # padding\n    if mask is not None:\n"
                    "        s = s.masked_fill(~mask, -1e9)\n"
                    "    p = F.dropout(F.softmax(s, dim=-1), p=0.1, training=self.training)\n    out = p @ v\n"
                    "    return out\n",
            fixed=_HEAD + "    d = q.shape[-1]\n"
                          "    # padding\n"
                          "    out = F.scaled_dot_product_attention(\n        q,\n        k,\n        v,\n"
                          "        attn_mask=mask,\n"
                          "        dropout_p=0.1 if self.training else 0.0,\n        scale=1 / d ** 0.5,\n    )\n"
                          "    return out\n",
            # A finite fill: a row with every key masked (left padding) averages all values, SDPA gives zeros.
            message="with a finite fill (`-1e9`) the original averages all values",
        ),
        # logical_not of a keep-mask of any dtype (a float 0/1 mask): the fix passes it as a boolean
        # mask (passed as it was, a float mask was added to the scores).
        Invalid(_HEAD + "    s = q @ k.transpose(-2, -1) * 0.125\n    s = s.masked_fill(mask.logical_not(), float('-inf'))\n"
                        "    return s.softmax(dim=-1) @ v\n",
                fixed=_HEAD + "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.bool(), scale=0.125)\n"),
        Invalid(_HEAD + "    s = q @ k.transpose(-2, -1) * 0.125\n"
                        "    s = s.masked_fill(torch.logical_not(mask[:, None]), float('-inf'))\n"
                        "    return s.softmax(dim=-1) @ v\n",
                fixed=_HEAD + "    return F.scaled_dot_product_attention(\n"
                              "        q, k, v, attn_mask=mask[:, None].bool(), scale=0.125\n    )\n"),
        # An nn.Softmax module (once read as `self`'s softmax method), and a mask prepared inside its
        # own branch: the preparation stays, the masked_fill goes.
        Invalid(
            "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n\nclass A(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.softmax = nn.Softmax(dim=-1)\n\n"
            "    def forward(self, q, k, v, mask=None):\n        s = torch.matmul(q, k.transpose(-1, -2)) * 0.125\n"
            "        if mask is not None:\n            mask = mask.unsqueeze(1)\n"
            "            s = s.masked_fill(mask == 0, -1e9)\n        return torch.matmul(self.softmax(s), v)\n",
            fixed="import torch\nfrom torch import nn\nimport torch.nn.functional as F\n\nclass A(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.softmax = nn.Softmax(dim=-1)\n\n"
            "    def forward(self, q, k, v, mask=None):\n"
            "        if mask is not None:\n            mask = mask.unsqueeze(1)\n"
            "        return F.scaled_dot_product_attention(\n            q, k, v, attn_mask=mask != 0 if mask is not None "
            "else None, scale=0.125\n        )\n",
        ),
        # The branch rebinds q too: the scores read the old q, the fix would read the new one.
        Invalid(_HEAD + "    s = q @ k.transpose(-2, -1) * 0.125\n    if mask is not None:\n        q = q.float()\n"
                        "        s = s.masked_fill(mask == 0, -1e9)\n    return s.softmax(dim=-1) @ v\n",
                fixed=NO_FIX, message="not fixed: `q` is bound again"),
        # A mask replaced by something that may be None: the branch's test no longer says what it did.
        Invalid(_HEAD + "    s = q @ k.transpose(-2, -1) * 0.125\n    if mask is not None:\n"
                        "        mask = mask if mask.any() else None\n"
                        "        s = s.masked_fill(mask == 0, -1e9)\n    return s.softmax(dim=-1) @ v\n",
                fixed=NO_FIX, message="not fixed: `mask` is bound again"),
        # An optional dropout module (`nn.Dropout(p) if p else None`), applied only when present.
        Invalid(
            "import torch\nfrom torch import nn\n\nclass A(nn.Module):\n    def __init__(self, p):\n"
            "        super().__init__()\n        self.drop = nn.Dropout(p) if p else None\n\n"
            "    def forward(self, q, k, v):\n        w = torch.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1)\n"
            "        if self.drop is not None:\n            w = self.drop(w)\n        return w @ v\n",
            fixed="import torch\nfrom torch import nn\n\nclass A(nn.Module):\n    def __init__(self, p):\n"
            "        super().__init__()\n        self.drop = nn.Dropout(p) if p else None\n\n"
            "    def forward(self, q, k, v):\n        return nn.functional.scaled_dot_product_attention(\n"
            "            q,\n            k,\n            v,\n"
            "            dropout_p=self.drop.p if self.drop is not None and self.training else 0.0,\n"
            "            scale=0.125,\n        )\n",
        ),
        # A dropout module that is an nn.Identity when its probability is 0, either way round: the
        # fix read `.p` of the Identity (AttributeError in training), or gave no fix.
        *(Invalid(
            "import torch\nfrom torch import nn\n\nclass A(nn.Module):\n    def __init__(self, p):\n"
            f"        super().__init__()\n        self.drop = {module}\n\n"
            "    def forward(self, q, k, v):\n        w = torch.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1)\n"
            "        return self.drop(w) @ v\n",
            fixed="import torch\nfrom torch import nn\n\nclass A(nn.Module):\n    def __init__(self, p):\n"
            f"        super().__init__()\n        self.drop = {module}\n\n"
            "    def forward(self, q, k, v):\n        return nn.functional.scaled_dot_product_attention(\n"
            "            q,\n            k,\n            v,\n"
            "            dropout_p=getattr(self.drop, \"p\", 0.0) if self.training else 0.0,\n"
            "            scale=0.125,\n        )\n",
        ) for module in ("nn.Dropout(p) if p > 0.0 else nn.Identity()", "nn.Identity() if p == 0.0 else nn.Dropout(p)")),
        # A functional dropout under a condition of several parts: `and`-joined, parenthesised.
        Invalid(_HEAD + "    w = torch.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1)\n"
                        "    if self.training or force:\n        w = F.dropout(w, p=0.1, training=self.training)\n"
                        "    return w @ v\n",
                fixed=_HEAD + "    return F.scaled_dot_product_attention(\n        q,\n        k,\n        v,\n"
                              "        dropout_p=0.1 if (self.training or force) and self.training else 0.0,\n"
                              "        scale=0.125,\n    )\n"),
        # A buffer that is not exactly a lower triangle (or another class's `bias` that is) is an
        # attention mask, not `is_causal=True` (a band mask once became causal attention).
        Invalid(
            "import torch\nfrom torch import nn\n\nclass Causal(nn.Module):\n    def __init__(self, n):\n"
            "        super().__init__()\n        self.register_buffer('bias', torch.tril(torch.ones(n, n)))\n\n"
            "class Band(nn.Module):\n    def __init__(self, n, causal):\n        super().__init__()\n"
            "        self.register_buffer('bias', torch.tril(torch.ones(n, n)) if causal else torch.ones(n, n))\n\n"
            "    def forward(self, q, k, v):\n        T = q.size(-2)\n"
            "        att = (q @ k.transpose(-2, -1)).masked_fill(self.bias[:T, :T] == 0, float('-inf'))\n"
            "        return att.softmax(dim=-1) @ v\n",
            fixed="import torch\nfrom torch import nn\n\nclass Causal(nn.Module):\n    def __init__(self, n):\n"
            "        super().__init__()\n        self.register_buffer('bias', torch.tril(torch.ones(n, n)))\n\n"
            "class Band(nn.Module):\n    def __init__(self, n, causal):\n        super().__init__()\n"
            "        self.register_buffer('bias', torch.tril(torch.ones(n, n)) if causal else torch.ones(n, n))\n\n"
            "    def forward(self, q, k, v):\n        T = q.size(-2)\n"
            "        return nn.functional.scaled_dot_product_attention(\n"
            "            q, k, v, attn_mask=self.bias[:T, :T] != 0, scale=1.0\n        )\n",
        ),
        # The mask built between the scores and the masked_fill that reads it: bound before its read,
        # so the fix may read it later (it was once refused as "bound again").
        Invalid(_HEAD + "    s = q @ k.transpose(-2, -1) * 0.125\n    causal = torch.tril(torch.ones(4, 4)).bool()\n"
                        "    s = s.masked_fill(~causal, float('-inf'))\n    return F.softmax(s, dim=-1) @ v\n",
                fixed=_HEAD + "    causal = torch.tril(torch.ones(4, 4)).bool()\n"
                              "    return F.scaled_dot_product_attention(q, k, v, attn_mask=causal, scale=0.125)\n"),
        # A forward hook on the dropout module reads the attention maps (attention rollout): the fix
        # would no longer call the module, and the hook would silently stop firing.
        Invalid(
            "import torch\nfrom torch import nn\n\nclass A(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.attn_drop = nn.Dropout(0.1)\n\n"
            "    def forward(self, q, k, v):\n        w = self.attn_drop(torch.softmax(q @ k.transpose(-2, -1), dim=-1))\n"
            "        return w @ v\n\nmodel = A()\nmodel.attn_drop.register_forward_hook(keep_map)\n",
            fixed=NO_FIX, message="not fixed: `model.attn_drop.register_forward_hook(...)` may hook `self.attn_drop`",
        ),
        # einsum for both products (lucidrains', older diffusers'), any letters, `...` leading axes.
        Invalid(_HEAD + "    s = torch.einsum('bhqd,bhkd->bhqk', q, k) * 0.125\n    w = s.softmax(dim=-1)\n"
                        "    return torch.einsum('bhqk,bhkd->bhqd', w, v)\n",
                fixed=_HEAD + "    return F.scaled_dot_product_attention(q, k, v, scale=0.125)\n"),
        Invalid(_HEAD + "    w = torch.einsum('...id,...jd->...ij', q, k).softmax(dim=-1)\n"
                        "    return torch.einsum('...ij,...jd->...id', w, v)\n",
                fixed=_HEAD + "    return F.scaled_dot_product_attention(q, k, v, scale=1.0)\n"),
        # A temperature kept as a buffer is a tensor (scale= takes a float), as a Parameter is.
        Invalid("import torch\nfrom torch import nn\n\nclass A(nn.Module):\n    def __init__(self):\n"
                "        super().__init__()\n        self.register_buffer('tau', torch.full((2, 1, 1), 0.3))\n\n"
                "    def forward(self, q, k, v):\n        return torch.softmax(q @ k.transpose(-2, -1) / self.tau, dim=-1) @ v\n",
                fixed=NO_FIX, message="pass `q / self.tau` as the query with `scale=1.0`"),
        # A number added to the scores is no attn_mask (SDPA takes a tensor); a parameter defaulting to one.
        Invalid(_HEAD + "    s = q @ k.transpose(-2, -1) * 0.125 + 1.0\n    return s.softmax(dim=-1) @ v\n",
                fixed=NO_FIX, message="is a number"),
        Invalid("import torch\n\ndef attend(q, k, v, bias=0.0):\n    s = q @ k.transpose(-2, -1) * 0.125 + bias\n"
                "    return s.softmax(dim=-1) @ v\n", fixed=NO_FIX, message="`bias` defaults to a number"),
        # Two blocks that each use `math` for their scale: neither fix alone left `import math`
        # unused, so fixing both left it behind, unused. Their findings share one fix that drops it.
        Invalid(
            _HEAD + "    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n    return s.softmax(dim=-1) @ v\n\n"
                    "def cross(q, k, v):\n    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
                    "    return s.softmax(dim=-1) @ v\n",
            fixed=_NO_MATH + "    return F.scaled_dot_product_attention(q, k, v)\n\n"
                             "def cross(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)\n",
        ),
        # ... but stays where other code uses it, or where a fixed block still names it in `scale=`.
        Invalid(
            _HEAD + "    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n    return s.softmax(dim=-1) @ v\n\n"
                    "def cross(q, k, v):\n    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
                    "    return s.softmax(dim=-1) @ v\nPI = math.pi\n",
            fixed=_HEAD + "    return F.scaled_dot_product_attention(q, k, v)\n\n"
                          "def cross(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)\nPI = math.pi\n",
        ),
        Invalid(
            _HEAD + "    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n    return s.softmax(dim=-1) @ v\n\n"
                    "def cross(q, k, v, d):\n    s = q @ k.transpose(-2, -1) / math.sqrt(d)\n"
                    "    return s.softmax(dim=-1) @ v\n",
            fixed=_HEAD + "    return F.scaled_dot_product_attention(q, k, v)\n\n"
                          "def cross(q, k, v, d):\n    return F.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(d))\n",
        ),
        # `math` used elsewhere in the module stays imported.
        Invalid(
            _HEAD + "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
                    "    att = F.softmax(scores, dim=-1)\n    return att @ v\nPI = math.pi\n",
            fixed=_HEAD + "    return F.scaled_dot_product_attention(q, k, v)\nPI = math.pi\n",
        ),
        Invalid(
            "import math\nimport torch\nfrom torch import nn\nfrom torch.nn import functional as F\n\n"
            "class Attn(nn.Module):\n    def __init__(self, n, p):\n        super().__init__()\n"
            "        self.drop = nn.Dropout(p)\n"
            "        self.register_buffer('bias', torch.tril(torch.ones(n, n)).view(1, 1, n, n))\n\n"
            "    def forward(self, q, k, v):\n        T = q.size(-2)\n"
            "        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))\n"
            "        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))\n"
            "        att = F.softmax(att, dim=-1)\n        att = self.drop(att)\n        y = att @ v\n        return y\n",
            fixed="import torch\nfrom torch import nn\nfrom torch.nn import functional as F\n\n"
            "class Attn(nn.Module):\n    def __init__(self, n, p):\n        super().__init__()\n"
            "        self.drop = nn.Dropout(p)\n"
            "        self.register_buffer('bias', torch.tril(torch.ones(n, n)).view(1, 1, n, n))\n\n"
            "    def forward(self, q, k, v):\n        T = q.size(-2)\n"
            "        y = F.scaled_dot_product_attention(\n"
            "            q, k, v, dropout_p=self.drop.p if self.training else 0.0, is_causal=True\n        )\n"
            "        return y\n",
        ),
    ]

    def __init__(self, ctx, options) -> None:
        super().__init__(ctx, options)
        self._rewrites: list[_Rewrite] = []  # the fixes made so far, for _share_left_imports

    def _share_left_imports(self) -> None:
        """Two attention blocks that each use `math` (`/ math.sqrt(q.size(-1))`): neither fix alone
        leaves `import math` unused, so fixing both left it behind, unused. The fixes that are all
        needed for an import to go become one fix, shared by their findings (applied at once, as
        TL402's), which removes it; an import still used elsewhere stays. Asked again after each
        block's fix is made (the rule sees no end of the file), each fix reset to its own first.
        Not where a suppression comment could keep one of the blocks as it is: the shared fix
        would rewrite that block too; nor past a few blocks (each question walks the imports)."""
        ctx = self.ctx
        rewrites = self._rewrites
        if len(rewrites) < 2 or len(rewrites) > 8 or ctx.suppressions.directives:
            return
        for r in rewrites:
            r.fix.replacements = [*r.own, *r.unused]

        def unused(group) -> list:
            return remove_unused_imports(ctx, [n for r in group for n in r.removed], " ".join(r.call for r in group))
        together = unused(rewrites)
        alone = {ctx.code(old) for r in rewrites for old, _new in r.unused}
        if all(ctx.code(old) in alone for old, _new in together):
            return
        # The blocks an import needs: without one of them, fewer imports go.
        needed = [r for r in rewrites if len(unused([o for o in rewrites if o is not r])) < len(together)]
        if len(needed) < 2:
            return
        shared = [pair for r in needed for pair in r.own] + unused(needed)
        for r in needed:
            r.fix.replacements = shared

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.MatrixMultiply):
            self._check(node, node.left, node.right, bmm=False)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        qn = ctx.names.qualified(node.func)
        if qn in _MATMUL_FN and len(node.args) == 2 and not any(a.keyword or a.star for a in node.args):
            self._check(node, node.args[0].value, node.args[1].value, bmm=qn == "torch.bmm")
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "matmul" and qn is None \
                and len(node.args) == 1 and not node.args[0].keyword:
            self._check(node, node.func.value, node.args[0].value, bmm=False)
        elif qn == "torch.einsum" and _einsum_operands(node, _WEIGHTS_TIMES_V):
            # `einsum("bhij,bhjd->bhid", attn, v)`: the weights times v, as `attn @ v`
            weights, v = _einsum_operands(node, _WEIGHTS_TIMES_V)
            self._check(node, weights, v, bmm=False)

    # -- matching -----------------------------------------------------------------------

    def _check(self, node, weights, v, *, bmm: bool) -> None:
        ctx = self.ctx
        stmt = ctx.statement(node)
        if not isinstance(stmt, cst.SimpleStatementLine):
            return
        att = _Attention(v=v, bmm=bmm)
        why = None  # why there is no fix
        try:
            try:
                self._weights(weights, stmt, att)
            except _NoFix as e:
                # Attention, but with a part the fix cannot express (a dropout that is not an
                # nn.Dropout): report it without a fix. It used to escape as an internal error
                # (fairseq's downsampled_multihead_attention.py, found by the corpus sweep).
                why = e.why
            if self._used_elsewhere(att, node, stmt):
                return
            fix, shown = None, None
            if att.unfixable and why is None:
                why = "its dropout is not an `nn.Dropout` this file shows, so its probability is unknown"
            if why is None:
                try:
                    call, extra = self._build(att, stmt)
                    # A Call node (not text): laid out as Black would when it no longer fits its line.
                    # An import only the replaced code used (`math` of `math.sqrt(d)`) goes too.
                    unused = remove_unused_imports(ctx, [node, *att.consumed], call)
                    own = [(node, cst.parse_expression(call)), *ctx.remove_statements(att.consumed), *extra]
                    fix = self.fix(Applicability.UNSAFE, "Use scaled_dot_product_attention", *own, *unused)
                    self._rewrites.append(_Rewrite(fix, [node, *att.consumed], call, fix.replacements[:len(own)],
                                                   fix.replacements[len(own):]))
                    self._share_left_imports()
                    shown = call if len(call) <= 140 else None
                except _NoFix as e:
                    fix, shown, why = None, None, e.why
        except _NoMatch:
            return
        if self._is_sdpa_fallback(node) or self._is_test_reference(node):  # asked last: they scan the function
            return
        use = f"`{shown}`" if shown else "`torch.nn.functional.scaled_dot_product_attention`"
        # A row whose every key is masked (a query at a left-padding position): softmax of equal
        # finite scores averages all values there, SDPA gives zeros; the other rows agree to rounding.
        rows = (f"; rows with every key masked (left padding) change: with a finite fill (`{att.finite_fill}`) "
                f"the original averages all values there, SDPA gives zeros") if fix is not None and att.finite_fill else ""
        self.report(
            node,
            f"Hand-written attention (q @ k^T, softmax, @ v) materialises the full score matrix; use {use}, "
            f"which runs fused FlashAttention / memory-efficient kernels{rows}"
            + (f"; not fixed: {why}" if fix is None and why else ""),
            fix,
        )

    def _is_sdpa_fallback(self, node) -> bool:
        """The function also calls scaled_dot_product_attention: the hand-written path is its deliberate
        fallback (old torch, attention weights wanted, a tensor temperature), not an oversight."""
        ctx = self.ctx
        # by the name it is called, or imported under (`scaled_dot_product_attention as sdpa`)
        return ctx.index.enclosing_function(node) is not None and any(
            (ctx.dotted(call.func) or "").endswith("scaled_dot_product_attention")
            or ctx.names.qualified(call.func) == "torch.nn.functional.scaled_dot_product_attention"
            for call in ctx.calls_in_scope(node))

    def _is_test_reference(self, node, depth: int = 0) -> bool:
        """What the attention computes is checked by an assertion (`torch.testing.assert_close(pool(x),
        expected)` after `expected = pool.proj(attn @ v)`, an `assert` of `torch.allclose`), directly
        or through the names it is assigned to in its function (four assignments down), in a test
        (a function named `test...`, as pytest and unittest find them): a reference for a module
        that uses SDPA, which the fix would compare with itself (timm's attention-pool tests). Also
        in a helper that returns it (`def reference(q, k, v)`, nested in the test or at the module's
        top level, two helpers down) when every call of the helper is such a check in a test. A
        model's own check of its output (`assert torch.isfinite(y).all()` in `forward`) is no test."""
        ctx = self.ctx
        scope = ctx.index.enclosing_function(node)
        if scope is None:
            return False
        test = scope.name.value.startswith("test")
        held, seen = [node], set()
        for _ in range(5):
            names = set()
            for expr in held:
                if test and self._asserted(expr):
                    return True
                stmt = ctx.statement(expr)
                small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
                if isinstance(small, cst.Return) and not test and depth < 2:
                    calls = ctx.loops.plain_calls_of(scope)
                    return bool(calls) and all(self._is_test_reference(call, depth + 1) for call in calls)
                if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                        and isinstance(small.targets[0].target, cst.Name):
                    names.add(small.targets[0].target.value)
            held = []
            for name in names - seen:
                seen.add(name)
                uses = variable_uses(ctx.index, scope, name) or []
                held += [use.node for use in uses if use.kind == "read"]
            if not held:
                return False
        return False

    def _asserted(self, expr) -> bool:
        """expr's values (not its shape, size, dtype or device) are checked in an `assert`
        statement or by an assertion call (`assert_close`, `assertTrue`,
        `np.testing.assert_allclose`: a callee whose name starts with `assert`)."""
        parent = self.ctx.index.parent.get(expr)
        if isinstance(parent, cst.Attribute) and parent.value is expr and parent.attr.value in _METADATA:
            return False
        for anc in self.ctx.index.ancestors(expr):
            if isinstance(anc, cst.Assert):
                return True
            if isinstance(anc, cst.Call) and (self.ctx.dotted(anc.func) or "").rsplit(".", 1)[-1].startswith("assert"):
                return True
            if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return False
        return False

    def _definition(self, name: str, before: cst.CSTNode, att: _Attention):
        """The statement of `before`'s block that last defines `name` before it: (kind, stmt, payload).
        Any other statement in between that mentions `name` ends the match."""
        ctx = self.ctx
        block = ctx.parent(before)
        body = getattr(block, "body", None)
        if not isinstance(body, (list, tuple)) or before not in body:
            raise _NoMatch
        for stmt in reversed(body[: body.index(before)]):
            if not _mentions(ctx, stmt, name):
                continue
            kind = _defines(ctx, stmt, name)
            if kind is None:
                raise _NoMatch
            # An `if` whose branch also prepares something else keeps that part: only its last
            # statement (the one defining name) goes.
            partial = isinstance(stmt, cst.If) and len(stmt.body.body) > 1
            att.consumed.append(stmt.body.body[-1] if partial else stmt)
            att.names.add(name)
            return kind, stmt
        raise _NoMatch

    def _weights(self, expr, at, att: _Attention) -> None:
        """expr is softmax(scores) (maybe under dropout or a dtype cast)."""
        ctx = self.ctx
        if isinstance(expr, cst.Name):
            (kind, payload), stmt = self._definition(expr.value, at, att)
            if kind == "if" and att.dropout_p is None:
                # An optional dropout: `if self.dropout is not None: p = self.dropout(p)`.
                test, inner_kind, dropped = payload
                if inner_kind != "assign" or not isinstance(dropped, cst.Call):
                    raise _NoMatch
                self._weights(dropped, stmt, att)
                if att.dropout_p is None or att.unfixable:
                    raise _NoMatch  # the branch did something else to the weights
                att.dropout_when.insert(0, test)  # tested first: `self.dropout.p` exists only then
                return
            if kind != "assign":
                raise _NoMatch
            return self._weights(payload, stmt, att)
        if not isinstance(expr, cst.Call):
            raise _NoMatch
        func = expr.func
        qn = ctx.names.qualified(func)
        # Dropout: F.dropout(w, p, training) or self.<nn.Dropout>(w).
        if att.dropout_p is None and qn in _DROPOUT_FN:
            inner = _arg(expr, 0, "input")
            p = _arg(expr, 1, "p")
            training = _arg(expr, 2, "training")
            p_code = ctx.code(p) if p is not None else "0.5"
            if training is None:
                att.dropout_p = p_code
            elif not (isinstance(training, cst.Name) and training.value == "False"):
                att.dropout_p = p_code
                att.dropout_when.append(training)
            return self._weights(inner, at, att)
        if att.dropout_p is None and self._is_module(func, _DROPOUT_MODULE) and len(expr.args) == 1:
            # Where it may be an nn.Identity (no dropout), `.p` would raise: 0.0 then.
            att.dropout_p = f'getattr({ctx.code(func)}, "p", 0.0)' if self._may_be_identity(func) else f"{ctx.code(func)}.p"
            att.modules.append(ctx.code(func))
            att.dropout_when.append(cst.parse_expression("self.training"))
            return self._weights(expr.args[0].value, at, att)
        if att.dropout_p is None and isinstance(func, cst.Attribute) and "drop" in func.attr.value.lower() \
                and len(expr.args) == 1:
            att.unfixable = True  # a dropout we cannot resolve to nn.Dropout (its p is unknown)
            att.dropout_p = "?"
            return self._weights(expr.args[0].value, at, att)
        # Casts around a float32 softmax: .to(q.dtype), .type_as(q), .to(torch.float16).
        if isinstance(func, cst.Attribute) and func.attr.value in ("to", "type_as") and qn is None \
                and len(expr.args) == 1 and _is_softmax_call(ctx, func.value, self):
            return self._weights(func.value, at, att)
        if qn in _SOFTMAX:
            scores, dim = _arg(expr, 0, "input"), _arg(expr, 1, "dim")
        elif self._is_module(func, _SOFTMAX_MODULE) and len(expr.args) == 1:
            # (asked before the tensor method: `self.softmax(scores)` is a module, not `self`'s softmax)
            scores, dim = expr.args[0].value, self._module_dim(func)
            att.modules.append(ctx.code(func))
        elif isinstance(func, cst.Attribute) and func.attr.value == "softmax" and qn is None:
            scores, dim = func.value, _arg(expr, 0, "dim")
        else:
            raise _NoMatch
        if scores is None or _int_literal(dim) != -1:
            raise _NoMatch
        self._scores(scores, at, att)

    def _scores(self, expr, at, att: _Attention) -> None:
        """expr is q @ k^T with scale and mask operations applied (ops are recorded innermost first)."""
        ctx = self.ctx
        if isinstance(expr, cst.Name):
            (kind, payload), stmt = self._definition(expr.value, at, att)
            if kind == "assign":
                return self._scores(payload, stmt, att)
            if kind == "if":  # `if mask is not None: scores = scores.masked_fill(...)`
                test, inner_kind, inner_payload = payload
                self._scores(cst.Name(expr.value), stmt, att)
                att.ops.append(_payload_op(inner_kind, inner_payload, test))
                return
            self._scores(cst.Name(expr.value), stmt, att)
            att.ops.append(_payload_op(kind, payload, None))
            return
        if isinstance(expr, cst.BinaryOperation):
            op = expr.operator
            if isinstance(op, cst.MatrixMultiply):
                return self._core(expr.left, expr.right, att, at)
            if isinstance(op, (cst.Multiply, cst.Divide, cst.Add)):
                sides = [(expr.left, expr.right)]
                if not isinstance(op, cst.Divide):
                    sides.append((expr.right, expr.left))
                for scores, other in sides:
                    saved = (len(att.ops), list(att.consumed), set(att.names), att.q, att.k)
                    try:
                        self._scores(scores, at, att)
                    except _NoMatch:
                        att.ops = att.ops[: saved[0]]
                        att.consumed, att.names, att.q, att.k = saved[1], saved[2], saved[3], saved[4]
                        continue
                    kind = {cst.Multiply: "scale-mul", cst.Divide: "scale-div", cst.Add: "add"}[type(op)]
                    att.ops.append(_Op(kind, other))
                    return
            raise _NoMatch
        if isinstance(expr, cst.Call):
            func = expr.func
            qn = ctx.names.qualified(func)
            if isinstance(func, cst.Attribute) and qn is None and func.attr.value == "float" and not expr.args:
                return self._scores(func.value, at, att)  # softmax(scores.float()): an upcast, not a new value
            if qn in _MATMUL_FN and len(expr.args) == 2:
                att.bmm = att.bmm or qn == "torch.bmm"
                return self._core(expr.args[0].value, expr.args[1].value, att, at)
            if qn == "torch.einsum" and _einsum_operands(expr, _Q_TIMES_K):
                att.q, att.k = _einsum_operands(expr, _Q_TIMES_K)  # `einsum("bhid,bhjd->bhij", q, k)`: q @ k^T
                return
            if isinstance(func, cst.Attribute) and qn is None and func.attr.value == "matmul" and len(expr.args) == 1:
                return self._core(func.value, expr.args[0].value, att, at)
            if isinstance(func, cst.Attribute) and qn is None and func.attr.value == "masked_fill" and len(expr.args) == 2:
                self._scores(func.value, at, att)
                att.ops.append(_Op("fill", expr.args[0].value, expr.args[1].value))
                return
        raise _NoMatch

    def _core(self, q, kt, att: _Attention, at=None) -> None:
        ctx = self.ctx
        k = None
        if isinstance(kt, cst.Name) and at is not None:
            # Transposed beforehand: `kT = k.transpose(-2, -1)`, then `q @ kT` (the statement goes
            # with the others; a `kT` read elsewhere keeps the rewrite away).
            (kind, payload), stmt = self._definition(kt.value, at, att)
            if kind != "assign":
                raise _NoMatch
            return self._core(q, payload, att)
        if isinstance(kt, cst.Attribute) and kt.attr.value == "mT":
            k = kt.value
        elif isinstance(kt, cst.Call) and isinstance(kt.func, cst.Attribute) and ctx.names.qualified(kt.func) is None:
            method = kt.func.attr.value
            dims = [_int_literal(a.value) for a in kt.args]
            if method in ("transpose", "swapaxes") and len(dims) == 2:
                if set(dims) in _LAST_TWO or (att.bmm and set(dims) == {1, 2}):
                    k = kt.func.value
            elif method == "permute" and dims == [0, 1, 3, 2]:
                k = kt.func.value
        if k is None:
            raise _NoMatch
        att.q, att.k = q, k

    # -- module attributes (self.drop = nn.Dropout(p), self.softmax = nn.Softmax(dim=-1)) ---------

    def _assigned_module(self, func):
        """The value first assigned to `self.<name>` in func's class (a call, or a choice of them)."""
        ctx = self.ctx
        name = ctx.dotted(func)
        if name is None or not name.startswith("self."):
            return None
        cls = ctx.index.enclosing_class(func)
        if cls is None:
            return None
        for assign in ctx.index.nodes(cst.Assign):
            value = assign.value
            if isinstance(value, (cst.Call, cst.IfExp)) and any(ctx.dotted(t.target) == name for t in assign.targets) \
                    and ctx.index.enclosing_class(assign) is cls:
                return value
        return None

    def _module_assignment(self, func) -> cst.Call | None:
        value = self._assigned_module(func)
        if isinstance(value, cst.IfExp):
            # `nn.Dropout(p) if p else None`, `... else nn.Identity()` (either way round): the module,
            # where the code calls one at all
            value = next((v for v in (value.body, value.orelse) if isinstance(v, cst.Call)
                          and self.ctx.names.qualified(v.func) != "torch.nn.Identity"), None)
        return value if isinstance(value, cst.Call) else None

    def _may_be_identity(self, func) -> bool:
        """`self.attn_drop = nn.Dropout(p) if p > 0 else nn.Identity()`: an Identity has no `.p`."""
        value = self._assigned_module(func)
        return isinstance(value, cst.IfExp) and any(
            isinstance(v, cst.Call) and self.ctx.names.qualified(v.func) == "torch.nn.Identity"
            for v in (value.body, value.orelse))

    def _is_module(self, func, qualnames) -> bool:
        value = self._module_assignment(func)
        return value is not None and self.ctx.names.qualified(value.func) in qualnames

    def _module_dim(self, func):
        value = self._module_assignment(func)
        return _arg(value, 0, "dim") if value is not None else None

    # -- intermediate results used elsewhere -------------------------------------------

    def _used_elsewhere(self, att: _Attention, node, stmt) -> bool:
        """An intermediate (scores, weights) is read after the attention, so SDPA cannot replace it.
        A read counts when the attention's value may reach it (variables.may_reach): a rebinding in a later
        block or in another branch hides the value, one under a condition does not
        (`if not output_attentions: attn_weights = None` before `return out, attn_weights`)."""
        ctx = self.ctx
        scope = ctx.index.enclosing_function(node) or ctx.module
        chain = set(att.consumed) | {node}
        consumed = set(att.consumed)
        started = after = False
        for name in ctx.index.walk(scope):  # in document order: the first deleted statement starts it
            if name in consumed:
                started = True
            if name is stmt:
                started = after = True  # nodes of stmt itself follow in the walk; they are part of the chain
                continue
            if not started or not isinstance(name, cst.Name) or name.value not in att.names:
                continue
            if not is_variable(ctx.index, name) or any(ctx.index.contains(s, name) for s in chain):
                continue
            if role(ctx.index, name)[0] == "assign":
                continue  # a write, not a read
            # Between the statements the fix deletes (`self.logits = scores` after the softmax): it
            # reads a value the fix no longer computes. After them: if the value may reach it.
            if not after or may_reach(ctx.index, stmt, name, scope):
                return True
        return False

    # -- the replacement ---------------------------------------------------------------

    def _build(self, att: _Attention, stmt) -> tuple[str, list]:
        ctx = self.ctx
        scale_ops = [op for op in att.ops if op.kind.startswith("scale")]
        mask_ops = [op for op in att.ops if op.kind in ("fill", "add")]
        if len(scale_ops) > 1 or len(mask_ops) > 1:
            raise _NoFix("the scores are scaled or masked more than once")
        kwargs = []
        if mask_ops:
            mask = mask_ops[0]
            if scale_ops and mask.kind == "add" and att.ops.index(scale_ops[0]) > att.ops.index(mask):
                raise _NoFix("the additive mask is scaled with the scores")
            if mask.kind == "fill":
                if not _very_negative(ctx, mask.fill):
                    raise _NoMatch  # masked_fill with 0 or a small value is not an attention mask
                if mask.condition is None and self._causal(mask.expr):
                    kwargs.append(("is_causal", "True"))
                else:
                    kwargs.append(("attn_mask", _attend(ctx, mask.expr, mask.condition)))
                    if not _infinite(ctx, mask.fill):
                        att.finite_fill = " ".join(ctx.code(mask.fill).split())
            else:
                self._check_tensor_mask(mask.expr)
                code = ctx.code(mask.expr)
                # `attn_mask=m if m is not None else None` is just `attn_mask=m` (SDPA takes None).
                if mask.condition is not None and ctx.code(mask.condition).replace(" ", "") != f"{code}isnotNone":
                    code = f"{code} if {ctx.code(mask.condition)} else None"
                kwargs.append(("attn_mask", code))
        if att.dropout_p is not None:
            when = _conjunction(ctx, att.dropout_when)
            kwargs.append(("dropout_p", f"{att.dropout_p} if {when} else 0.0" if when else att.dropout_p))
        kwargs = sorted(kwargs, key=lambda kv: ("attn_mask", "dropout_p", "is_causal").index(kv[0]))
        scale = self._scale(att, scale_ops[0] if scale_ops else None)
        if scale is not None:
            if not target_allows(ctx, "2.1"):
                # SDPA takes scale= from PyTorch 2.1
                raise _NoFix("`scale=` needs PyTorch 2.1, and `target-torch` is older")
            kwargs.append(("scale", scale))
        self._check_movable(att, stmt)
        self._check_unhooked(att)
        sdpa, extra = ctx.module_name("torch.nn.functional", at=stmt)
        args = [ctx.code(att.q), ctx.code(att.k), ctx.code(att.v)] + [f"{k}={v}" for k, v in kwargs]
        return f"{sdpa}.scaled_dot_product_attention({', '.join(args)})", extra

    def _scale(self, att: _Attention, op: _Op | None) -> str | None:
        """The scale= argument (None: SDPA's default 1/sqrt(q.size(-1)) is the one used)."""
        ctx = self.ctx
        if op is None:
            return "1.0"
        expr = op.expr
        # A tensor scale goes into q instead (timm's XCiT: `q * self.temperature`, `scale=1.0`).
        operator = "*" if op.kind == "scale-mul" else "/"
        folded = f"{_atom(ctx.code(att.q), att.q)} {operator} {_atom(ctx.code(expr), expr)}"
        self._check_float(expr, folded)
        if op.kind == "scale-mul":
            inverse = _sqrt_of(ctx, expr, inverse=True)
            if inverse is not None and _is_head_dim(ctx, inverse, att):
                return None
            return ctx.code(expr)
        root = _sqrt_of(ctx, expr)
        if root is not None and _is_head_dim(ctx, root, att):
            return None
        code = ctx.code(expr)
        if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Power)):
            code = _atom(code, expr)  # `1 / d ** 0.5` needs no parentheses, `1 / (a * b)` does
        return f"1 / {code}"

    def _check_float(self, expr, folded: str) -> None:
        """SDPA's scale must be a Python float: a tensor-valued scale (a learnable temperature) has no
        rewrite. The reason says how to fold it into q (folded: q times or over it) where that is
        exact: a tensor of one value, or of one per head, scales each row of q's scores alike."""
        ctx = self.ctx
        tensor_scale = (f"{_TENSOR_SCALE}; where it holds one value, or one per head, pass `{folded}` as the query "
                        f"with `scale=1.0`")
        if _tensor_valued(ctx, expr):  # torch calls, tensor methods (`self.logit_scale.exp()`); math.sqrt is fine
            raise _NoFix(tensor_scale)
        fn = ctx.index.enclosing_function(expr)
        for node in ctx.index.walk(expr):
            if isinstance(node, cst.Attribute) and (ctx.dotted(node) or "").startswith("self."):
                value = self._module_assignment(node)  # self.t = nn.Parameter(...)
                if value is not None and (ctx.names.qualified(value.func) or "").startswith("torch."):
                    raise _NoFix(tensor_scale)
                if self._is_buffer(node):  # self.register_buffer("tau", torch.full(...))
                    raise _NoFix(tensor_scale)
            parent = ctx.parent(node)
            if isinstance(node, cst.Name) and not (isinstance(parent, cst.Attribute) and parent.attr is node) \
                    and not _sized(ctx, node, expr):
                # A local computed from tensors (`logit_scale = self.logit_scale.clamp(max=m).exp()`).
                for assign in ctx.index.nodes(cst.Assign):
                    if ctx.index.enclosing_function(assign) is fn and any(
                            isinstance(t.target, cst.Name) and t.target.value == node.value for t in assign.targets) \
                            and _tensor_valued(ctx, assign.value):
                        raise _NoFix(tensor_scale)

    def _check_tensor_mask(self, expr) -> None:
        """An additive term becomes attn_mask=, which must be a tensor: a number (`+ 1.0`, or a parameter
        whose default is one, `bias=0.0`) is not."""
        ctx = self.ctx
        if ctx.number(expr) is not None:
            raise _NoFix("the term added to the scores is a number, and `attn_mask=` takes a tensor")
        if isinstance(expr, cst.Name):
            fn = ctx.index.enclosing_function(expr)
            param = parameter(fn, expr.value) if fn is not None else None
            if param is not None and param.default is not None and ctx.number(param.default) is not None:
                raise _NoFix(f"`{expr.value}` defaults to a number, and `attn_mask=` takes a tensor")

    def _registered(self, attr) -> list[cst.Call]:
        """The `register_buffer("<name>", ...)` calls of `self.<name>`'s class (another class's
        buffer of the same name says nothing of this one's)."""
        ctx = self.ctx
        name = ctx.dotted(attr)
        if name is None or name.count(".") != 1 or not name.startswith("self."):
            return []
        cls = ctx.index.enclosing_class(attr)
        return [call for call in ctx.index.nodes(cst.Call)
                if isinstance(call.func, cst.Attribute) and call.func.attr.value == "register_buffer" and call.args
                and isinstance(call.args[0].value, cst.SimpleString)
                and call.args[0].value.evaluated_value == name.split(".", 1)[1]
                and ctx.index.enclosing_class(call) is cls]

    def _is_buffer(self, attr: cst.Attribute) -> bool:
        """`self.<name>` registered as a buffer of its class: a tensor."""
        return bool(self._registered(attr))

    def _causal(self, cond) -> bool:
        """cond masks out exactly the strict upper triangle of a square slice: `tril[..., :T, :T] == 0`,
        `~tril[:T, :T]`, `triu(ones, diagonal=1)[:T, :T]`."""
        ctx = self.ctx
        invert = False
        if isinstance(cond, cst.Comparison) and len(cond.comparisons) == 1 \
                and isinstance(cond.comparisons[0].operator, cst.Equal) and _int_literal(cond.comparisons[0].comparator) == 0:
            cond, invert = cond.left, True
        elif isinstance(cond, cst.UnaryOperation) and isinstance(cond.operator, cst.BitInvert):
            cond, invert = cond.expression, True
        elif isinstance(cond, cst.Call) and isinstance(cond.func, cst.Attribute) and cond.func.attr.value == "logical_not":
            cond, invert = cond.func.value, True
        if isinstance(cond, cst.Call) and isinstance(cond.func, cst.Attribute) and cond.func.attr.value == "bool" \
                and not cond.args:
            cond = cond.func.value
        if isinstance(cond, cst.Subscript):
            if not _square_slice(ctx, cond):
                return False
            source = self._buffer(cond.value)
        else:
            return False
        if source is None:
            return False
        kind = _triangle(ctx, source)
        return (kind == "tril" and invert) or (kind == "triu1" and not invert)

    def _buffer(self, expr):
        """What `self.bias` (registered or assigned in this class, once) or a local name was built from."""
        ctx = self.ctx
        name = ctx.dotted(expr)
        if name is None:
            return None
        if name.startswith("self."):
            cls = ctx.index.enclosing_class(expr)
            built = [call.args[1].value for call in self._registered(expr) if len(call.args) >= 2]
            built += [value for value in ctx.assigned_values(expr, anywhere=True)
                      if any(ctx.index.enclosing_class(a) is cls for a in ctx.index.nodes(cst.Assign) if a.value is value)]
            return built[0] if len(built) == 1 else None
        values = ctx.assigned_values(expr, anywhere=True)
        return values[0] if len(values) == 1 else None

    def _check_movable(self, att: _Attention, stmt) -> None:
        """q, k, the mask and the scale move from the statements the fix deletes into stmt: none of the
        names each one reads may be bound again after the statement that read it and before stmt."""
        ctx = self.ctx
        if not att.consumed:
            return
        block = ctx.parent(stmt)
        body = list(block.body)
        end = body.index(stmt)

        def names(e) -> set[str]:
            return {n.value for n in ctx.index.walk(e) if isinstance(n, cst.Name)} if e is not None else set()

        def top(node):  # the statement of stmt's block that holds node
            return next(b for b in body if b is node or ctx.index.contains(b, node))

        for expr in (att.q, att.k, *(e for op in att.ops for e in (op.expr, op.fill)), att.v):
            if expr is None or ctx.index.contains(stmt, expr):
                continue  # read where it stands, in stmt itself
            read_at = top(expr)
            self._not_bound(names(expr), body[body.index(read_at) + 1: end], att)
        for op in att.ops:
            if op.condition is not None and not ctx.index.contains(stmt, op.condition):
                # `if mask is not None:` is tested before its branch's other statements run: what they
                # bind counts, unless it keeps the test true (`mask = mask.unsqueeze(1)`).
                branch = top(op.condition)
                read = names(op.condition)
                if isinstance(branch, cst.If) and branch.body.body[-1] in att.consumed:
                    for kept in branch.body.body[:-1]:
                        if not _rebinds_from_itself(kept):
                            self._not_bound(read, [kept], att)
                self._not_bound(read, body[body.index(branch) + 1: end], att)

    def _check_unhooked(self, att: _Attention) -> None:
        """The fix no longer calls the dropout or softmax module: a forward hook on it (attention maps
        read from `attn_drop`'s output, as attention-rollout code does) would silently stop firing."""
        ctx = self.ctx
        attrs = {m.rsplit(".", 1)[-1] for m in att.modules}
        if not attrs:
            return
        for call in ctx.index.nodes(cst.Call):
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value in _HOOKS):
                if ctx.names.qualified(func) in _GLOBAL_HOOKS:
                    raise _NoFix("a global module forward hook is registered here, and the fix no longer calls "
                                 f"`{att.modules[0]}`")
                continue
            receiver = ctx.dotted(func.value)
            # on the module itself, or on a module found by a loop or lookup (`m` of named_modules())
            if receiver is None or "." not in receiver or receiver.rsplit(".", 1)[-1] in attrs:
                raise _NoFix(f"`{ctx.code(func)}(...)` may hook `{att.modules[0]}`, which the fix no longer calls")

    @staticmethod
    def _not_bound(read: set[str], between: list, att: _Attention) -> None:
        for stmt in between:
            if stmt in att.consumed:
                continue
            bound = read & bound_names(stmt)
            if bound:
                raise _NoFix(f"`{sorted(bound)[0]}` is bound again after the attention reads it, before the "
                             f"`@ v` where the fix would read it")


def _rebinds_from_itself(stmt) -> bool:
    """`mask = mask.unsqueeze(1)`: a new tensor from the name's own value (never None)."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    return isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
        and _derived_from(small.value, small.targets[0].target.value)


def _derived_from(value, name: str) -> bool:
    """value is `name.method(...)`, `name[...]` or a chain of them (a new tensor from name's own)."""
    while isinstance(value, (cst.Call, cst.Subscript, cst.Attribute)):
        value = value.func if isinstance(value, cst.Call) else value.value
    return isinstance(value, cst.Name) and value.value == name


# einsum subscripts of attention's two products, by the letters of their last two axes (the
# leading ones, or `...`, must be the same in every operand, in the same order):
# q (i, d) with k (j, d) gives the scores (i, j); the weights (i, j) with v (j, d) give (i, d).
_Q_TIMES_K = (("i", "d"), ("j", "d"), ("i", "j"))
_WEIGHTS_TIMES_V = (("i", "j"), ("j", "d"), ("i", "d"))


def _einsum_operands(call: cst.Call, shape) -> tuple | None:
    """The two operands of `torch.einsum(spec, a, b)` when spec is shape's product over the same
    leading axes (`"bhid,bhjd->bhij"`, `"...id,...jd->...ij"`), any letters standing for i, j, d."""
    if len(call.args) != 3 or any(a.keyword or a.star for a in call.args) \
            or not isinstance(call.args[0].value, cst.SimpleString):
        return None
    spec = call.args[0].value.evaluated_value
    if not isinstance(spec, str):
        return None
    spec = spec.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    parts = inputs.split(",")
    if not arrow or len(parts) != 2 or any(len(p) < 2 for p in (*parts, output)):
        return None
    lead = {p[:-2] for p in (*parts, output)}
    if len(lead) != 1:
        return None
    lead = lead.pop()
    letters: dict[str, str] = {}
    for written, wanted in zip((*parts, output), shape):
        for ch, axis in zip(written[-2:], wanted):
            if letters.setdefault(axis, ch) != ch:
                return None
    tail = set(letters.values())
    if len(tail) != 3 or tail & set(lead) or not (lead == "..." or lead.isalpha() and len(set(lead)) == len(lead)):
        return None
    return call.args[1].value, call.args[2].value


# A tensor's attributes and methods that give a Python number: `k.size(-1)`, `k.shape[-1]`.
_SIZES = ("size", "shape", "ndim", "dim", "numel")


def _sized(ctx, node: cst.Name, root) -> bool:
    """node is the tensor of a size read under root (`math.sqrt(k.size(-1))`, `k.shape[-1] ** -0.5`):
    a number, whatever made the tensor (`k = torch.cat([past_k, k], dim=2)` was taken for a
    tensor-valued scale, and the fix dropped)."""
    child = node
    for anc in ctx.index.ancestors(node):
        if isinstance(anc, cst.Attribute) and anc.value is child and anc.attr.value in _SIZES:
            return True
        if anc is root:
            return False
        child = anc
    return False


def _tensor_valued(ctx, expr) -> bool:
    """expr calls torch or a tensor method that keeps a tensor (exp, clamp, sqrt...)."""
    for node in ctx.index.walk(expr):
        if isinstance(node, cst.Call):
            qn = ctx.names.qualified(node.func) or ""
            if qn.startswith("torch.") or (not qn and isinstance(node.func, cst.Attribute)
                                           and node.func.attr.value in ("exp", "sqrt", "clamp", "log", "rsqrt")):
                return True
    return False


def _conjunction(ctx, conditions) -> str:
    """`a and b` of condition expressions (one alone as written; `x or y` among several parenthesised)."""
    if len(conditions) == 1:
        return ctx.module.code_for_node(conditions[0])
    return " and ".join(
        f"({ctx.module.code_for_node(c)})" if isinstance(c, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr))
        and not c.lpar else ctx.module.code_for_node(c) for c in conditions)


def _payload_op(kind: str, payload, condition) -> _Op:
    if kind == "fill":
        cond, fill = payload
        return _Op("fill", cond, fill, condition)
    if kind == "add":
        return _Op("add", payload, None, condition)
    if kind in ("scale-mul", "scale-div") and condition is None:
        return _Op(kind, payload)
    raise _NoMatch


def _strip_self_op(ctx, value, name: str):
    """`s.masked_fill(c, f)` or `s + m` where s is `name` -> ("fill", (c, f)) / ("add", m)."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "masked_fill" \
            and isinstance(value.func.value, cst.Name) and value.func.value.value == name and len(value.args) == 2:
        return "fill", (value.args[0].value, value.args[1].value)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        if isinstance(value.left, cst.Name) and value.left.value == name:
            return "add", value.right
        if isinstance(value.right, cst.Name) and value.right.value == name:
            return "add", value.left
    return None


def _mentions(ctx, stmt, name: str) -> bool:
    for node in ctx.index.walk(stmt):
        if isinstance(node, cst.Name) and node.value == name:
            parent = ctx.parent(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is node:
                continue
            return True
    return False


def _defines(ctx, stmt, name: str):
    """How stmt (re)defines name: ("assign", value), ("fill", (cond, fill)), ("add", mask),
    ("if", (test, kind, payload)); None when it does something else with it."""
    if isinstance(stmt, cst.If) and stmt.orelse is None and isinstance(stmt.body, cst.IndentedBlock) \
            and not _mentions(ctx, stmt.test, name):
        # The last statement of the branch defines name; the ones before it prepare something
        # else (`mask = mask.unsqueeze(1)` before the masked_fill that reads it) and stay.
        *before, last = stmt.body.body
        if any(_mentions(ctx, s, name) for s in before):
            return None
        inner = _defines(ctx, last, name)
        if inner is None or inner[0] == "if":
            return None
        kind, payload = inner
        if kind == "assign":
            # a mask op on name itself, or (for the weights) an optional dropout of them
            kind, payload = _strip_self_op(ctx, payload, name) or ("assign", payload)
        return "if", (stmt.test, kind, payload)
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
            and small.targets[0].target.value == name:
        return "assign", small.value
    if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) and small.target.value == name \
            and isinstance(small.operator, cst.AddAssign) and not _mentions(ctx, small.value, name):
        return "add", small.value
    # In-place scaling: `attn *= self.scale`, `attn /= math.sqrt(d)`.
    if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) and small.target.value == name \
            and isinstance(small.operator, (cst.MultiplyAssign, cst.DivideAssign)) and not _mentions(ctx, small.value, name):
        return ("scale-mul" if isinstance(small.operator, cst.MultiplyAssign) else "scale-div"), small.value
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        call = small.value
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "masked_fill_" and isinstance(func.value, cst.Name) \
                and func.value.value == name and len(call.args) == 2 and not _mentions(ctx, call.args[0].value, name):
            return "fill", (call.args[0].value, call.args[1].value)
    return None


def _arg(call: cst.Call, index: int, keyword: str):
    for a in call.args:
        if a.keyword is not None and a.keyword.value == keyword:
            return a.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index].value if index < len(positional) else None


def _is_softmax_call(ctx, expr, rule) -> bool:
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if ctx.names.qualified(func) in _SOFTMAX:
        return True
    return isinstance(func, cst.Attribute) and func.attr.value == "softmax"


def _infinite(ctx, expr) -> bool:
    """-inf: float("-inf"), -math.inf, -torch.inf, -np.inf."""
    return ctx.code(expr).replace(" ", "") in (
        "float('-inf')", 'float("-inf")', "-float('inf')", '-float("inf")', "-math.inf", "-torch.inf", "-np.inf",
        "-numpy.inf", "float('-Inf')", 'float("-Inf")')


def _very_negative(ctx, expr) -> bool:
    """-inf, float("-inf"), -math.inf, torch.finfo(dt).min, -torch.finfo(dt).max, or a literal <= -1e4."""
    code = ctx.code(expr).replace(" ", "")
    if _infinite(ctx, expr):
        return True
    if ".finfo(" in code and (code.endswith(".min") or (code.startswith("-") and code.endswith(".max"))):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) \
            and isinstance(expr.expression, (cst.Integer, cst.Float)):
        return FileContext.number(expr) <= -1e4  # -1e9, -10000, -0x10000
    return False


def _attend(ctx, cond, condition) -> str:
    """SDPA's boolean attn_mask (True = attend) from masked_fill's condition (True = mask out)."""
    if isinstance(cond, cst.Comparison) and len(cond.comparisons) == 1 and type(cond.comparisons[0].operator) in _INVERT:
        target = cond.comparisons[0]
        flipped = cond.with_changes(comparisons=[target.with_changes(operator=_INVERT[type(target.operator)]())],
                                    lpar=(), rpar=())
        code = ctx.module.code_for_node(flipped)
    elif isinstance(cond, cst.UnaryOperation) and isinstance(cond.operator, cst.BitInvert):
        code = ctx.code(cond.expression.with_changes(lpar=(), rpar=()) if not isinstance(
            cond.expression, (cst.BinaryOperation, cst.Comparison, cst.BooleanOperation)) else cond.expression)
    elif isinstance(cond, cst.Call) and isinstance(cond.func, cst.Attribute) and cond.func.attr.value == "logical_not" \
            and not cond.args:
        # logical_not takes any dtype: a float 0/1 keep-mask passed as it is would be an additive mask
        code = f"{_atom(ctx.code(cond.func.value), cond.func.value)}.bool()"
    elif isinstance(cond, cst.Call) and ctx.names.qualified(cond.func) == "torch.logical_not" and len(cond.args) == 1:
        code = f"{_atom(ctx.code(cond.args[0].value), cond.args[0].value)}.bool()"
    else:
        code = f"~{_atom(ctx.code(cond), cond)}"
    # `m if m is not None else None` is just `m` (SDPA takes None for no mask).
    if condition is not None and ctx.code(condition).replace(" ", "") != f"{code}isnotNone".replace(" ", ""):
        code = f"{code} if {ctx.code(condition)} else None"
    return code


def _sqrt_of(ctx, expr, inverse: bool = False):
    """X for `math.sqrt(X)` / `X ** 0.5` (inverse: for `1 / math.sqrt(X)`, `X ** -0.5`)."""
    if isinstance(expr, cst.BinaryOperation) and inverse:
        if isinstance(expr.operator, cst.Divide) and ctx.number(expr.left) == 1.0:
            return _sqrt_of(ctx, expr.right)
        if isinstance(expr.operator, cst.Power) and ctx.number(expr.right) == -0.5:
            return expr.left
        return None
    if inverse:
        return None
    if isinstance(expr, cst.Call) and len(expr.args) == 1 and (ctx.dotted(expr.func) or "").endswith("sqrt") \
            and (ctx.names.qualified(expr.func) or "").split(".")[0] in ("math", "numpy", "np"):
        return expr.args[0].value
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Power) and ctx.number(expr.right) == 0.5:
        return expr.left
    return None


def _is_head_dim(ctx, expr, att: _Attention) -> bool:
    """expr is q's (or k's) last dimension: `q.size(-1)`, `k.shape[-1]`."""
    for tensor in (att.q, att.k):
        name = ctx.code(tensor)
        code = ctx.code(expr).replace(" ", "")
        if code in (f"{name}.size(-1)", f"{name}.shape[-1]"):
            return True
    return False


def _square_slice(ctx, sub: cst.Subscript) -> bool:
    """`x[..., :T, :T]` (leading full slices, the last two `:T` with the same T)."""
    elements = [e.slice for e in sub.slice]
    if len(elements) < 2:
        return False
    *lead, a, b = elements
    for e in lead:
        if not (isinstance(e, cst.Slice) and e.lower is None and e.upper is None and e.step is None):
            return False
    for e in (a, b):
        if not (isinstance(e, cst.Slice) and e.lower is None and e.upper is not None and e.step is None):
            return False
    return ctx.code(a.upper) == ctx.code(b.upper)


# Methods that reshape or retype a mask without changing which entries are set.
_SHAPE_METHODS = frozenset({"view", "reshape", "unsqueeze", "expand", "bool", "to", "type", "float", "int", "byte",
                            "long", "half", "contiguous", "clone", "detach"})


def _triangle(ctx, expr, depth: int = 0) -> str | None:
    """"tril" for `tril(ones(n, n))`, "triu1" for `triu(ones(n, n), diagonal=1)`, either one only
    reshaped or retyped (`.view(1, 1, n, n)`, `[None, None]`, `.bool()`), directly or through a name
    assigned it once; None for anything else (`1 - tril(...)`, `tril(...).T`, `tril(...) if causal
    else ones(...)` are not causal masks)."""
    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                and expr.func.attr.value in _SHAPE_METHODS and ctx.names.qualified(expr.func) is None:
            expr = expr.func.value
        elif isinstance(expr, cst.Subscript) and all(
                isinstance(e.slice, cst.Index) and isinstance(e.slice.value, (cst.Name, cst.Ellipsis))
                and getattr(e.slice.value, "value", "None") == "None" or isinstance(e.slice.value, cst.Ellipsis)
                if isinstance(e.slice, cst.Index) else
                isinstance(e.slice, cst.Slice) and e.slice.lower is None and e.slice.upper is None and e.slice.step is None
                for e in expr.slice):
            expr = expr.value  # `[None, None]`, `[:, None]`: a new axis
        else:
            break
    if isinstance(expr, cst.Name) and depth < 2:
        values = ctx.assigned_values(expr)
        return _triangle(ctx, values[0], depth + 1) if len(values) == 1 else None
    if not isinstance(expr, cst.Call):
        return None
    qn = ctx.names.qualified(expr.func)
    if qn not in (_TRIL, _TRIU) or not expr.args:
        return None
    ones = expr.args[0].value
    if not (isinstance(ones, cst.Call) and ctx.names.qualified(ones.func) in ("torch.ones", "torch.full")):
        return None
    dims = [a for a in ones.args if a.keyword is None]
    if ctx.names.qualified(ones.func) == "torch.ones" and (len(dims) != 2 or ctx.code(dims[0].value) != ctx.code(dims[1].value)):
        return None
    diagonal = _arg(expr, 1, "diagonal")
    d = _int_literal(diagonal) if diagonal is not None else 0
    if qn == _TRIL and d == 0:
        return "tril"
    if qn == _TRIU and d == 1:
        return "triu1"
    return None
