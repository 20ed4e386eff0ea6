"""The memory-fit model of a workload: what the MEM rules (and any plugin) judge fit with.

``gpulint.resolve.memory`` computes bytes for a training or inference setup; this module
reads a workload's facts and resolution into such setups. Two are built per
workload: an *optimistic* one (the least memory any reading of the facts
allows: the most sharding, offload where it may be on, the smallest optimizer
state) that MEM001 must still find too big, and a *conservative* one (HF's
18 B/param accounting, no sharding or offload that is not certain, Adam when the
optimizer is unknown) that MEM002/MEM003 must find small enough. Anything that
cannot be decided either way is ``None``, and the rules stay silent.

:func:`profile` and :func:`sharding_of` are computed once per resolved workload (kept in
``WorkloadResolution.derived``): MEM001, MEM002, MEM003 and the NET rules ask for them,
and each reading resolves the scripts' flags against every launcher. A workload's facts,
launchers and resolution do not change once it is resolved; callers must not change
the objects returned.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from gpulint.resolve.cost import compute_of
from gpulint.resolve.memory import GiB, Estimate, TrainingSetup, estimate_training
from gpulint.core.model import Fact
from gpulint.resolve.precision import resolve_cli
from gpulint.resolve.results import ResolvedCompute
from gpulint.resolve.questions import on_gpu
from gpulint.link.workloads import Workload

GB = 1e9
#: share of a GPU's memory a conservative estimate may use: the rest is CUDA context, allocator
#: fragmentation and temporary buffers (not counted by gpulint.resolve.memory)
FIT_SHARE_COUNTED = 0.9
#: share when activations (or adapters) are not counted: half the GPU is left for them
FIT_SHARE_LOWER_BOUND = 0.5
#: below this many parameters a model is "small" (training-facts §9: low confidence for small models)
SMALL_MODEL = 1_000_000_000
_NON_CUDA = ("Trainium", "Inferentia")
_CONF = {"low": 0, "medium": 1, "high": 2}
_MP_ARGS = ("tensor-model-parallel", "tensor_model_parallel", "pipeline-model-parallel", "pipeline_model_parallel",
            "tensor_parallel", "tensor-parallel", "--tp", "--pp", "model_parallel", "model-parallel")


# --------------------------------------------------------------------------- reading the facts

def optimizer_name(text: Any) -> str | None:
    """gpulint.resolve.memory optimizer for an optimizer as written (torch class name, HF ``optim`` string,
    DeepSpeed ``optimizer.type``); None when it says nothing about state size. Paged optimizers can
    evict their states to host memory, so their GPU share is not decided ("unknown")."""
    if not isinstance(text, str) or not text.strip():
        return None
    t = text.strip().lower().replace("-", "_")
    if "paged" in t or "lomo" in t or "galore" in t:
        return "unknown"
    if "8bit" in t or "8_bit" in t:
        return "adam8bit" if "adam" in t else "unknown"
    if "adafactor" in t:
        return "adafactor"
    if t in ("adam", "fusedadam", "cpuadam", "deepspeedcpuadam", "onebitadam", "zerooneadam"):
        return "adam"
    if "adam" in t or "lamb" in t:  # adamw*, lamb: two fp32 states like Adam
        return "adamw"
    if t == "sgd":
        return "sgd"  # state size depends on momentum (0 by default): see _optimizers
    return "unknown"


def hf_fsdp(text: Any) -> tuple[str | None, bool | None]:
    """(sharding, offload) from HF ``TrainingArguments(fsdp="full_shard auto_wrap offload")``."""
    if isinstance(text, bool):
        return ("fsdp_full" if text else None), None
    if isinstance(text, list):
        text = " ".join(map(str, text))
    if not isinstance(text, str) or not text.strip():
        return None, None
    words = text.lower().replace('"', " ").replace("'", " ").split()  # SageMaker hyperparameters quote the words
    offload = "offload" in words
    if "hybrid_shard" in words or "hybrid_shard_zero2" in words:
        return "fsdp_hybrid", offload
    if "shard_grad_op" in words:
        return "fsdp_grad_op", offload
    if "full_shard" in words:
        return "fsdp_full", offload
    return None, None


_DS_STAGE = {0: "none", 1: "zero1", 2: "zero2", 3: "zero3"}
_FSDP_STAGE = {0: "none", 2: "fsdp_grad_op", 3: "fsdp_full"}
_SHARD_RANK = {"none": 0, "zero1": 1, "zero2": 2, "fsdp_grad_op": 2, "fsdp_hybrid": 3, "zero3": 4, "fsdp_full": 4}


@dataclass
class Sharding:
    """What the facts say about sharding: the most and the least a reading allows."""

    most: str = "none"
    least: str = "none"
    offload_opt: bool | None = False  # None = may be on
    offload_params: bool | None = False
    facts: list[Fact] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return self.most != "none"


_T = TypeVar("_T")


def _once(wl: Workload, key: str, compute: Callable[[Workload], _T]) -> _T:
    """``compute(wl)``, kept in the workload's resolution so that every rule reads the same value computed once.
    A workload not resolved yet is computed each time; a resolution carried over to another workload object
    (``dataclasses.replace``) is recomputed for it."""
    derived = getattr(wl.resolution, "derived", None)
    if derived is None:
        return compute(wl)
    got = derived.get(key)
    if got is None or got[0] is not wl:
        got = derived[key] = (wl, compute(wl))
    return got[1]


def sharding_of(wl: Workload) -> Sharding:
    """Sharding stage and offload from DeepSpeed/accelerate configs, FSDP in code, HF ``fsdp=`` and launcher flags
    (computed once per resolved workload)."""
    return _once(wl, "sharding", _sharding_of)


def _sharding_of(wl: Workload) -> Sharding:
    options: list[tuple[str, bool | None, bool | None, Fact]] = []  # (sharding, offload_opt, offload_params, fact)
    full = {"deepspeed": "zero3", "fsdp": "fsdp_full"}  # what an undecided stage may be, at most
    for f in wl.of("sharding"):
        v = f.value if isinstance(f.value, dict) else {}
        stage = v.get("stage")
        if v.get("via") == "deepspeed":
            sh = _DS_STAGE.get(stage) if isinstance(stage, int) else None
            oo, op = v.get("offload_optimizer"), v.get("offload_param")
            if not isinstance(oo, bool) or not isinstance(op, bool):
                oo = op = False if v.get("offload") is False else None
            options.append((sh or "?deepspeed", oo, op, f))
        else:  # fsdp in code: CPUOffload is not among the facts, so offload may be on
            sh = _FSDP_STAGE.get(stage) if isinstance(stage, int) else None
            if sh == "fsdp_full" and v.get("hybrid"):
                sh = "fsdp_hybrid"
            off = v.get("offload") if isinstance(v.get("offload"), bool) else None
            options.append((sh or "?fsdp", off, off, f))
    ds_facts = any(x.value.get("via") == "deepspeed" for x in wl.of("sharding"))
    for f in wl.of("config.accelerate"):
        dt = str(f.value.get("distributed_type") or "").upper()
        if f.value.get("fsdp") or dt == "FSDP":
            options.append(("?fsdp", None, None, f))
        elif dt == "DEEPSPEED" and not ds_facts:
            options.append(("?deepspeed", None, None, f))
    for f in wl.of("config.hf_args"):
        fs = f.value.get("fsdp")
        fs = resolve_cli(fs, wl) if isinstance(fs, dict) else fs
        if fs:
            sh, off = hf_fsdp(fs)
            options.append((sh or "?fsdp", off, off, f))
    for l in wl.launchers:
        if l.value.get("use_fsdp"):
            options.append(("?fsdp", None, None, l))
        elif l.value.get("use_deepspeed") and not ds_facts:
            options.append(("?deepspeed", None, None, l))
    out = Sharding()
    if not options:
        return out
    most = [full[o[0][1:]] if o[0].startswith("?") else o[0] for o in options]
    out.most = max(most, key=_SHARD_RANK.get)
    out.least = "none" if any(o[0].startswith("?") for o in options) else min(most, key=_SHARD_RANK.get)
    out.offload_opt = True if any(o[1] is True for o in options) else (None if any(o[1] is None for o in options) else False)
    out.offload_params = True if any(o[2] is True for o in options) else (None if any(o[2] is None for o in options) else False)
    out.facts = [o[3] for o in options]
    return out


def _optimizers(wl: Workload) -> tuple[list[str], Fact | None]:
    """Optimizers the workload may use, and the fact that names one. A DeepSpeed config's
    optimizer section wins over the code's (DeepSpeed builds it)."""
    ds = [(optimizer_name(f.value.get("optimizer")), f) for f in wl.of("config.deepspeed") if f.value.get("optimizer")]
    if ds:
        return [n or "unknown" for n, _ in ds], ds[0][1]
    found: list[tuple[str, Fact]] = []
    for f in wl.code_facts("optimizer"):
        name = optimizer_name(f.value.get("name"))
        if name == "sgd":
            name = "unknown"  # momentum (one 4 B state) is off by default and not among the facts
        if name:
            found.append((name, f))
    for f in wl.of("config.hf_args"):
        optim = f.value.get("optim")
        optim = resolve_cli(optim, wl) if isinstance(optim, dict) else optim
        if isinstance(optim, str):
            found.append((optimizer_name(optim) or "unknown", f))
        elif "optim" in f.value:
            found.append(("unknown", f))
    if not found and any(t.value.get("via") in ("hf_trainer", "sft_trainer") for t in wl.code_facts("trains")):
        hf = next(iter(wl.of("config.hf_args")), None) or next(iter(wl.code_facts("trains")))
        return ["adamw"], hf  # TrainingArguments.optim defaults to AdamW (adamw_torch)
    return [n for n, _ in found], (found[0][1] if found else None)


