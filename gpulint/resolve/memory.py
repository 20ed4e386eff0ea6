"""Per-GPU memory needed to train or serve a model (training-facts.md §1).

Model states follow the ZeRO paper's accounting by default (mixed-precision Adam =
2 B half weights + 2 B half gradients + K = 12 B fp32 master/m/v = 16 B/param);
``accounting="hf"`` gives the Hugging Face docs' 18 B/param (fp32 gradients).
Sharding divides the states as in ZeRO §5 / training-facts §1.2.  Activations
use Korthikanti et al. (arXiv:2205.05198) when sequence length, micro-batch,
layers, hidden size and heads are known; otherwise they are not counted and the
estimate says it is a lower bound.  All figures are bytes *per GPU*.
CUDA context, allocator fragmentation and temporary buffers are never counted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

__all__ = ["TrainingSetup", "Estimate", "estimate_training", "estimate_inference", "kv_cache_bytes",
           "activation_bytes_per_layer"]

GiB = 1024 ** 3

_PRECISIONS = ("fp32", "mixed", "bf16", "fp16")
_OPTIMIZERS = ("adam", "adamw", "sgd", "adam8bit", "adafactor", "unknown")
_SHARDING = ("none", "zero1", "zero2", "zero3", "fsdp_full", "fsdp_grad_op", "fsdp_hybrid")

# Optimizer state bytes per trainable parameter: fp32 states (mixed/fp32 training) and 16-bit states
# (pure bf16/fp16). Adam: m and v; SGD: momentum; 8-bit Adam: HF docs 2 B; Adafactor: "slightly more
# than 4 bytes" per parameter (HF perf_train_gpu_one, recalled) - factored second moments.
_OPT_FP32 = {"adam": 8, "adamw": 8, "sgd": 4, "adam8bit": 2, "adafactor": 4, "unknown": 0}
_OPT_HALF = {"adam": 4, "adamw": 4, "sgd": 2, "adam8bit": 2, "adafactor": 2, "unknown": 0}


@dataclass(frozen=True)
class TrainingSetup:
    params: int
    trainable_params: int | None = None  # set for LoRA/adapters; None = full fine-tune (or unknown adapter size with quantized_bits)
    precision: str = "mixed"  # fp32 | mixed (AMP, fp32 master) | bf16 | fp16 (pure 16-bit, no master copy)
    optimizer: str = "adamw"
    sharding: str = "none"
    n_gpus: int = 1  # data-parallel ranks the states are sharded over
    gpus_per_node: int | None = None  # the shard group of fsdp_hybrid
    offload_optimizer: bool = False
    offload_params: bool = False
    quantized_bits: int | None = None  # 8 or 4: frozen base weights loaded quantized (QLoRA-style)
    grad_checkpointing: bool | None = None
    seq_len: int | None = None
    micro_batch: int | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    flash_attention: bool | None = None  # True: attention scores are not stored (FlashAttention/SDPA)
    accounting: str = "zero"  # zero (16 B/param mixed Adam) | hf (18 B/param, plus what DeepSpeed's own estimator counts)
    vocab: int | None = None  # vocabulary size: 16-bit embeddings/LM head under QLoRA, fp32 logits, the largest layer
    intermediate: int | None = None  # MLP width: with vocab and hidden, the largest layer DeepSpeed ZeRO-3 gathers

    def __post_init__(self):
        def bad(what):
            raise ValueError(f"TrainingSetup.{what}")
        if not _pos_int(self.params):
            bad(f"params must be a positive integer, got {self.params!r}")
        if self.trainable_params is not None and not (_pos_int(self.trainable_params) and self.trainable_params <= self.params):
            bad(f"trainable_params must be a positive integer <= params, got {self.trainable_params!r}")
        for name, allowed in (("precision", _PRECISIONS), ("optimizer", _OPTIMIZERS), ("sharding", _SHARDING),
                              ("accounting", ("zero", "hf"))):
            if getattr(self, name) not in allowed:
                bad(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        if not _pos_int(self.n_gpus):
            bad(f"n_gpus must be a positive integer, got {self.n_gpus!r}")
        if self.quantized_bits not in (None, 4, 8):
            bad(f"quantized_bits must be None, 8 or 4, got {self.quantized_bits!r}")
        for name in ("gpus_per_node", "seq_len", "micro_batch", "layers", "hidden", "heads", "vocab", "intermediate"):
            value = getattr(self, name)
            if value is not None and not _pos_int(value):
                bad(f"{name} must be a positive integer or None, got {value!r}")


@dataclass(frozen=True)
class Estimate:
    total_bytes: int  # per GPU
    breakdown: dict[str, int] = field(default_factory=dict)  # what total_bytes is made of
    assumptions: list[str] = field(default_factory=list)
    activation_bytes: int | None = None  # Korthikanti, scores stored, no recomputation
    activation_bytes_with_checkpointing: int | None = None  # full recomputation: layer inputs only
    lower_bound: bool = False  # something that needs memory was not counted (see assumptions)

    @property
    def total_gib(self) -> float:
        return self.total_bytes / GiB


def _pos_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


# --------------------------------------------------------------------------- activations

def activation_bytes_per_layer(seq_len: int, micro_batch: int, hidden: int, heads: int,
                               recompute: str = "none", store_scores: bool = True) -> int:
    """Korthikanti et al. Eq. 2 (16-bit activations, no tensor parallelism): s*b*h*(34 + 5*a*s/h) bytes
    with no recomputation (the 5as/h term is the stored attention scores), 34*s*b*h with selective
    recomputation, 2*s*b*h with full recomputation (layer input only)."""
    sbh = seq_len * micro_batch * hidden
    if recompute == "full":
        return 2 * sbh
    if recompute == "selective" or not store_scores:
        return 34 * sbh
    return sbh * 34 + 5 * heads * seq_len * seq_len * micro_batch


# --------------------------------------------------------------------------- training

def _state_bytes(s: TrainingSetup, notes: list[str]) -> tuple[dict[str, float], bool]:
    """Unsharded model-state bytes by component, and whether something was left out."""
    lower = False
    opt_table = _OPT_HALF if s.precision in ("bf16", "fp16") else _OPT_FP32
    if s.optimizer == "unknown":
        lower = True
        notes.append("optimizer unknown: optimizer states not counted (lower bound; Adam would add 8 B per trainable parameter)")
    elif s.optimizer == "adafactor":
        notes.append("Adafactor counted at 4 B per parameter (HF docs: 'slightly more than 4 bytes')")
    lora = s.trainable_params is not None and s.trainable_params < s.params
    trainable = s.trainable_params if s.trainable_params is not None else s.params
    if s.quantized_bits and s.trainable_params is None:
        trainable = 0
        lower = True
        notes.append("base weights quantized (frozen), adapter size unknown: adapter weights, gradients and optimizer states "
                     "not counted (lower bound)")
    frozen = s.params - trainable
    out: dict[str, float] = {}

    # frozen (LoRA base) weights
    if frozen:
        if s.quantized_bits:
            per = 0.55 if s.quantized_bits == 4 else 1.0
            notes.append("4-bit base weights at 0.55 B/param (NF4 0.5 B + quantization constants; QLoRA rule of thumb, unverified constant)"
                         if s.quantized_bits == 4 else "8-bit base weights at 1 B/param")
            embed = 2 * s.vocab * s.hidden if s.vocab and s.hidden and s.accounting == "hf" else 0
            if embed and embed < frozen:
                # bitsandbytes leaves the input embeddings and the LM head in 16 bit (llm_int8_skip_modules / lm_head)
                out["frozen_weights"] = (frozen - embed) * per
                out["embeddings_16bit"] = embed * 2
                notes.append(f"embeddings and LM head ({embed / 1e6:,.0f}M params = 2 x vocab x hidden) stay 16-bit under "
                             f"bitsandbytes quantization: 2 B/param")
            else:
                out["frozen_weights"] = frozen * per
        else:
            per = 4 if s.precision == "fp32" else 2
            notes.append(f"frozen base weights at {per} B/param ({'fp32' if per == 4 else '16-bit'})")
            out["frozen_weights"] = frozen * per

    # trainable parameters: working weights, fp32 master, gradients, optimizer states
    if trainable:
        opt = opt_table[s.optimizer]
        if s.precision == "fp32":
            w, master, g = 4, 0, 4
            regime = "fp32 weights and gradients"
        elif s.precision == "mixed" and s.accounting == "hf":
            w, master, g = 2, 4, 4
            regime = "mixed precision, HF accounting (2 B half + 4 B fp32 master weights, 4 B fp32 gradients)"
        elif s.precision == "mixed":
            w, master, g = 2, 4, 2
            regime = "mixed precision, ZeRO accounting (2 B half weights, 2 B half gradients, 4 B fp32 master)"
        else:
            w, master, g = 2, 0, 2
            regime = f"pure {s.precision} weights, gradients and optimizer states (no fp32 master copy)"
        per = w + master + g + opt
        what = "adapter" if lora else "trainable"
        notes.append(f"{what} parameters: {regime}, optimizer {s.optimizer} {opt} B -> {per} B/param")
        out["weights"] = trainable * w
        if master:
            out["master_weights"] = trainable * master
        out["gradients"] = trainable * g
        if opt:
            out["optimizer_states"] = trainable * opt
    return out, lower


# Which sharding stage divides which component (ZeRO P_os / P_os+g / P_os+g+p).
_SHARDS = {
    "none": set(),
    "zero1": {"master_weights", "optimizer_states"},
    "zero2": {"master_weights", "optimizer_states", "gradients"},
    "fsdp_grad_op": {"master_weights", "optimizer_states", "gradients"},
    "zero3": {"master_weights", "optimizer_states", "gradients", "weights", "frozen_weights"},
    "fsdp_full": {"master_weights", "optimizer_states", "gradients", "weights", "frozen_weights"},
    "fsdp_hybrid": {"master_weights", "optimizer_states", "gradients", "weights", "frozen_weights"},
}


def _deepspeed_floor(s: TrainingSetup, states: dict[str, float], notes: list[str]) -> bool:
    """The conservative reading never counts less than DeepSpeed's own estimator for the stage
    (``deepspeed.runtime.zero.stage_1_and_2.estimate_zero2_model_states_mem_needs`` /
    ``stage3.estimate_zero3_model_states_mem_needs``, DeepSpeed docs "Memory Requirements"):
    ZeRO-2 4P + 16P/N (offload: 2P); ZeRO-3 4L + 18P/N (optimizer offload: 4L + 2P/N; both: 4L),
    L the largest layer. Returns True when L is unknown (so ZeRO-3's figure is a lower bound)."""
    if s.accounting != "hf" or s.sharding not in ("zero2", "zero3") or s.trainable_params is not None or s.quantized_bits:
        return False
    p, n = s.params, s.n_gpus
    largest = max(s.vocab * s.hidden if s.vocab and s.hidden else 0, s.hidden * s.intermediate if s.hidden and s.intermediate else 0)
    if s.sharding == "zero2":
        ds = 2 * p if s.offload_optimizer else 4 * p + 16 * p / n
        what = "ZeRO-2" + (" with optimizer offload: 2 B/param" if s.offload_optimizer else ": 4P + 16P/N")
    else:
        tail = 0 if s.offload_params else (2 * p / n if s.offload_optimizer else 18 * p / n)
        ds = 4 * largest + tail
        what = "ZeRO-3: 4L + " + ("0" if s.offload_params else "2P/N" if s.offload_optimizer else "18P/N")
    have = sum(states.values())
    if ds > have:
        states["deepspeed_buffers"] = ds - have
        notes.append(f"DeepSpeed's own estimator for {what} counts {ds / 1e9:.1f} GB per GPU of model states: the difference "
                     f"({(ds - have) / 1e9:.1f} GB) is added")
    if s.sharding == "zero3" and not largest:
        notes.append("largest layer unknown: DeepSpeed's 4 B x largest-layer gather buffer not counted (lower bound)")
        return True
    return False


def estimate_training(setup: TrainingSetup) -> Estimate:
    """Per-GPU training memory under ``setup``'s precision, optimizer, sharding, offload and savers."""
    s = setup
    notes: list[str] = []
    states, lower = _state_bytes(s, notes)

    group = s.n_gpus
    if s.sharding == "fsdp_hybrid":
        if s.gpus_per_node:
            group = min(s.gpus_per_node, s.n_gpus)
            notes.append(f"fsdp_hybrid: states sharded within a node ({group} GPUs), replicated across nodes")
        else:
            lower = True
            notes.append(f"fsdp_hybrid with GPUs per node unknown: sharded over all {s.n_gpus} GPUs (lower bound)")
    if s.sharding != "none" and group > 1:
        for key in _SHARDS[s.sharding]:
            if key in states:
                states[key] /= group
        notes.append(f"{s.sharding}: {', '.join(sorted(k for k in _SHARDS[s.sharding] if k in states))} divided over {group} GPUs")
    elif s.sharding != "none":
        notes.append(f"{s.sharding} on a single GPU shards nothing")
    if s.offload_optimizer:
        for key in ("optimizer_states", "master_weights"):
            states.pop(key, None)
        notes.append("optimizer states (and fp32 master weights) offloaded to CPU: not on the GPU")
        if "gradients" in states and s.sharding in ("zero1",) and group > 1:
            # ZeRO-Offload moves each rank's gradient partition to the CPU optimizer: only the shard stays
            states["gradients"] /= group
            notes.append(f"optimizer offload: each GPU keeps its 1/{group} gradient shard, not the full gradients")
    if s.offload_params:
        states.pop("weights", None)
        states.pop("frozen_weights", None)
        lower = True
        notes.append("parameters offloaded to CPU: the gathered working set of the current layers is not counted (lower bound)")

    lower = _deepspeed_floor(s, states, notes) or lower
    breakdown = {k: int(round(v)) for k, v in states.items()}
    act_none = act_ckpt = None
    dims = (s.seq_len, s.micro_batch, s.layers, s.hidden, s.heads)
    if all(dims):
        scale = 2 if s.precision == "fp32" else 1  # the formula assumes 16-bit activations
        act_none = s.layers * activation_bytes_per_layer(s.seq_len, s.micro_batch, s.hidden, s.heads) * scale
        act_ckpt = s.layers * activation_bytes_per_layer(s.seq_len, s.micro_batch, s.hidden, s.heads, "full") * scale
        if scale == 2:
            notes.append("fp32 training: activations counted at 4 B (Korthikanti's formula assumes 2 B)")
        if s.grad_checkpointing:
            counted = act_ckpt
            notes.append("activations: full recomputation (gradient checkpointing on), 2*s*b*h per layer")
        else:
            if s.grad_checkpointing is None:
                counted = act_ckpt
                lower = True
                notes.append("activations: gradient checkpointing unknown, counted as if on (2*s*b*h per layer; lower bound)")
            elif s.flash_attention:
                counted = s.layers * activation_bytes_per_layer(s.seq_len, s.micro_batch, s.hidden, s.heads,
                                                                store_scores=False) * scale
                notes.append("activations: no recomputation, FlashAttention (scores not stored), 34*s*b*h per layer")
            elif s.flash_attention is None:
                counted = s.layers * activation_bytes_per_layer(s.seq_len, s.micro_batch, s.hidden, s.heads,
                                                                store_scores=False) * scale
                lower = True
                notes.append("activations: no recomputation; attention kernel unknown, counted without stored s*s scores "
                             "(34*s*b*h per layer, as with FlashAttention/SDPA; lower bound)")
            else:
                counted = act_none
                notes.append("activations: no recomputation, attention scores stored, s*b*h*(34 + 5*a*s/h) per layer")
        notes.append("activation formula: Korthikanti et al. arXiv:2205.05198 (GPT-style 4h MLP, no tensor parallelism)")
        breakdown["activations"] = int(counted)
        if s.accounting == "hf" and s.vocab:
            # the loss reads the logits upcast to fp32 (HF causal-LM heads call logits.float())
            breakdown["logits_fp32"] = 4 * s.micro_batch * s.seq_len * s.vocab
            notes.append(f"fp32 logits for the loss: 4 B x micro-batch x seq x vocab {s.vocab:,}")
        else:
            notes.append("embeddings/logits not counted")
    else:
        lower = True
        missing = [n for n, v in zip(("seq_len", "micro_batch", "layers", "hidden", "heads"), dims) if not v]
        notes.append(f"activations not counted ({', '.join(missing)} unknown), so the estimate is a lower bound")
    return Estimate(sum(breakdown.values()), breakdown, notes, act_none, act_ckpt, lower)


# --------------------------------------------------------------------------- inference

def kv_cache_bytes(layers: int, kv_heads: int, head_dim: int, seq_len: int, batch: int = 1,
                   bytes_per_elem: float = 2) -> int:
    """2 (K and V) x layers x kv_heads x head_dim x seq_len x batch x bytes per element."""
    return int(2 * layers * kv_heads * head_dim * seq_len * batch * bytes_per_elem)


def estimate_inference(params: int, bytes_per_param: float, kv: Mapping | None = None) -> Estimate:
    """Memory to serve a model: weights at ``bytes_per_param`` (2 fp16/bf16, 1 int8, ~0.5 4-bit) plus,
    when ``kv`` gives ``layers``, ``kv_heads``, ``head_dim``, ``seq_len`` (and optional ``batch``,
    ``bytes_per_elem``), the KV cache. Raises ValueError on malformed arguments."""
    if not _pos_int(params):
        raise ValueError(f"params must be a positive integer, got {params!r}")
    if isinstance(bytes_per_param, bool) or not isinstance(bytes_per_param, (int, float)) or bytes_per_param <= 0:
        raise ValueError(f"bytes_per_param must be a positive number, got {bytes_per_param!r}")
    breakdown = {"weights": int(round(params * bytes_per_param))}
    notes = [f"weights at {bytes_per_param:g} B/param"]
    lower = False
    if kv is None:
        lower = True
        notes.append("KV cache and activations not counted (no sequence length / batch given), so the estimate is a lower bound")
    else:
        if not isinstance(kv, Mapping):
            raise ValueError("kv must be a mapping with layers, kv_heads, head_dim, seq_len")
        need = {k: kv.get(k) for k in ("layers", "kv_heads", "head_dim", "seq_len")}
        batch, elem = kv.get("batch", 1), kv.get("bytes_per_elem", 2)
        if not all(_pos_int(v) for v in need.values()) or not _pos_int(batch) or \
                isinstance(elem, bool) or not isinstance(elem, (int, float)) or elem <= 0:
            raise ValueError(f"kv needs positive integers layers, kv_heads, head_dim, seq_len (batch), got {dict(kv)!r}")
        breakdown["kv_cache"] = kv_cache_bytes(**need, batch=batch, bytes_per_elem=elem)
        notes.append(f"KV cache: 2 x {need['layers']} layers x {need['kv_heads']} KV heads x {need['head_dim']} head_dim x "
                     f"{need['seq_len']} tokens x batch {batch} x {elem:g} B")
        notes.append("activations of the forward pass not counted (small next to weights and KV cache at inference)")
    return Estimate(sum(breakdown.values()), breakdown, notes, None, None, lower)
