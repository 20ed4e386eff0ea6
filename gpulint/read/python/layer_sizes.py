"""How many parameters a model written out of framework layers has, counted from literal layer sizes.

Tutorial and tabular models are classes whose ``__init__`` builds ``nn.Linear(784, 128)``,
``nn.Conv2d(1, 32, 3)`` ... or ``keras.Sequential([Conv2D(32, 3, input_shape=(28, 28, 1)), ...])``.
Their size is arithmetic on the literals, the same formulas the frameworks use for their
``parameters()`` / ``count_params()``. The count is a fact only when every layer of every model in the
file is known: a layer sized by a constructor argument, a class of another file, a pretrained or
registry model anywhere in the file make the file's models unknown (``params`` None), never a guess.
"""
from __future__ import annotations

import ast
import math
import re
from typing import Any, Callable

from gpulint.read.python.index import UNKNOWN, OneOf, dotted

#: torch.nn / keras layers without parameters
_TORCH_FREE = frozenset("""ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish Tanh Sigmoid Hardtanh Hardswish Hardsigmoid
Softmax LogSoftmax Softplus Softsign Dropout Dropout1d Dropout2d Dropout3d AlphaDropout MaxPool1d MaxPool2d MaxPool3d
AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d
AdaptiveMaxPool3d Flatten Unflatten Identity Upsample UpsamplingNearest2d UpsamplingBilinear2d PixelShuffle PixelUnshuffle
ZeroPad2d ConstantPad2d ReflectionPad2d ReplicationPad2d CrossEntropyLoss MSELoss NLLLoss BCELoss BCEWithLogitsLoss
L1Loss SmoothL1Loss""".split())
_KERAS_FREE = frozenset("""Dropout SpatialDropout1D SpatialDropout2D Activation ReLU LeakyReLU Softmax ELU Rescaling""".split())

#: calls that bring a model whose size this module cannot count (pretrained, registry, config-built, loaded)
_OPAQUE_PREFIXES = ("transformers.", "timm.", "torchvision.models.", "diffusers.", "peft.", "keras.applications.",
                    "tensorflow.keras.applications.", "tensorflow_hub.", "keras_nlp.", "keras_hub.", "ultralytics.",
                    "open_clip.", "sentence_transformers.", "segmentation_models_pytorch.", "torch.hub.", "lightning.pytorch.demos.",
                    "pytorch_lightning.demos.")
#: loads of those libraries that are not the model (tokenizers, processors, configs): named only when nothing else is
_NOT_A_MODEL = re.compile(r"Tokenizer|Processor|FeatureExtractor|Config|ImageProcessor|set_seed|Parser")
_OPAQUE_ATTRS = frozenset({"from_pretrained", "from_config", "create_model", "load_model", "from_preset"})
_OPAQUE_CALLS = frozenset({"torch.load", "torch.jit.load", "torch.export.load", "keras.models.load_model",
                           "tensorflow.keras.models.load_model"})

TORCH_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "lightning.pytorch.LightningModule",
                                "lightning.LightningModule", "pytorch_lightning.LightningModule", "lightning.pytorch.core.LightningModule"})
_SEQUENTIALS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList"})
_KERAS_SEQUENTIAL = frozenset({"keras.Sequential", "keras.models.Sequential", "tensorflow.keras.Sequential",
                               "tensorflow.keras.models.Sequential"})
#: the functional API's model: ``Model(inputs, outputs)`` over layers called on tensors
_KERAS_MODEL = frozenset({"keras.Model", "keras.models.Model", "tensorflow.keras.Model", "tensorflow.keras.models.Model"})


_MODEL_NAME = re.compile(r"(^|_)(model|net|network)$", re.I)


class _Unknown(Exception):
    """A layer whose size is not a literal: the model's size is not counted."""