_OPT_BYTES = {"adam": 8, "adamw": 8, "sgd": 4, "adam8bit": 2, "adafactor": 4, "unknown": 0}
OPT_WORDS = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD", "adam8bit": "8-bit Adam", "adafactor": "Adafactor",
             "unknown": "an optimizer of unknown state size"}


def processes_per_node(wl: Workload) -> int | None:
    """GPU processes the workload's launcher starts per node; None when not decided.

    torchrun without ``--nproc_per_node`` starts one; ``deepspeed`` without ``--num_gpus`` all the
    node's GPUs, and so does a SageMaker estimator whose ``distribution`` is data-parallel; ``accelerate launch`` takes ``--num_processes`` or its config (without either the
    machine's default config decides); plain ``python`` starts one. A launch a shell script sends to the
    background (``python train.py &``, often one per GPU in a loop) runs beside others: not decided.
    """
    c = compute_of(wl)
    results: set[int | None] = set()
    for l in wl.launchers:
        v = l.value
        if (l.attrs or {}).get("background"):
            results.add(None)
            continue
        flags = {k.lstrip("-").replace("-", "_") for k in ((l.attrs or {}).get("flags") or {})}
        tool = v.get("tool")
        n = v.get("nproc_per_node")
        if isinstance(n, int) and not isinstance(n, bool):
            results.add(n)
        elif tool in ("torchrun", "torch.distributed.run", "torch.distributed.launch"):
            results.add(None if "nproc_per_node" in flags else 1)
        elif tool == "deepspeed":
            results.add(None if flags & {"num_gpus", "include", "exclude", "i", "e", "hostfile", "H"} else (c.gpus_per_node if c is not None else None))
        elif tool == "accelerate":
            results.add(_accelerate_procs(wl, v))
        elif tool == "python" and not v.get("wrapper"):
            results.add(1)
        elif tool == "sagemaker" and (l.attrs or {}).get("process_per_gpu"):
            results.add(c.gpus_per_node if c is not None else None)  # a data-parallel distribution: one per GPU
        else:
            results.add(None)
    if len(results) != 1:
        return None
    return results.pop()


