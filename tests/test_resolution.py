"""Resolution (gpulint.resolve): values followed through a file, compute and prices, precision, model
size, workload roles and tutorial-sized workloads, decided once per scan; each case on a small
repository, most reproducing a pattern judged on a real repository (tests/realworld/labels.yaml).
"""
from __future__ import annotations

from pathlib import Path
import ast
import tempfile

import pytest

from gpulint.read.python.index import Evaluator
from gpulint.read.python.index import OneOf
from gpulint.read.python.index import build_index
from gpulint.rulekit import gpu_evidence
from gpulint.testing import scan_files
from gpulint.testing import scan_tree
from gpulint.testing import write_tree
from helpers import SEVERITY_AT, codes, findings
from samples import (DEPLOY, EKS_GROUP, FLAG_TRAIN, GPU_JOB, HPA, MAIN_LOOP, MNIST_NET, SERVER, SM_RESNET_LOOP, TGI,
                     TRAIN, TRIAL, _estimator)


def _value_at(src: str, call_attr: str, kw: str):
    ix = build_index(ast.parse(src), src)
    call = next(c for c in ix.calls if c.attr == call_attr)
    return Evaluator(ix).value(call.kwarg(kw), call.scope)


def _model(result):
    (w,) = [w for w in result.workloads if w["resolved"].get("model")]
    return w["resolved"]["model"]


GKE_TGI = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm
spec:
  replicas: 1
  selector:
    matchLabels: {app: llm}
  template:
    metadata:
      labels: {app: llm}
    spec:
      containers:
      - name: tgi
        image: ghcr.io/huggingface/text-generation-inference:2.0
        env:
        - {name: MODEL_ID, value: tiiuae/falcon-40b-instruct}
        resources:
          limits:
            nvidia.com/gpu: "2"
      nodeSelector:
        cloud.google.com/gke-accelerator: nvidia-l4
"""


def precision(files: dict, entrypoint: str) -> dict:
    wl = next(w for w in scan_files(files).workloads if w["entrypoint"] == entrypoint)
    return wl["resolved"]["precision"]


# -- recall: a repository's own Trainer subclass -------------------------------------------------
TRAINER_MODULE = '''\
from transformers import Trainer


class BaseTrainer(Trainer):
    pass


class ProjectTrainer(BaseTrainer):
    def compute_loss(self, model, inputs, return_outputs=False):
        return super().compute_loss(model, inputs, return_outputs)
'''


TRAIN_WITH_SUBCLASS = '''\
import transformers
from transformers import AutoModelForCausalLM
from {module} import ProjectTrainer


def train():
    parser = transformers.HfArgumentParser((transformers.TrainingArguments,))
    (training_args,) = parser.parse_args_into_dataclasses()
    model = AutoModelForCausalLM.from_pretrained("lmsys/vicuna-7b-v1.5")
    trainer = ProjectTrainer(model=model, args=training_args, train_dataset=ds)
    trainer.train()


if __name__ == "__main__":
    train()
'''


# -- values: a parameter is what the module's calls pass ----------------------------------------
HELPER_LAUNCH = '''\
from sagemaker.pytorch import PyTorch


def get_estimator(instance_type, count=1):
    return PyTorch(entry_point="train.py", instance_type=instance_type, instance_count=count, role=role,
                   framework_version="2.1", py_version="py310")


est = get_estimator({args})
est.fit()
'''


FP32_TRAIN = "import torch\nmodel = Net().cuda()\nfor x in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\n"


# -- Megatron's training driver ------------------------------------------------------------------
PRETRAIN = '''\
import torch
from megatron.core.enums import ModelType
from megatron.training import get_args, pretrain


def model_provider(pre_process=True, post_process=True):
    return build_model(get_args())


def forward_step(data_iterator, model):
    return model(next(data_iterator))


if __name__ == "__main__":
    pretrain(datasets_provider, model_provider, ModelType.encoder_or_decoder, forward_step{defaults})
'''


# a library helper of the repository, imported by the driver's modules, that runs under no_grad
NO_GRAD_HELPER = '''\
import torch


def to_local(tensor):
    with torch.no_grad():
        return tensor.to_local()
'''


LAUNCH = '''\
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --gpus-per-node=8
#SBATCH --partition=gpu
torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py --num-layers 24 --hidden-size 2048 {flags} --micro-batch-size 4
'''


def _megatron(flags: str, defaults: str = "") -> dict:
    return {"pretrain_gpt.py": PRETRAIN.format(defaults=defaults) + "from megatron_utils import to_local\n",
            "megatron_utils.py": NO_GRAD_HELPER, "train.sbatch": LAUNCH.format(flags=flags)}


# -- autocast under a test of a flag's value --------------------------------------------------------
COMPARED = '''\
import argparse
import torch

p = argparse.ArgumentParser()
p.add_argument("--precision", default="fp32", choices=["fp32", "amp", "amp_bf16"])
args = p.parse_args()
model = Net().cuda()
opt = torch.optim.AdamW(model.parameters())
for x in loader:
    if {test}:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x.cuda()).mean()
    else:
        loss = model(x.cuda()).mean()
    loss.backward()
    opt.step()
'''


# -- a TPU pod is no CPU pod ----------------------------------------------------------------------------
TPU_JOB = '''\
apiVersion: batch/v1
kind: Job
metadata:
  name: tpu-train
spec:
  template:
    spec:
      {selector}
      containers:
        - name: train
          image: us-docker.pkg.dev/project/train:1
          command: ["python", "train.py"]
          resources:
            limits:
              {resource}: 4
      restartPolicy: Never
'''


# -- LeaderWorkerSet: multi-node serving groups --------------------------------------------------------
#: one pod template of the set, as leaderTemplate or workerTemplate (4 spaces in, under leaderWorkerTemplate)
LWS_POD = '''{role}Template:
      spec:
        nodeSelector:
          node.kubernetes.io/instance-type: p5.48xlarge
        containers:
          - name: vllm-{role}
            image: vllm/vllm-openai:v0.8.5
            command: ["sh", "-c", "{command}"]
            resources:
              limits:
                nvidia.com/gpu: "8"'''


LWS = '''\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: vllm
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 2
    {leader}
    ''' + LWS_POD.format(role="worker", command="ray start --address=$(LWS_LEADER_ADDRESS):6379 --block") + "\n"


LEADER = LWS_POD.format(role="leader", command="vllm serve meta-llama/Llama-3.1-405B-Instruct --tensor-parallel-size 8 "
                                              "--pipeline-parallel-size 2")


# -- Docker Compose services that reserve GPUs ----------------------------------------------------------
COMPOSE = '''\
services:
  train:
    build: .
    command: {command}
{gpu}
  web:
    image: nginx:1.27
'''


RESERVE = '''    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              count: {count}
              capabilities: [gpu]'''


HF_FP32 = ('from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n'
           'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")\n'
           'Trainer(model=model, args=TrainingArguments(output_dir="out"), train_dataset=ds).train()\n')


# -- GPU evidence that is only talk, and layers built in 16 bit ------------------------------------------
CPU_NB_LOOP = ("import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))\n"
               "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n{extra}\n"
               "for x, y in loader:\n    torch.nn.functional.cross_entropy(model(x), y).backward()\n    opt.step()\n")


# -- Intel's extension with CPU autocast trains on a Xeon -------------------------------------------
IPEX = """\
import torch
import intel_extension_for_pytorch as ipex
from accelerate import Accelerator
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder
from transformers import CLIPTextModel

