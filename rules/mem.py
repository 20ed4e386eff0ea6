"""MEM: does the workload fit its GPUs, and does it need GPUs this big (or this many)?

The fit itself is decided by the host's memory-fit model (``gpulint.resolve.memfit``, over
``gpulint.resolve.memory``): MEM001 needs its optimistic estimate to be too big,
MEM002/MEM003 its conservative estimate to be small enough. Anything that cannot
be decided either way keeps the rules silent.
"""
from __future__ import annotations

import re
from typing import Any

from gpulint.rulekit import (
    CostImpact, Estimate, Example, Expect, FIT_SHARE_COUNTED, FIT_SHARE_LOWER_BOUND, GB, GiB, Location, OPT_WORDS,
    Profile, Related, ResolvedCompute, Rule, Severity, TrainingSetup, Workload, avoidable, cheaper_fit,
    checkpointing_needed, compute_of, compute_related, conservative_estimate, estimate_inference, fit_inputs, fits,
    hookimpl, idle_gpus, launch_trains_on_gpu, mem002_confidence, model_parallel_hint, optimistic_per_gpu,
    optimistic_training, processes_per_node, profile, shape_of, toy_workload, trains_on_gpu, unpriced, uses_multi_gpu,
)


def _regime_words(p: Profile, s: TrainingSetup) -> str:
    if p.quant_bits and p.lora:
        what = f"QLoRA ({p.quant_bits}-bit base)"
    elif p.lora:
        what = "LoRA"
    else:
        what = "full fine-tuning" if p.fine_tune else "training"
    opt = OPT_WORDS[s.optimizer]
    return f"{p.name} ({p.params / 1e9:.1f}B params) {what} with {opt} {p.precision_words}"


def _sharding_words(s: TrainingSetup) -> str:
    if s.sharding == "none":
        return "without sharding"
    label = {"zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3", "fsdp_full": "FSDP full sharding",
             "fsdp_grad_op": "FSDP SHARD_GRAD_OP", "fsdp_hybrid": "FSDP hybrid sharding"}[s.sharding]
    off = [w for w, on in (("optimizer", s.offload_optimizer), ("parameters", s.offload_params)) if on]
    return f"with {label} over {s.n_gpus} GPUs" + (f" and {' and '.join(off)} offloaded to CPU" if off else "")


def _gpus_words(c: ResolvedCompute) -> str:
    model = str(c.gpu_model or "GPU").split("-")[0]
    return f"{c.instance_name} has {c.gpu_count}x {c.gpu_memory_gib:.1f} GiB {model}"


def _instance_loc(wl: Workload) -> Location | None:
    c = compute_of(wl)
    if c is not None and c.instance_loc is not None:
        return c.instance_loc
    return wl.compute.loc if wl.compute is not None else None


def _assumptions(est: Estimate, extra: str = "") -> str:
    return "Estimate assumptions: " + "; ".join(est.assumptions + ([extra] if extra else [])) + "."


# --------------------------------------------------------------------------- MEM001