def count_models(ix, qualify: Callable[[ast.AST], str], value: Callable[[ast.AST, str], Any]) -> list[tuple[ast.AST, str, int | None, int]]:
    """``(node, name, params, lookups)`` for each model the file builds out of layers; ``params`` None when not countable,
    ``lookups`` the parameters of its embedding tables (0 when none or not countable).

    ``qualify`` gives a call's qualified name, ``value`` the evaluator's value of an expression in a scope."""
    out: list[tuple[ast.AST, str, int | None, int]] = []
    # ``self.model = torch.jit.load(path).to(device).eval()``: the name a chain's innermost call ends up in
    bound = {id(_built(c.node)): c.assigned_to for c in ix.calls if c.assigned_to}
    # named by the call most like a model load (``from_pretrained``, a model class) rather than the first helper of
    # those libraries the file calls (``transformers.set_seed``), which only marks the file's sizes as not counted
    opaque = min((c for c in ix.calls if _opaque(c, bound.get(id(c.node), c.assigned_to))), default=None,
                 key=lambda c: (c.attr not in _OPAQUE_ATTRS and c.qualname not in _OPAQUE_CALLS,
                                _NOT_A_MODEL.search(c.qualname or "") is not None,
                                not (c.qualname or c.attr).rsplit(".", 1)[-1][:1].isupper(), c.order))
    if opaque is not None and _NOT_A_MODEL.search(opaque.qualname or opaque.attr or ""):
        opaque = None  # the most model-like call is a tokenizer, a config or a helper: the file loads no model
    if opaque is not None:
        # a pretrained, registry or loaded model: whatever else the file builds, the model's size is not counted here
        out.append((opaque.node, opaque.qualname or opaque.attr, None, 0))
    counter = _Counter(ix, qualify, value)
    uncounted = (None, 0)
    for name, (node, bases) in ix.classes.items():
        if any(b in TORCH_MODULE_BASES for b in bases):
            out.append((node, name, *(uncounted if opaque else counter.count(lambda: counter.torch_class(name)))))
    for c in ix.calls:
        if c.qualname in _KERAS_SEQUENTIAL:
            out.append((c.node, "Sequential", *(uncounted if opaque else counter.count(lambda: counter.keras_sequential(c.node, c.scope)))))
        elif c.qualname in _KERAS_MODEL and (c.node.args or c.node.keywords) and not opaque:
            # only where its layers are counted: Model(inputs, outputs) also wraps feature extractors and sub-graphs of a
            # model built elsewhere, so one this arithmetic cannot follow says nothing of the workload's model size
            params, lookups = counter.count(lambda: counter.keras_functional(c, c.scope))
            if params is not None:
                out.append((c.node, "Model", params, lookups))
        elif c.qualname == "torch.nn.Sequential" and not c.scope and c.assigned_to:
            out.append((c.node, c.assigned_to, *(uncounted if opaque else counter.count(lambda: counter.torch_call(c.node, c.scope)))))
        elif c.assigned_to and _MODEL_NAME.search(c.assigned_to.rsplit(".", 1)[-1]):
            # ``model = torch.nn.Linear(20, 1).cuda()``: the model is that one layer
            inner = _built(c.node)
            q = qualify(inner)
            if q.startswith("torch.nn.") and q.rsplit(".", 1)[-1] in _TORCH_LAYERS:
                out.append((inner, c.assigned_to, *(uncounted if opaque else counter.count(lambda: counter.torch_call(inner, c.scope)))))
    return out


_MOVES = frozenset({"cuda", "to", "float", "double", "train", "eval", "requires_grad_"})


def _built(node: ast.Call) -> ast.Call:
    """The constructor under ``.cuda()``/``.to(device)`` chains: ``nn.Linear(20, 1).cuda()`` is the Linear."""
    while isinstance(node.func, ast.Attribute) and node.func.attr in _MOVES and isinstance(node.func.value, ast.Call):
        node = node.func.value
    return node


def _opaque(c, name: str) -> bool:
    q = c.qualname or ""
    if q in _OPAQUE_CALLS:
        # torch.load of a state dict to resume is everywhere; a whole pickled model is loaded into a model's name
        return bool(_MODEL_NAME.search(name.rsplit(".", 1)[-1])) if name else False
    return q.startswith(_OPAQUE_PREFIXES) or c.attr in _OPAQUE_ATTRS


