"""INF: inference efficiency of serving and batch-inference workloads."""
from __future__ import annotations

from gpulint.rulekit import (
    Example, Expect, Rule, Severity, Workload, avoidable, compute_of, compute_related, gpu_evidence, hookimpl,
    toy_workload, unpriced,
)

#: half-precision serving typically doubles throughput over fp32 (memory-bound decoding moves half the bytes)
INF_SPEEDUP = 2.0
INF_MIN_PARAMS = 100_000_000
_INFERENCE_ROLES = ("inference", "batch")
#: engines whose default dtype ("auto") loads an fp32 checkpoint in 16 bit (vLLM: fp16; bf16 checkpoints stay bf16)
_SIXTEEN_BIT_ENGINES = ("vllm", "sglang")
_SERVE = """\
import torch
from fastapi import FastAPI
from transformers import AutoModelForSequenceClassification

app = FastAPI()
model = AutoModelForSequenceClassification.from_pretrained("roberta-large").cuda().eval()


@app.post("/score")
def score(batch: dict):
    with torch.inference_mode():
        return model(**batch).logits.tolist()
"""
_POD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: scorer
spec:
  replicas: 1
  selector:
    matchLabels: {app: scorer}
  template:
    metadata:
      labels: {app: scorer}
    spec:
      nodeSelector:
        node.kubernetes.io/instance-type: g5.xlarge
      containers:
        - name: api
          image: registry.example.com/scorer:1
          command: ["python", "/app/serve.py"]
          resources:
            limits:
              nvidia.com/gpu: 1
"""


def _anchor(wl: Workload):
    for kind in ("serves", "inference"):
        facts = wl.code_facts(kind)
        if facts:
            return facts[0]
    return None


class Fp32InferenceOnGpu(Rule):
    """GPU inference code runs the model in fp32, with no half precision, bf16, autocast or quantization.

    What it does:
        For serving and batch-inference workloads (FastAPI/Flask/TorchServe/Triton/SageMaker
        handlers, ``model.eval()`` + ``no_grad``, HF ``pipeline``/``generate``) that run on a GPU,
        fires when the precision is decided fp32: no ``torch_dtype``/``.half()``/``.to(torch.bfloat16)``,
        no autocast, no quantized load. A dtype chosen at run time keeps it silent, and so do vLLM and
        SGLang engines, whose default ``dtype="auto"`` already serves fp32 checkpoints in 16 bit.
        The process must load or build a model (``from_pretrained``, ``torch.load`` into a model, a
        module of layers): an HTTP front end that forwards requests to another server has none.
        The GPU must be known: from the compute target, or code that puts the model on ``cuda``;
        a handler that only asks ``torch.cuda.is_available()`` runs wherever it is deployed and
        gets no finding. A batch job that writes a model (an adapter merge, a compile or export) runs
        it once and is left alone. A warning when the gain is known (a model of 100M+ parameters on a GPU the
        infrastructure names); otherwise info, since 16-bit quality is a judgement for small or
        unknown models (segmentation, inpainting, T5-family overflow in fp16). A tutorial-sized model
        (an MNIST/CIFAR model, under 5M parameters) gets no finding: it gains nothing from 16 bit.
    Why it costs money:
        Decoding and batched inference are memory-bound: fp32 weights move twice the bytes of
        bf16/fp16 and use no Tensor Cores, so each replica serves about half the requests.
    How to fix:
        Load the model in 16 bit: ``from_pretrained(name, torch_dtype=torch.bfloat16)`` (fp16 on
        V100/T4), or ``model.half()``; or serve with vLLM/TGI, which pick 16 bit by default.
    Cost model:
        A 2x throughput gain from 16-bit weights is assumed, so half of each serving hour is
        avoidable; attached only for a known model of 100M+ parameters on a known instance.
    Sources:
        PyTorch and HF docs on half-precision inference; the guide's advice to serve in reduced precision.
    """

    code = "INF001"
    name = "fp32-inference-on-gpu"
    severity = Severity.WARNING
    family = "INF"
    since = "0.2.0"
    roles = _INFERENCE_ROLES
    VALID = [Example({"serve.py": _SERVE.replace('.from_pretrained("roberta-large")', '.from_pretrained("roberta-large", torch_dtype=torch.bfloat16)'),
                      "k8s/api.yaml": _POD}, title="bf16 weights"),
             Example({"serve.py": """\
import torch
from vllm import LLM, SamplingParams

n = torch.cuda.device_count()
llm = LLM(model="Qwen/Qwen2.5-7B-Instruct", tensor_parallel_size=n)
print(llm.generate(["2+2="], SamplingParams(max_tokens=8))[0].outputs[0].text)
""", "k8s/api.yaml": _POD}, title="vLLM's default dtype 'auto' is 16 bit"),
             Example({"handler.py": """\
import torch
from ts.torch_handler.base_handler import BaseHandler


class Handler(BaseHandler):
    def initialize(self, ctx):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = torch.jit.load("model.pt").to(self.device).eval()