accelerator = Accelerator()
loader = DataLoader(ImageFolder("data/train"), batch_size=32)
model = CLIPTextModel.from_pretrained("openai/clip-vit-large-patch14")
opt = torch.optim.AdamW(model.parameters())
model, opt = ipex.optimize(model, optimizer=opt, dtype=torch.bfloat16)
for batch in loader:
    with AUTOCAST:
        loss = model(**batch).loss
    accelerator.backward(loss)
    opt.step()
"""


# -- a Keras functional model is counted from its layers -------------------------------------------------
KERAS_FUNCTIONAL = """\
import tensorflow as tf

vocab = 20000
width = 32
maxlen = 400


def get_model():
    embed = tf.keras.layers.Embedding(vocab, width)
    inputs = tf.keras.Input(shape=(maxlen,), dtype="int32")
    x = embed(inputs)
    x = tf.keras.layers.Conv1D(64, 3, padding="valid", activation="relu")(x)
    x = tf.keras.layers.MaxPooling1D()(x)
    x = tf.keras.layers.GlobalMaxPooling1D()(x)
    x = tf.keras.layers.Dense(HIDDEN, activation="relu")(x)
    x = tf.keras.layers.Dropout(0.2)(x)
    outputs = tf.keras.layers.Dense(1, activation="sigmoid")(x)
    return tf.keras.Model(inputs, outputs)


model = get_model()
model.compile(optimizer="adam", loss="binary_crossentropy")
model.fit(x_train, y_train, epochs=2)
"""


# -- round 12: Trainium (torch_xla) and Gaudi (hpu) are not CUDA GPUs -----------------------------------
XLA_TRAIN = """\
import torch
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder
import torchvision
DEVICE_IMPORT

model = torchvision.models.resnet50()
device = DEVICE
model.to(device)
opt = torch.optim.AdamW(model.parameters())
loader = DataLoader(ImageFolder("data/train"), batch_size=32)
for x, y in loader:
    loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
    loss.backward()
    opt.step()
"""


# -- importing a module that trains in a function the workload never calls is not training ------------------
ENGINE = """\
import torch


class Trainer:
    def __init__(self, model):
        self.model = model.cuda()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def fit(self, loader):
        for x in loader:
            loss = self.model(x.cuda()).sum()
            loss.backward()
            self.opt.step()


def train(model, loader):
    Trainer(model).fit(loader)


def evaluate(model, loader):
    with torch.no_grad():
        return [model(x.cuda()) for x in loader]
"""


# -- a launcher that hides the GPUs: the process trains on the CPU whatever its code asks for -------------
DECODING_TRAIN = """\
import torch, torchvision
from PIL import Image
from torch.utils.data import DataLoader, Dataset

class Images(Dataset):
    def __getitem__(self, i):
        return Image.open(self.paths[i])

loader = DataLoader(Images(), batch_size=8)
model = torchvision.models.resnet50().cuda()
for x in loader:
    model(x.cuda()).sum().backward()
    opt.step()
"""


# -- Terraform values from the module's variables.tf: an accelerator type and string-typed counts --------
GKE_GPU_POOL = """\
resource "google_container_node_pool" "gpu_nodes" {
  name    = "gpu-pool"
  cluster = "ml"
  autoscaling {
    min_node_count = var.gpu_min_node_count
    max_node_count = var.gpu_max_node_count
  }
  node_config {
    machine_type = "n1-standard-4"
    guest_accelerator {
      type  = var.gpu_type
      count = var.gpu_count
    }
  }
}
"""


GKE_VARIABLES = """\
/***************************
GPU node pool variables
***************************/
variable "gpu_type" {
  default = "nvidia-tesla-t4"
}
variable "gpu_count" {
  default = "1"
}
variable "gpu_min_node_count" {
  default = "MIN"
}
variable "gpu_max_node_count" {
  default = "5"
}
"""


EKS_GROUP_VARS = """\
module "eks" {
  source = "terraform-aws-modules/eks/aws"
  eks_managed_node_groups = {
    gpu_node_pool = {
      instance_types = ["g4dn.2xlarge"]
      min_size       = var.min_gpu_nodes
      max_size       = 4
      desired_size   = var.min_gpu_nodes
    }
  }
}
"""


EKS_VARIABLES = """\
variable "min_gpu_nodes" {
  type    = string
  default = "MIN"
}
"""


SM_V1_LAUNCH = """\
from sagemaker.pytorch import PyTorch
estimator = PyTorch(entry_point="train.py", source_dir="src", role=role, framework_version="1.4.0",
                    train_instance_count=2, train_instance_type="INSTANCE", train_use_spot_instances=True,
                    train_max_wait=7200)
estimator.fit({"training": inputs})
"""


# -- model sizes: names bound by tuple unpacking, and an __init__ whose instance is not called self ---------
TINY = """\
import torch
from torch import nn
V, C, steps = 11, 64, 1000
class M(nn.Module):
    def __init__({me}):
        super().__init__()
        {me}.e = nn.Embedding(V, C)
        {me}.o = nn.Linear(C, V)
    def forward({me}, x):
        return {me}.o({me}.e(x))
model = M().cuda()
opt = torch.optim.Adam(model.parameters())
for i in range(steps):
    model(torch.randint(0, V, (4, 8)).cuda()).sum().backward()
    opt.step()
"""


# -- a custom autograd Function's backward is not the training step; a trainer's backward helper is ---------
RUNNER_HELPER = """\
import torch


