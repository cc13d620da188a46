"""How the module uses parameters' gradients (`p.grad`).

Two fixes change what a `.grad` holds. TL302's `gradient_as_bucket_view=True` makes every
gradient a view into DDP's all-reduce bucket: code that replaces the gradient or its storage
(`p.grad = ...`, `p.grad.data = ...`) or detaches it in place breaks. TL602's
`zero_grad()` (set_to_none) leaves `None` where a zero tensor was: code that reads `p.grad`
without a None check crashes for a parameter that got no gradient on a step. Both are read over
the whole module, since the gradients are the parameters' wherever the code that touches them is.
"""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from trainlint.analysis.tree import TreeIndex

# In-place methods that a gradient which is a view cannot take ("Can't detach views in-place").
_IN_PLACE_DETACH = ("detach_", "requires_grad_")


class Grads:
    def __init__(self, index: TreeIndex) -> None:
        self.index = index

    @cached_property
    def uses(self) -> list[cst.Attribute]:
        """Every `X.grad` that is a gradient: not a call's function (`torch.autograd.grad(...)`,
        `jax.grad(f)`), in document order."""
        parent = self.index.parent
        return [node for node in self.index.nodes(cst.Attribute) if node.attr.value == "grad"
                and not (isinstance(parent.get(node), cst.Call) and parent[node].func is node)]

    @cached_property
    def replaced(self) -> cst.CSTNode | None:
        """The first statement part that replaces a gradient or its storage, or detaches it in
        place: the target of `p.grad = ...` or `p.grad.data = ...`, or the call
        `p.grad.detach_()`/`p.grad.requires_grad_(...)`; None when the module does none of these.
        (`p.grad.data *= s`, `p.grad.mul_(s)` change it in place, which a view allows.)"""
        parent = self.index.parent
        for grad in self.uses:
            up = parent.get(grad)
            if isinstance(up, cst.AssignTarget) and up.target is grad:
                return grad
            if isinstance(up, cst.Attribute) and up.value is grad:
                holder = parent.get(up)
                if up.attr.value == "data" and isinstance(holder, cst.AssignTarget) and holder.target is up:
                    return up
                if up.attr.value in _IN_PLACE_DETACH and isinstance(holder, cst.Call) and holder.func is up:
                    return holder
        return None