"""}, title="the handler only asks whether a GPU exists, and nothing says where it is deployed")]
    INVALID = [Example({"serve.py": _SERVE, "k8s/api.yaml": _POD}, expect=[Expect("serve.py", 5, ("fp32", "g5.xlarge"))],
                       title="fp32 weights served on an A10G")]

    def check_workload(self, wl, ctx):
        if not wl.code_files or wl.code_facts("trains"):
            return
        evidence = gpu_evidence(wl)
        if evidence in (None, "probe"):
            return  # `"cuda" if torch.cuda.is_available() else "cpu"` in a handler deployed who knows where
        if not any(wl.code_facts(k) for k in ("model.name", "model.layers", "model.config")):
            return  # nothing in the process loads or builds a model: a front end that forwards requests
        anchor = _anchor(wl)
        if anchor is None or wl.resolution.precision.mixed is not False:
            return
        if toy_workload(wl):
            return  # an MNIST-sized model serves from a GPU in microseconds either way: 16 bit buys nothing
        if wl.role == "batch" and wl.code_facts("checkpoint.save"):
            # a job that loads a model and writes a model (merges adapters, compiles, converts, exports) runs it once,
            # for minutes; and merging or converting in fp32 is often the point
            return
        if any(f.value.get("via") in _SIXTEEN_BIT_ENGINES for f in wl.code_facts("serves")):
            return  # the engine picks 16 bit itself
        model = wl.resolution.model
        c = compute_of(wl)
        large = model is not None and model.params >= INF_MIN_PARAMS
        # the GPU the infrastructure names: an instance type, not only a GPU count (a Determined slot, a pod's nvidia.com/gpu)
        named = evidence == "compute" and c is not None and c.instance is not None
        priced = large and named
        if not large:
            cost = unpriced(f"No hourly figure: the model's size is {'not known' if model is None else f'{model.params / 1e6:.0f}M parameters'}; "
                            f"the {INF_SPEEDUP:g}x assumed for 16-bit serving holds for models of {INF_MIN_PARAMS / 1e6:.0f}M+ parameters.")
        elif not priced:
            cost = unpriced("No hourly figure: nothing names the GPU instance it runs on, so neither its price nor the "
                            "16-bit gain there is known.")
        else:
            cost = avoidable(wl, 1 - 1 / INF_SPEEDUP, f"16-bit weights assumed to serve {INF_SPEEDUP:g}x the requests per replica "
                                                       f"({model.params / 1e9:.2f}B parameters, {model.evidence})", "low")
        where = f" on {c.instance_name}" if c is not None and c.instance_name else ""
        # a warning only where the gain is known: a model of INF_MIN_PARAMS+ on a GPU the infrastructure names;
        # small or unknown models (16-bit quality is a judgement for SAM, T5, inpainting nets) are advice
        verb = "runs" if wl.role == "batch" else "is served"
        yield self.finding(anchor.loc, f"the model {verb} in fp32{where}: no 16-bit load, autocast or quantization found",
                           symbol=f"{wl.name}:fp32", workload=wl.name, related=compute_related(wl), cost=cost,
                           severity=None if priced else Severity.INFO)


class InferenceWithoutNoGrad(Rule):
    """Inference code runs the model outside ``torch.inference_mode()`` / ``torch.no_grad()``.

    What it does:
        For serving workloads whose PyTorch model is put in ``eval()`` mode and run by the server,
        fires when nothing disables autograd (no ``inference_mode``/``no_grad`` context or decorator,
        no ``torch.set_grad_enabled(False)``) and the model is not run through HF ``pipeline`` or
        ``generate`` (both disable gradients themselves).
    Why it costs money:
        With autograd on, every request keeps the activations of its forward pass for a backward
        pass that never comes: more memory per request (smaller batches) and slower kernels.
    How to fix:
        Wrap the forward pass::

            with torch.inference_mode():
                logits = model(**batch).logits
    Cost model:
        None: the gain depends on the model and batch; it is usually a few percent of latency and a
        large share of activation memory.
    Sources:
        PyTorch docs: torch.inference_mode ("better performance by disabling view tracking and version counter bumps").
    """

    code = "INF002"
    name = "inference-without-no-grad"
    severity = Severity.INFO
    family = "INF"
    since = "0.2.0"
    roles = ("inference",)
    VALID = [Example({"serve.py": _SERVE, "k8s/api.yaml": _POD})]
    INVALID = [Example({"serve.py": _SERVE.replace("    with torch.inference_mode():\n        return", "    return"), "k8s/api.yaml": _POD},
                       expect=[Expect("serve.py", 5, ("inference_mode", "no_grad"))])]

    def check_workload(self, wl, ctx):
        if not wl.code_files or not wl.code_facts("serves") or wl.code_facts("trains"):
            return
        ctxs = {f.value.get("via") for f in wl.code_facts("inference")}
        if ctxs & {"no_grad", "inference_mode", "pipeline", "generate", "set_grad_enabled"} or "eval" not in ctxs:
            return
        anchor = wl.code_facts("serves")[0]
        yield self.finding(anchor.loc, "the served model runs with autograd on: no torch.inference_mode() / torch.no_grad() around its forward pass",
                           symbol=f"{wl.name}:no_grad", workload=wl.name,
                           cost=unpriced("No hourly figure: autograd state costs memory per request and some latency."))


@hookimpl
def gpulint_rules():
    return [Fp32InferenceOnGpu, InferenceWithoutNoGrad]