class _Counter:
    def __init__(self, ix, qualify, value):
        self.ix = ix
        self.qualify = qualify
        self.value = value
        self.memo: dict[str, tuple[int | None, int]] = {}  # class -> (parameters, of which embedding tables)
        self.binding: dict[str, Any] = {}  # __init__ parameters -> the literals the file constructs the class with
        #: parameters of embedding tables counted so far (lookups, not matmuls: they keep no Tensor Core busy)
        self.lookups = 0

    def count(self, fn: Callable[[], int]) -> tuple[int | None, int]:
        """(parameters, of which embedding tables) of one model, or (None, 0) when it is not countable."""
        self.lookups = 0
        total = self.guard(fn)
        return total, (self.lookups if total is not None else 0)

    @staticmethod
    def guard(fn: Callable[[], int]) -> int | None:
        try:
            return fn()
        except (_Unknown, ArithmeticError, IndexError, TypeError, ValueError):
            return None  # sizes this arithmetic cannot follow (an empty shape, a zero stride): not counted

    # -- torch ---------------------------------------------------------------------------------
    def torch_class(self, name: str, depth: int = 0) -> int | None:
        if name in self.memo:
            total, lookups = self.memo[name]
            self.lookups += lookups if total is not None else 0
            return total
        self.memo[name] = (None, 0)  # a class that builds itself is not counted
        node = self.ix.classes[name][0]
        init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        outer, self.binding = self.binding, self._constructed_with(name, init) if init is not None else {}
        before = self.lookups
        try:
            total = self.guard(lambda: self._init_layers(init, depth)) if init is not None else None
        finally:
            self.binding = outer
        if total is None:
            self.lookups = before
        self.memo[name] = (total, self.lookups - before)
        return total

    def _constructed_with(self, name: str, init: ast.FunctionDef) -> dict[str, Any]:
        """The literal arguments the file builds the class with (``NeuralNetwork(num_inputs=2, num_outputs=2)``), by
        parameter of its ``__init__``, when every construction passes the same literals; {} otherwise."""
        params = [a.arg for a in init.args.args[1:]]
        seen: list[dict[str, Any]] = []
        for c in self.ix.function_calls(name):
            got: dict[str, Any] = {}
            for i, a in enumerate(c.node.args):
                if isinstance(a, ast.Starred) or i >= len(params):
                    return {}
                got[params[i]] = a
            for k in c.node.keywords:
                if k.arg is None:
                    return {}
                got[k.arg] = k.value
            values = {}
            for k, v in got.items():
                if not (isinstance(v, ast.Constant) and isinstance(v.value, (int, float)) and not isinstance(v.value, bool)):
                    return {}
                values[k] = v.value
            seen.append(values)
        return seen[0] if seen and all(s == seen[0] for s in seen) else {}

    def _value(self, node: ast.AST, scope: str) -> Any:
        if isinstance(node, ast.Name) and node.id in self.binding:
            return self.binding[node.id]
        return self.value(node, scope)

    def _init_layers(self, init: ast.FunctionDef, depth: int) -> int:
        """Parameters of the layers an ``__init__`` assigns to ``self``; raises _Unknown where one is not literal."""
        total = 0
        # the instance is whatever the first parameter is called (``def __init__(s, V, C):`` is legal and used)
        me = init.args.args[0].arg if init.args.args else "self"
        for stmt in ast.walk(init):
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _on_self(stmt, me):
                v = stmt.value
                if isinstance(v, ast.Call):
                    total += self.torch_call(v, "__init__", depth)
                elif isinstance(v, (ast.List, ast.ListComp, ast.Dict)):
                    raise _Unknown
            elif isinstance(stmt, ast.Call) and (dotted(stmt.func) or "").endswith(("add_module", "register_module", "register_parameter")):
                raise _Unknown
        return total

    def torch_call(self, call: ast.Call, scope: str, depth: int = 0) -> int:
        q = self.qualify(call)
        if depth > 6:
            raise _Unknown
        if q.startswith("torch.nn.") and q.count(".") == 2:
            layer = q.rsplit(".", 1)[-1]
            if layer in _TORCH_FREE:
                return 0
            if q in _SEQUENTIALS:
                items = call.args
                if len(items) == 1 and isinstance(items[0], (ast.List, ast.Tuple)):
                    items = items[0].elts
                if any(not isinstance(a, ast.Call) for a in items) or call.keywords:
                    raise _Unknown
                return sum(self.torch_call(a, scope, depth + 1) for a in items)
            rule = _TORCH_LAYERS.get(layer)
            if rule is None:
                raise _Unknown
            params = rule(_Args(call, lambda n: self._value(n, scope)))
            if layer in ("Embedding", "EmbeddingBag"):
                self.lookups += params
            return params
        name = dotted(call.func) or ""
        if name in self.ix.classes and not call.args and not call.keywords:
            params = self.torch_class(name, depth + 1)
            if params is None:
                raise _Unknown
            return params
        raise _Unknown

    # -- keras ---------------------------------------------------------------------------------
    def keras_sequential(self, call: ast.Call, scope: str) -> int:
        layers = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "layers"), None)
        if not isinstance(layers, (ast.List, ast.Tuple)) or not layers.elts:
            raise _Unknown
        shape: tuple | None = None
        total = 0
        for el in layers.elts:
            if not isinstance(el, ast.Call):
                raise _Unknown
            q = self.qualify(el)
            layer = q.rsplit(".", 1)[-1]
            if not q.startswith(("keras.", "tensorflow.keras.")):
                raise _Unknown
            a = _Args(el, lambda n: self.value(n, scope))
            given = a.kw("input_shape")
            if layer in ("Input", "InputLayer"):
                given = a.get(0, "shape") if layer == "Input" else a.kw("input_shape")
            if given is not None:
                shape = _shape(given)
            if layer in ("Input", "InputLayer"):
                continue
            params, shape = _keras_layer(layer, a, shape)
            total += params
            self.lookups += params if layer == "Embedding" else 0
        return total

    def keras_functional(self, model, scope: str) -> int:
        """A functional model: the statements of its scope that call a Keras layer on a tensor
        (``x = layers.Dense(64)(x)``), followed from ``Input(shape=...)`` to the model's outputs. One input and one
        chain; a layer applied to a list (``Concatenate()([a, b])``) or anything not understood is not counted."""
        body = self.ix.bodies.get(scope)
        if not body:
            raise _Unknown
        shapes: dict[str, tuple | None] = {}
        built: dict[str, ast.Call] = {}  # ``embedding = layers.Embedding(...)``, applied later as ``embedding(x)``
        total = 0
        for stmt in _flat(body):
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and isinstance(stmt.value, ast.Call)):
                continue
            target, call = stmt.targets[0].id, stmt.value
            layer_call = call.func if isinstance(call.func, ast.Call) else \
                built.pop(call.func.id, None) if isinstance(call.func, ast.Name) else None
            if layer_call is not None:  # Layer(...)(tensor), or a layer built before and applied now (once)
                fed = call.args[0] if len(call.args) == 1 else None
                q = self.qualify(layer_call)
                if not q.startswith(("keras.", "tensorflow.keras.")):
                    continue
                if not isinstance(fed, ast.Name) or fed.id not in shapes:
                    raise _Unknown
                layer = q.rsplit(".", 1)[-1]
                params, shapes[target] = _keras_layer(layer, _Args(layer_call, lambda n: self.value(n, scope)), shapes[fed.id])
                total += params
                self.lookups += params if layer == "Embedding" else 0
                continue
            q = self.qualify(call)
            if q.rsplit(".", 1)[-1] == "Input" and q.startswith(("keras.", "tensorflow.keras.")):
                shapes[target] = _shape(_Args(call, lambda n: self.value(n, scope)).get(0, "shape"))
            elif q.startswith(("keras.layers.", "tensorflow.keras.layers.")):
                built[target] = call
        outputs = next((k.value for k in model.node.keywords if k.arg == "outputs"), None) or \
            (model.node.args[1] if len(model.node.args) > 1 else None)
        if not isinstance(outputs, ast.Name) or outputs.id not in shapes or total == 0:
            raise _Unknown
        return total


