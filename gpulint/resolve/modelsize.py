"""How many parameters a model has: from its name, its HF ``config.json`` or its dimensions.

Formulas are those of training-facts.md §2.1; the table of well-known models is
``gpulint/data/models.yaml``.  Every result says in words how it was obtained
(``ModelSize.evidence``); anything that cannot be decided is ``None``, never a guess.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable, Mapping

__all__ = ["ModelSize", "from_name", "from_hf_config", "from_dims", "known_models"]


@dataclass(frozen=True)
class ModelSize:
    params: int
    active_params: int | None  # per-token parameters of a mixture-of-experts model; None for dense
    evidence: str
    source: str
    dims: Mapping[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- the table

@lru_cache(maxsize=1)
def known_models() -> tuple[Mapping[str, Any], ...]:
    """The bundled table of well-known models (loaded on first use)."""
    from gpulint.pricing.catalogue import parse_data_yaml  # same safe, date-free loader as the catalogue

    text = resources.files("gpulint").joinpath("data", "models.yaml").read_text("utf-8")
    return tuple(parse_data_yaml(text)["models"])


def _names(entry: Mapping) -> Iterable[str]:
    for name in (entry["id"], *entry.get("aliases", ())):
        yield name.lower()
        yield name.rsplit("/", 1)[-1].lower()


def _lookup(name: str, extra: Iterable[Mapping]) -> Mapping | None:
    low = name.strip().lower()
    last = low.rstrip("/").rsplit("/", 1)[-1]
    # additions (plugins, user config) first, so they can correct the bundled table
    for entry in (*extra, *known_models()):
        names = set(_names(entry))
        if low in names or last in names:
            return entry
    return None


def _from_entry(entry: Mapping, how: str) -> ModelSize:
    return ModelSize(
        params=int(entry["params"]),
        active_params=entry.get("active_params"),
        evidence=how,
        source=entry.get("source", "gpulint known-model table"),
        dims=dict(entry.get("dims") or {}),
    )


# --------------------------------------------------------------------------- names

# "8x7b" / "8x22B": a mixture of experts; total params are NOT 8 x 7B, so only the table answers.
_MOE = re.compile(r"(?<![a-z0-9.])(\d+)x(\d+(?:\.\d+)?)b(?![a-z0-9])", re.I)
# "-70b", "7B", "1.5b", "350m": digits directly followed by b/m and then a separator or the end.
# A letter or digit before the number ("v2", "qwen2", "t5") or after the unit ("7b1") is not a size.
_SIZE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)([bm])(?![a-z0-9])", re.I)
_MIN_PARAMS, _MAX_PARAMS = 1_000_000, 10_000_000_000_000
_UNDERSCORE_DECIMAL = re.compile(r"\d_\d+[bm](?![a-z0-9])", re.I)
# "-16E", "-128E": the number of experts of a mixture-of-experts model, beside its active size
_EXPERTS = re.compile(r"(?<![a-z0-9.])\d+e(?![a-z0-9])", re.I)


def from_name(name: Any, extra: Iterable[Mapping] = ()) -> ModelSize | None:
    """Size from a model id such as ``meta-llama/Llama-2-70b-hf``, a local path, or a bare name.

    First the known-model table (exact id or last path component, case-insensitive;
    ``extra`` entries of the same shape first), then a size hint in the name.
    """
    if not isinstance(name, str) or not name.strip():
        return None
    extra = tuple(extra)
    entry = _lookup(name, extra)
    if entry is not None:
        table = entry.get("table", "gpulint's model table")  # [tool.gpulint.models] entries name their table
        return _from_entry(entry, f"known model {entry['id']!r} in {table} (matched {name.strip()!r})")
    last = name.strip().rstrip("/").rsplit("/", 1)[-1]
    moe = _MOE.search(last)
    if moe:
        token = moe.group(0).lower()
        for entry in (*extra, *known_models()):
            if any(token in n for n in _names(entry)):
                return _from_entry(entry, f"mixture-of-experts size hint {moe.group(0)!r} in {last!r} matched "
                                          f"known model {entry['id']!r} (total is not experts x size)")
        return None
    if _EXPERTS.search(last):
        return None  # "Scout-17B-16E": the size in a name with an expert count is the active size, not the total
    if _UNDERSCORE_DECIMAL.search(last):
        return None  # "Qwen-1_8B" is 1.8B, "llama_2_7b" is 7B: digits joined by "_" before the unit say neither for sure
    sizes = {(float(m.group(1)), m.group(2).lower()) for m in _SIZE.finditer(last)}
    if len(sizes) != 1:
        return None  # none, or conflicting hints such as "7b-distilled-from-70b"
    (number, unit), = sizes
    params = int(round(number * (1e9 if unit == "b" else 1e6)))
    if not _MIN_PARAMS <= params <= _MAX_PARAMS:
        return None
    return ModelSize(params, None, f"size hint '{number:g}{unit.upper()}' in the model name {last!r} "
                                   "(nominal; published sizes differ by a few percent)", "model name", {})


# --------------------------------------------------------------------------- configs

# SwiGLU decoders (gate/up/down MLP, RMSNorm, RoPE) whose configs use the Llama key names.
_SWIGLU = {"llama": False, "mistral": False, "mixtral": True, "qwen2": False, "qwen3": False,
           "gemma": True, "gemma2": True, "phi3": False, "yi": False}  # value: tie_word_embeddings default
_BERT = {"bert", "roberta", "xlm-roberta", "electra", "camembert"}
_ARCH_TO_TYPE = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "MixtralForCausalLM": "mixtral",
                 "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3", "GemmaForCausalLM": "gemma",
                 "Gemma2ForCausalLM": "gemma2", "Phi3ForCausalLM": "phi3", "GPT2LMHeadModel": "gpt2",
                 "BertModel": "bert", "BertForMaskedLM": "bert", "RobertaForMaskedLM": "roberta"}


def _int(cfg: Mapping, *keys: str) -> int | None:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def from_hf_config(cfg: Any, source: str = "config.json") -> ModelSize | None:
    """Parameter count computed from a Hugging Face ``config.json`` dict, or None when the
    architecture is not one whose formula is known or a dimension is missing."""
    if not isinstance(cfg, Mapping):
        return None
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str):
        archs = cfg.get("architectures")
        model_type = _ARCH_TO_TYPE.get(archs[0]) if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    if model_type is None:
        return None
    model_type = model_type.lower()
    if model_type in _SWIGLU:
        return _swiglu(cfg, model_type, source)
    if model_type == "gpt2":
        n_layer, n_embd, vocab = _int(cfg, "n_layer"), _int(cfg, "n_embd"), _int(cfg, "vocab_size")
        if None in (n_layer, n_embd, vocab):
            return None
        return from_dims(n_layer, n_embd, vocab, n_positions=_int(cfg, "n_positions") or 1024, style="gpt2",
                         n_inner=_int(cfg, "n_inner"), source=source)
    if model_type in _BERT:
        n_layer, h, vocab = _int(cfg, "num_hidden_layers"), _int(cfg, "hidden_size"), _int(cfg, "vocab_size")
        if None in (n_layer, h, vocab):
            return None
        return from_dims(n_layer, h, vocab, n_positions=_int(cfg, "max_position_embeddings") or 512, style="bert",
                         n_inner=_int(cfg, "intermediate_size"), type_vocab_size=_int(cfg, "type_vocab_size") or 2,
                         source=source)
    return None


def _swiglu(cfg: Mapping, model_type: str, source: str) -> ModelSize | None:
    L = _int(cfg, "num_hidden_layers")
    h = _int(cfg, "hidden_size")
    inter = _int(cfg, "intermediate_size")
    heads = _int(cfg, "num_attention_heads")
    vocab = _int(cfg, "vocab_size")
    if None in (L, h, inter, heads, vocab):
        return None
    if any(k in cfg for k in ("n_routed_experts", "moe_intermediate_size", "shared_expert_intermediate_size")):
        return None  # shared/fine-grained experts: the simple MoE formula would be wrong
    kv_heads = _int(cfg, "num_key_value_heads") or heads
    head_dim = _int(cfg, "head_dim") or (h // heads if h % heads == 0 else None)
    if head_dim is None:
        return None
    tied = cfg.get("tie_word_embeddings")
    tied = _SWIGLU[model_type] if not isinstance(tied, bool) else tied
    experts = _int(cfg, "num_local_experts", "num_experts")
    top_k = _int(cfg, "num_experts_per_tok")
    if experts and experts > 1 and not top_k:
        return None
    q_dim, kv_dim = heads * head_dim, kv_heads * head_dim
    attn = 2 * h * q_dim + 2 * h * kv_dim  # q, o, k, v projections
    if model_type == "qwen2" or cfg.get("attention_bias") is True:
        attn += q_dim + 2 * kv_dim  # q/k/v biases (Qwen2/2.5)
    mlp_one = 3 * h * inter  # gate, up, down
    if experts and experts > 1:
        mlp_total, mlp_active = experts * mlp_one + h * experts, top_k * mlp_one + h * experts
    else:
        mlp_total = mlp_active = mlp_one
    embed = vocab * h * (1 if tied else 2)
    total = L * (attn + mlp_total + 2 * h) + embed + h
    active = L * (attn + mlp_active + 2 * h) + embed + h if experts and experts > 1 else None
    dims = {"layers": L, "hidden": h, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim,
            "intermediate": inter, "vocab": vocab, "tie_word_embeddings": tied}
    words = [f"computed from config dims ({model_type} decoder, SwiGLU MLP: {L} layers, hidden {h}, "
             f"{heads} heads / {kv_heads} KV heads, intermediate {inter}, vocab {vocab}, "
             f"{'tied' if tied else 'untied'} embeddings"]
    if experts and experts > 1:
        dims.update(experts=experts, experts_per_token=top_k)
        words.append(f"; mixture of {experts} experts, {top_k} active per token")
    if model_type == "qwen2":
        words.append("; with q/k/v biases")
    words.append(")")
    return ModelSize(total, active, "".join(words), source, dims)


def from_dims(n_layer: int, n_embd: int, vocab_size: int, n_positions: int = 1024, style: str = "gpt2", *,
              n_inner: int | None = None, type_vocab_size: int = 2, source: str = "model dimensions") -> ModelSize | None:
    """Parameters of a GPT-2 style decoder (``style="gpt2"``: learned positions, 4h GELU MLP with biases,
    tied LM head) or a BERT style encoder (``style="bert"``: + token-type embeddings and pooler)."""
    vals = (n_layer, n_embd, vocab_size, n_positions)
    if any(isinstance(v, bool) or not isinstance(v, int) or v <= 0 for v in vals):
        return None
    L, h, V, P = vals
    inner = n_inner if isinstance(n_inner, int) and n_inner > 0 else 4 * h
    # per block: attention qkv+o with biases (4h^2+4h), MLP (2*h*inner + inner + h), two LayerNorms (4h)
    block = 4 * h * h + 4 * h + 2 * h * inner + inner + h + 4 * h
    if style == "gpt2":
        total = L * block + V * h + P * h + 2 * h  # + final LayerNorm; LM head tied to the embedding
        words = "GPT-2 style decoder (learned positions, tied LM head)"
    elif style == "bert":
        total = L * block + (V + P + type_vocab_size) * h + 2 * h + h * h + h  # embeddings + LN + pooler
        words = "BERT style encoder (token, position and type embeddings, pooler)"
    else:
        return None
    dims = {"layers": L, "hidden": h, "vocab": V, "positions": P, "intermediate": inner}
    return ModelSize(total, None, f"computed from dims: {words}, {L} layers, hidden {h}, vocab {V}, "
                                  f"{P} positions", source, dims)