def _accelerate_procs(wl: Workload, v: dict) -> int | None:
    machines = v.get("num_machines")
    total = v.get("num_processes")
    if isinstance(machines, str) or isinstance(total, str):
        return None  # ``--num_processes $NP``: the launcher overrides the config with a value not known here
    for f in wl.of("config.accelerate"):
        machines = machines or f.value.get("num_machines")
        total = total or f.value.get("num_processes")
    if isinstance(total, int) and isinstance(machines, int) and machines > 0 and total % machines == 0:
        return total // machines
    if isinstance(total, int) and machines is None:
        return total
    return None


def data_parallel(wl: Workload) -> bool:
    """Does each GPU hold its own replica of the model (DDP, DataParallel, several processes)?"""
    if wl.code_facts("ddp") or wl.code_facts("dataparallel"):
        return True
    procs = processes_per_node(wl)
    c = compute_of(wl)
    nodes = (c.nodes if c is not None else None) or 1
    return bool(procs and procs * nodes > 1)


def model_parallel_hint(wl: Workload) -> bool:
    """Launcher arguments of tensor/pipeline model parallelism (Megatron, NeMo ...): not modelled."""
    for l in wl.launchers:
        for a in l.value.get("args") or []:
            if isinstance(a, str) and any(m in a.lower() for m in _MP_ARGS):
                return True
    return False