def _flat(body: list) -> list:
    """The statements of a body in order, with those of ``with`` blocks (a ``strategy.scope()``) inlined."""
    out = []
    for stmt in body:
        out += _flat(stmt.body) if isinstance(stmt, ast.With) else [stmt]
    return out


def _on_self(stmt, me: str = "self") -> bool:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me for t in targets)


class _Args:
    def __init__(self, call: ast.Call, value):
        self.call = call
        self.value = value

    def get(self, pos: int, kw: str, default: Any = UNKNOWN) -> Any:
        node = next((k.value for k in self.call.keywords if k.arg == kw), None)
        if node is None:
            pos_args = [a for a in self.call.args if not isinstance(a, ast.Starred)]
            if any(isinstance(a, ast.Starred) for a in self.call.args) or any(k.arg is None for k in self.call.keywords):
                raise _Unknown
            node = pos_args[pos] if pos is not None and pos < len(pos_args) else None
        if node is None:
            if default is UNKNOWN:
                raise _Unknown
            return default
        if isinstance(node, (ast.Tuple, ast.List)):  # ``shape=(maxlen,)``: each element followed on its own
            items = [self.value(e) for e in node.elts]
            if any(v is UNKNOWN or isinstance(v, (OneOf, dict)) for v in items):
                raise _Unknown
            return tuple(items)
        v = self.value(node)
        if v is UNKNOWN or isinstance(v, (OneOf, dict)):
            raise _Unknown
        return v

    def kw(self, kw: str) -> Any:
        node = next((k.value for k in self.call.keywords if k.arg == kw), None)
        if node is None:
            return None
        v = self.value(node)
        if v is UNKNOWN or isinstance(v, (OneOf, dict)):
            raise _Unknown
        return v

    def int(self, pos: int, kw: str, default: Any = UNKNOWN) -> int:
        v = self.get(pos, kw, default)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise _Unknown
        return v

    def bias(self, pos: int | None = None, kw: str = "bias") -> int:
        return 1 if self.get(pos, kw, True) else 0


