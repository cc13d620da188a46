"""Which expressions are tensors, well enough to keep the host-sync rules precise.

A value is a tensor when it comes from a torch call, a model or loss-function call, a tensor
method, arithmetic on a tensor, a batch drawn from a loader, a parameter of a module the file
moves to a device (`model.weight`, `p` of `for p in model.parameters()`), or a name assigned
from one of those in the same function. Names like `loss` count by convention. Unknown stays unknown: the
rules only fire on values this analysis believes are tensors.

Which values are known to be in host memory (`on_host`: a numpy value, a tensor made without a
device, a tensor of a batch that arrives on the host) is asked here too: reading one waits for
no GPU.
"""

from __future__ import annotations

import re
from functools import cached_property

import libcst as cst

from trainlint.analysis.batches import copies_to_host, host_batch_loops, is_cpu_device, is_device_move, over_loader_name
from trainlint.analysis.devices import neutral_module
from trainlint.analysis.names import bound_names, dotted
from trainlint.analysis.paths import may_name, path_forms
from trainlint.analysis.tree import LIST_ADDS, binding_targets, is_none, parameter, parameter_annotation, walk
from trainlint.analysis.variables import is_variable, reaching_value

# torch functions that do not return tensors.
_NON_TENSOR_TORCH = re.compile(
    r"^torch\.(cuda\.|backends\.|distributed\.|device$|manual_seed|is_\w+|no_grad|"
    r"enable_grad|inference_mode|set_\w+|get_\w+|save$|load$|compile$|jit\.|optim\.|"
    # torch.nn's modules and utilities make no tensor, but for its functions and the gradient
    # norm clip_grad_norm_ returns (the total norm, a tensor on the gradients' device).
    r"nn\.(?!functional|utils\.(clip_grad\.)?(clip_grad_norm_?|get_total_norm)$)|"
    r"utils\.|autograd\.grad_mode|amp\.|profiler\.|Size$|dtype$|finfo|iinfo|numel$|use_deterministic)"
)
_TENSOR_METHODS = frozenset(
    {
        "mean", "sum", "detach", "to", "cuda", "float", "half", "bfloat16", "double", "long", "int",
        "clone", "view", "reshape", "squeeze", "unsqueeze", "abs", "sqrt", "exp", "log", "max", "min",
        "argmax", "argmin", "norm", "pow", "mul", "add", "sub", "div", "softmax", "log_softmax",
        "contiguous", "masked_fill", "flatten", "permute", "transpose", "type_as", "eq", "ne", "gt",
        "lt", "all", "any", "std", "var", "square", "sigmoid", "tanh", "relu", "t", "matmul",
        "isnan", "isinf", "isfinite", "isneginf", "isposinf", "logical_not", "logical_and", "logical_or",
    }
)
_MODEL_NAMES = re.compile(r"^(model|net|module|encoder|decoder|criterion|loss_fn|loss_func|lossfn|compute_loss|"
                          r"\w*_model|\w*_net|\w*criterion|\w*loss_fn)$", re.IGNORECASE)
# `loss_ce`, `loss_total` are losses; `loss_scale`, `loss_weight`, `loss_fn` are settings of one
# (deepspeed's `if self.clip_grad == 0.0 and self.loss_scale == 1.0:` compares two floats).
_TENSOR_NAMES = re.compile(r"^(loss|losses|\w+_loss|loss_(?!(scale|scaler|scaling|weights?|coeff?|factor|fn|func|"
                           r"function|type|cfg|config|name|kwargs|args|mode|reduction)$)\w+|logits|outputs?|preds?|"
                           r"predictions|grad_norm|total_norm|acc|accuracy|correct)$", re.IGNORECASE)
# torch functions that make a new tensor, on the CPU unless told a device.
_FACTORIES = re.compile(r"^torch\.(tensor|zeros|ones|full|empty|arange|linspace|logspace|eye|rand|randn|randint|"
                        r"randperm|from_numpy)$")
_TENSOR_ATTRS = frozenset({"loss", "logits", "grad", "data", "last_hidden_state"})
# Tensor methods whose result is on the device of the tensor they are called on: what they make of
# a host tensor is on the host too (`.to` keeps it only when it is not a device move).
_KEEPS_DEVICE = frozenset({
    "long", "int", "short", "bool", "byte", "char", "float", "double", "half", "bfloat16", "type_as", "clone",
    "detach", "contiguous", "view", "view_as", "reshape", "reshape_as", "squeeze", "unsqueeze", "flatten", "permute",
    "transpose", "t", "expand", "expand_as", "repeat", "narrow", "split", "chunk", "unbind", "sum", "mean", "max",
    "min", "argmax", "argmin", "sort", "argsort", "unique", "nonzero", "masked_select", "masked_fill", "eq", "ne",
    "gt", "ge", "lt", "le", "all", "any", "abs", "neg", "pow", "add", "sub", "mul", "div", "numel", "size", "dim",
    "pin_memory", "astype", "copy", "ravel", "argwhere", "gather", "index_select", "take", "repeat_interleave",
    "clamp", "clip", "round", "floor", "ceil", "trunc", "sign", "cumsum", "cumprod", "prod", "logsumexp", "amax",
    "amin", "count_nonzero", "bincount", "diff", "diag", "tril", "triu", "flip", "roll", "where", "nan_to_num",
    "isclose", "topk", "kthvalue", "median",
})
# Methods that give a tensor when called on one (`logits.nonzero()`, as `torch.nonzero(logits)`):
# the pure ones above that keep the device, but for those giving a number or a numpy value.
_TENSOR_RESULTS = _TENSOR_METHODS | (_KEEPS_DEVICE - {"numel", "size", "dim", "astype", "copy"})
# torch functions whose result is on the device of the tensors they are given (`torch.bincount(y)`,
# `torch.sum(y)`): what they make of host tensors is on the host too.
_TORCH_KEEPS_DEVICE = frozenset({f"torch.{name}" for name in _KEEPS_DEVICE - {"pin_memory", "astype", "copy"}}
                                | {"torch.bincount", "torch.histc", "torch.cumsum", "torch.clamp", "torch.exp",
                                   "torch.log", "torch.sqrt", "torch.softmax", "torch.log_softmax", "torch.where",
                                   "torch.topk", "torch.bucketize", "torch.isnan", "torch.isfinite", "torch.round"})
# Loaders that restore tensors where told: the keyword, and its position when passed by position.
_LOADERS = {"torch.load": ("map_location", 1), "safetensors.torch.load_file": ("device", 1)}
# What these give is on the host, whatever they are called on (the call is where any wait is); so
# is what a copy to the host gives (`.cpu()`, `.to("cpu")`: batches.copies_to_host, _gives_host).
_TO_HOST = frozenset({"numpy", "tolist", "item"})
# Reads of a container (a batch that is a dict): the values they give are the ones it holds.
_ACCESSORS = frozenset({"get", "values", "items", "keys"})
# In-place arithmetic methods: `t.add_(v)` is `t += v`, which never moves t (a device operand of a
# host tensor would raise). Not `copy_`, which may copy from the device (a wait of its own).
_IN_PLACE_ARITHMETIC = frozenset({"add_", "sub_", "mul_", "div_"})
# Methods of a batch that leave what it holds where it is.
_READS = _ACCESSORS | _KEEPS_DEVICE | _TO_HOST | {"cpu"}


def _gives_host(ctx, call: cst.Call) -> bool:
    """What call gives is in host memory, whatever it is called on: `.item()`, `.numpy()`,
    `.tolist()`, or a copy to the host (`.cpu()`, `.to("cpu")`, also non-blocking)."""
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value in _TO_HOST or copies_to_host(ctx, call)


def pure_tensor_method(attr: str) -> bool:
    """A tensor method that makes a new value (or reads one) and changes nothing: `.norm()`,
    `.mean()`, `.item()`, `.size()`; not an in-place one (`add_`) or `backward`. A line that only
    logs what such calls make does nothing else (TL201's fix guards it as TL202 does)."""
    return attr in _TENSOR_METHODS or attr in _READS