def _checkpointing(wl: Workload) -> tuple[bool | None, Fact | None]:
    """(True on / False off / None undecided, the fact). No fact at all is off (the default everywhere)."""
    facts = wl.of("grad_checkpointing")
    vals = []
    for f in facts:
        e = f.value.get("enabled") if isinstance(f.value, dict) else None
        e = resolve_cli(e, wl) if isinstance(e, dict) else e
        vals.append((e if isinstance(e, bool) else None, f))
    if any(v is True for v, _ in vals):
        return True, next(f for v, f in vals if v is True)
    if any(v is None for v, _ in vals):
        return None, vals[0][1]
    return False, (vals[0][1] if vals else None)


def _int_value(v: Any, wl: Workload) -> int | None:
    v = resolve_cli(v, wl) if isinstance(v, dict) else v
    if isinstance(v, str) and v.isdigit():
        v = int(v)
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def shape_of(wl: Workload, opts: dict | None = None) -> tuple[int | None, int | None]:
    """(sequence length, micro-batch per GPU) from the workload's arguments or the rule options."""
    seq = mb = None
    for f in wl.of("config.hf_args"):
        for key in ("max_seq_length", "max_length", "model_max_length", "block_size"):
            seq = seq or _int_value(f.value.get(key), wl)
        mb = mb or _int_value(f.value.get("per_device_train_batch_size"), wl)
    for f in wl.of("config.deepspeed"):
        mb = mb or _int_value(f.value.get("train_micro_batch_size_per_gpu"), wl)
    opts = opts or {}
    return seq or _int_value(opts.get("seq_len"), wl), mb or _int_value(opts.get("micro_batch"), wl)


# --------------------------------------------------------------------------- the profile