def _kernel(v: Any, dims: int) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v ** dims
    if isinstance(v, (list, tuple)) and len(v) == dims and all(isinstance(x, int) for x in v):
        return math.prod(v)
    raise _Unknown


def _conv(dims: int):
    def rule(a: _Args) -> int:
        cin, cout = a.int(0, "in_channels"), a.int(1, "out_channels")
        k = _kernel(a.get(2, "kernel_size"), dims)
        groups = a.int(None, "groups", 1) or 1
        return cout * (cin // groups) * k + cout * a.bias(None)
    return rule


def _rnn(gates: int):
    def rule(a: _Args) -> int:
        n_in, hidden = a.int(0, "input_size"), a.int(1, "hidden_size")
        layers = a.int(2, "num_layers", 1)
        dirs = 2 if a.get(None, "bidirectional", False) else 1
        bias = 2 * hidden * a.bias(None)
        total = 0
        for i in range(layers):
            width = n_in if i == 0 else hidden * dirs
            total += dirs * gates * (width * hidden + hidden * hidden + bias)
        return total
    return rule


def _norm(pos: int, kw: str):
    def rule(a: _Args) -> int:
        if a.get(None, "affine", True) is False or a.get(None, "elementwise_affine", True) is False:
            return 0
        v = a.get(pos, kw)
        n = math.prod(v) if isinstance(v, (list, tuple)) and all(isinstance(x, int) for x in v) else v
        if not isinstance(n, int) or isinstance(n, bool):
            raise _Unknown
        return 2 * n
    return rule


def _instance_norm(a: _Args) -> int:
    return 2 * a.int(0, "num_features") if a.get(None, "affine", False) else 0


_TORCH_LAYERS: dict[str, Callable[[_Args], int]] = {
    "Linear": lambda a: a.int(0, "in_features") * a.int(1, "out_features") + a.int(1, "out_features") * a.bias(2),
    "Bilinear": lambda a: a.int(0, "in1_features") * a.int(1, "in2_features") * a.int(2, "out_features") + a.int(2, "out_features") * a.bias(3),
    "Conv1d": _conv(1), "Conv2d": _conv(2), "Conv3d": _conv(3),
    "ConvTranspose1d": _conv(1), "ConvTranspose2d": _conv(2), "ConvTranspose3d": _conv(3),
    "Embedding": lambda a: a.int(0, "num_embeddings") * a.int(1, "embedding_dim"),
    "EmbeddingBag": lambda a: a.int(0, "num_embeddings") * a.int(1, "embedding_dim"),
    "BatchNorm1d": _norm(0, "num_features"), "BatchNorm2d": _norm(0, "num_features"), "BatchNorm3d": _norm(0, "num_features"),
    "LayerNorm": _norm(0, "normalized_shape"), "GroupNorm": _norm(1, "num_channels"),
    "InstanceNorm1d": _instance_norm, "InstanceNorm2d": _instance_norm, "InstanceNorm3d": _instance_norm,
    "LSTM": _rnn(4), "GRU": _rnn(3), "RNN": _rnn(1),
    "PReLU": lambda a: a.int(0, "num_parameters", 1),
}


def _shape(v: Any) -> tuple | None:
    if isinstance(v, int) and not isinstance(v, bool):
        return (v,)
    if isinstance(v, (list, tuple)) and v and all(x is None or (isinstance(x, int) and not isinstance(x, bool)) for x in v):
        return tuple(v)
    raise _Unknown


def _spatial(size: int | None, k: int, s: int, same: bool) -> int | None:
    if size is None:
        return None
    return -(-size // s) if same else (size - k) // s + 1


def _pair(v: Any) -> tuple[int, int]:
    if isinstance(v, int) and not isinstance(v, bool):
        return v, v
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, int) for x in v):
        return v[0], v[1]
    raise _Unknown