# torch.nn's module classes (`torch.nn.Linear`, `torch.nn.modules.conv.Conv2d`), not its parallel wrappers.
_NN_MODULE = re.compile(r"^torch\.nn\.(modules\.[a-z_]+\.)?[A-Z]\w*$")
# torch.nn's containers, whose arguments are modules (a layer's are its settings).
_NN_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"})
# Methods that move a module's weights to an accelerator (`to` is asked of is_device_move).
_MODULE_MOVES = frozenset({"cuda", "xpu", "mps", "npu", "ipu", "to_empty"})


class Tensors:
    def __init__(self, ctx) -> None:
        self.ctx = ctx  # the FileContext: on_host asks the loader analysis (batches.py) through it
        self.index = index = ctx.index
        self.names = ctx.names
        self._scopes: dict[cst.CSTNode | None, dict[str, list[cst.BaseExpression]]] = {}
        self._loop_targets: dict[cst.CSTNode | None, set[str]] = {}
        # function -> its parameters' arguments, while on_device follows a call into it.
        self._passed: dict[cst.CSTNode, dict[str, cst.BaseExpression]] = {}
        self._host_params: dict[tuple, bool] = {}  # (function, parameter) -> _host_parameter's answer
        self._parameters_on_host: dict[tuple, bool] = {}  # (function, parameter, field) -> _parameter_on_host's
        # function -> (its parameters' arguments, the caller's scope, the caller's `seen`), while
        # _number follows a call into it (_returns_number).
        self._number_calls: dict[cst.FunctionDef, tuple[dict, cst.CSTNode | None, frozenset]] = {}
        self._number_budget = 0  # names _number may still look up for the question is_tensor asks
        for assign in index.nodes(cst.Assign):
            scope = index.enclosing_function(assign)
            table = self._scopes.setdefault(scope, {})
            for target in assign.targets:
                self._bind(table, target.target, assign.value)
        for assign in index.nodes(cst.AugAssign):
            scope = index.enclosing_function(assign)
            name = dotted(assign.target)
            if name:
                self._scopes.setdefault(scope, {}).setdefault(name, []).append(assign.value)
        for assign in index.nodes(cst.AnnAssign):
            if assign.value is not None:
                scope = index.enclosing_function(assign)
                self._bind(self._scopes.setdefault(scope, {}), assign.target, assign.value)
        # `(cur := loss)` binds as `cur = loss` does (in a comprehension too, the function's name).
        for named in index.nodes(cst.NamedExpr):
            scope = index.enclosing_function(named)
            self._bind(self._scopes.setdefault(scope, {}), named.target, named.value)
        for loop in index.nodes(cst.For):
            if over_loader_name(loop):
                scope = index.enclosing_function(loop)
                targets = self._loop_targets.setdefault(scope, set())
                target = loop.target
                if isinstance(loop.iter, cst.Call) and dotted(loop.iter.func) == "enumerate" and \
                        isinstance(target, cst.Tuple) and len(target.elements) == 2:
                    target = target.elements[1].value
                for node in index.walk(target):
                    if isinstance(node, cst.Name):
                        targets.add(node.value)

    @staticmethod
    def _bind(table, target, value) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            values = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
            if values is not None and len(values) == len(target.elements) and not any(
                    isinstance(e, (cst.StarredElement, cst.StarredDictElement)) for e in (*values, *target.elements)):
                # `avg, best = 0.0, float("inf")`: each name gets its own value.
                for element, part in zip(target.elements, values):
                    Tensors._bind(table, element.value, part.value)
                return
            for element in target.elements:
                # Unpacked results of a tensor expression (e.g. `logits, loss = model(x)`).
                Tensors._bind(table, element.value, value)
            return
        name = dotted(target)
        if name:
            table.setdefault(name, []).append(value)

    def is_tensor(self, expr: cst.BaseExpression, _depth: int = 0) -> bool:
        if _depth > 6:
            return False
        names = self.names
        if isinstance(expr, cst.NamedExpr):  # `(cur := loss)` is the value it binds
            return self.is_tensor(expr.value, _depth + 1)
        if isinstance(expr, cst.Call):
            func = expr.func
            qn = names.qualified(func)
            if qn is not None:
                return qn.startswith("torch.") and not _NON_TENSOR_TORCH.match(qn)
            if isinstance(func, cst.Attribute):
                attr = func.attr.value
                if attr in _TENSOR_RESULTS:
                    return self.is_tensor(func.value, _depth + 1) or attr in ("detach", "cuda", "float", "mean", "sum", "norm")
                if attr in ("item", "tolist", "numpy", "size", "dim", "numel"):
                    return False
            callee = dotted(func) or ""
            return bool(_MODEL_NAMES.match(callee.rsplit(".", 1)[-1]))
        if isinstance(expr, cst.BinaryOperation):
            return self.is_tensor(expr.left, _depth + 1) or self.is_tensor(expr.right, _depth + 1)
        if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1 and not isinstance(
                expr.comparisons[0].operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
            # `ids != 0` of a tensor is a tensor of bools (`(ids != 0).long()`: the attention mask).
            return self.is_tensor(expr.left, _depth + 1) or self.is_tensor(expr.comparisons[0].comparator, _depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self.is_tensor(expr.expression, _depth + 1)
        if isinstance(expr, cst.Subscript):
            return self.is_tensor(expr.value, _depth + 1)
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in _TENSOR_ATTRS or self.is_device_parameter(expr):
                return True
            if expr.attr.value in ("shape", "dtype", "device", "ndim"):
                return False
        if isinstance(expr, (cst.Name, cst.Attribute)):
            name = dotted(expr)
            if name is None:
                return False
            last = name.rsplit(".", 1)[-1]
            scope = self.index.enclosing_function(expr)
            values = self._scopes.get(scope, {}).get(name, ())
            # What is assigned beats what the name suggests: `current_loss = loss.item()` is a
            # float (simpletransformers logs it every step; that read is TL201's, not TL202's),
            # and so is `prev_loss = loss` after `loss = loss.item()` (timm's optimizer tests).
            # An attribute of self is assigned in every method of its class (`self.avg_loss = 0.0`
            # in `__init__`, `self.avg_loss = self.update_average(loss, self.avg_loss)` per step).
            self._number_budget = _NUMBER_LOOKUPS
            if values and self._assigned_numbers(name, scope, frozenset({name})):
                return False
            # `if loss.item() < TARGET_LOSS:`: a constant of the module, named like a loss.
            if not values and self._module_numbers(expr, frozenset({name})):
                return False
            # `loss = loss.item()` earlier in the same straight-line code: a float from there on.
            if any(_host_value(v) for v in values):
                reaching = reaching_value(self.index, expr, name)
                if reaching is not None and _host_value(reaching):
                    return False
            if _TENSOR_NAMES.match(last):
                # A parameter every call of its function hands a Python number (`check(loss.item(),
                # 10)`): named like a tensor, it holds a float.
                return not (isinstance(expr, cst.Name) and self._host_parameter(expr, scope))
            if name in self._loop_targets.get(scope, ()):
                return True
            if isinstance(expr, cst.Name) and self.is_device_parameter(expr):
                return True
            for value in values or self._module_values(expr) or ():
                if value is not expr and self.is_tensor(value, _depth + 1):
                    return True
        return False

    # -- parameters of a module on the device --------------------------------------------

    def is_device_parameter(self, expr: cst.BaseExpression) -> bool:
        """expr is a parameter (or buffer) of a module the file moves to a device: `X.weight`,
        `X[0].weight`, `X.fc.bias`, a buffer the file registers (`X.ema`) of such a module X, or
        the loop target of a `for` over
        `X.parameters()` / `X.buffers()` (the second name of `X.named_parameters()` /
        `X.named_buffers()`) that holds expr. Parameters were once not known to be tensors at all,
        so a per-step `writer.add_histogram(name, p, step)` or `print(model.weight)` went unseen.
        A module never moved to a device keeps its parameters on the host (reading them waits
        for no GPU), and an object whose `parameters()` the file does not show to be a module's may
        give anything: neither counts."""
        if isinstance(expr, cst.Attribute):
            return (expr.attr.value in ("weight", "bias") or expr.attr.value in self._buffer_names()) \
                and self._of_device_module(expr.value)
        if not isinstance(expr, cst.Name):
            return False
        for loop in self._parameter_loops().get(expr.value, ()):
            if self.index.contains(loop.body, expr):
                return True
        return False

    def _buffer_names(self) -> frozenset[str]:
        """The names the file's modules register buffers under (`self.register_buffer("ema",
        torch.zeros(1))`): `net.ema` of a module on the device is a tensor there."""
        if not hasattr(self, "_buffer_names_found"):
            names = set()
            for call in self.index.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == "register_buffer" and call.args \
                        and isinstance(call.args[0].value, cst.SimpleString):
                    names.add(call.args[0].value.evaluated_value)
            self._buffer_names_found = frozenset(n for n in names if isinstance(n, str))
        return self._buffer_names_found

    def _of_device_module(self, expr: cst.BaseExpression) -> bool:
        """expr is a module the file moves to a device, or a submodule taken from one
        (`model.fc`, `model[0]`, `self.model.encoder`)."""
        modules = self._device_modules()
        while True:
            if dotted(expr) in modules:
                return True
            if isinstance(expr, (cst.Attribute, cst.Subscript)):
                expr = expr.value
            else:
                return False

    def _parameter_loops(self) -> dict[str, list[cst.For]]:
        """name -> the `for` loops that bind it to a parameter or buffer of a module on the device
        (`for p in model.parameters():`, `for name, p in model.named_parameters():`)."""
        if not hasattr(self, "_parameter_loops_found"):
            found: dict[str, list[cst.For]] = {}
            for loop in self.index.nodes(cst.For):
                it, target = loop.iter, loop.target
                if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and not it.args
                        and self._of_device_module(it.func.value)):
                    continue
                method = it.func.attr.value
                if method in ("parameters", "buffers") and isinstance(target, cst.Name):
                    found.setdefault(target.value, []).append(loop)
                elif method in ("named_parameters", "named_buffers") and isinstance(target, (cst.Tuple, cst.List)) \
                        and len(target.elements) == 2 and isinstance(target.elements[1].value, cst.Name):
                    found.setdefault(target.elements[1].value.value, []).append(loop)
            self._parameter_loops_found = found
        return self._parameter_loops_found

    def _device_modules(self) -> frozenset[str]:
        """The (dotted) names of the nn.Modules the file moves to a device: a name assigned a
        module of torch.nn (`nn.Linear(...)`) or of a class of the file that subclasses nn.Module,
        or whose `parameters()` an optimizer of torch.optim is given (the model the loop trains),
        and that the file copies to a device (`model.to(device)`, `model.cuda()`, `model =
        Net().to(device)`). Names are taken file-wide (`self.model` set in `__init__`, read in
        `train`): a module name is seldom another value elsewhere."""
        if not hasattr(self, "_device_modules_found"):
            modules, moved = set(), set()
            classes = self._module_classes()
            for assign in self.index.nodes(cst.Assign):
                value, was_moved = assign.value, False
                while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                        and isinstance(value.func.value, cst.Call):
                    was_moved = was_moved or is_device_move(self.ctx, value)
                    value = value.func.value  # `Net().to(device).train()`
                if not isinstance(value, cst.Call):
                    continue
                qn = self.names.qualified(value.func) or ""
                last = qn.rsplit(".", 1)[-1]
                local = isinstance(value.func, cst.Name) and value.func.value in classes
                if (qn.startswith("torch.nn.") and last[:1].isupper() and last != "Parameter") or local:
                    for target in assign.targets:
                        name = dotted(target.target)
                        if name:
                            modules.add(name)
                            if was_moved:
                                moved.add(name)
            for call in self.index.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Attribute) and is_device_move(self.ctx, call) and dotted(func.value):
                    moved.add(dotted(func.value))  # `model.to(device)`, `model = model.cuda()`
                qn = self.names.qualified(func) or ""
                first = call.args[0].value if call.args else None
                if qn.startswith("torch.optim.") and isinstance(first, cst.Call) and isinstance(first.func, cst.Attribute) \
                        and first.func.attr.value == "parameters" and dotted(first.func.value):
                    modules.add(dotted(first.func.value))  # `SGD(model.parameters(), ...)`: the model trained
            self._device_modules_found = frozenset(modules & moved)
        return self._device_modules_found

    def _module_classes(self) -> set[str]:
        """Classes of the file that subclass torch.nn.Module, directly or through another such class."""
        classes: set[str] = set()
        defs = self.index.nodes(cst.ClassDef)
        changed = True
        while changed:
            changed = False
            for cls in defs:
                if cls.name.value in classes:
                    continue
                for base in cls.bases:
                    qn = self.names.qualified(base.value) or ""
                    if qn == "torch.nn.Module" or (isinstance(base.value, cst.Name) and base.value.value in classes):
                        classes.add(cls.name.value)
                        changed = True
                        break
        return classes

    def _host_parameter(self, name: cst.Name, scope) -> bool:
        """name is a parameter of its function (not bound again there), and each call of the
        function in the module hands it a Python number or string (`_host_value`)."""
        if not isinstance(scope, cst.FunctionDef) or name.value in self._scopes.get(scope, {}) \
                or parameter(scope, name.value) is None:
            return False
        key = (scope, name.value)  # is_tensor asks for every read of the name: once per parameter
        if key not in self._host_params:
            self._host_params[key] = self._every_call_hands_a_number(scope, name.value)
        return self._host_params[key]

    def _every_call_hands_a_number(self, scope: cst.FunctionDef, param: str) -> bool:
        """Each call of scope hands param a Python number or string (`_host_value`), as
        Loops.handed_to finds the calls: not known where the function is also handed on (a
        callback, which its caller may give anything) or a call leaves param to its default."""
        handed = self.ctx.loops.handed_to(scope, param)
        return bool(handed) and all(_host_value(arg.value) for arg, _call in handed)

    def _number(self, value: cst.BaseExpression, scope, seen: frozenset) -> bool:
        """value is a Python number or string: one for certain (`_host_value`, `math.inf`); a call
        of the file's functions each `return` of which gives one (_returns_number); a name every
        assignment of which in its function makes one (_assigned_numbers: a name already being
        asked about, `avg` in `avg = 0.9 * avg + 0.1 * x`, counts); arithmetic of those with at
        least one of them, the rest names nothing makes a tensor (a parameter such as `smooth`, a
        range counter): `smooth * loss.item() + (1 - smooth) * avg`."""
        if _host_value(value) or self.names.qualified(value) in _FLOAT_CONSTANTS:
            return True
        if self._parsed_text(value, scope):
            return True
        if isinstance(value, cst.Call):
            return self._returns_number(value, scope, seen)
        if isinstance(value, (cst.UnaryOperation, cst.NamedExpr)):
            return self._number(value.expression if isinstance(value, cst.UnaryOperation) else value.value, scope, seen)
        if isinstance(value, cst.BinaryOperation):
            # Each side is asked once: asked twice, a chain `a | b | c | ...` (a type union of 40
            # classes in diffusers) took time doubling with every operator.
            left = self._number(value.left, scope, seen)
            if not left and not self._untyped(value.left, scope):
                return False
            right = self._number(value.right, scope, seen)
            return (left or right) and (right or self._untyped(value.right, scope))
        name = dotted(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
        if name is None:
            return False
        if name in seen:
            return True
        reaching = reaching_value(self.index, value, name)
        if reaching is not None:
            return self._number(reaching, scope, seen | {name})
        if self._module_numbers(value, seen | {name}):
            return True
        return len(seen) < 6 and self._assigned_numbers(name, scope, seen | {name})

    def _module_values(self, use: cst.BaseExpression) -> list[cst.BaseExpression] | None:
        """The values the module assigns the variable that use, a name read in a function, reads
        (`STOP_BELOW = 0.05` at the top, read in `fit`); None when use reads no module variable
        (its function binds the name, or nothing does) or the module binds it other than by plain
        assignments (a loop, an import, `+=`, a function's `global`): then what it holds is not
        plain to see."""
        if not isinstance(use, cst.Name) or self.index.enclosing_function(use) is None:
            return None
        bindings = self.ctx.bindings
        if not bindings.reads_module(use):
            return None
        found = bindings.of(use.value).get(None, ())
        if not found or any(kind != "assign" or value is None for kind, value in found):
            return None
        return [value for _kind, value in found]

    def _module_numbers(self, use: cst.BaseExpression, seen: frozenset) -> bool:
        """use reads a module variable every assignment of which gives a number (_number):
        a constant, whatever its name says (`TARGET_LOSS = 0.1`)."""
        values = self._module_values(use)
        return bool(values) and all(self._number(v, None, seen) for v in values)

    def _assigned_numbers(self, name: str, scope, seen: frozenset) -> bool:
        """Every value name is given is a number (`_number`, seen holding name) or None: each
        assignment in its function, and for a parameter of it also what the call being followed
        hands it (`avg_loss += float(loss) / self.step` adds a number to what came in). An
        attribute of self is given values in every method of its class: all of them count, and a
        part of what a text format parsed (`self.step = state["step"]` after `state =
        yaml.safe_load(f)`) is a number or string too. A parameter of a function not being followed
        holds a number when every call of it hands one (_every_call_hands_a_number).

        Each value may name other attributes, each with the values its class gives it: past
        _NUMBER_LOOKUPS names for one question, the answer is "not known" rather than slow."""
        self._number_budget -= 1
        if self._number_budget < 0:
            return False
        if name.startswith("self.") and isinstance(scope, cst.FunctionDef):
            cls = self.index.enclosing_class(scope)
            methods = [stmt for stmt in cls.body.body if isinstance(stmt, cst.FunctionDef)] \
                if cls is not None else [scope]
            if scope not in methods:
                methods.append(scope)  # a function nested in a method, `self` its closure's
            # Another method's local names are not this one's: only attributes stay assumed.
            shared = frozenset(n for n in seen if n.startswith("self."))
            given = [(v, fn) for fn in methods for v in self._scopes.get(fn, {}).get(name, ())]
            return bool(given) and all(self._number(v, fn, seen if fn is scope else shared) or is_none(v)
                                       for v, fn in given)
        values = self._scopes.get(scope, {}).get(name, ())
        if not values or not all(self._number(v, scope, seen) or is_none(v) for v in values):
            return False
        if isinstance(scope, cst.FunctionDef) and parameter(scope, name) is not None:
            followed = self._number_calls.get(scope)
            if followed is None:
                return self._every_call_hands_a_number(scope, name)
            arguments, caller, caller_seen = followed
            return name in arguments and self._number(arguments[name], caller, caller_seen)
        return True

    def _returns_number(self, call: cst.Call, scope, seen: frozenset) -> bool:
        """call runs functions of the file (every one it may run) each `return` of which gives a
        number (`def train(): ...; return loss.item()`), their parameters holding what call hands
        them (`self.update_average(loss, self.avg_loss)` returning `avg_loss` after adding numbers
        to it). Two calls down; a generator, a bare `return` or a call already followed (recursion)
        is not known."""
        callees = self.ctx.loops.callees(call)
        if not callees or len(self._number_calls) >= 2:
            return False
        for fn in callees:
            returns = self.index.returns(fn)
            if fn in self._number_calls or not returns or self.index.is_generator(fn) \
                    or any(r.value is None for r in returns):
                return False
            arguments = {param: arg.value for param, arg in self.ctx.loops.bind_args(fn, call) if not arg.star}
            self._number_calls[fn] = (arguments, scope, seen)
            try:
                if not all(self._number(r.value, fn, frozenset()) for r in returns):
                    return False
            finally:
                del self._number_calls[fn]
        return True

    def _parsed_text(self, value: cst.BaseExpression, scope) -> bool:
        """value is read out of what json, yaml or toml parsed (`state["step"]` after `state =
        yaml.safe_load(f)`), or out of a configuration parsed from the command line or a file:
        what `parser.parse_args()` or `OmegaConf.load` gives, or a parameter annotated as one
        (`cfg: DictConfig`, `args: argparse.Namespace`), read by item, attribute or `.get`
        (`cfg.get("kd_ratio", 0.5)`, torchtune's recipes). Numbers, strings, lists and dicts of
        them, never a tensor (OmegaConf holds primitive values only)."""
        while True:
            if isinstance(value, (cst.Subscript, cst.Attribute)):
                value = value.value
            elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                    and value.func.attr.value == "get":
                value = value.func.value
            else:
                break
        if isinstance(value, cst.Name):
            values = self._scopes.get(scope, {}).get(value.value, ())
            if not values and isinstance(scope, cst.FunctionDef):
                annotation = parameter_annotation(scope, value.value)
                return annotation is not None and self.names.qualified(annotation) in _CONFIG_CLASSES
            return bool(values) and all(self._parser_call(v) for v in values)
        return self._parser_call(value)

    def _parser_call(self, value: cst.BaseExpression) -> bool:
        """value calls a parser of text (_TEXT_PARSERS) or an argparse parser's `parse_args()`."""
        if not isinstance(value, cst.Call):
            return False
        func = value.func
        return self.names.qualified(func) in _TEXT_PARSERS \
            or (isinstance(func, cst.Attribute) and func.attr.value == "parse_args")

    def _untyped(self, value: cst.BaseExpression, scope) -> bool:
        """A name nothing in its function assigns and nothing marks as a tensor (a parameter, a
        loop counter), or a number literal's neighbour in arithmetic: not known to be a tensor."""
        if isinstance(value, cst.BinaryOperation):
            return self._untyped(value.left, scope) and self._untyped(value.right, scope)
        if isinstance(value, (cst.Integer, cst.Float)):
            return True
        if not isinstance(value, cst.Name):
            return False
        name = value.value
        return not self._scopes.get(scope, {}).get(name) and not _TENSOR_NAMES.match(name) \
            and name not in self._loop_targets.get(scope, ())

    def on_host(self, expr: cst.BaseExpression) -> bool:
        """expr's value is known to be in host memory, so reading it waits for no GPU: a Python
        number (`_host_value`); a numpy value; a tensor a torch factory makes without `device=`
        (`torch.randint(n, (1,))`); what `.cpu()`/`.numpy()` give; a tensor of a batch that arrives
        on the host (`batches.host_batch_loops`: `batch["ids"]`, `y` of `for x, y in loader`, or a
        name taken from it) read before anything moves it; and what indexing, an attribute,
        arithmetic, a comparison, a method that keeps the device (`ids.long()`, `perm[:k]`,
        `y == -100`) or a torch function given only such tensors (`torch.bincount(y)`) makes of
        such values. A name is followed back through the statements before
        the read to its assignment, or to the target of the loop whose body holds the read (also a
        comprehension's: `[v.item() for v in y]`, each element of a host value); through the
        iterable of a loop or comprehension, which reads the names around it (`for v in
        y.tolist():`); not across another loop's body or into a function."""
        return self._host(expr, 0, field=False)

    def in_host_memory(self, expr: cst.BaseExpression) -> bool:
        """expr is a tensor that lives in host memory, whatever it holds now: a name (or `self.x`)
        every assignment of which makes one there (on_host of the value: `torch.empty(n,
        device="cpu")`, `torch.zeros(n)` where the default device is the CPU, `x.cpu()`,
        `.pin_memory()`), or a view of one (`buf[:n]`, `buf.view(-1)`). In-place changes (`buf.copy_(
        x)`) never move a tensor, so unlike on_host this holds after a copy from the device too.
        Not known for a parameter or a name assigned nowhere here."""
        for _ in range(4):
            if isinstance(expr, cst.Subscript):
                expr = expr.value
            elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                    and expr.func.attr.value in _KEEPS_DEVICE:
                expr = expr.func.value
            else:
                break
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return False
        values = self.ctx.assigned_values(expr, anywhere=isinstance(expr, cst.Attribute))
        return bool(values) and all(self.on_host(v) for v in values)

    def on_device(self, expr: cst.BaseExpression) -> bool:
        """expr's value is a tensor on an accelerator, or may be one on some run: what a device
        copy gives (`x.cuda()`, `x.to(device)`; a device not known here counts, as
        batches.is_device_move reads it); a torch factory told a device other than the CPU
        (`torch.randn(n, device=device)`); what indexing, arithmetic or a method that keeps the
        device (`x.float()`, `x[idx]`) makes of such a tensor; a name whose assignment reaching
        expr gives one, or, when which assignment reaches it is not plain to see, one that some
        assignment of its function gives (`X = X.cuda()` under `if use_gpu:`). Also what
        `torch.load` gives with a `map_location` that is not the CPU (and the items of it: `data["x"]`),
        or with none, from a file the module `torch.save`s a tensor on the device into;
        a list (or a list display, a comprehension) holding such a tensor or appended one
        (`feats.append(encoder(x.to(device)))`); what a torch function (`torch.cat(feats)`) or a
        model call (`encoder(x)`, by its name as for is_tensor) makes of one; and what a function of
        the module returns (`feats = extract(encoder, images)`, two such calls down). The loader
        analysis asks it of a dataset's tensors: pinning them, or using them in forked workers, raises."""
        return self._device(expr, 0, 0)

    def _device(self, expr: cst.BaseExpression, depth: int, hops: int) -> bool:
        if depth > 8:
            return False
        if isinstance(expr, cst.NamedExpr):
            return self._device(expr.value, depth + 1, hops)
        if isinstance(expr, cst.Subscript):
            return self._device(expr.value, depth + 1, hops)
        if isinstance(expr, cst.UnaryOperation):
            return self._device(expr.expression, depth + 1, hops)
        if isinstance(expr, cst.BinaryOperation):
            # A CUDA tensor meets a CPU one only as a scalar: the result is on the CUDA tensor's device.
            return self._device(expr.left, depth + 1, hops) or self._device(expr.right, depth + 1, hops)
        if isinstance(expr, (cst.List, cst.Tuple)):
            return any(not isinstance(e, cst.StarredElement) and self._device(e.value, depth + 1, hops)
                       for e in expr.elements)
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self._device(expr.elt, depth + 1, hops)
        if isinstance(expr, cst.Dict):  # `{"x": feats, "y": labels}`, read back as `data["x"]`
            return any(isinstance(e, cst.DictElement) and self._device(e.value, depth + 1, hops)
                       for e in expr.elements)
        if isinstance(expr, cst.Call):
            return self._call_on_device(expr, depth, hops)
        if isinstance(expr, (cst.Name, cst.Attribute)):
            name = dotted(expr)
            if name is None:
                return False
            scope = self.index.enclosing_function(expr)
            # A parameter of a function followed into from a call (`return embed(feats)`): what the
            # call passes.
            passed = self._passed.get(scope, {}).get(name)
            if passed is not None and not self._scopes.get(scope, {}).get(name):
                return self._device(passed, depth + 1, hops)
            # A list filled in place: `feats.append(encoder(x.to(device)))`, then `torch.cat(feats)`.
            if any(self._device(arg.value, depth + 1, hops) for arg in self._appended(scope).get(name, ())):
                return True
            reaching = reaching_value(self.index, expr, name)
            if reaching is not None:
                return self._device(reaching, depth + 1, hops)
            return any(value is not expr and self._device(value, depth + 1, hops)
                       for value in self._scopes.get(scope, {}).get(name, ()))
        return False

    def _saved_from_device(self, load: cst.Call, depth: int, hops: int) -> bool:
        """A `torch.save(obj, path)` of the module writes the file `load` reads (a path built
        from the same parts, paths.may_name) with a tensor on the device in obj."""
        source = self.ctx.positional(load, 0) or self.ctx.keyword(load, "f")
        if source is None or source.star:
            return False
        forms = path_forms(self.ctx, source.value)
        for save in self.index.nodes(cst.Call):
            if (self.names.qualified(save.func) or "") != "torch.save":
                continue
            obj = self.ctx.positional(save, 0) or self.ctx.keyword(save, "obj")
            target = self.ctx.positional(save, 1) or self.ctx.keyword(save, "f")
            if obj is None or target is None or obj.star or target.star:
                continue
            if may_name(self.ctx, forms, target.value) and self._device(obj.value, depth + 1, hops):
                return True
        return False

    def _call_on_device(self, call: cst.Call, depth: int, hops: int) -> bool:
        qn = self.names.qualified(call.func) or ""
        if _FACTORIES.match(qn) or qn == "torch.as_tensor":
            device = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
            return device is not None and not is_cpu_device(self.ctx, device)
        if qn in _LOADERS:
            # `torch.load(path, map_location=device)`: what it holds is restored onto that device
            # (a function of the storages, `lambda storage, loc: storage`, is how the CPU is asked for).
            keyword, position = _LOADERS[qn]
            arg = self.ctx.keyword(call, keyword) or self.ctx.positional(call, position)
            where = arg.value if arg is not None else None
            if where is None and qn == "torch.load":
                # No map_location: tensors come back on the device they were saved from, so a file
                # this module saves device tensors into is read back onto the device.
                return self._saved_from_device(call, depth, hops)
            return where is not None and not isinstance(where, cst.Lambda) and not is_cpu_device(self.ctx, where) \
                and not (isinstance(where, cst.Dict) and all(
                    isinstance(e, cst.DictElement) and is_cpu_device(self.ctx, e.value) for e in where.elements))
        if qn == "builtins.map" and call.args and not call.args[0].star:
            return self._maps_to_device(call.args[0].value, depth, hops)
        func = call.func
        if _gives_host(self.ctx, call):
            return False
        if isinstance(func, cst.Attribute) and is_device_move(self.ctx, call):
            return True
        # A method of the tensor (`X.chunk(2)`), not a torch function of the same name
        # (`torch.split(X, 20)`, read below from its arguments).
        if isinstance(func, cst.Attribute) and (func.attr.value in _KEEPS_DEVICE or func.attr.value == "to") \
                and not qn.startswith("torch."):
            return self._device(func.value, depth + 1, hops)
        # What a torch function (`torch.cat(feats)`, `F.normalize(x)`) or a model (`encoder(x)`)
        # makes of a tensor on the device is on that device.
        callee = (dotted(func) or "").rsplit(".", 1)[-1]
        if (qn.startswith("torch.") and not _NON_TENSOR_TORCH.match(qn)) or (not qn and _MODEL_NAMES.match(callee)):
            if any(not a.star and self._device(a.value, depth + 1, hops) for a in call.args):
                return True
        # A function of the module: what it returns (two such calls down).
        loops = self.ctx.loops
        if hops >= 2:
            return False
        for fn in loops.callees(call):
            if fn in self._passed:
                continue  # recursion
            bound = {param: arg.value for param, arg in loops.bind_args(fn, call) if not arg.star}
            if self._returns_device(fn, bound, hops):
                return True
        return False

    def _returns_device(self, fn: cst.FunctionDef, bound: dict, hops: int) -> bool:
        """A `return` of fn gives a device value, its parameters read as `bound` gives them."""
        self._passed[fn] = bound
        try:
            return any(node.value is not None and self._device(node.value, 0, hops + 1)
                       for node in self.index.returns(fn))
        finally:
            del self._passed[fn]

    def _maps_to_device(self, func: cst.BaseExpression, depth: int, hops: int) -> bool:
        """`map(func, ...)` gives tensors on the device, as the comprehension written for it does
        (`X, Y = map(lambda t: t.to(device), (X, Y))`): func is a lambda whose body gives one,
        `torch.Tensor.cuda`, or a function of the module that returns one (two such calls down)."""
        if isinstance(func, cst.Lambda):
            return self._device(func.body, depth + 1, hops)
        if (self.names.qualified(func) or "") == "torch.Tensor.cuda":
            return True
        loops = self.ctx.loops
        name = dotted(func) if isinstance(func, cst.Name) else None
        if name is None or hops >= 2:
            return False
        for fn in loops.functions.get(name, ()):
            if fn in self._passed:
                continue  # recursion
            # the mapped items are not known here: the parameters stay unread
            if self._returns_device(fn, {}, hops):
                return True
        return False

    def from_device_helper(self, expr: cst.BaseExpression, _depth: int = 0) -> bool:
        """expr's value comes from a call of a function of this module that copies tensors to a
        device somewhere in it (`feats = extract(encoder, images)`), directly or through names,
        items, and methods or torch functions applied to it: on_device may not see what such a
        function returns (a structure it does not follow), so the value may be on the device."""
        if _depth > 6:
            return False
        if isinstance(expr, cst.Subscript):
            return self.from_device_helper(expr.value, _depth + 1)
        if isinstance(expr, (cst.Name, cst.Attribute)):
            name = dotted(expr)
            values = self._scopes.get(self.index.enclosing_function(expr), {}).get(name, ()) if name else ()
            return any(v is not expr and self.from_device_helper(v, _depth + 1) for v in values)
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        if _gives_host(self.ctx, expr):
            return False
        loops = self.ctx.loops
        callees = loops.callees(expr)
        if callees:
            return any(isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                       and is_device_move(self.ctx, node)
                       for fn in callees for node in self.index.walk(fn.body))
        if isinstance(func, cst.Attribute) and (func.attr.value in _KEEPS_DEVICE or func.attr.value == "to"):
            return self.from_device_helper(func.value, _depth + 1)
        qn = self.names.qualified(func) or ""
        return qn.startswith("torch.") and not _NON_TENSOR_TORCH.match(qn) and any(
            not a.star and self.from_device_helper(a.value, _depth + 1) for a in expr.args)

    def _appended(self, scope: cst.CSTNode | None) -> dict[str, list[cst.Arg]]:
        """name -> the arguments of its `.append(v)`, `.extend(vs)`, `.insert(i, v)` calls in scope."""
        return self._appended_by_scope.get(scope, {})

    @cached_property
    def _appended_by_scope(self) -> dict:
        """_appended's tables for every scope, in one pass over the module's calls."""
        tables: dict = {}
        for call in self.index.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in LIST_ADDS and call.args:
                name = dotted(func.value)
                if name:
                    scope = self.index.enclosing_function(call)
                    tables.setdefault(scope, {}).setdefault(name, []).append(call.args[-1])
        return tables

    def _host(self, expr: cst.BaseExpression, depth: int, field: bool) -> bool:
        """on_host; field: the read takes a tensor out of expr (`expr["ids"]`, `expr.labels`), so
        something that changes the container in place (`batch.to(device)` of a BatchEncoding, a
        helper handed the batch) before the read moves what it holds."""
        if depth > 8:
            return False
        if _host_value(expr):
            return True
        if isinstance(expr, cst.NamedExpr):
            return self._host(expr.value, depth + 1, field)
        if isinstance(expr, cst.Subscript):
            return self._host(expr.value, depth + 1, field=True)
        if isinstance(expr, cst.UnaryOperation):
            return self._host(expr.expression, depth + 1, field)
        if isinstance(expr, cst.BinaryOperation):
            return self._host(expr.left, depth + 1, field) and self._host(expr.right, depth + 1, field)
        if isinstance(expr, cst.Comparison):
            return self._host(expr.left, depth + 1, field) and all(
                self._host(c.comparator, depth + 1, field) for c in expr.comparisons)
        if isinstance(expr, cst.Call):
            return self._call_on_host(expr, depth, field)
        if isinstance(expr, (cst.Name, cst.Attribute)):
            name = dotted(expr)
            if name is not None and self._name_on_host(expr, name, depth, field):
                return True
            # `batch.labels`: a tensor of a host batch.
            return isinstance(expr, cst.Attribute) and self._host(expr.value, depth + 1, field=True)
        return False

    def _call_on_host(self, call: cst.Call, depth: int, field: bool) -> bool:
        qn = self.names.qualified(call.func) or ""
        if _FACTORIES.match(qn):
            # No `device=` (the default device, the CPU, unless the file changes it), or one known
            # to name the CPU.
            return not any(a.star for a in call.args) and not self._default_device_changed(call) and all(
                a.keyword is None or a.keyword.value != "device" or is_cpu_device(self.ctx, a.value) for a in call.args)
        if qn.startswith("numpy."):
            return True  # numpy arrays and scalars live in host memory
        if qn in _TORCH_KEEPS_DEVICE:
            # Every tensor it is given on the host: a CPU scalar tensor mixed with a device tensor
            # gives a device tensor, so one argument on the host is not enough.
            return bool(call.args) and all(
                a.star == "" and (a.keyword is None or a.keyword.value != "device")
                and (self._host(a.value, depth + 1, field) or (a.keyword is not None and not self.is_tensor(a.value)))
                for a in call.args)
        func = call.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        if _gives_host(self.ctx, call):
            return True
        if method in _ACCESSORS:
            return self._host(func.value, depth + 1, field=True)
        if method in _KEEPS_DEVICE or (method == "to" and not is_device_move(self.ctx, call)):
            return self._host(func.value, depth + 1, field)
        if method in ("to", "cuda"):
            return False  # a move to the device, whatever a method of the file of that name returns
        if self._host_module(func):
            # Weights on the host and every input too: so is the output (a CPU unit test).
            return bool(call.args) and all(not a.star and self._host(a.value, depth + 1, field) for a in call.args)
        # A function of the file: what its every return gives (`def fit_batch(...): ...
        # return loss.detach().cpu()`).
        callees = self.ctx.loops.callees(call)
        return bool(callees) and all(self._returns_on_host(fn, depth) for fn in callees)

    def _host_module(self, func: cst.BaseExpression, depth: int = 0) -> bool:
        """func names a module whose weights stay in host memory: every binding of the name, in
        the scope it is read from, builds one of torch.nn's modules from torch.nn modules and
        plain values (`nn.Sequential(nn.Linear(2, 3), nn.Sigmoid())`), with no `device=`; and no
        call in the file may move a variable of that name (_moved_names: `model.cuda()`,
        `model.to(device)` unless the device is the CPU, `accelerator.prepare(model)`)."""
        if not isinstance(func, cst.Name) or not is_variable(self.index, func):
            return False
        moved = self._moved_names
        if (None, func.value) in moved or (self.index.enclosing_function(func), func.value) in moved:
            return False
        bindings = self.ctx.bindings.seen_from(func)
        return bool(bindings) and all(kind == "assign" and self._host_build(value, depth) for kind, value in bindings)

    def _default_device_changed(self, node: cst.CSTNode) -> bool:
        """What node makes with no `device=` may not land on the CPU: the file sets torch's
        default device (`torch.set_default_device("cuda")`, `set_default_tensor_type`), or node
        runs under `with torch.device(...)` of a device not known to be the CPU (`"meta"`, `device`)."""
        if self._sets_default_device:
            return True
        for anc in self.index.ancestors(node):
            if isinstance(anc, cst.With) and any(
                    isinstance(item.item, cst.Call) and self.names.qualified(item.item.func) == "torch.device"
                    and not is_cpu_device(self.ctx, item.item) for item in anc.items):
                return True
        return False

    @cached_property
    def _sets_default_device(self) -> bool:
        return any(self.names.qualified(call.func) in ("torch.set_default_device", "torch.set_default_tensor_type")
                   for call in self.index.nodes(cst.Call))

    @cached_property
    def _moved_names(self) -> frozenset[tuple]:
        """(function, name) for the variables of the file that a call may move to an accelerator:
        `x.cuda()`, `x.to(device)` (is_device_move), or `f(x)` of anything but a library that
        places nothing (devices.neutral_module: `create_optimizer_v2(model)` of timm, `copy.deepcopy`;
        a function of the file, `accelerator.prepare(model)` and `trainer.fit(model)` may); the
        function is None where the call's function does not bind the name (a module's variable,
        or an enclosing function's: the move counts wherever the name is read)."""
        moved = set()
        for call in self.index.nodes(cst.Call):
            callee = call.func
            names = [a.value for a in call.args if isinstance(a.value, cst.Name)]
            qualified = self.names.qualified(callee) if names else None
            if qualified and neutral_module(qualified) and not self.ctx.loops.callees(call):
                names = []
            if isinstance(callee, cst.Attribute) and isinstance(callee.value, cst.Name) and (
                    callee.attr.value in _MODULE_MOVES or callee.attr.value == "to" and is_device_move(self.ctx, call)):
                names.append(callee.value)
            fn = self.index.enclosing_function(call)
            moved.update((fn if fn is not None and self.ctx.bindings.binds(fn, n.value) else None, n.value)
                         for n in names)
        return frozenset(moved)

    def _host_build(self, value: cst.BaseExpression, depth: int = 0) -> bool:
        """value builds a torch.nn module on the host: a torch.nn class (not DataParallel, which
        runs its replicas on the GPUs) called with no `device=` and no `*`/`**`, where the default
        device is the CPU (_default_device_changed); a layer's other arguments are its settings
        (names, literals: `nn.Linear(hidden, 1)`), a container's (`nn.Sequential`, `nn.ModuleList`)
        are its modules, each such a build or a name holding one (_host_module)."""
        if not isinstance(value, cst.Call) or depth > 4 or self._default_device_changed(value):
            return False
        qn = self.names.qualified(value.func) or ""
        if not _NN_MODULE.match(qn) or qn.endswith("DataParallel") or any(a.star for a in value.args):
            return False
        container = qn.rsplit(".", 1)[-1] in _NN_CONTAINERS
        for arg in value.args:
            if arg.keyword is not None and arg.keyword.value == "device":
                return False
            if container and not self._host_part(arg.value, depth + 1):
                return False
            if isinstance(arg.value, cst.Call) and not self._host_build(arg.value, depth + 1):
                return False
        return True

    def _host_part(self, value: cst.BaseExpression, depth: int) -> bool:
        """A container's argument holds host modules only: builds of them, names holding one, or
        a list, tuple or dict display of those."""
        if isinstance(value, (cst.List, cst.Tuple)):
            return all(isinstance(e, cst.Element) and self._host_part(e.value, depth) for e in value.elements)
        if isinstance(value, cst.Dict):
            return all(isinstance(e, cst.DictElement) and self._host_part(e.value, depth) for e in value.elements)
        if isinstance(value, cst.Name):
            return self._host_module(value, depth + 1)
        return self._host_build(value, depth)

    def _name_on_host(self, use: cst.BaseExpression, name: str, depth: int, field: bool) -> bool:
        """The value name holds at use is on the host: the assignment that reaches use assigns a
        host value (or unpacks a host container: `x, y = batch`), or name is bound by the target of
        a loop over host batches (host_batch_loops) whose body holds use, and nothing between the
        loop's start and use rebinds it (or, with field, may move what it holds in place)."""
        child = use
        # An in-place `+=` of a value not known to be on the host was passed: it leaves a tensor
        # where it is (an in-place op never moves a tensor; a device operand would raise), but
        # turns a number into whatever it adds, so only a host tensor made before it counts
        # (`n = torch.tensor(0)`).
        tensor_only = False
        for anc in self.index.ancestors(use):
            if isinstance(anc, (cst.IndentedBlock, cst.Module, cst.SimpleStatementLine)):
                position = next(i for i, stmt in enumerate(anc.body) if stmt is child)
                for stmt in _nearest_first(anc.body[:position]):
                    value, unpacked = _assigned_or_unpacked(stmt, name)
                    if value is not None:
                        return self._host(value, depth + 1, field=field or unpacked) and (
                            not tensor_only or self._host_tensor_build(value))
                    if self._adds_host_value(stmt, name, depth):
                        continue  # `counts += torch.bincount(y)`: a host tensor stays on the host
                    if _updates_in_place(stmt, name) and not field:
                        tensor_only = True
                        continue
                    if isinstance(stmt, (cst.For, cst.While)) and stmt.orelse is None \
                            and not (isinstance(stmt, cst.For) and name in _target_names(stmt)):
                        # A loop before the use that only adds to it (a count over micro-batches).
                        kept = self._loop_keeps(stmt, name, depth)
                        if kept == _HOST or kept == _TENSOR and not field:
                            tensor_only = tensor_only or kept == _TENSOR
                            continue
                    if name in self.index.memo(bound_names, stmt) or (field and self._may_change(stmt, name)):
                        return False
            elif isinstance(anc, cst.For):
                # The iterable is evaluated before the loop binds its target: `for v in y.tolist():`
                # reads the `y` around the loop. In the body, a name the loop does not bind may be
                # rebound by an earlier round of it: unless every round only adds host values to it
                # (`class_counts += torch.bincount(y)`), or only changes a tensor in place
                # (`n_tokens += (labels != -100).sum()`, tensor_only), the value from before the loop
                # is not known.
                if child is not anc.iter:
                    kept = None if name in _target_names(anc) else self._loop_keeps(anc, name, depth)
                    if kept is None or kept == _TENSOR and field:
                        return self._bound_by_loop(anc, name, depth)
                    tensor_only = tensor_only or kept == _TENSOR
            elif isinstance(anc, cst.CompFor):
                # A comprehension's `for` (its iterable, conditions and the `for`s after it): a name
                # it binds is its own; any other is the enclosing scope's (a comprehension rebinds
                # nothing else), as is everything its first iterable reads.
                if child is not anc.iter and name in _target_names(anc):
                    return self._bound_by_loop(anc, name, depth)
            elif isinstance(anc, _COMPREHENSIONS) and child is not anc.for_in:
                # From the element (`[v.item() for v in y]`): a name its `for`s bind is the
                # innermost binder's.
                binder = next((comp for comp in reversed(_comp_fors(anc)) if name in _target_names(comp)), None)
                if binder is not None:
                    return self._bound_by_loop(binder, name, depth)
            elif isinstance(anc, cst.FunctionDef):
                # Nothing in the function binds name before use: a parameter holds what its calls
                # hand it (`self.update_average(loss)` after `loss = self.fit_batch(batch)`).
                # A module variable (`loss < STOP_BELOW`): what the module assigns it. Not a
                # container read for a field: any function may change one in place.
                if "." in name:
                    return False
                if not tensor_only and self._parameter_on_host(anc, name, field):
                    return True
                values = None if field else self._module_values(use)
                return bool(values) and all(self._host(v, depth + 1, field=False) and (
                    not tensor_only or self._host_tensor_build(v)) for v in values)
            elif isinstance(anc, (cst.While, cst.Lambda, cst.ClassDef)):
                return False
            child = anc
        return False

    def _parameter_on_host(self, fn: cst.FunctionDef, name: str, field: bool) -> bool:
        """name is a parameter of fn that fn never binds again (is_plain_parameter), and every call
        of fn in the file hands it a value on the host, there (Loops.handed_to). fn called nowhere
        here (a library's entry point, a callback handed on) is not known.

        Worked out once per parameter, the arguments read from a fixed depth whoever asks (an
        answer kept at the asker's depth would depend on which question came first), so a helper
        called from many places is not followed again from each; a parameter whose answer is being
        worked out (functions handing values round in a cycle) is not known."""
        key = (fn, name, field)
        if key not in self._parameters_on_host:
            self._parameters_on_host[key] = False  # while it is worked out
            loops = self.ctx.loops
            handed = loops.handed_to(fn, name) if loops.is_plain_parameter(fn, name) else None
            self._parameters_on_host[key] = bool(handed) and all(
                self._host(arg.value, _PARAMETER_DEPTH, field) for arg, _call in handed)
        return self._parameters_on_host[key]

    def _returns_on_host(self, fn: cst.FunctionDef, depth: int) -> bool:
        """Every `return` of fn gives a value on the host (`return loss.detach().cpu()`); a
        generator (its `yield`s) is not read."""
        returns = self.index.returns(fn)
        return bool(returns) and not self.index.is_generator(fn) \
            and all(r.value is not None and self._host(r.value, depth + 1, field=False) for r in returns)

    def _adds_host_value(self, stmt: cst.CSTNode, name: str, depth: int) -> bool:
        """stmt is `name += value` (or `-=`, `*=`, `/=`) of a plain name with a value on the host:
        a host tensor it changes stays on the host."""
        return _updates_in_place(stmt, name) and self._host(stmt.value, depth + 1, field=False)

    def _host_tensor_build(self, value: cst.BaseExpression) -> bool:
        """value makes a tensor on the host (a torch factory with no device other than the CPU,
        `torch.tensor(0, dtype=torch.int64)`): a tensor, not a number, which an in-place `+=`
        leaves where it is."""
        return isinstance(value, cst.Call) and bool(_FACTORIES.match(self.names.qualified(value.func) or "")) \
            and self._call_on_host(value, 0, False)

    def _loop_keeps(self, loop: cst.For | cst.While, name: str, depth: int) -> str | None:
        """Where a later round of loop leaves the plain name, as it was before the loop: _HOST when
        the body binds it only by adding host values (_adds_host_value: `class_counts +=
        torch.bincount(y)` keeps `class_counts = torch.zeros(3)` on the host); _TENSOR when also by
        other `+=`, `-=`, `*=`, `/=` (_updates_in_place), which leave a tensor where it is but make
        a number what it adds; None when it may move or rebind it: another binding, a method that
        changes it and is not a plain read nor in-place arithmetic (`.copy_(x)`; `.add_(x)` is a
        tensor's `+=`), a function it is handed to, or a `global`/`nonlocal` that lets a function
        rebind it."""
        if "." in name or any(name in (n.value for n in (d.name for d in g.names))
                              for g in self.index.nodes(cst.Global) + self.index.nodes(cst.Nonlocal)):
            return None
        kept = _HOST
        for node in self.index.walk(loop.body):
            if not any(name in {dotted(n) for n in walk(t) if isinstance(n, (cst.Name, cst.Attribute))}
                       for t in binding_targets(node)) or self._adds_host_value(node, name, depth):
                continue
            if not _updates_in_place(node, name):
                return None
            kept = _TENSOR
        return None if self._may_change(loop.body, name) else kept

    def _bound_by_loop(self, loop: cst.For | cst.CompFor, name: str, depth: int) -> bool:
        """name, read inside loop (or a comprehension's `for`) that binds it, is on the host: the
        loop goes over host batches (host_batch_loops), or its target is the name alone and what
        it goes over is on the host (`for v in y`: each row of a host tensor, each number of a list).
        A name the loop does not bind may be rebound by another round of it: not known."""
        if name not in _target_names(loop):
            return False
        if isinstance(loop, cst.For) and loop in host_batch_loops(self.ctx):
            return True
        return isinstance(loop.target, cst.Name) and self._host(loop.iter, depth + 1, field=True)

    def _may_change(self, stmt: cst.CSTNode, name: str) -> bool:
        """stmt may change in place what the container name holds: it calls a method of it that is
        not a plain read (`batch.to(device)` moves a BatchEncoding in place, `batch.update(...)`)
        nor in-place arithmetic (`counts.add_(x)`, which only a tensor has and which never moves
        it), or hands it to a function that is not a builtin (`batch_to_device(batch, device)`) nor
        a torch.nn module kept on the host (_host_module: `model(x)` moves nothing)."""
        for node in self.index.walk(stmt):
            if not isinstance(node, cst.Call):
                continue
            func = node.func
            if isinstance(func, cst.Attribute) and dotted(func.value) == name \
                    and func.attr.value not in _READS and func.attr.value not in _IN_PLACE_ARITHMETIC:
                return True
            if any(not a.star and dotted(a.value) == name for a in node.args) \
                    and not (self.names.qualified(func) or "").startswith("builtins.") and not self._host_module(func):
                return True
        return False


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _comp_fors(comprehension) -> list[cst.CompFor]:
    """A comprehension's `for` clauses, outermost first."""
    fors, comp = [], comprehension.for_in
    while comp is not None:
        fors.append(comp)
        comp = comp.inner_for_in
    return fors


def _target_names(loop: cst.For | cst.CompFor) -> set[str]:
    return {dotted(n) for n in walk(loop.target) if isinstance(n, (cst.Name, cst.Attribute))}


# Where a loop leaves a name (Tensors._loop_keeps): on the host whatever it held, or on the host
# only if it held a host tensor (not a number) before the loop.
_HOST, _TENSOR = "host", "tensor"


def _updates_in_place(stmt: cst.CSTNode, name: str) -> bool:
    """stmt is `name += value` (or `-=`, `*=`, `/=`) of a plain name: in place for a tensor, which
    it never moves to another device."""
    return isinstance(stmt, cst.AugAssign) and "." not in name and dotted(stmt.target) == name \
        and isinstance(stmt.operator, (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign))


def _nearest_first(statements) -> list:
    """Statements, the last first, with the small statements of a line (`a = 1; b = 2`) apart."""
    out = []
    for stmt in reversed(statements):
        out += reversed(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else [stmt]
    return out


def _assigned_or_unpacked(stmt: cst.CSTNode, name: str) -> tuple[cst.BaseExpression | None, bool]:
    """(value, False) when stmt is `name = value`; (value, True) when it unpacks value into a
    target that holds name (`x, y = batch`); (None, False) otherwise."""
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0].target
        if dotted(target) == name:
            return stmt.value, False
        if isinstance(target, (cst.Tuple, cst.List)) and any(
                not isinstance(e, cst.StarredElement) and dotted(e.value) == name for e in target.elements):
            return stmt.value, True
    return None, False


# Python floats the standard library and numpy name.
_FLOAT_CONSTANTS = frozenset({"math.inf", "math.nan", "math.pi", "math.e", "numpy.inf", "numpy.nan", "sys.maxsize"})
# How many names _number looks up (_assigned_numbers) for one question of is_tensor: far more than
# real code needs (an ad hoc count over the train corpus, speechbrain and transformers, every name
# asked: 33 at most), few enough that a class whose attributes are given each other's values in
# many places cannot make one question slow (test_analysis_dataflow counts such a class).
_NUMBER_LOOKUPS = 200
# Parsers of text formats: what they give holds Python numbers, strings, lists and dicts only.
_TEXT_PARSERS = frozenset({"json.load", "json.loads", "yaml.safe_load", "yaml.load", "yaml.full_load",
                           "tomllib.load", "tomllib.loads", "tomli.load", "tomli.loads", "toml.load", "toml.loads",
                           "omegaconf.OmegaConf.load"})
# Classes of a configuration parsed from text, as a parameter's annotation names them.
_CONFIG_CLASSES = frozenset({"omegaconf.DictConfig", "omegaconf.ListConfig", "omegaconf.dictconfig.DictConfig",
                             "omegaconf.listconfig.ListConfig", "argparse.Namespace"})


# The depth _host starts from for the arguments of a parameter's calls (_parameter_on_host): of
# the 8 it goes, 3 are left to follow each argument back.
_PARAMETER_DEPTH = 5


def _host_value(expr: cst.BaseExpression) -> bool:
    """A Python number or string for certain: a literal, `.item()`/`.tolist()`, `float(...)` and
    friends, or arithmetic on those, or a conditional expression choosing between two of them."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString)):
        return True
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("item", "tolist") and not expr.args:
            return True
        return isinstance(func, cst.Name) and func.value in ("float", "int", "len", "round", "bool", "str")
    if isinstance(expr, cst.UnaryOperation):
        return _host_value(expr.expression)
    if isinstance(expr, cst.NamedExpr):  # `(v := loss.item())`
        return _host_value(expr.value)
    if isinstance(expr, cst.BinaryOperation):
        return _host_value(expr.left) and _host_value(expr.right)
    if isinstance(expr, cst.IfExp):  # `loss.item() if step % 5 == 0 else 0.0`
        return _host_value(expr.body) and _host_value(expr.orelse)
    return False