@dataclass
class Profile:
    """What MEM rules need of a workload, decided once."""

    name: str
    params: int
    dims: dict
    precision_lo: str  # the regime with the least memory a reading allows
    precision_hi: str
    precision_words: str
    optimizers: list[str]
    optimizer_fact: Fact | None
    sharding: Sharding
    lora: bool
    quant_bits: int | None
    checkpointing: bool | None
    checkpointing_fact: Fact | None
    nodes: int | None
    gpus_per_node: int | None
    replicas: bool
    model_fact: Fact | None
    fine_tune: bool

    @property
    def n_gpus(self) -> int | None:
        return self.nodes * self.gpus_per_node if self.nodes and self.gpus_per_node else None

    def setup(self, optimistic: bool, n_gpus: int, gpus_per_node: int | None = None, **kw) -> TrainingSetup:
        opt = (min if optimistic else max)(self.optimizers or ["unknown" if optimistic else "adamw"], key=_OPT_BYTES.get)
        sh = self.sharding
        if optimistic:
            sharding, oo, op = sh.most, sh.offload_opt is not False, sh.offload_params is not False
        else:
            sharding, oo, op = sh.least, sh.offload_opt is True, sh.offload_params is True
        if sharding == "none":
            oo = op = False  # ZeRO-Offload / FSDP CPUOffload need a sharding engine
        bits = self.quant_bits
        trainable = None
        if self.lora and not bits:
            # adapter size is not among the facts: optimistic counts a 1-parameter adapter (frozen base only);
            # conservative treats every parameter as trainable (an upper bound)
            trainable = 1 if optimistic else None
        elif bits and not self.lora:
            bits = None  # quantized weights cannot be fully fine-tuned: treat as a plain load
        precision = self.precision_lo if optimistic else self.precision_hi
        d = self.dims
        return TrainingSetup(
            params=self.params, trainable_params=trainable, precision=precision, optimizer=opt, sharding=sharding,
            n_gpus=max(1, n_gpus), gpus_per_node=gpus_per_node, offload_optimizer=oo, offload_params=op,
            quantized_bits=bits, accounting="zero" if optimistic else "hf",
            layers=_pos(d.get("layers")), hidden=_pos(d.get("hidden")), heads=_pos(d.get("heads")),
            vocab=_pos(d.get("vocab")), intermediate=_pos(d.get("intermediate")), **kw)