class ModelExceedsGpuMemory(Rule):
    """The model cannot be trained (or served) on the workload's GPUs: even the smallest estimate exceeds their memory.

    What it does:
        Estimates per-GPU memory from the model size (known-model table, HF ``config.json`` or the name),
        the precision (AMP, bf16/fp16 casts, DeepSpeed/accelerate/HF settings), the optimizer (code,
        HF ``optim``, DeepSpeed ``optimizer``; HF Trainer's default AdamW), sharding (DeepSpeed ZeRO
        stage and offload, FSDP, HF ``fsdp=``) over nodes x GPUs per node, LoRA/QLoRA (``peft``,
        ``load_in_4bit``/``BitsAndBytesConfig``) and gradient checkpointing, and compares it with the
        GPU memory of the instance the workload runs on. It takes the *optimistic* reading of every
        undecided setting (the most sharding, offload where it may be on, the smallest optimizer state,
        activations as if recomputed, a single process spread over all of a node's GPUs) and fires only
        when even that does not fit. Inference workloads compare the 16-bit (or quantized) weights, spread
        over all GPUs, with GPU memory. Tensor/pipeline-parallel launch arguments keep it silent.
    Why it costs money:
        The job dies with CUDA out-of-memory at the first step (or while loading), after the instances
        have been provisioned, images pulled and data staged. Retry loops and schedulers keep the
        billed GPUs up while nothing trains.
    How to fix:
        Shard the model states over enough GPUs, train adapters instead of all weights, or move to
        GPUs with more memory. Before (replicated AdamW states, 16 B/param on every GPU)::

            torchrun --nproc_per_node 4 train.py          # Llama-2-70B on 4x A10G

        After (ZeRO-3 over 4 nodes of 8x A100-80GB: 16 B x 69B / 32 GPUs = 34.5 GB each)::

            deepspeed --num_nodes 4 --num_gpus 8 train.py --deepspeed ds_zero3.json
            # ds_zero3.json: {"zero_optimization": {"stage": 3}, "bf16": {"enabled": true}}

        or LoRA/QLoRA (``peft.get_peft_model`` on a 4-bit ``BitsAndBytesConfig`` load).
    Cost model:
        The job cannot run as configured, so the whole hourly price of its instances (all nodes,
        catalogue price with region, date and source) is at risk for as long as they stay up.
        Without a known, priced instance no figure is given.
    Sources:
        training-facts §1: HF "Model training anatomy" (16-18 B/param for mixed-precision AdamW),
        Rajbhandari et al., ZeRO (arXiv:1910.02054) §3.1 and §5 (stage formulas), Korthikanti et al.
        (arXiv:2205.05198) activation memory, Dettmers et al., QLoRA (arXiv:2305.14314).
    """

    code = "MEM001"
    roles = ("training", "inference", "batch")
    name = "model-exceeds-gpu-memory"
    severity = Severity.ERROR
    family = "MEM"
    since = "0.1.0"

    VALID = [
        Example(
            {
                "train.py": """\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-70b-hf")
args = TrainingArguments(output_dir="/fsx/out", bf16=True, deepspeed="ds_zero3.json",
                         dataloader_num_workers=8)
Trainer(model=model, args=args, train_dataset=ds).train()
""",
                "ds_zero3.json": """\
{
  "bf16": {"enabled": true},
  "zero_optimization": {"stage": 3},
  "train_micro_batch_size_per_gpu": 1
}
""",
                "scripts/launch.sh": "deepspeed --num_nodes 4 --num_gpus 8 train.py\n",
                "infra/main.tf": """\
resource "aws_instance" "trainer" {
  count         = 4
  ami           = "ami-0123456789abcdef0"
  instance_type = "p4de.24xlarge"
}
""",
            },
            title="Llama-2-70B with ZeRO-3 over 4x p4de.24xlarge (32x A100-80GB): 34.5 GB of states per GPU",
        ),
        Example(
            {
                "train.py": """\
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments
bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-13b-hf", quantization_config=bnb)
model = get_peft_model(model, LoraConfig(r=16, target_modules=["q_proj", "v_proj"]))
args = TrainingArguments(output_dir="out", bf16=True, dataloader_num_workers=4)
Trainer(model=model, args=args, train_dataset=ds).train()
""",
                "sky.yaml": """\
resources:
  accelerators: A10G:1
run: python train.py
""",
            },
            title="QLoRA of a 13B model on one 24 GB GPU (about 7 GB of 4-bit weights)",
        ),
        Example(
            {
                "train.py": """\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-70b-hf")
args = TrainingArguments(output_dir="out", bf16=True, deepspeed="ds.json")
Trainer(model=model, args=args, train_dataset=ds).train()
""",
                "ds.json": '{"bf16": {"enabled": true}, "zero_optimization": {"stage": 3}}\n',
                "run.sh": "deepspeed --hostfile hosts train.py\n",
                "infra/main.tf": 'resource "aws_instance" "trainer" {\n  instance_type = "p4de.24xlarge"\n  count = var.n\n}\n',
            },
            title="ZeRO-3 over an unknown number of nodes: more nodes could make it fit, so silent",
        ),
    ]
    INVALID = [
        Example(
            {
                "train.py": """\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-70b-hf")
args = TrainingArguments(output_dir="out", bf16=True, dataloader_num_workers=8)
Trainer(model=model, args=args, train_dataset=ds).train()
""",
                "scripts/train.sh": "#!/bin/bash\ntorchrun --nproc_per_node 4 train.py\n",
                "infra/main.tf": """\
resource "aws_instance" "trainer" {
  ami           = "ami-0123456789abcdef0"
  instance_type = "g5.12xlarge"
}
""",
            },
            expect=[Expect("train.py", 2, ("Llama-2-70b-hf (69.0B params) full fine-tuning with AdamW", "~1104 GB",
                                            "without sharding", "g5.12xlarge has 4x 22.4 GiB A10G"))],
            title="Llama-2-70B full fine-tuning, DDP replicas on g5.12xlarge",
        ),
        Example(
            {
                "serve.py": """\
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-70b-hf", torch_dtype=torch.float16, device_map="auto")
with torch.inference_mode():
    out = model.generate(**inputs)
""",
                "k8s/serve.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama-serve
spec:
  template:
    spec:
      nodeSelector:
        node.kubernetes.io/instance-type: g5.12xlarge
      containers:
        - name: server
          image: ghcr.io/acme/serve:1.0
          command: ["python", "serve.py"]
          resources:
            limits:
              nvidia.com/gpu: 4
""",
            },
            expect=[Expect("serve.py", 3, ("inference", "~138 GB", "34.5 GB per GPU", "g5.12xlarge has 4x 22.4 GiB A10G"))],
            title="serving Llama-2-70B in fp16 on 4x A10G",
        ),
    ]

    def check_workload(self, wl: Workload, ctx):
        got = fit_inputs(wl)
        if got is None:
            return
        p, c = got
        gpu_bytes = c.gpu_memory_gib * GiB
        trains = trains_on_gpu(wl)
        if trains is None:
            if wl.code_facts("inference"):
                yield from self._inference(wl, p, c, gpu_bytes)
            return
        got = optimistic_training(p)
        if got is None:
            return
        setup, est = got
        per_gpu, spread = optimistic_per_gpu(p, est)
        if per_gpu <= gpu_bytes:
            return
        at = p.model_fact or trains
        what = "model states" if "activations" not in est.breakdown else "model states and recomputed activations"
        figure = f"~{est.total_bytes / GB:.0f} GB ({est.total_bytes / GiB:.0f} GiB) of {what} per GPU {_sharding_words(setup)}"
        if spread:
            figure = f"~{est.total_bytes / GB:.0f} GB of {what}, {per_gpu / GB:.1f} GB per GPU {spread}"
        related = compute_related(wl) + [Related(f.loc, f"sharding: {f.key or f.kind}") for f in p.sharding.facts[:2]]
        if p.optimizer_fact is not None:
            related.append(Related(p.optimizer_fact.loc, f"optimizer: {OPT_WORDS[setup.optimizer]}"))
        yield self.finding(
            at.loc,
            f"{_regime_words(p, setup)} needs {figure}; {_gpus_words(c)}",
            symbol=f"{wl.entrypoint}:{p.name}",
            related=related,
            guidance=_mem001_guidance(p, setup, est, c),
            cost=avoidable(wl, 1.0, "the job cannot run as configured (CUDA out of memory), so the whole hourly price is at risk "
                                    "while the instances stay up", "medium"),
            workload=wl.name,
        )

    def _inference(self, wl: Workload, p: Profile, c: dict, gpu_bytes: float):
        bpp = {4: 0.5, 8: 1.0}.get(p.quant_bits or 0, 2.0)
        est = estimate_inference(p.params, bpp)
        gpus = p.n_gpus or p.gpus_per_node
        per_gpu = est.total_bytes / gpus  # device_map / tensor parallel can spread the weights over every GPU
        if per_gpu <= gpu_bytes:
            return
        at = p.model_fact or wl.code_facts("inference")[0]
        kind = f"{p.quant_bits}-bit" if p.quant_bits else "16-bit"
        yield self.finding(
            at.loc,
            f"{p.name} ({p.params / 1e9:.1f}B params) inference needs ~{est.total_bytes / GB:.0f} GB of {kind} weights, "
            f"{per_gpu / GB:.1f} GB per GPU even spread over all {gpus} GPUs; {_gpus_words(c)}",
            symbol=f"{wl.entrypoint}:{p.name}:inference",
            related=compute_related(wl),
            guidance=("Serve on GPUs whose total memory holds the weights plus the KV cache, or quantize (AWQ/GPTQ 4-bit "
                      "roughly quarters the weights). " + _assumptions(est, "weights spread evenly over every GPU (optimistic)")),
            cost=avoidable(wl, 1.0, "the model cannot load on these GPUs, so the whole hourly price is at risk", "medium"),
            workload=wl.name,
        )


def _mem001_guidance(p: Profile, s: TrainingSetup, est: Estimate, c: ResolvedCompute) -> str:
    gpu = c.gpu_memory_gib * GiB
    zero3_states = p.params * 16
    need = -(-zero3_states // int(0.8 * gpu))  # GPUs so that ZeRO-3 states use at most 80% of each
    per = c.gpu_count or 1
    fix = (f"Shard the states: ZeRO-3 / FSDP FULL_SHARD divides the {zero3_states / GB:.0f} GB of mixed-precision AdamW states "
           f"(16 B/param) over all GPUs, so at least {need} GPUs of this size ({-(-need // per)} x {c.instance_name}) before "
           f"activations; or train LoRA/QLoRA adapters on a frozen 16-bit/4-bit base ({p.params * 2 / GB:.0f} / "
           f"{p.params * 0.55 / GB:.0f} GB), or use GPUs with more memory. ")
    return fix + _assumptions(est, "optimistic reading of undecided settings (this is a lower bound)")


# --------------------------------------------------------------------------- MEM002

class OversizedInstance(Rule):
    """The workload fits an instance that costs at most half as much per hour and less per unit of work.

    What it does:
        Estimates the workload's per-GPU training memory the *conservative* way (HF's 18 B/param for
        mixed-precision AdamW, Adam when the optimizer is unknown, only sharding and offload that are
        certain, no recomputation unless it is on) and searches the catalogue, on the same provider, for
        the cheapest instance that holds it (within 90% of GPU memory, or 50% when activations are not
        counted) and keeps every feature the workload uses: bf16 (or fp8) support, two or more GPUs
        for DDP/DataParallel/sharded or multi-process jobs, RDMA and at least the same network bandwidth
        for multi-node jobs, CUDA (no
        Trainium/Inferentia). The proposal must cost at most half per hour *and* less per unit of work
        (price per hour over aggregate dense bf16/fp16 tensor throughput), and be neither retired nor
        unsuitable for training. Memory fit alone is not enough: a smaller GPU runs the job longer.
    Why it costs money:
        A job that fits a cheaper GPU pays the premium of the bigger one every hour; when the cheaper
        instance also delivers more peak throughput per dollar, the run as a whole costs less.
    How to fix:
        Move the workload to the proposed instance and match the process count to its GPUs. Before::

            instance_type = "p4d.24xlarge"                 # 8x A100-40GB, $21.96/h
            torchrun --nproc_per_node 8 train.py           # BERT-base

        After::

            instance_type = "g6e.12xlarge"                 # 4x L40S-48GB
            torchrun --nproc_per_node 4 train.py

        Measure a few hundred steps on both before switching a long run: small models rarely keep
        big GPUs busy, so the gain is often larger, but the peak figures are not a measurement.
        A tutorial-sized workload (a benchmark dataset, a model under 5M parameters) is reported at
        info without a figure: its step keeps neither GPU busy, and the big instance may be the point
        of the demo. So is a multi-GPU job whose folder or file is named for its parallelism
        (``distributed_training_data_parallelism/``, ``ddp_example.py``): its GPU count is what it shows.
        A SageMaker ``distribution`` that is data-parallel (smdistributed dataparallel, pytorchddp,
        torch_distributed) starts one process per GPU, so the cheaper fit keeps several GPUs too.
    Cost model:
        Both prices are catalogue list prices (region, date and source in the basis). Assuming equal
        utilisation of the two instances' peak dense 16-bit throughput, the same work costs
        current price x (candidate $/PF-h / current $/PF-h), so the avoidable spend per hour of the
        current run is current price x (1 - ratio). Confidence follows training-facts §9: low for
        models under 1B parameters or multi-GPU moves from NVLink onto PCIe, capped at the catalogue's
        confidence in the throughput figures.
    Sources:
        training-facts §9 (cost per unit of work, utilisation caveat: stas00/ml-engineering MAMF
        table); §1 (memory per parameter: HF model_memory_anatomy, ZeRO paper); gpu-instances.yaml
        prices and gpu_models dense peaks.
    """

    code = "MEM002"
    name = "oversized-instance"
    severity = Severity.WARNING
    family = "MEM"
    since = "0.1.0"

    VALID = [
        Example(
            {
                "train.py": """\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-13b-hf")
args = TrainingArguments(output_dir="out", bf16=True, deepspeed="ds.json", dataloader_num_workers=8)
Trainer(model=model, args=args, train_dataset=ds).train()
""",
                "ds.json": '{"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}}\n',
                "run.sh": "deepspeed --num_gpus 8 train.py\n",
                "infra/main.tf": 'resource "aws_instance" "trainer" {\n  instance_type = "p4d.24xlarge"\n}\n',
            },
            title="13B full fine-tuning with ZeRO-2 on 8x A100-40GB: nothing cheaper holds it",
        ),
        Example(
            {
                "train.py": """\
import torch
from transformers import AutoModelForSequenceClassification
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased").cuda()
opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
for batch in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(**batch).loss
    loss.backward()
    opt.step()
""",
                "run.sh": "python train.py\n",
                "infra/main.tf": 'resource "aws_instance" "trainer" {\n  instance_type = "g6.xlarge"\n}\n',
            },
            title="BERT-base on one L4: already the cheapest fit",
        ),
    ]
    INVALID = [
        Example(
            {
                "train.py": """\
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
args = TrainingArguments(output_dir="out", bf16=True, per_device_train_batch_size=32, dataloader_num_workers=4)
Trainer(model=model, args=args, train_dataset=ds).train()
""",
                "scripts/train.sh": "torchrun --nproc_per_node 8 train.py\n",
                "infra/main.tf": """\
resource "aws_instance" "trainer" {
  ami           = "ami-0123456789abcdef0"
  instance_type = "p4d.24xlarge"
}
""",
            },
            expect=[Expect("infra/main.tf", 3, ("p4d.24xlarge", "g6e.12xlarge", "$21.96/h", "$10.49/h", "$3.87/h less", "16-bit"))],
            title="BERT-base DDP on 8x A100: 4x L40S holds it for less than half the price",
        ),
        Example(
            {
                "train.py": """\
import torch
from transformers import AutoModelForSequenceClassification
model = AutoModelForSequenceClassification.from_pretrained("roberta-base").cuda()
opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
for batch in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(**batch).loss
    loss.backward()
    opt.step()
""",
                "sky.yaml": "resources:\n  instance_type: g6e.4xlarge\nrun: python train.py\n",
            },
            expect=[Expect("sky.yaml", 2, ("g6e.4xlarge", "g6.xlarge (1x L4-24GB, $0.80/h on-demand)", "$0.60/h less"))],
            title="one L40S with a bigger host than a single-process job needs",
        ),
    ]

    def check_workload(self, wl: Workload, ctx):
        trains = trains_on_gpu(wl)
        c = compute_of(wl)
        if trains is None or c is None or c.instance is None or model_parallel_hint(wl):
            return
        p = profile(wl)
        if p is None or not p.gpus_per_node or (p.sharding.any and p.nodes is None):
            return
        if not fits(conservative_estimate(p, p.gpus_per_node), c.gpu_memory_gib):
            return  # not sure it fits where it runs: nothing to compare (MEM001 judges the other way)
        if idle_gpus(wl) is not None:
            return  # the comparison assumes the work uses every GPU; MEM004 reports the idle ones instead
        fit = cheaper_fit(wl, p, ctx.catalogue)
        if fit is None:
            return
        cat = ctx.catalogue
        cand, cur = fit.candidate, fit.current
        inst = cand.instance
        nodes = p.nodes or 1
        cur_price = fit.current_usd_per_hour
        saving = round(cur_price * nodes * (1 - fit.ratio), 2)
        multi = uses_multi_gpu(wl, p)
        g_cur, g_new = cat.gpu(cur), cat.gpu(inst)
        cp, np_ = cat.price(cur, fit.capacity), cat.price(inst, fit.capacity)
        n = f"{nodes} x " if nodes > 1 else ""
        math = "fp32" if fit.math == "fp32" else "dense 16-bit"
        tf = (lambda g: g.fp32_tflops) if fit.math == "fp32" else (lambda g: g.half_tflops)
        undecided = (" (precision is undecided, so the candidate had to win on both 16-bit and fp32 throughput; the "
                     "less favourable reading is shown)" if fit.math == "16-bit and fp32" else "")
        basis = (f"{n}{cur.name} at ${cur_price:.2f}/h {fit.capacity} ({cp.region}, price as of {cp.as_of}; {cp.source}) vs {n}{inst.name} "
                 f"at ${cand.usd_per_hour:.2f}/h {fit.capacity} ({np_.region}, price as of {np_.as_of}; {np_.source}); peak {math} "
                 f"throughput {cur.gpu_count} x {tf(g_cur):g} TF = {cur.gpu_count * tf(g_cur) / 1000:.2f} PF "
                 f"(${fit.current_usd_per_pflop_hour:.1f}/PF-h) vs {inst.gpu_count} x {tf(g_new):g} TF = "
                 f"{inst.gpu_count * tf(g_new) / 1000:.2f} PF (${cand.usd_per_pflop_hour:.1f}/PF-h){undecided}; assuming equal utilisation of peak on both "
                 f"(a small model rarely keeps a big GPU busy, so the real gain is usually larger), the same work costs "
                 f"{fit.ratio:.0%} as much, so about {1 - fit.ratio:.0%} of each hour (${saving:.2f}/h) is avoidable.")
        toy = toy_workload(wl)
        # a multi-node job moves node for node: both sides name the node count, each price is one node's
        each = " each" if nodes > 1 else ""
        head = (f"{p.name} ({p.params / 1e6:,.0f}M params) fits {n}{inst.name} ({inst.gpu_count}x {inst.gpu_model}, "
                f"${cand.usd_per_hour:.2f}/h{each} {fit.capacity}) instead of {n}{cur.name} ({cur.gpu_count}x {cur.gpu_model}, "
                f"${cur_price:.2f}/h{each})")
        if toy:
            # a tutorial-sized step keeps neither GPU busy: the equal-utilisation comparison has nothing to stand on
            message = f"{head} (tutorial-sized: {toy}; a demo of the bigger instance may be deliberate)"
            cost = unpriced(f"No hourly figure: the comparison assumes both instances run at equal utilisation of peak throughput, "
                            f"which a tutorial-sized step ({toy}) reaches on neither; the cheaper instance lists "
                            f"${cur_price - cand.usd_per_hour:.2f}/h less per node.")
        else:
            message = (f"{head}: the same work costs about ${saving:.2f}/h less at equal utilisation "
                       f"(${cand.usd_per_pflop_hour:.1f} vs ${fit.current_usd_per_pflop_hour:.1f} per PF-hour of peak {math} throughput)")
            cost = CostImpact(saving, basis, mem002_confidence(p, cur, inst, cat, multi))
        at = _instance_loc(wl) or trains.loc
        named = _parallel_named(wl.entrypoint, at.path) if cur.gpu_count * nodes > 1 and not toy else None
        if named:
            message += f" ({named} is named for its parallelism: {cur.gpu_count * nodes} GPUs look like the point of the example)"
        yield self.finding(
            at,
            message,
            severity=Severity.INFO if toy or named else None,
            symbol=f"{wl.entrypoint}:{cur.name}",
            related=compute_related(wl) + ([Related(p.model_fact.loc, f"model: {p.name}")] if p.model_fact else []),
            guidance=_mem002_guidance(wl, inst, cand.estimate, multi),
            cost=cost,
            workload=wl.name,
        )


#: a folder or file named for spreading work over GPUs (``07_tensorflow_distributed_training_data_parallelism/``,
#: ``ddp_example.py``, ``multi-gpu/``): an example about parallelism chose its GPU count to show it
_PARALLEL_NAMED = re.compile(r"(^|[^a-z0-9])(distributed|parallel|parallelism|data_?parallel(?:ism)?|ddp|fsdp|multi_?gpu|"
                             r"multi_?node|horovod)([^a-z0-9]|$)")


def _parallel_named(*paths: str) -> str | None:
    """The first folder or file of `paths` named for multi-GPU parallelism, or None."""
    for path in paths:
        for part in path.split("/"):
            if _PARALLEL_NAMED.search(part.lower().replace("-", "_")):
                return part
    return None


def _mem002_guidance(wl: Workload, inst: Any, est: Estimate, multi: bool) -> str:
    procs = processes_per_node(wl)
    step = ""
    if multi and procs and procs != inst.gpu_count:
        step = f" and start {inst.gpu_count} processes per node (e.g. torchrun --nproc_per_node {inst.gpu_count})"
    share = FIT_SHARE_LOWER_BOUND if est.lower_bound else FIT_SHARE_COUNTED
    return (f"Run this workload on {inst.name}{step}; benchmark a few hundred steps on both first. "
            f"Conservative estimate there: {est.total_bytes / GB:.1f} GB per GPU, within {share:.0%} of "
            f"{inst.gpu_memory_gib:g} GiB. " + _assumptions(est, "undecided settings read the expensive way (HF 18 B/param accounting)"))


# --------------------------------------------------------------------------- MEM003

class GradientCheckpointingRecommended(Rule):
    """The workload fits its GPUs only if activations are recomputed, and gradient checkpointing is off.

    What it does:
        With the model's layer count, hidden size and heads (known-model table or ``config.json``), the
        sequence length and the micro-batch per GPU, estimates activation memory (Korthikanti et al.:
        34*s*b*h bytes per layer storing everything with FlashAttention, 2*s*b*h with full recomputation)
        on top of the model states. It fires when even the optimistic reading does not fit without
        recomputation, the conservative reading fits with it, and no checkpointing is enabled
        (``gradient_checkpointing_enable()``, ``TrainingArguments(gradient_checkpointing=True)``,
        ``torch.utils.checkpoint``, FSDP ``apply_activation_checkpointing``, DeepSpeed
        ``activation_checkpointing``). The micro-batch comes from ``per_device_train_batch_size``; the
        sequence length from ``max_seq_length``/``max_length`` where the facts carry it, else from the
        rule options ``[tool.gpulint.rules.MEM003] seq_len = 4096`` (and ``micro_batch``). Without
        them it stays silent.
    Why it costs money:
        Without recomputation the run stops with CUDA out-of-memory, and the usual workaround is a
        bigger (or second) instance, where checkpointing would have fitted the job on the GPUs already paid for.
    How to fix:
        Recompute activations in the backward pass. Before::

            args = TrainingArguments(output_dir="out", bf16=True, per_device_train_batch_size=8)

        After::

            args = TrainingArguments(output_dir="out", bf16=True, per_device_train_batch_size=8,
                                     gradient_checkpointing=True,
                                     gradient_checkpointing_kwargs={"use_reentrant": False})

        (``model.gradient_checkpointing_enable()`` for HF models in a custom loop; FSDP:
        ``apply_activation_checkpointing(model, check_fn=...)``). Recomputation costs about one extra
        forward pass (~20-33% more compute), far less than an instance twice the size.
    Cost model:
        No hourly figure: the alternative to recomputation is a larger instance, which gpulint does not
        choose for you; recomputation itself adds ~20-33% compute per step (HF docs; Korthikanti et al.).
    Sources:
        Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
        arXiv:2205.05198 (Eq. 2, §4-5); Chen et al., arXiv:1604.06174; HF perf_train_gpu_one
        (gradient checkpointing); training-facts §1.5 and §4.
    """

    code = "MEM003"
    name = "gradient-checkpointing-recommended"
    severity = Severity.INFO
    family = "MEM"
    since = "0.1.0"
    options = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "seq_len": {"type": "integer", "minimum": 1, "description": "training sequence length when the code does not state it"},
            "micro_batch": {"type": "integer", "minimum": 1, "description": "micro-batch per GPU when the code does not state it"},
        },
    }

    _FILES = {
        "train.py": """\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
args = TrainingArguments(output_dir="/fsx/out", bf16=True, per_device_train_batch_size=8,
                         fsdp="full_shard auto_wrap", dataloader_num_workers=8)
Trainer(model=model, args=args, train_dataset=ds).train()
""",
        "run.sh": "torchrun --nproc_per_node 8 train.py\n",
        "infra/main.tf": 'resource "aws_instance" "trainer" {\n  instance_type = "p4de.24xlarge"\n}\n',
    }
    VALID = [
        Example({**_FILES, "train.py": _FILES["train.py"].replace("dataloader_num_workers=8)",
                                                                  "dataloader_num_workers=8,\n                         gradient_checkpointing=True)")},
                config="select = [\"MEM003\"]\n[rules.MEM003]\nseq_len = 4096\n", title="checkpointing on"),
        Example(dict(_FILES), title="sequence length unknown: silent"),
        Example(dict(_FILES), config="select = [\"MEM003\"]\n[rules.MEM003]\nseq_len = 512\n",
                title="short sequences fit without recomputation"),
    ]
    INVALID = [
        Example(dict(_FILES), config="select = [\"MEM003\"]\n[rules.MEM003]\nseq_len = 4096\n",
                expect=[Expect("train.py", 2, ("seq 4096 x micro-batch 8", "without recomputation", "with gradient checkpointing",
                                               "80 GiB"))],
                title="Llama-2-7B, FSDP over 8x A100-80GB, 4k tokens x 8 per GPU"),
    ]

    def check_workload(self, wl: Workload, ctx):
        trains = trains_on_gpu(wl)
        c = compute_of(wl)
        if trains is None or c is None or not c.gpu_memory_gib or model_parallel_hint(wl):
            return
        p = profile(wl)
        if p is None or p.checkpointing is not False:
            return
        seq, mb = shape_of(wl, self.opts)
        if not seq or not mb:
            return
        got = checkpointing_needed(p, c.gpu_memory_gib, seq, mb)
        if got is None:
            return
        off, on = got
        act_off, act_on = off.breakdown.get("activations", 0), on.breakdown.get("activations", 0)
        at = p.checkpointing_fact or p.model_fact or trains
        yield self.finding(
            at.loc,
            f"{p.name} activations at seq {seq} x micro-batch {mb} need ~{act_off / GB:.0f} GB per GPU without recomputation "
            f"(at least {off.total_bytes / GB:.0f} GB in all); with gradient checkpointing ~{act_on / GB:.1f} GB "
            f"({on.total_bytes / GB:.0f} GB in all) fits the {c.gpu_memory_gib:g} GiB of each {str(c.gpu_model).split('-')[0]} "
            f"on {c.instance_name}; gradient checkpointing is off",
            symbol=f"{wl.entrypoint}:grad_checkpointing",
            related=compute_related(wl),
            guidance=("Enable gradient checkpointing (TrainingArguments(gradient_checkpointing=True) or "
                      "model.gradient_checkpointing_enable()); it costs ~20-33% more compute per step. Without it: "
                      + _assumptions(off) + " With it (conservative): " + _assumptions(on)),
            cost=CostImpact(None, "No hourly figure: without recomputation the job runs out of memory on "
                                  f"{c.instance_name}; the alternative is a larger instance, and recomputation adds "
                                  "~20-33% compute per step (HF docs; Korthikanti et al.).", "low"),
            workload=wl.name,
        )


# --------------------------------------------------------------------------- MEM004

class IdleGpus(Rule):
    """The launcher starts fewer GPU processes than the instance has GPUs: the rest are billed and idle.

    What it does:
        Counts the GPU processes per node the workload's launcher starts (``torchrun
        --nproc_per_node``, 1 when the flag is absent; ``accelerate launch --num_processes`` or its
        config; ``deepspeed --num_gpus``; one for plain ``python``) and compares them with the GPUs per
        node of its catalogue instance (or the GPUs its Kubernetes container requests there, or those a job that
        names only a GPU model asks for: ``--gres=gpu:a100:4``, a Modal ``gpu="A100:4"``). A launch a shell script
        sends to the background (``python train.py &``, a sweep of one run per GPU) is no count. A single ``python``
        process counts as using every GPU when the code uses ``DataParallel``/DDP/FSDP, HF Trainer,
        Lightning, DeepSpeed, Keras or Ray Train (its ``ScalingConfig`` starts the GPU workers), or loads a
        HF model (``device_map="auto"`` may spread it), and tensor/pipeline-parallel arguments keep it silent;
        a Lightning Trainer whose ``devices=`` is a literal count (every Trainer of the code agreeing) starts
        that many, so ``Trainer(devices=2)`` on an 8-GPU node leaves six idle. A NeMo recipe's
        ``num_gpus_per_node`` is its process count on its NeMo-Run executor.
        A job whose script is in its image (the code is unknown) is judged on a multi-process launcher's
        count alone (``torchrun --nproc_per_node 4`` on 8 GPUs); a single process of unseen code stays silent.
    Why it costs money:
        Cloud GPUs are billed per instance: on an 8-GPU node, a one-process job pays for seven GPUs
        that never run a kernel.
    How to fix:
        Start one process per GPU, or rent a node with as many GPUs as the job uses. Before::

            python train.py                       # on p4d.24xlarge (8 GPUs)
            torchrun --nproc_per_node 4 train.py  # on an 8-GPU node

        After::

            torchrun --nproc_per_node 8 train.py  # with DDP in train.py
            # or: instance_type = "g6e.xlarge" for a single-GPU job
    Cost model:
        The idle GPUs' share of the instance price: hourly price x (GPUs - processes) / GPUs, from
        the catalogue price with its region, date and source.
    Sources:
        torchrun documentation (``--nproc_per_node``, default 1); accelerate launch and DeepSpeed
        launcher documentation; Lightning's Trainer documentation (``devices``: the number of devices per node); cloud per-instance billing (gpu-instances.yaml prices).
    """

    code = "MEM004"
    name = "idle-gpus"
    severity = Severity.WARNING
    family = "MEM"
    since = "0.1.0"

    _LOOP = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("nccl")
model = DDP(Net().cuda())
opt = torch.optim.AdamW(model.parameters())
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    loss.backward()
    opt.step()
"""
    _TF = 'resource "aws_instance" "trainer" {\n  ami           = "ami-0123456789abcdef0"\n  instance_type = "p4d.24xlarge"\n}\n'
    _LIGHTNING = """\
import lightning as L
model, data = LitModel(), LitData()
trainer = L.Trainer(accelerator="gpu", devices={devices}, precision="bf16-mixed", max_epochs=90)
trainer.fit(model, data)
"""
    VALID = [
        Example({"train.py": _LOOP, "run.sh": "torchrun --nproc_per_node 8 train.py\n", "infra/main.tf": _TF},
                title="one process per GPU"),
        Example({"train.py": _LOOP, "run.sh": "torchrun --nproc_per_node $NGPUS train.py\n", "infra/main.tf": _TF},
                title="process count from a variable: undecided"),
        Example({
            "train.py": """\
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
Trainer(model=model, args=TrainingArguments(output_dir="out", bf16=True), train_dataset=ds).train()
""",
            "run.sh": "python train.py\n", "infra/main.tf": _TF},
            title="HF Trainer in one process uses DataParallel over every GPU"),
        Example({"train.py": _LIGHTNING.format(devices=8), "run.sh": "python train.py\n", "infra/main.tf": _TF},
                title="a Lightning Trainer that uses every GPU of the node"),
        Example({"train.py": _LOOP.replace("model = DDP(Net().cuda())", "model = Net().cuda()"),
                 "sweep.sbatch": "#!/bin/bash\n#SBATCH --gres=gpu:a100:4\nfor i in 0 1 2 3; do\n"
                                 "  CUDA_VISIBLE_DEVICES=$i python train.py --seed $i &\ndone\nwait\n"},
                title="a sweep: one background run per requested GPU"),
    ]
    INVALID = [
        Example({"train.py": _LIGHTNING.format(devices=2), "run.sh": "python train.py\n", "infra/main.tf": _TF},
                expect=[Expect("train.py", 3, ("devices=2", "p4d.24xlarge", "6 of 8 GPUs"))],
                title="a Lightning Trainer told to use 2 of the node's 8 GPUs"),
        Example({"train.py": _LOOP, "scripts/run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 4 train.py\n", "infra/main.tf": _TF},
                expect=[Expect("scripts/run.sh", 2, ("4 GPU processes per node", "p4d.24xlarge", "4 of 8 GPUs"))],
                title="torchrun starts 4 processes on an 8-GPU node"),
        Example({
            "train.py": """\
import torch
model = Net().cuda()
opt = torch.optim.AdamW(model.parameters())
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    loss.backward()
    opt.step()
""",
            "k8s/job.yaml": """\
apiVersion: batch/v1
kind: Job
metadata:
  name: resnet-train
spec:
  template:
    spec:
      nodeSelector:
        node.kubernetes.io/instance-type: g5.12xlarge
      containers:
        - name: trainer
          image: ghcr.io/acme/train:1.0
          command: ["python", "train.py"]
          resources:
            limits:
              nvidia.com/gpu: 4
      restartPolicy: Never
"""},
            expect=[Expect("k8s/job.yaml", 13, ("1 GPU process per node", "3 of 4 GPUs"))],
            title="plain python, no DDP, on a 4-GPU request"),
        Example({"train.py": _LOOP.replace("model = DDP(Net().cuda())", "model = Net().cuda()").replace(
                    "dist.init_process_group(\"nccl\")\n", ""),
                 "train.sbatch": "#!/bin/bash\n#SBATCH --gres=gpu:a100:4\n#SBATCH --time=24:00:00\npython train.py\n"},
                expect=[Expect("train.sbatch", 4, ("4x a100 it requests", "3 of 4 GPUs"))],
                title="a Slurm job asks for four A100s and starts one process"),
    ]

    def check_repo(self, workloads, ctx):
        users: dict[str, int] = {}
        for wl in workloads:
            if wl.compute is not None:
                users[wl.compute.id] = users.get(wl.compute.id, 0) + 1
        for wl in workloads:
            unseen = launch_trains_on_gpu(wl)
            if (trains_on_gpu(wl) is None and not unseen) or wl.compute is None or users[wl.compute.id] > 1:
                continue  # several workloads share the compute: each may use its own GPUs
            got = idle_gpus(wl)
            if got is None or (unseen and got[0] < 2):
                continue  # one process of code gpulint cannot read may drive every GPU (DataParallel, device_map)
            procs, gpn, launcher = got
            c = compute_of(wl)
            idle = gpn - procs
            if c.instance is not None:
                where = f"on {c.instance_name} ({c.gpu_count}x {c.gpu_model})"
            else:  # no machine, a GPU request (a Modal Function's gpu="A100:4", a pod's nvidia.com/gpu)
                where = f"on the {gpn}x {(c.accelerator or {}).get('type') or c.gpu_model} it requests"
            plural = "s" if procs > 1 else ""
            if launcher.kind == "uses_gpu":  # a Lightning Trainer's devices= decides, whatever starts the script
                tool = "lightning"
                message = (f"the Lightning Trainer asks for devices={procs}, {procs} GPU process{'es' if procs > 1 else ''} "
                           f"per node {where}: {idle} of {gpn} GPUs are billed and idle")
                fix = f"Set devices={gpn} (or -1, every GPU of the node) in the Trainer"
            else:
                tool = launcher.value.get("tool")
                message = f"{tool} starts {procs} GPU process{'es' if procs > 1 else ''} per node {where}: {idle} of {gpn} GPUs are billed and idle"
                fix = f"Start {gpn} processes per node (torchrun --nproc_per_node {gpn}, with DDP/FSDP in the code)"
            yield self.finding(
                launcher.loc,
                message,
                symbol=f"{wl.entrypoint}:{tool}",
                related=compute_related(wl),
                guidance=f"{fix} or {'move to an instance' if c.instance is not None else 'request only those'} with {procs} GPU{plural}. "
                         "Run `gpulint explain MEM004`.",
                cost=avoidable(wl, idle / gpn, f"{idle} of {gpn} GPUs per node run nothing; their share of the instance price is "
                                              "wasted", "medium"),
                workload=wl.name,
            )


@hookimpl
def gpulint_rules():
    return [ModelExceedsGpuMemory, OversizedInstance, GradientCheckpointingRecommended, IdleGpus]