class Runner:
    def __init__(self, model):
        self.model, self.opt = model.cuda(), torch.optim.AdamW(model.parameters())
        self.scaler = torch.cuda.amp.GradScaler()

    def backward(self, loss):
        self.scaler.scale(loss).backward()

    def fit(self, loader):
        for x in loader:
            self.backward(self.model(x.cuda()).sum())
            self.scaler.step(self.opt)


Runner(torch.nn.Linear(4096, 4096)).fit(loader)
"""


def _value_passed(src: str):
    ix = build_index(ast.parse(src), src)
    call = next(c for c in ix.calls if c.attr == "submit")
    return Evaluator(ix).value(call.kwarg("hyperparameters"), call.scope)


KF = '''import torch
from kubeflow.trainer import TrainerClient, CustomTrainer


def train_fn():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    for x in loader:
        model(x.to(device)).sum().backward()
        opt.step()


if __name__ == "__main__":
    TrainerClient().train(trainer=CustomTrainer(func=train_fn, num_nodes=2, resources_per_node=RESOURCES))
'''


# -- compute ---------------------------------------------------------------------------------------------


def test_skypilot_on_kubernetes_is_not_priced_as_a_cloud_instance():
    task = "resources:\n  infra: k8s\n  accelerators: H100:8\nrun: |\n  torchrun --nproc_per_node 8 train.py\n"
    result = scan_files({"sky.yaml": task, "train.py": "import torch\nmodel = Net().cuda()\n" + MAIN_LOOP})
    (w,) = [w for w in result.workloads if w.get("compute")]
    assert w["compute"].get("instance") is None and not w["compute"].get("price")
    assert "k8s" in str(w["compute"])


def test_a_gke_pod_is_priced_on_a_machine_that_holds_all_the_gpus_it_requests():
    (w,) = [w for w in scan_files({"k8s/tgi.yaml": GKE_TGI}).workloads if w.get("compute")]
    assert w["compute"]["instance"] == "g2-standard-24"  # 2x L4; g2-standard-4 has one
    assert "SkyPilot" not in w["compute"].get("assumed", "")


def test_an_unmatched_accelerator_names_the_gpu_count_the_pod_requests():
    pod = DEPLOY.replace("node.kubernetes.io/instance-type: g5.xlarge", "cloud.google.com/gke-accelerator: nvidia-qpu-9000").replace(
        "nvidia.com/gpu: 1", "nvidia.com/gpu: 2")
    result = scan_files({"api_server.py": SERVER.replace("{kw}", ""), "k8s/deploy.yaml": pod})
    unknown = [u for w in result.workloads for u in w["unknown"] if "matches no catalogue instance" in u]
    assert unknown and all("xNone" not in u for u in unknown), unknown


@pytest.mark.parametrize("selector, resource, devices", [
    ("nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice}", "google.com/tpu", ["unknown"]),
    ("nodeSelector: {kubernetes.io/os: linux}", "google.com/tpu", ["unknown"]),
    ("nodeSelector: {kubernetes.io/os: linux}", "aws.amazon.com/neuron", ["unknown"]),
    ("nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}", "cpu", ["cpu"]),  # on a GPU node, asking for none
    ("nodeSelector: {kubernetes.io/os: linux}", "nvidia.com/gpu", ["gpu"]),
])
def test_a_pod_that_asks_for_tpus_or_neuron_cores_is_not_a_cpu_pod(selector, resource, devices):
    result = scan_files({"job.yaml": TPU_JOB.format(selector=selector, resource=resource), "train.py": TRAIN})
    assert [c["device"] for c in result.computes] == devices


@pytest.mark.parametrize("leader, expected", [
    (LEADER, {"LeaderWorkerSet/vllm/leader": 2, "LeaderWorkerSet/vllm/worker": 2}),
    ("", {"LeaderWorkerSet/vllm": 4}),
])
def test_a_leaderworkerset_is_read_as_groups_of_gpu_pods(leader, expected):
    result = scan_files({"lws.yaml": LWS.format(leader=leader)})
    got = {c["id"].split("#", 1)[-1]: c["nodes"] for c in result.computes}
    assert got == expected, got
    assert all(c["instance"] == "p5.48xlarge" and c["gpus_per_node"] == 8 for c in result.computes)


@pytest.mark.parametrize("name, gpu, device, gpus", [
    ("docker-compose.yml", RESERVE.format(count=2), "gpu", 2),
    ("compose.yaml", RESERVE.format(count="all"), "gpu", None),
    ("docker-compose.gpu.yaml", "    gpus: all", "gpu", None),
    ("docker-compose.yml", "    runtime: nvidia", "gpu", None),
    ("docker-compose.yml", "", None, None),           # no GPU reserved: no compute target
    ("services.yml", RESERVE.format(count=2), None, None),  # not a Compose file by its name
])
def test_a_compose_service_that_reserves_gpus_is_the_compute_its_command_runs_on(name, gpu, device, gpus):
    files = {name: COMPOSE.format(command="torchrun --nproc_per_node 2 train.py", gpu=gpu), "train.py": HF_FP32}
    result = scan_files(files)
    wl = next(w for w in result.workloads if w["entrypoint"] == "train.py")
    if device is None:
        assert not result.computes and not wl["compute"]
        return
    (c,) = result.computes
    assert (c["device"], c["gpus_per_node"]) == (device, gpus) and wl["compute"]["id"] == c["id"]
    assert [f.severity.value for f in result.findings if f.code == "AMP001"] == ["warning"]


def test_reserved_capacity_is_named_in_the_workload_model_and_its_price_says_what_it_rests_on():
    tf = EKS_GROUP.replace("EXTRA", '      capacity_type = "CAPACITY_BLOCK"')
    result = scan_files({"infra/main.tf": tf, "train.py": "import torch\nmodel = Net().cuda()\n"})
    (c,) = [c for c in result.computes if c["instance"] == "p5.48xlarge"]
    assert c["capacity"] == "reserved" and c["capacity_fact"] == "infra/main.tf:9"
    assert c["price_capacity"] == "on-demand" and "reserved capacity" in c["price_source"]


def test_an_autoscalers_floor_is_the_always_on_replicas_of_the_workload_it_scales():
    result = scan_files({"k8s/tgi.yaml": TGI.replace("REPLICAS", "3") + HPA.replace("TARGET", "llm")})
    (c,) = [c for c in result.computes if c["id"].endswith("Deployment/llm")]
    assert (c["nodes"], c["min_nodes"]) == (3, 1)


@pytest.mark.parametrize("main, variables", [(GKE_GPU_POOL, GKE_VARIABLES), (EKS_GROUP_VARS, EKS_VARIABLES)])
@pytest.mark.parametrize("floor, fires", [("2", True), ("0", False)])
def test_pool_values_come_from_the_modules_variables_file(main, variables, floor, fires):
    files = {"infra/main.tf": main, "infra/variables.tf": variables.replace("MIN", floor)}
    r = scan_files(files)
    (pool,) = [c for c in r.computes if "gpu" in c["id"]]
    assert pool["device"] == "gpu" and pool["gpus_per_node"] == 1
    assert pool["min_nodes"] == int(floor)
    assert any(f.code == "COST001" for f in r.findings) is fires


@pytest.mark.parametrize("instance, amp001", [("ml.p2.xlarge", False), ("ml.c5.xlarge", False), ("ml.p3.8xlarge", True)])
def test_sdk_v1_estimator_arguments_are_read(instance, amp001):
    r = scan_files({"src/train.py": SM_RESNET_LOOP, "launch.py": SM_V1_LAUNCH.replace("INSTANCE", instance)})
    (wl,) = r.workloads
    comp = wl["compute"]
    assert comp["instance_written"] == instance and comp["nodes"] == 2 and comp["capacity"] == "spot"
    assert any(f.code == "AMP001" for f in r.findings) is amp001


# -- facts -----------------------------------------------------------------------------------------------


def test_tensorflow_compat_v2_is_tensorflow():
    train = ("import tensorflow.compat.v2 as tf\n(x, y), _ = tf.keras.datasets.mnist.load_data()\n"
             "model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])\n"
             "model.compile(loss='sparse_categorical_crossentropy')\nmodel.fit(x, y)\n")
    result = scan_files({"train.py": train})
    assert any(f["kind"] == "dataset" and f["value"]["name"] == "mnist" for w in result.workloads for f in w["facts"])


# -- gpu -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("extra, gpu", [
    ("print(torch.cuda.is_available())", False),                    # reports what it has
    ('device = torch.device("cuda")', False),                        # a device nothing reads
    ('device = torch.device("cuda")\nmodel = model.to(device)', True),
    ('assert torch.cuda.is_available(), "a GPU is required"', True),   # refuses to run without one: a requirement
])
def test_gpu_use_needs_a_device_that_is_used_or_a_requirement(extra, gpu):
    result = scan_files({"train.py": CPU_NB_LOOP.format(extra=extra)})
    uses = [f for f in result.workloads[0]["facts"] if f["kind"] == "uses_gpu"]
    strong = [f for f in uses if not f["value"].get("probe") and not f["value"]["via"].endswith(("is_available", "device_count"))]
    assert bool(strong) is gpu, uses


def test_an_asserted_gpu_in_an_imported_helper_is_only_a_probe_for_the_importer():
    helper = ("import torch\n\n\ndef init_distributed(rank):\n    assert torch.cuda.is_available(), 'needs CUDA'\n"
              "    torch.distributed.init_process_group('nccl')\n")
    prep = ("import torch\nfrom common.utils import init_distributed\nwith torch.no_grad():\n"
            "    model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(8)])\n    model(batch)\n")
    own = "import torch\nassert torch.cuda.is_available()\n" + prep.split("\n", 1)[1]
    for entry, code, expected in (("prepare.py", prep, "probe"), ("serve.py", own, "code")):
        with tempfile.TemporaryDirectory() as tmp:
            write_tree(Path(tmp), {entry: code, "common/__init__.py": "", "common/utils.py": helper,
                                   "run.sh": f"#!/bin/bash\npython {entry} --data /data\n"})
            _, workloads = scan_tree(Path(tmp))
            wl = next(w for w in workloads if w.entrypoint == entry)
            assert gpu_evidence(wl) == expected, (entry, gpu_evidence(wl))


@pytest.mark.parametrize("autocast, on_gpu", [
    ("torch.cpu.amp.autocast(dtype=torch.bfloat16)", False),
    ('torch.autocast("cpu", dtype=torch.bfloat16)', False),
    ('torch.autocast(device_type="cpu", dtype=torch.bfloat16)', False),
    ('torch.autocast("cuda", dtype=torch.bfloat16)', True),
])
def test_ipex_beside_cpu_autocast_is_cpu_training_even_under_accelerate(autocast, on_gpu):
    """GPU advice (here the loader's workers) only where the training runs on a GPU."""
    result = scan_files({"train.py": IPEX.replace("AUTOCAST", autocast)})
    (wl,) = [w for w in result.workloads if w["entrypoint"] == "train.py"]
    vias = [f["value"].get("via") for f in wl["facts"] if f["kind"] == "cpu_only"]
    assert bool(vias) == (not on_gpu), vias
    assert bool([f for f in result.findings if f.code.startswith("IO00")]) == on_gpu


@pytest.mark.parametrize("imports, device, gpu", [
    ("import torch_xla.core.xla_model as xm", "xm.xla_device()", False),
    ("import torch_xla", "torch_xla.device()", False),
    ("import habana_frameworks.torch.core as htcore", 'torch.device("hpu")', False),
    ("", 'torch.device("cuda")', True),
])
def test_an_xla_or_hpu_device_is_no_gpu_even_under_torchrun(imports, device, gpu):
    files = {"train.py": XLA_TRAIN.replace("DEVICE_IMPORT", imports).replace("DEVICE", device),
             "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 32 train.py\n"}
    got = [f.code for f in findings(files) if f.code.startswith(("AMP", "IO"))]
    assert bool(got) == gpu, got


@pytest.mark.parametrize("launcher, hidden", [
    ({"Makefile": "test:\n\tCUDA_VISIBLE_DEVICES= python train.py --config c.json\n"}, True),
    ({"run.sh": "export CUDA_VISIBLE_DEVICES=-1\npython train.py\n"}, True),
    ({"run.sh": "CUDA_VISIBLE_DEVICES= python eval.py\npython train.py\n"}, False),  # set for another command
    ({"run.sh": "CUDA_VISIBLE_DEVICES=0 python train.py\n"}, False),
    ({"run.sh": "if [ -n \"$CPU\" ]; then export CUDA_VISIBLE_DEVICES=; fi\npython train.py\n"}, False),  # a branch
    ({"run.sh": "python train.py\n", "Makefile": "cpu:\n\tCUDA_VISIBLE_DEVICES= python train.py\n"}, False),  # one of two
])
def test_a_launcher_that_hides_every_gpu_makes_the_workload_cpu(launcher, hidden):
    got = codes({"train.py": DECODING_TRAIN, **launcher}, fields=SEVERITY_AT)
    if hidden:
        assert got == []
    else:
        assert ("IO001", "warning", "train.py", 9) in got and any(c == "AMP001" for c, *_ in got)


def test_hidden_gpus_are_stated_in_the_workload_model():
    r = scan_files({"train.py": DECODING_TRAIN, "Makefile": "test:\n\tCUDA_VISIBLE_DEVICES= python train.py\n"})
    (wl,) = r.workloads
    assert wl["resolved"]["gpus_hidden"] == "CUDA_VISIBLE_DEVICES= at Makefile:2"
    assert any("no usable GPU" in reason for reason in wl["links"])


@pytest.mark.parametrize("install, hidden", [
    ("RUN pip install wandb torch torchvision --extra-index-url https://download.pytorch.org/whl/cpu", True),
    ("RUN pip install torch==2.3.1+cpu -f https://download.pytorch.org/whl/torch_stable.html", True),
    ("RUN conda install pytorch torchvision cpuonly -c pytorch", True),
    ("RUN pip install torch torchvision", False),
])
def test_an_image_with_a_cpu_only_torch_runs_its_entrypoint_on_the_cpu(install, hidden):
    dockerfile = f'FROM python:3.11\nCOPY . /src\nWORKDIR /src\n{install}\nENTRYPOINT ["python3", "train.py"]\n'
    r = scan_files({"train.py": DECODING_TRAIN, "Dockerfile": dockerfile})
    (wl,) = r.workloads
    assert bool(wl["resolved"].get("gpus_hidden")) is hidden
    assert (r.findings == []) is hidden


# -- a scheduler's GPU request in the code: Ray tasks and Serve deployments, BentoML services ---------------
@pytest.mark.parametrize("decorator, gpu", [
    ('@serve.deployment(ray_actor_options={"num_gpus": 1})', True),
    ('@serve.deployment(ray_actor_options={"num_gpus": 0.5})', True),
    ('@serve.deployment(ray_actor_options={"num_cpus": 2})', False),
    ("@serve.deployment(ray_actor_options=opts)", False),
    ("@ray.remote(num_gpus=1)", True),
    ('@bentoml.service(resources={"gpu": 1, "gpu_type": "nvidia-l4"})', True),
])
def test_a_declared_gpu_request_is_gpu_use(decorator, gpu):
    code = ("import bentoml\nimport ray\nfrom ray import serve\nimport torch\n\n\n" + decorator + "\nclass Embedder:\n"
            "    def __init__(self):\n        self.model = torch.jit.load('model.pt')\n\n"
            "    def __call__(self, x):\n        return self.model(x)\n\n\nserve.run(Ingress.bind())\n")
    r = scan_files({"serve.py": code})
    assert r.workloads
    facts = [f for w in r.workloads for f in w["facts"] if f["kind"] == "uses_gpu"]
    assert bool(facts) is gpu


def test_a_kubeflow_job_declared_without_gpus_is_cpu_compute():
    cpu = scan_files({"train.py": KF.replace("RESOURCES", '{"cpu": 3, "memory": "16Gi"}')})
    assert [f.code for f in cpu.findings if f.code.startswith(("AMP", "IO"))] == []
    gpu = scan_files({"train.py": KF.replace("RESOURCES", '{"cpu": 3, "nvidia.com/gpu": 1}')})
    assert "AMP001" in {f.code for f in gpu.findings}


def test_a_run_time_choice_among_cpu_instances_is_cpu_compute():
    launch = ('from sagemaker.pytorch import PyTorch\ninstance = "local" if local_mode else CHOICE\n'
              'est = PyTorch(entry_point="train.py", instance_type=instance, role=role)\nest.fit()\n')
    train = ("import torch\nmodel = Net().cuda() if torch.cuda.is_available() else Net()\n"
             "if __name__ == '__main__':\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n")
    cpu = scan_files({"launch.py": launch.replace("CHOICE", '"ml.c5.xlarge"'), "train.py": train})
    assert [f.code for f in cpu.findings if f.code.startswith(("AMP", "IO", "NET"))] == []
    gpu = scan_files({"launch.py": launch.replace("CHOICE", '"ml.p3.2xlarge"'), "train.py": train})
    assert "AMP001" in {f.code for f in gpu.findings}  # a GPU among the choices: not CPU compute


# -- precision -------------------------------------------------------------------------------------------


def test_a_flag_whose_default_is_an_expression_is_decided_by_the_launcher_that_passes_it():
    """``default=True if torch.cuda.get_device_capability()[0] == 8 else False`` is unknown, but a launcher
    that passes ``--bf16 True`` decides it, through ``def training_function(args)`` called with the parsed args."""
    on = precision({"train.py": FLAG_TRAIN, "launch.py": _estimator("'bf16': True")}, "train.py")
    assert on["mixed"] is True and on["dtypes"] == ["bf16"]
    unset = precision({"train.py": FLAG_TRAIN, "launch.py": _estimator("'epochs': 3")}, "train.py")
    assert unset["mixed"] is None  # not passed: the expression decides at run time


def test_argparse_type_bool_makes_the_word_false_true():
    """``type=bool`` calls ``bool("false")``, which is True: the job trains in bf16 whatever the word says."""
    p = precision({"train.py": FLAG_TRAIN, "launch.py": _estimator("'bf16': False")}, "train.py")
    assert p["mixed"] is True


def test_an_argument_passed_differently_by_two_callers_stays_unknown():
    src = FLAG_TRAIN.replace("    training_function(args)\n",
                             "    training_function(args)\n    training_function(other)\n")
    p = precision({"train.py": src, "launch.py": _estimator("'bf16': True")}, "train.py")
    assert p["mixed"] is None


def test_precision_set_inside_the_main_block_is_set():
    src = ("from transformers import Trainer, TrainingArguments\nif __name__ == '__main__':\n"
           "    args = TrainingArguments(output_dir='o', fp16=True)\n    Trainer(model=m, args=args).train()\n")
    p = precision({"train.py": src, "run.sh": "torchrun --nproc_per_node 4 train.py\n"}, "train.py")
    assert p["mixed"] is True


def test_megatrons_pretrain_trains_and_its_flags_decide_the_precision():
    result = scan_files(_megatron("--bf16"))
    wl = next(w for w in result.workloads if w["entrypoint"] == "pretrain_gpt.py")
    assert wl["role"] == "training"
    assert wl["resolved"]["precision"]["mixed"] is True and wl["resolved"]["precision"]["dtypes"] == ["bf16"]
    assert not [f for f in result.findings if f.code.startswith(("INF", "AMP001"))]  # the helper's no_grad is no serving


@pytest.mark.parametrize("flags, defaults, mixed", [
    ("--fp16", "", True),
    ("", "", False),                                     # Megatron's default is fp32
    ("", ", args_defaults={'bf16': True}", True),
    ("", ", args_defaults=DEFAULTS", None),              # a dict gpulint cannot read
    ("--yaml-cfg gpt.yaml", "", None),                   # arguments from a file
    ("$PRECISION_ARGS", "", None),                       # a word the script cannot resolve may hold --bf16
])
def test_megatron_precision_without_or_beside_the_flags(flags, defaults, mixed):
    wl = next(w for w in scan_files(_megatron(flags, defaults)).workloads if w["entrypoint"] == "pretrain_gpt.py")
    assert wl["resolved"]["precision"]["mixed"] is mixed


@pytest.mark.parametrize("test, flags, mixed", [
    ('args.precision != "fp32"', "", False),
    ('args.precision != "fp32"', "--precision amp_bf16", True),
    ('args.precision == "amp_bf16"', "--precision amp_bf16", True),
    ('args.precision == "amp_bf16"', "--precision fp32", False),
    ('args.precision in ("amp", "amp_bf16")', "--precision amp", True),
    ('args.precision not in ("amp", "amp_bf16")', "--precision amp", False),
    ('args.precision != "fp32"', "$EXTRA", None),
])
def test_autocast_under_a_test_of_the_flags_value_is_decided_per_launcher(test, flags, mixed):
    files = {"train.py": COMPARED.format(test=test), "job.sbatch": GPU_JOB.replace("train.py", f"train.py {flags}")}
    wl = next(w for w in scan_files(files).workloads if w["entrypoint"] == "train.py")
    assert wl["resolved"]["precision"]["mixed"] is mixed


# -- role ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("flags, fires", [("--bf16 False --tf32 False", True), ("--bf16 True", False)])
def test_a_trainer_subclass_from_another_module_trains_as_the_hf_trainer(flags, fires):
    files = {"proj/__init__.py": "", "proj/project_trainer.py": TRAINER_MODULE,
             "proj/train.py": TRAIN_WITH_SUBCLASS.replace("{module}", "proj.project_trainer"),
             "run.sh": f"deepspeed proj/train.py --output_dir out {flags}\n"}
    result = scan_files(files)
    wl = next(w for w in result.workloads if w["entrypoint"] == "proj/train.py")
    assert wl["resolved"]["role"] == "training"
    assert bool([f for f in result.findings if f.code == "AMP001"]) is fires


def test_a_trainer_subclass_in_the_same_file_trains_as_the_hf_trainer():
    src = TRAINER_MODULE + TRAIN_WITH_SUBCLASS.replace("from {module} import ProjectTrainer\n", "")
    result = scan_files({"train.py": src, "run.sh": "deepspeed train.py --output_dir out\n"})
    assert [w["resolved"]["role"] for w in result.workloads if w["entrypoint"] == "train.py"] == ["training"]


def test_a_class_of_another_module_that_is_no_trainer_does_not_train():
    files = {"proj/__init__.py": "", "proj/project_trainer.py": TRAINER_MODULE.replace("(Trainer)", "(object)"),
             "proj/train.py": TRAIN_WITH_SUBCLASS.replace("{module}", "proj.project_trainer"),
             "run.sh": "deepspeed proj/train.py --output_dir out\n"}
    wl = next(w for w in scan_files(files).workloads if w["entrypoint"] == "proj/train.py")
    assert wl["resolved"]["role"] != "training"


def test_a_lightning_trainer_built_from_argparse_args_trains():
    src = ("import pytorch_lightning as pl\nfrom pytorch_lightning import Trainer\n"
           "if __name__ == '__main__':\n    trainer = Trainer.from_argparse_args(opt)\n    trainer.fit(model, data)\n")
    result = scan_files({"main.py": src})
    assert [w["resolved"]["role"] for w in result.workloads if w["entrypoint"] == "main.py"] == ["training"]


def test_a_compose_model_server_is_a_serving_workload_with_its_model():
    files = {"docker-compose.yml": "services:\n  llm:\n    image: vllm/vllm-openai:v0.6.3\n"
                                   "    command: [\"--model\", \"meta-llama/Llama-3.1-8B-Instruct\", \"--dtype\", \"bfloat16\"]\n"
                                   + RESERVE.format(count=1) + "\n"}
    (wl,) = scan_files(files).workloads
    assert wl["role"] == "inference" and wl["resolved"]["model"]["name"] == "meta-llama/Llama-3.1-8B-Instruct"


@pytest.mark.parametrize("script, role", [
    ("from engine import evaluate\nimport torch\nprint(evaluate(torch.load('m.pt'), batches))\n", "batch"),
    ("from engine import train\nimport torchvision\ntrain(torchvision.models.resnet50(), batches)\n", "training"),
    ("import engine\nimport torchvision\nengine.train(torchvision.models.resnet50(), batches)\n", "training"),
    ("from engine import Trainer\nimport torchvision\nTrainer(torchvision.models.resnet50()).fit(batches)\n", "training"),
    ("from engine import Trainer\nimport torchvision\n\n\nclass Mine(Trainer):\n    pass\n\n\n"
     "Mine(torchvision.models.resnet50()).fit(batches)\n", "training"),
])
def test_an_imported_modules_training_counts_only_where_the_workload_calls_it(script, role):
    files = {"engine.py": ENGINE, "job.py": script, "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 job.py\n"}
    (wl,) = [w for w in scan_files(files).workloads if w["entrypoint"] == "job.py"]
    assert wl["resolved"]["role"] == role


def test_a_trainers_backward_helper_is_still_its_training_step():
    (wl,) = scan_files({"train.py": RUNNER_HELPER}).workloads
    assert wl["resolved"]["role_reason"] == "loop at train.py:10"


# -- size ------------------------------------------------------------------------------------------------


def test_a_model_of_literal_layers_is_counted():
    lstm = 4 * (512 * 256 + 256 * 256 + 512) + 4 * (256 * 256 + 256 * 256 + 512)
    expected = 320 + 18496 + 9216 * 128 + 128 + 1290 + 784 * 512 + 512 + lstm + 512
    model = _model(scan_files({"train.py": MNIST_NET}))
    assert model["params"] == expected and "literal layer sizes of Net" in model["evidence"]


def test_keras_sequential_layers_are_counted_through_their_shapes():
    train = ("import tensorflow as tf\nmodel = tf.keras.Sequential([\n"
             "    tf.keras.layers.Conv2D(32, [3, 3], activation='relu', input_shape=(28, 28, 1)),\n"
             "    tf.keras.layers.MaxPooling2D(pool_size=(2, 2)),\n    tf.keras.layers.Flatten(),\n"
             "    tf.keras.layers.Dense(10, activation='softmax'),\n])\nmodel.compile(loss='mse')\nmodel.fit(ds)\n")
    assert _model(scan_files({"train.py": train}))["params"] == 320 + 13 * 13 * 32 * 10 + 10


@pytest.mark.parametrize("change", [
    ("nn.Linear(128, 10)", "nn.Linear(128, n_classes)"),           # a size the constructor takes
    ("nn.Dropout(0.25)", "nn.Dropout(0.25)\n        self.backbone = Backbone()"),  # a class defined elsewhere
    ("model = Net().cuda()", "backbone = timm.create_model('vit_large_patch16_224')\nmodel = Net().cuda()"),  # a registry model
])
def test_a_model_with_any_layer_not_literal_is_not_counted(change):
    result = scan_files({"train.py": MNIST_NET.replace(*change)})
    assert not any(w["resolved"].get("model") for w in result.workloads)


def test_a_model_that_is_one_layer_is_counted():
    train = "import torch\nmodel = torch.nn.Linear(20, 1).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + MAIN_LOOP
    assert _model(scan_files({"train.py": train}))["params"] == 21


def test_a_checkpoint_load_does_not_hide_the_layers_but_a_pickled_model_does():
    resume = MNIST_NET.replace("model = Net().cuda()", "state = torch.load('snapshot.pt')\nmodel = Net().cuda()")
    assert _model(scan_files({"train.py": resume}))["params"] > 0
    pickled = MNIST_NET.replace("model = Net().cuda()", "model = torch.load('model.pt')")
    assert not any(w["resolved"].get("model") for w in scan_files({"train.py": pickled}).workloads)


@pytest.mark.parametrize("layers", ["tf.keras.layers.InputLayer(input_shape=()), tf.keras.layers.Dense(10)",
                                    "tf.keras.layers.Conv2D(8, 3, strides=0, input_shape=(28, 28, 1))",
                                    "tf.keras.layers.Dense(10, input_shape=('a',))"])
def test_layer_sizes_the_arithmetic_cannot_follow_are_unknown_not_a_crash(layers):
    train = f"import tensorflow as tf\nmodel = tf.keras.Sequential([{layers}])\nmodel.compile(loss='mse')\nmodel.fit(ds)\n"
    result = scan_files({"train.py": train})
    assert not [f for f in result.findings if f.code.startswith("SYS")]
    assert not any(w["resolved"].get("model") for w in result.workloads)


def test_a_model_named_by_an_argparse_default_is_sized_by_what_the_launcher_passes():
    train = ("import argparse\nimport torch\nfrom transformers import AutoModelForCausalLM\np = argparse.ArgumentParser()\n"
             "p.add_argument('--model_name', default='meta-llama/Llama-2-7b-hf')\nargs = p.parse_args()\n"
             "model = AutoModelForCausalLM.from_pretrained(args.model_name).cuda()\n" + MAIN_LOOP)
    launched = {"train.py": train, "run.sh": "torchrun --nproc_per_node 8 train.py\n"}
    assert _model(scan_files(launched))["name"] == "meta-llama/Llama-2-7b-hf"
    other = dict(launched, **{"run.sh": "torchrun --nproc_per_node 8 train.py --model_name gpt2\n"})
    assert _model(scan_files(other))["name"] == "gpt2"


def test_a_model_built_from_a_named_config_is_sized_by_that_name():
    src = ("import torch\nfrom lit_llama.model import LLaMA, LLaMAConfig\nconfig = LLaMAConfig.from_name(\"7B\")\n"
           "model = LLaMA(config).cuda()\nfor x in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\n")
    wl = scan_files({"finetune.py": src}).workloads[0]
    assert wl["resolved"]["model"]["params"] == 7_000_000_000


def test_a_keras_functional_model_is_counted_from_its_layers():
    (wl,) = scan_files({"train.py": KERAS_FUNCTIONAL.replace("HIDDEN", "128")}).workloads
    # Embedding 20000*32, Conv1D 3*32*64+64, Dense 64*128+128, Dense 128+1
    assert wl["resolved"]["model"]["params"] == 20000 * 32 + 3 * 32 * 64 + 64 + 64 * 128 + 128 + 129


def test_a_functional_model_with_a_layer_it_cannot_size_is_not_counted():
    (wl,) = scan_files({"train.py": KERAS_FUNCTIONAL.replace("HIDDEN", "units")}).workloads
    assert wl["resolved"].get("model") is None


def test_an_uncountable_functional_model_leaves_a_counted_torch_model_of_the_notebook_its_size():
    """A notebook with a Keras experiment beside a tiny PyTorch MLP: the Keras Model(...) this arithmetic cannot follow does
    not make the MLP's workload one of unknown size (a wrong IO finding on a tabular MLP came back that way)."""
    keras = KERAS_FUNCTIONAL.replace("HIDDEN", "units")
    torch_part = ("import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n\n\nclass Tiny(nn.Module):\n"
                  "    def __init__(self):\n        super().__init__()\n        self.net = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1))\n\n"
                  "    def forward(self, x):\n        return self.net(x)\n\n\nmodel = Tiny().to('cuda')\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                  "for x, y in DataLoader(rows, batch_size=8):\n    loss = (model(x.to('cuda')) - y.to('cuda')).pow(2).mean()\n"
                  "    loss.backward()\n    opt.step()\n")
    (wl,) = scan_files({"train.py": keras.replace("model.fit(x_train, y_train, epochs=2)\n", "") + "\n" + torch_part}).workloads
    assert wl["resolved"]["model"]["params"] == 6 * 12 + 12 + 12 + 1


@pytest.mark.parametrize("me", ["self", "s"])
def test_layer_sizes_read_tuple_unpacked_literals_under_any_instance_name(me):
    (wl,) = scan_files({"train.py": TINY.format(me=me)}).workloads
    assert wl["resolved"]["model"]["params"] == 11 * 64 + 64 * 11 + 11


def test_a_layer_sized_by_an_unpacked_unknown_stays_unknown():
    src = TINY.format(me="s").replace("V, C, steps = 11, 64, 1000", "V, C, steps = args.v, 64, 1000")
    (wl,) = scan_files({"train.py": src}).workloads
    assert (wl["resolved"].get("model") or {}).get("params") is None


# -- tutorial --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("vocab, hidden, tutorial", [("200000", "32", True), ("2000", "32", True), ("2000", "100000", False)])
def test_embedding_tables_are_lookups_not_math_for_the_tutorial_size(vocab, hidden, tutorial):
    """The tutorial-size line counts the layers that multiply: an IMDB CNN's 6.4M-entry embedding does not make it big,
    a 6.5M-parameter dense head does."""
    src = KERAS_FUNCTIONAL.replace("HIDDEN", hidden).replace("vocab = 20000", f"vocab = {vocab}")
    job = ("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: imdb\nspec:\n  template:\n    spec:\n      containers:\n"
           "        - name: train\n          image: tensorflow/tensorflow:2.15.0-gpu\n          command: [\"python\", \"train.py\"]\n"
           "          resources:\n            limits:\n              nvidia.com/gpu: 1\n")
    result = scan_files({"train.py": src, "job.yaml": job})
    (wl,) = result.workloads
    said = wl["resolved"].get("tutorial_sized") or ""
    assert bool(said) == tutorial, said
    if tutorial and vocab == "200000":
        assert "6.4M of embedding tables" in said
    assert any(f.code == "AMP001" for f in result.findings) is not tutorial  # a pod's GPU: no instance named


@pytest.mark.parametrize("length, hparams, records, tutorial", [
    ("    batches: 400", "  global_batch_size: 24", "", "a run of 9,600 samples"),
    ("    records: 5000", "  global_batch_size: 24", "", "a run of 5,000 samples"),
    ("    epochs: 2", "  global_batch_size: 8", "records_per_epoch: 170\n", "a run of 340 samples"),
    ("    batches: 90000", "  global_batch_size: 16", "", None),  # 1.44M samples: a real run
    ("    batches: 400", "  global_batch_size:\n    type: int\n    minval: 8\n    maxval: 64", "", None),  # searched
    ("    epochs: 150", "  global_batch_size: 16", "", None),  # epochs of a size the config does not say
])
def test_a_short_determined_run_is_tutorial_sized(length, hparams, records, tutorial):
    exp = (f"hyperparameters:\n{hparams}\n{records}searcher:\n  name: single\n  metric: loss\n  max_length:\n{length}\n"
           "entrypoint: model_def:ImageNetTrial\nresources:\n  slots_per_trial: 8\n")
    r = scan_files({"exp/model_def.py": TRIAL.replace("AMP\n", ""), "exp/const.yaml": exp})
    (wl,) = r.workloads
    said = wl["resolved"].get("tutorial_sized")
    assert (said is not None and said.startswith(tutorial)) if tutorial else said is None, said
    assert any(f.code == "AMP001" for f in r.findings) is (tutorial is None)


# -- values ----------------------------------------------------------------------------------------------


# -- values: the binding that reaches a use ------------------------------------------------------
def test_a_name_rebound_cell_after_cell_takes_its_last_straight_line_binding():
    src = "t = 'ml.p3.2xlarge'\nE(instance_type=t)\nt = 'ml.g5.xlarge'\nE2(instance_type=t)\n"
    assert _value_at(src, "E", "instance_type") == "ml.p3.2xlarge"
    assert _value_at(src, "E2", "instance_type") == "ml.g5.xlarge"


def test_a_name_bound_on_branches_is_one_of_its_literals():
    src = "if local:\n    t = 'local'\nelse:\n    t = 'ml.c5.xlarge'\nE(instance_type=t)\n"
    assert _value_at(src, "E", "instance_type") == OneOf(frozenset({"local", "ml.c5.xlarge"}))


def test_a_parameter_rebound_on_one_path_is_what_the_caller_passes():
    src = "def make(kw=None, n=2):\n    if kw is None:\n        kw = {}\n    E(n=n, **kw)\n"
    ix = build_index(ast.parse(src), src)
    call = next(c for c in ix.calls if c.attr == "E")
    assert Evaluator(ix).value(call.kwarg("n"), call.scope) is not None
    assert not isinstance(Evaluator(ix).value(call.kwarg("n"), call.scope), int)


@pytest.mark.parametrize("args, instance", [('"ml.g5.12xlarge"', "g5.12xlarge"), ('instance_type="ml.p4d.24xlarge"', "p4d.24xlarge")])
def test_an_estimator_built_in_a_helper_takes_the_instance_its_call_passes(args, instance):
    result = scan_files({"launch.py": HELPER_LAUNCH.replace("{args}", args), "train.py": FP32_TRAIN})
    wl = next(w for w in result.workloads if w["entrypoint"] == "train.py")
    assert wl["compute"]["instance"] == instance


def test_a_helper_called_with_two_instances_is_one_of_them():
    src = HELPER_LAUNCH.replace("est = get_estimator({args})\nest.fit()\n",
                                'get_estimator("ml.g5.12xlarge").fit()\nget_estimator("ml.c5.xlarge").fit()\n')
    result = scan_files({"launch.py": src, "train.py": FP32_TRAIN})
    wl = next(w for w in result.workloads if w["entrypoint"] == "train.py")
    assert not wl["compute"] or wl["compute"]["instance"] != "g5.12xlarge"  # a GPU or a CPU machine: not the GPU for sure


@pytest.mark.parametrize("change", ['hp["bf16"] = 1', 'hp.update({"bf16": 1})', 'hp |= {"bf16": 1}', 'hp.setdefault("bf16", 1)'])
def test_a_dict_changed_after_it_was_built_is_not_its_literal(change):
    """SageMaker jobs whose hyperparameters get bf16 added after the literal were judged fp32."""
    assert _value_passed(f'hp = {{"epochs": 3}}\n{change}\nsubmit(hyperparameters=hp)\n') is not None
    assert not isinstance(_value_passed(f'hp = {{"epochs": 3}}\n{change}\nsubmit(hyperparameters=hp)\n'), dict)


def test_an_unchanged_dict_and_another_dicts_change_keep_the_literal():
    assert _value_passed('hp = {"epochs": 3}\nsubmit(hyperparameters=hp)\n') == {"epochs": 3}
    assert _value_passed('hp = {"epochs": 3}\nother["x"] = 1\nsubmit(hyperparameters=hp)\n') == {"epochs": 3}