def _pos(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def profile(wl: Workload) -> Profile | None:
    """The workload's model, precision, optimizer, sharding and GPUs; None without a model size
    (computed once per resolved workload)."""
    return _once(wl, "profile", _profile)


def _profile(wl: Workload) -> Profile | None:
    model = wl.resolution.model
    params = model.params if model is not None else None
    if not isinstance(params, int) or isinstance(params, bool) or params <= 0:
        return None
    c = compute_of(wl)
    view = wl.resolution.precision.view
    casts = [f for f, d in view.on if f.kind == "precision" and f.value.get("mechanism") == "model_cast" and d in ("bf16", "fp16")]
    sh = sharding_of(wl)
    deepspeed = any(f.value.get("via") == "deepspeed" for f in wl.of("sharding")) or wl.of("config.deepspeed")
    dtypes = view.dtypes
    if view.on:
        # params cast to 16 bit train without an fp32 master copy, unless DeepSpeed keeps one
        lo = (casts[0].value.get("dtype") if casts and not deepspeed else "mixed")
        hi = "mixed"
        words = "in pure " + lo if lo in ("bf16", "fp16") else "in mixed precision"
    elif view.decided_off:
        lo = hi = "fp32"
        words = "in fp32"
    else:
        lo, hi, words = "mixed", "mixed", "in undecided precision (counted as mixed)"
    if "bf16" in dtypes and lo == "mixed":
        words = "in bf16 mixed precision"
    elif "fp16" in dtypes and lo == "mixed":
        words = "in fp16 mixed precision"
    quant = [f.value.get("bits") for f in wl.of("quantized_load") if f.value.get("bits") in (4, 8)]
    bits = 4 if model.load_in_4bit or 4 in quant else 8 if model.load_in_8bit or 8 in quant else None
    ck, ck_fact = _checkpointing(wl)
    opts, opt_fact = _optimizers(wl)
    mfacts = [f for f in wl.of("model.name") if f.value == model.name]
    name = str(model.name or "the model").rstrip("/").rsplit("/", 1)[-1]
    return Profile(
        name=name, params=params, dims=dict(model.dims or {}), precision_lo=lo, precision_hi=hi,
        precision_words=words, optimizers=opts, optimizer_fact=opt_fact, sharding=sh, lora=bool(wl.of("peft")),
        quant_bits=bits, checkpointing=ck, checkpointing_fact=ck_fact, nodes=(c.nodes or None) if c is not None else None,
        gpus_per_node=c.gpus_per_node if c is not None else None, replicas=data_parallel(wl), model_fact=mfacts[0] if mfacts else None,
        fine_tune=bool(mfacts),
    )


def optimistic_per_gpu(p: Profile, est: Estimate) -> tuple[float, str]:
    """Per-GPU bytes of an optimistic estimate, and how it was spread. Without sharding and without
    data-parallel replicas (one process), the model may be spread over the node's GPUs
    (``device_map="auto"``), so the estimate is divided by them."""
    if not p.sharding.any and not p.replicas and (p.gpus_per_node or 1) > 1:
        return est.total_bytes / p.gpus_per_node, f"even spread over all {p.gpus_per_node} GPUs of a node"
    return float(est.total_bytes), ""


def fits(est: Estimate, gpu_gib: float) -> bool:
    """Conservative fit: the estimate stays within 90% of the GPU (50% when it is a lower bound)."""
    share = FIT_SHARE_LOWER_BOUND if est.lower_bound else FIT_SHARE_COUNTED
    return est.total_bytes <= share * gpu_gib * GiB


def fit_inputs(wl: Workload):
    """(profile, compute) when a fit can be judged, else None."""
    c = compute_of(wl)
    if c is None or c.instance is None or not c.gpu_memory_gib or model_parallel_hint(wl):
        return None
    if not on_gpu(wl) or str(c.gpu_model or "").startswith(_NON_CUDA):
        return None
    p = profile(wl)
    if p is None or not p.gpus_per_node:
        return None
    return p, c


def optimistic_training(p: Profile) -> tuple[TrainingSetup, Estimate] | None:
    """The least per-GPU memory any reading of the facts allows; None when the GPU count a
    sharded job spreads over is unknown (more nodes could always make it fit)."""
    if p.sharding.any and p.n_gpus is None:
        return None
    # activations as if fully recomputed: what no checkpointing setting can remove (MEM003 covers the rest)
    s = p.setup(True, p.n_gpus or 1, p.gpus_per_node, grad_checkpointing=True)
    return s, estimate_training(s)


def uses_multi_gpu(wl: Workload, p: Profile) -> bool:
    """Data parallel in several processes, DataParallel, or a sharding engine: keep at least 2 GPUs."""
    return p.replicas or p.sharding.any or bool(wl.code_facts("dataparallel"))


def conservative_estimate(p: Profile, gpus_per_node: int) -> Estimate:
    """Per-GPU memory on a node of ``gpus_per_node`` GPUs (same node count), reading every undecided
    setting the expensive way: HF 18 B/param accounting, Adam, only certain sharding and offload,
    no recomputation unless it is on, attention scores stored."""
    n = (p.nodes or 1) * gpus_per_node
    return estimate_training(p.setup(False, n, gpus_per_node, grad_checkpointing=p.checkpointing is True,
                                     flash_attention=False))


@dataclass(frozen=True)
class Candidate:
    instance: Any  # catalogue Instance
    usd_per_hour: float  # one node, on the capacity compared
    usd_per_pflop_hour: float  # on the math compared
    estimate: Estimate


@dataclass(frozen=True)
class CheaperFit:
    """A cheaper instance for the same work, and the terms of the comparison."""

    candidate: Candidate
    current: Any  # catalogue Instance
    current_usd_per_hour: float  # one node, on the capacity compared
    current_usd_per_pflop_hour: float
    ratio: float  # the same work costs this share of today's on the candidate
    math: str  # "16-bit" (mixed precision on) | "fp32" (decided off) | "16-bit and fp32" (undecided: both must agree)
    capacity: str  # "spot" | "on-demand": the prices compared


def _rate(cat: Any, inst: Any, math: str) -> float | None:
    """Aggregate dense throughput of one node in PFLOPS for the math the workload runs."""
    g = cat.gpu(inst)
    if g is None:
        return None
    tflops = g.half_tflops if math == "16-bit" else g.fp32_tflops
    return inst.gpu_count * tflops / 1000 if tflops else None


def cheaper_fit(wl: Workload, p: Profile, cat: Any) -> CheaperFit | None:
    """The cheapest same-provider catalogue instance that fits conservatively, keeps every feature the
    workload uses (bf16/fp8, several GPUs, RDMA across nodes), is not retired, is meant for training, costs
    at most half per hour and less per unit of work.

    Per unit of work means on the math the workload runs: peak dense 16-bit throughput with mixed
    precision on, fp32 throughput when it is decided off (a T4 is far slower than an A10G in fp32), and
    both when undecided (the candidate must win on each). Prices are spot prices for a spot workload
    (candidates without an observed spot price are skipped), on-demand list prices otherwise."""
    c = compute_of(wl)
    cur = c.instance if c is not None else None
    if cur is None:
        return None
    mixed = wl.resolution.precision.mixed
    maths = ["16-bit"] if mixed is True else ["fp32"] if mixed is False else ["16-bit", "fp32"]
    capacity = "spot" if c.capacity == "spot" else "on-demand"
    cur_price = cat.price(cur, capacity).usd_per_hour
    cur_rates = [_rate(cat, cur, m) for m in maths]
    if not cur_price or not all(cur_rates):
        return None
    dtypes = set(wl.resolution.precision.dtypes)
    multi = uses_multi_gpu(wl, p)
    nodes = p.nodes or 1
    need_rdma = nodes > 1 and cur.rdma not in (None, "none")
    best: tuple | None = None
    for inst in cat.instances():
        if inst.provider != cur.provider or inst.name == cur.name or inst.retired or inst.training_suitable is not True:
            continue
        if str(inst.gpu_model).startswith(_NON_CUDA) != str(cur.gpu_model).startswith(_NON_CUDA):
            continue
        if ("bf16" in dtypes and not inst.bf16_supported) or ("fp8" in dtypes and not inst.fp8_supported):
            continue
        if (multi and inst.gpu_count < 2) or (need_rdma and inst.rdma in (None, "none")):
            continue
        if nodes > 1 and (inst.network_gbps or 0) < (cur.network_gbps or 0):
            continue  # across nodes the fabric's bandwidth is part of what the job uses (gradient/parameter traffic)
        price = cat.price(inst, capacity).usd_per_hour
        rates = [_rate(cat, inst, m) for m in maths]
        if not price or not all(rates) or price > 0.5 * cur_price:
            continue
        # the least favourable reading decides: the candidate must cost less per unit of work on every one
        ratio = max((price / r) / (cur_price / cr) for r, cr in zip(rates, cur_rates))
        if ratio >= 1:
            continue
        est = conservative_estimate(p, inst.gpu_count)
        if not fits(est, inst.gpu_memory_gib):
            continue
        key = (price, ratio)
        if best is None or key < best[0]:
            worst = max(range(len(maths)), key=lambda i: (price / rates[i]) / (cur_price / cur_rates[i]))
            best = (key, Candidate(inst, price, price / rates[worst], est), cur_price / cur_rates[worst], ratio, maths[worst])
    if best is None:
        return None
    _, cand, cur_pf, ratio, math = best
    return CheaperFit(cand, cur, cur_price, cur_pf, ratio, math if len(maths) == 1 else "16-bit and fp32", capacity)


def mem002_confidence(p: Profile, cur: Any, cand: Any, cat: Any, multi: bool) -> str:
    """training-facts §9: low for small models and for multi-GPU moves from NVLink/NVSwitch onto
    PCIe-only parts; medium otherwise; never above the catalogue's confidence in the throughput figures."""
    conf = "medium"
    if p.params < SMALL_MODEL:
        conf = "low"
    if multi and cur.gpu_interconnect in ("nvlink", "nvswitch") and cand.gpu_interconnect not in ("nvlink", "nvswitch"):
        conf = "low"
    for inst in (cur, cand):
        g = cat.gpu(inst)
        gc = (g.confidence if g else None) or "low"
        if _CONF.get(gc, 0) < _CONF[conf]:
            conf = gc
    return conf


def checkpointing_needed(p: Profile, gpu_gib: float, seq_len: int, micro_batch: int) -> tuple[Estimate, Estimate] | None:
    """(optimistic estimate without recomputation, conservative estimate with it) when the workload
    fits only with activations recomputed: even the optimistic reading overflows the GPU storing every
    layer's activations (FlashAttention assumed, scores not stored), while the conservative reading
    with full recomputation fits; else None."""
    if not all(_pos(p.dims.get(k)) for k in ("layers", "hidden", "heads")) or not p.gpus_per_node:
        return None
    if p.sharding.any and p.nodes is None:
        return None
    n = p.n_gpus or p.gpus_per_node
    off = estimate_training(p.setup(True, n, p.gpus_per_node, grad_checkpointing=False, flash_attention=True,
                                    seq_len=seq_len, micro_batch=micro_batch))
    per_gpu, _ = optimistic_per_gpu(p, off)
    if per_gpu <= gpu_gib * GiB:
        return None
    on = estimate_training(p.setup(False, (p.nodes or 1) * p.gpus_per_node, p.gpus_per_node, grad_checkpointing=True,
                                   flash_attention=False, seq_len=seq_len, micro_batch=micro_batch))
    return (off, on) if fits(on, gpu_gib) else None


#: device_map values that spread one process's model over every GPU it sees ("?": not a literal, may be one)
_SPREAD_MAPS = ("auto", "balanced", "balanced_low_0", "sequential", "?")

_SELF_PARALLEL = ("lightning", "hf_trainer", "sft_trainer", "keras", "deepspeed")


def idle_gpus(wl: Workload) -> tuple[int, int, Fact] | None:
    """(processes per node, GPUs per node, launcher) when the launcher starts fewer GPU processes than the
    node has GPUs and nothing in the code spreads one process over several GPUs; else None."""
    c = compute_of(wl)
    gpn = c.gpus_per_node if c is not None else None
    # a known catalogue instance, or a GPU model the catalogue knows (a Modal Function's gpu="A100:4", a Slurm job's
    # --gres=gpu:a100:4 priced per GPU-hour): an unknown accelerator type may not be a GPU at all
    if c is None or (c.instance is None and c.gpu_like is None and c.gpu_hour is None) or not isinstance(gpn, int) or gpn < 2 or not wl.launchers or model_parallel_hint(wl):
        return None
    procs = processes_per_node(wl)
    if not procs or procs >= gpn:
        return None
    if procs == 1:
        # one process can still drive every GPU: DataParallel, HF Trainer (DataParallel by itself),
        # Lightning/DeepSpeed spawning, Keras strategies, mp.spawn + DDP, device_map="auto" on a HF load
        hf_load = any(f.key == "from_pretrained" and (f.attrs or {}).get("device_map") in _SPREAD_MAPS
                      for f in wl.code_facts("model.name"))
        if wl.code_facts("dataparallel") or wl.code_facts("ddp") or wl.of("sharding") or hf_load:
            return None
        if any(t.value.get("via") in _SELF_PARALLEL for t in wl.code_facts("trains")):
            told = lightning_devices(wl)
            # a Lightning Trainer spawns the processes its devices= asks for: fewer than the node's GPUs leaves the rest
            return (told.value["devices"], gpn, told) if told is not None and told.value["devices"] < gpn else None
    return procs, gpn, wl.launchers[0]


def lightning_devices(wl: Workload) -> Fact | None:
    """The Lightning Trainer call that says how many GPUs per node the workload uses (``Trainer(devices=2)``), when
    every Lightning Trainer of its code gives the same literal count and nothing else trains."""
    trains = {t.value.get("via") for t in wl.code_facts("trains")}
    told = [f for f in wl.code_facts("uses_gpu") if f.value.get("via") == "lightning"]
    if trains != {"lightning"} or not told or any(not isinstance(f.value.get("devices"), int) for f in told):
        return None
    return told[0] if len({f.value["devices"] for f in told}) == 1 else None