def _keras_layer(layer: str, a: _Args, shape: tuple | None) -> tuple[int, tuple | None]:
    """Parameters of one Keras layer and the shape it outputs (batch dimension left out)."""
    if layer in _KERAS_FREE:
        return 0, shape
    if layer == "Embedding":
        n, d = a.int(0, "input_dim"), a.int(1, "output_dim")
        return n * d, (shape[0] if shape else None, d)
    if not shape or shape[-1] is None:
        raise _Unknown  # every other layer's size depends on its input width
    if layer == "Dense":
        units = a.int(0, "units")
        use_bias = 1 if a.get(None, "use_bias", True) else 0
        return shape[-1] * units + units * use_bias, shape[:-1] + (units,)
    if layer == "Flatten":
        if any(x is None for x in shape):
            raise _Unknown
        return 0, (math.prod(shape),)
    if layer in ("BatchNormalization", "LayerNormalization"):
        return (4 if layer == "BatchNormalization" else 2) * shape[-1], shape
    if layer in ("GlobalAveragePooling2D", "GlobalMaxPooling2D", "GlobalAveragePooling1D", "GlobalMaxPooling1D"):
        return 0, (shape[-1],)
    if layer == "Conv2D" and len(shape) == 3:
        filters = a.int(0, "filters")
        kh, kw = _pair(a.get(1, "kernel_size"))
        sh, sw = _pair(a.get(None, "strides", 1))
        same = str(a.get(None, "padding", "valid")).lower() == "same"
        use_bias = 1 if a.get(None, "use_bias", True) else 0
        params = kh * kw * shape[2] * filters + filters * use_bias
        return params, (_spatial(shape[0], kh, sh, same), _spatial(shape[1], kw, sw, same), filters)
    if layer == "Conv1D" and len(shape) == 2:
        filters, k = a.int(0, "filters"), _pair(a.get(1, "kernel_size"))[0]
        st = _pair(a.get(None, "strides", 1))[0]
        same = str(a.get(None, "padding", "valid")).lower() == "same"
        use_bias = 1 if a.get(None, "use_bias", True) else 0
        return k * shape[1] * filters + filters * use_bias, (_spatial(shape[0], k, st, same), filters)
    if layer in ("MaxPooling1D", "AveragePooling1D", "MaxPool1D", "AvgPool1D") and len(shape) == 2:
        p = _pair(a.get(0, "pool_size", 2))[0]
        strides = a.get(1, "strides", None)
        st = _pair(strides)[0] if strides is not None else p
        same = str(a.get(None, "padding", "valid")).lower() == "same"
        return 0, (_spatial(shape[0], p, st, same), shape[1])
    if layer in ("MaxPooling2D", "AveragePooling2D", "MaxPool2D", "AvgPool2D") and len(shape) == 3:
        ph, pw = _pair(a.get(0, "pool_size", 2))
        strides = a.get(1, "strides", None)
        sh, sw = _pair(strides) if strides is not None else (ph, pw)
        same = str(a.get(None, "padding", "valid")).lower() == "same"
        return 0, (_spatial(shape[0], ph, sh, same), _spatial(shape[1], pw, sw, same), shape[2])
    raise _Unknown
