"""AMP rules (mixed precision, TF32, fp8): where they must fire and must not, on small repositories written
for the purpose. Most cases reproduce a class of finding judged on a real repository (tests/realworld/
labels.yaml); the comment or docstring of each says which pattern it stands for.
"""
from __future__ import annotations

import pytest

from conftest import assert_amp_or_tutorial
from gpulint.testing import scan_files
from helpers import SEVERITY_AT, codes, findings
from samples import (FP32_TRAIN, GPU_JOB, IMAGE, MAIN_LOOP, MNIST_NET, P4D_INFRA, P4D_TORCHRUN, PYTORCHJOB_IMAGENET,
                     SM_RESNET_LOOP, TRIAL, _cell, _nb_of_cells)


# -- precision set where gpulint had not looked ----------------------------------------------------
DS_TRAIN = ("import argparse\nimport deepspeed\nimport torch\np = argparse.ArgumentParser()\np.add_argument('--deepspeed_config')\n"
            "args = p.parse_args()\nmodel, opt, _, _ = deepspeed.initialize(model=Net(), config=args.deepspeed_config)\n"
            "for x in loader:\n    loss = model(x.cuda()).sum()\n    model.backward(loss)\n    model.step()\n")


# -- severity follows the GPU evidence -----------------------------------------------------------------
HF_NOTEBOOK_CELL = ("from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments\n"
                    "model = AutoModelForSequenceClassification.from_pretrained('bert-base-uncased')\n"
                    "args = TrainingArguments(output_dir='out', num_train_epochs=3)\n"
                    "Trainer(model=model, args=args, train_dataset=train_ds).train()\n")


# -- precision: a hand-written bf16 model ----------------------------------------------------------
CASTED_LINEAR_BF16 = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class CastedLinear(nn.Linear):
    def forward(self, x):
        return F.linear(x, self.weight.type_as(x))


class GPT(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim){cast}
        self.blocks = nn.ModuleList([CastedLinear(dim, dim) for _ in range(48)])
        self.head = CastedLinear(dim, vocab)

    def forward(self, idx):
        x = self.embed(idx)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


model = GPT(50304, 4096).cuda()
opt = torch.optim.AdamW(model.parameters())
for x, y in loader:
    F.cross_entropy(model(x.cuda()).flatten(0, 1), y.cuda().flatten()).backward()
    opt.step()
'''


# -- precision: a mechanism behind a flag ----------------------------------------------------------
GUARDED = '''\
import argparse
import torch
p = argparse.ArgumentParser()
p.add_argument("--use_amp", action="store_true")
args = p.parse_args()
USE_FP16 = {constant}
model = Net().cuda()
opt = torch.optim.AdamW(model.parameters())
{cast}
for x in loader:
    {guard}
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x.cuda()).sum()
    {other}
    loss.backward()
    opt.step()
'''


def _guarded(guard: str, launch: str = "python train.py", constant: str = "False", cast: str = "") -> list[str]:
    src = GUARDED.replace("{guard}", guard).replace("{constant}", constant).replace("{cast}", cast).replace(
        "{other}", "else:\n        loss = model(x.cuda()).sum()" if guard.startswith("if") else "")
    if not guard.startswith("if"):
        src = src.replace("    \n        with", "    with").replace("\n            loss = model", "\n        loss = model")
    files = {"train.py": src, "sky.yaml": f"resources:\n  accelerators: A100:1\nrun: {launch}\n"}
    return [f.code for f in findings(files, "AMP001")]


EPOCH_LOOP = '''\
import time
import torch


def train_one_epoch(model, criterion, data_loader, optimizer, epoch):
    model.train()
    batch_time, end = [], time.time()
    for idx, (samples, targets) in enumerate({loader}):
        samples, targets = samples.cuda(non_blocking=True), targets.cuda(non_blocking=True)
        loss = criterion(model(samples), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        batch_time.append(time.time() - end)
        end = time.time()


if __name__ == "__main__":
    model = build_model().cuda()
    for epoch in range(300):
        train_one_epoch(model, criterion, loader, optimizer, epoch)
'''


RAY_BENCH = '''\
import time
import numpy as np
import torch
import ray
from ray.train.torch import TorchTrainer


def {labels}(batch):
    batch["label"] = np.zeros([len(batch["image"])], dtype=int)
    return batch


def train_loop_per_worker(config):
    model = ray.train.torch.prepare_model(resnet50())
    for batch in ray.train.get_dataset_shard("train").iter_torch_batches(batch_size=64):
        loss = torch.nn.functional.cross_entropy(model(batch["image"].cuda()), batch["label"].cuda())
        loss.backward()
        opt.step()


if __name__ == "__main__":
    ds = ray.data.read_images("{path}").map_batches({labels})
    start = time.time()
    TorchTrainer(train_loop_per_worker, datasets={"train": ds}).fit()
    print({"perf_metric_name": "{metric}", "value": 1000 / (time.time() - start)})
'''


# -- a model the repository's own loader builds in the dtype it is handed ---------------------------
PARAM_DTYPE_BF16 = '''\
import torch
from finetune.wrapped_model import load_model


def train(folder):
    param_dtype = {dtype}
    model = load_model(folder=folder, param_dtype=param_dtype)
    model.cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for batch in loader:
        loss = model(batch.cuda()).mean()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    train("/models/7b")
'''


WRAPPED = '''\
import torch


def load_model(folder, param_dtype):
    state = read_state(folder)
    return Transformer.from_state(state, dtype=param_dtype)
'''


SBATCH = "#!/bin/bash\n#SBATCH --gres=gpu:8\n#SBATCH --partition=a100\ntorchrun --nproc-per-node 8 train.py\n"


# -- a run that says it is a demonstration, or trains a handful of steps -----------------------------
POLICY_LOOP = '''\
{doc}import torch


def main():
    {budget}
    model = Policy().cuda()
    optimizer = torch.optim.Adam(model.parameters())
    step = 0
    while step < {bound}:
        for batch in loader:
            loss = model(batch.cuda())
            loss.backward()
            optimizer.step()
            step += 1


if __name__ == "__main__":
    main()
'''


# -- a fork of a known library carried in a folder of the repository ----------------------------------
GLUE = ("import torch\nmodel = Net().cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\n")


SBATCH_RUNS_SCRIPT = "#!/bin/bash\n#SBATCH --gres=gpu:8\n#SBATCH --partition=a100\npython {script}\n"


def _amp_or_tutorial(files: dict, entry: str, severity: str | None, tutorial: str) -> None:
    result = scan_files(files)
    (wl,) = [w for w in result.workloads if w["entrypoint"] == entry]
    assert_amp_or_tutorial(result, wl, severity, tutorial)


# -- a small benchmark dataset named by the launcher's data path ----------------------------------------
IMAGENET = '''\
import argparse
import torch
import torchvision

p = argparse.ArgumentParser()
p.add_argument("data")
p.add_argument("--arch", default="resnet18")
args = p.parse_args()
train = torchvision.datasets.ImageFolder(args.data + "/train", transform=torchvision.transforms.ToTensor())
loader = torch.utils.data.DataLoader(train, batch_size=32, num_workers=4, pin_memory=True)
model = torchvision.models.resnet18().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda()).backward()
    opt.step()
'''


# -- a model's size from the literal arguments the file builds it with ------------------------------------
TOY_NET = '''\
import torch


class NeuralNetwork(torch.nn.Module):
    def __init__(self, num_inputs, num_outputs):
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(num_inputs, 30), torch.nn.ReLU(), torch.nn.Linear(30, 20), torch.nn.ReLU(),
            torch.nn.Linear(20, num_outputs))

    def forward(self, x):
        return self.layers(x)


def main(rank):
    torch.cuda.set_device(rank)
    model = NeuralNetwork({args}).to(rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for x, y in loader:
        torch.nn.functional.cross_entropy(model(x.to(rank)), y.to(rank)).backward()
        opt.step()


if __name__ == "__main__":
    main(0)
'''


# -- TransformerEngine's FP8 context is mixed precision -------------------------------------------
TE_TRAIN = """\
import argparse
import torch
import transformer_engine.pytorch as te

parser = argparse.ArgumentParser()
parser.add_argument("--use-fp8", action="store_true", default=DEFAULT)
args = parser.parse_args()
model = te.Linear(4096, 4096).cuda()
opt = torch.optim.AdamW(model.parameters())
for x in loader:
    with CONTEXT:
        loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
"""


# -- a demo's step budget in the script whose training step is the library's -------------------------
PIPE_LIB = """\
import torch


class PipelineEngine:
    def __init__(self, model):
        self.model = model.cuda()
        self.opt = torch.optim.Adam(self.model.parameters())

    def train_step(self, batch):
        loss = self.model(batch.cuda()).sum()
        loss.backward()
        self.opt.step()
"""


PIPE_DEMO = """\
import torch
from mylib.engine import PipelineEngine

NUM_STEPS = BUDGET


def main():
    engine = PipelineEngine(GPT2Like(layers=48, hidden=1600))
    for _ in range(NUM_STEPS):
        engine.train_step(next(batches))


if __name__ == "__main__":
    main()
"""


# -- a CUDA copy under "device is not the CPU" runs on the CPU as well; CartPole is a toy ---------------
DQN = """\
import gym
import torch
from torch import nn
import lightning as L


class DQN(nn.Module):
    def __init__(self, obs_size, n_actions, hidden_size=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, n_actions))

    def forward(self, x):
        return self.net(x.float())


class Agent:
    def get_action(self, net, state, device):
        state = torch.tensor([state])
        if GUARD:
            state = state.cuda(device)
        return net(state).argmax()


class DQNLightning(L.LightningModule):
    def __init__(self, env="ENV"):
        super().__init__()
        self.env = gym.make(env)
        self.net = DQN(self.env.observation_space.shape[0], self.env.action_space.n)

    def training_step(self, batch, idx):
        return self.net(batch[0]).sum()

    def configure_optimizers(self):
        return torch.optim.Adam(self.net.parameters())


trainer = L.Trainer(accelerator="auto", devices=1, max_epochs=150)
trainer.fit(DQNLightning())
"""


# -- a Lightning Trainer of a few steps is a demo --------------------------------------------------------
BORING = """\
import torch
from lightning.pytorch import LightningModule, Trainer
import torchvision


class Model(LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.resnet50()

    def training_step(self, batch, idx):
        return self.net(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


trainer = Trainer(accelerator="gpu", devices=1, ARGS)
trainer.fit(Model(), train_loader)
"""


# -- Fabric is named as Fabric, and takes its precision from `fabric run` ---------------------------------
FABRIC = """\
import torch
import torchvision
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cuda", devices=1)
model = torchvision.models.resnet50()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = fabric.setup(model, opt)
for x in batches:
    loss = model(x).sum()
    fabric.backward(loss)
    opt.step()
"""


# -- a quantization config that no load is given quantises nothing ----------------------------------------
QLORA = """\
import torch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments

bnb_config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-8B"LOAD)
trainer = Trainer(model=model, args=TrainingArguments(output_dir="out"), train_dataset=ds)
trainer.train()
"""


# -- a checkpoint published quantized computes in the 16-bit dtype of its quantization config ------------
HF_FINETUNE = """\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained(NAME, device_map="auto")
args = TrainingArguments(output_dir="out", per_device_train_batch_size=4)
Trainer(model=model, args=args, train_dataset=ds).train()
"""


# -- a CUDA device ordinal is GPU use -----------------------------------------------------------------------
ORDINAL_TRAIN = """\
import torch, torchvision
model = torchvision.models.resnet50().to(DEV)
for x, y in loader:
    loss_fn(model(x.to(DEV)), y.to(DEV)).backward()
    opt.step()
"""


PIPELINE_TRAIN = """\
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments, pipeline
labeler = pipeline("zero-shot-classification", model="facebook/bart-large-mnli", device=DEV)
model = AutoModelForSequenceClassification.from_pretrained("roberta-large")
Trainer(model=model, args=TrainingArguments(output_dir="out"), train_dataset=ds).train()
"""


# -- Lightning 1.x gpus= ------------------------------------------------------------------------------------
LIGHTNING_GPUS = """\
import pytorch_lightning as pl
from models import ViT
trainer = pl.Trainer(ARGS, max_epochs=30)
trainer.fit(ViT(depth=24))
"""


# -- one GPU of a kind nothing names, a model of unknown size: nothing sizes the spend, so AMP001 is advice --
CUSTOM_TRAIN = """\
import torch
from net import Net

model = Net(hidden=args.hidden).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    loss.backward()
    opt.step()
"""


def _amp(files):
    r = scan_files(files)
    (f,) = [f for f in r.findings if f.code == "AMP001"]
    return f, r.workloads


DDP_TRAIN = CUSTOM_TRAIN.replace("model = Net(hidden=args.hidden).cuda()",
                                 "model = torch.nn.parallel.DistributedDataParallel(Net(hidden=args.hidden).cuda())")


# -- a with autocast(enabled=False) region inside a function is an fp32 island, not the run's precision ---
ROTARY_LIB = """\
import torch
from torch import nn

class Rotary(nn.Module):
    def forward(self, t):
        with torch.autocast("cuda", enabled=False):
            return t.float().sin()
"""


AMP_LOOP = """\
import torch
from rotary import Rotary

model = torch.nn.Sequential(Rotary()).cuda()
opt = torch.optim.AdamW(model.parameters())
scaler = torch.cuda.amp.GradScaler()
for x in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x.cuda()).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
"""


FP32_LOOP = AMP_LOOP.replace('    with torch.autocast("cuda", dtype=torch.float16):\n        loss', "    loss")


ROTARY_DECORATED = ROTARY_LIB.replace('    def forward(self, t):\n        with torch.autocast("cuda", enabled=False):\n            return',
                                      '    @torch.autocast("cuda", enabled=False)\n    def forward(self, t):\n        return')


SM_BF16_FLAG = ("import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument('--bf16', type=int, default=0)\n"
            "args = p.parse_args()\nmodel = Net().cuda()\n"
            "if __name__ == '__main__':\n    for x in loader:\n        with torch.autocast('cuda', dtype=torch.bfloat16, enabled=args.bf16):\n"
            "            loss = model(x.cuda()).sum()\n        loss.backward()\n        opt.step()\n")


SM_LAUNCH = ("from sagemaker.pytorch import PyTorch\nhp = {'bf16': 0, 'epochs': 1}\n%s\n"
             "est = PyTorch(entry_point='train.py', instance_type='ml.p4d.24xlarge', hyperparameters=hp, role=role)\nest.fit()\n")


SMP_LAUNCH = '''from sagemaker.pytorch import PyTorch
est = PyTorch(entry_point="train.py", instance_type="ml.p4d.24xlarge", role=role,
              distribution={"smdistributed": {"modelparallel": {"enabled": True, "parameters": {"bf16": BF}}}, "mpi": {"enabled": True}})
est.fit()
'''


SMP_TRAIN = '''import torch
import smdistributed.modelparallel.torch as smp
smp.init()
model = smp.DistributedModel(Net().cuda())
if __name__ == "__main__":
    for x in loader:
        loss = model(x.cuda()).sum()
        model.backward(loss)
        opt.step()
'''


def _notebook(instance: str | None) -> str:
    import json

    cells = ["from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments",
             "model = AutoModelForSequenceClassification.from_pretrained('bert-base-uncased')\n"
             "args = TrainingArguments(output_dir='out', num_train_epochs=1)\n"
             "Trainer(model=model, args=args, train_dataset=ds).train()"]
    meta = {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}
    if instance:
        meta["instance_type"] = instance
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": meta,
                       "cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None} for c in cells]})


# -- AMP001 ----------------------------------------------------------------------------------------------


def test_a_notebook_estimator_built_from_a_rebound_dict_on_cpu_choices_is_cpu():
    """Cells that rebuild ``params`` for each framework, with ``"local" if local_mode else "ml.c5.xlarge"``."""
    launch = ("from sagemaker.pytorch import PyTorch\nfrom sagemaker.sklearn import SKLearn\n"
              "if local_mode:\n    it = 'local'\nelse:\n    it = 'ml.c5.xlarge'\n"
              "params = {'entry_point': 'sk.py', 'instance_type': it}\nSKLearn(**params).fit()\n"
              "if local_mode:\n    it = 'local'\nelse:\n    it = 'ml.c5.xlarge'\n"
              "params = {'entry_point': 'train.py', 'instance_type': it}\nPyTorch(**params).fit()\n")
    train = ("import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\nmodel = Net().to(device)\n"
             "if __name__ == '__main__':\n    for x in loader:\n        model(x.to(device)).sum().backward()\n        opt.step()\n")
    assert codes({"launch.py": launch, "train.py": train}, "AMP", sort=True) == []
    gpu = launch.replace("'ml.c5.xlarge'", "'ml.g5.2xlarge'")
    assert codes({"launch.py": gpu, "train.py": train}, "AMP", sort=True) == ["AMP001"]


def test_deepspeed_auto_outside_the_hf_integration_is_not_fp32():
    """``"bf16": {"enabled": "auto"}`` with a bare deepspeed.initialize: no TrainingArguments decide it."""
    files = {"train.py": DS_TRAIN, "ds_config.json": '{"bf16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": 4}',
             "run.sh": "deepspeed train.py --deepspeed_config ds_config.json\n"}
    assert codes(files, "AMP001", sort=True) == []
    off = dict(files, **{"ds_config.json": '{"bf16": {"enabled": false}, "train_micro_batch_size_per_gpu": 4}'})
    assert codes(off, "AMP001", sort=True) == ["AMP001"]


def test_zero_init_and_set_default_dtype_build_the_model_in_16_bit():
    for build in ("with deepspeed.zero.Init(dtype=torch.bfloat16):\n    net = Net()\n",
                  "torch.set_default_dtype(torch.bfloat16)\nnet = Net()\n"):
        train = DS_TRAIN.replace("model, opt", build + "model, opt").replace("model=Net()", "model=net")
        files = {"train.py": train, "ds_config.json": '{"train_micro_batch_size_per_gpu": 4}',
                 "run.sh": "deepspeed train.py --deepspeed_config ds_config.json\n"}
        assert codes(files, "AMP001", sort=True) == [], build


def test_a_dtype_read_from_the_recipe_config_is_undecided():
    """torchtune-style recipes: ``with training.set_default_dtype(self._dtype)`` and ``.to(dtype=self._dtype)``."""
    recipe = ("import torch\nfrom recipes import training\n\n\nclass Recipe:\n    def setup(self, cfg):\n"
              "        self._dtype = training.get_dtype(cfg.dtype)\n        with training.set_default_dtype(self._dtype):\n"
              "            self.model = build(cfg).cuda()\n\n    def train(self):\n        for x in self.loader:\n"
              "            self.model(x.cuda()).sum().backward()\n            self.opt.step()\n\n\n"
              "if __name__ == '__main__':\n    Recipe().train()\n")
    assert codes({"train.py": recipe, "infra/main.tf": P4D_TORCHRUN}, "AMP001", sort=True) == []
    cast = recipe.replace("with training.set_default_dtype(self._dtype):\n            self.model = build(cfg).cuda()",
                          "self.model = build(cfg).cuda().to(dtype=self._dtype)")
    assert codes({"train.py": cast, "infra/main.tf": P4D_TORCHRUN}, "AMP001", sort=True) == []
    device_only = recipe.replace("with training.set_default_dtype(self._dtype):\n            self.model = build(cfg).cuda()",
                                 "self.model = build(cfg).to(self._device)")
    assert codes({"train.py": device_only, "infra/main.tf": P4D_TORCHRUN}, "AMP001", sort=True) == ["AMP001"]  # a device is no dtype


def test_autocast_bound_by_functools_partial_is_autocast():
    train = ("import torch\nfrom functools import partial\nctx = partial(torch.cuda.amp.autocast, enabled=True, dtype=torch.bfloat16)\n"
             "model = Net().cuda()\nif __name__ == '__main__':\n    for x in loader:\n        with ctx():\n"
             "            loss = model(x.cuda()).sum()\n        loss.backward()\n        opt.step()\n")
    assert codes({"train.py": train, "infra/main.tf": P4D_TORCHRUN}, "AMP001", sort=True) == []


def test_a_config_named_as_the_fp32_variant_is_advice():
    files = {"train.py": DS_TRAIN, "ds_config_fp32.json": '{"fp16": {"enabled": false}, "train_micro_batch_size_per_gpu": 4}',
             "run.sh": "deepspeed train.py --deepspeed_config ds_config_fp32.json\n"}
    (f,) = [f for f in scan_files(files).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "named as the fp32 variant" in f.message


def test_amp001_on_a_counted_small_model_is_advice_without_a_figure():
    (f,) = [f for f in scan_files({"train.py": MNIST_NET, "infra/main.tf": P4D_TORCHRUN}).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "tutorial-sized: a 2.9M-parameter model" in f.message
    assert f.cost_impact.usd_per_hour is None and "below the" in f.cost_impact.basis


def test_amp001_is_advice_where_only_a_cpu_capable_framework_says_gpu():
    (f,) = [f for f in scan_files({"train.py": HF_NOTEBOOK_CELL}).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "on a GPU if there is one" in f.message
    sm = ("from sagemaker.huggingface import HuggingFace\n"
          "HuggingFace(entry_point='train.py', instance_type='ml.g5.2xlarge', role=role).fit()\n")
    (f,) = [f for f in scan_files({"train.py": HF_NOTEBOOK_CELL, "launch.py": sm}).findings if f.code == "AMP001"]
    assert f.severity.value == "warning" and "g5.2xlarge" in f.message


@pytest.mark.parametrize("load", ["from lightning.pytorch.demos import WikiText2\nds = WikiText2()",
                                  "from torch_geometric.datasets import Planetoid\nds = Planetoid('/tmp', 'Cora')",
                                  "from datasets import load_dataset\nds = load_dataset('beans')"])
def test_tutorial_datasets_make_a_workload_tutorial_sized(load):
    train = f"import torch\n{load}\nmodel = Net().cuda()\n" + MAIN_LOOP
    (f,) = [f for f in scan_files({"train.py": train, "infra/main.tf": P4D_TORCHRUN}).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "tutorial-sized" in f.message


def test_fp32_left_at_the_trainers_default_says_so():
    (f,) = [f for f in scan_files({"train.py": HF_NOTEBOOK_CELL}).findings if f.code == "AMP001"]
    assert "sets neither bf16 nor fp16 (default fp32)" in f.message and "disables" not in f.message


def test_a_device_chosen_by_a_cuda_check_is_a_probe():
    train = ("import torch\ndevice = torch.device('cuda') if torch.cuda.is_available() else torch.device('cpu')\n"
             "model = Net().to(device)\nif __name__ == '__main__':\n    for x in loader:\n"
             "        model(x.to(device)).sum().backward()\n        opt.step()\n")
    (f,) = [f for f in scan_files({"train.py": train}).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "on a GPU if there is one" in f.message
    # an unconditional cuda device is strong evidence; a launcher of 4 GPUs sizes the spend
    (f,) = [f for f in scan_files({"train.py": train.replace(" if torch.cuda.is_available() else torch.device('cpu')", ""),
                                   "run.sh": "torchrun --nproc_per_node 4 train.py\n"}).findings
            if f.code == "AMP001"]
    assert f.severity.value == "warning"


def test_a_step_on_random_tensors_in_a_file_that_reads_no_data_is_a_demo():
    demo = ("import torch\nmodel = Transformer(dim=256, n_layers=2).cuda()\nopt = torch.optim.AdamW(model.parameters())\n"
            "for i in range(10):\n    tokens = torch.randint(0, 32000, (8, 256), device='cuda')\n"
            "    model(tokens).sum().backward()\n    opt.step()\n")
    (f,) = [f for f in scan_files({"train.py": demo, "infra/main.tf": P4D_TORCHRUN}).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "synthetic inputs (torch.randint)" in f.message
    real = demo.replace("import torch\n", "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\n")
    (f,) = [f for f in scan_files({"train.py": real, "infra/main.tf": P4D_TORCHRUN}).findings if f.code == "AMP001"]
    assert f.severity.value == "warning"


def test_a_notebook_on_a_machine_nobody_names_gets_advice():
    import json as _json
    cells = ["import torch\nmodel = Net().to('cuda')\nopt = torch.optim.AdamW(model.parameters())",
             "for x in loader:\n    model(x.to('cuda')).sum().backward()\n    opt.step()"]
    nb = _json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None} for c in cells],
                      "metadata": {"kernelspec": {"name": "python3", "language": "python"}}, "nbformat": 4, "nbformat_minor": 5})
    (f,) = [f for f in scan_files({"tune.ipynb": nb}).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "kernel's machine nothing in the repository names" in f.message
    script = "import torch\nmodel = Net().to('cuda')\nopt = torch.optim.AdamW(model.parameters())\n" + MAIN_LOOP
    (f,) = [f for f in scan_files({"train.py": script}).findings if f.code == "AMP001"]
    # a script that requires a GPU: some job runs it on one, but one GPU nothing names for a model of unknown size
    assert f.severity.value == "info" and "nothing sizes the spend" in f.message
    known = script.replace("model = Net()", "from transformers import AutoModelForCausalLM\n"
                                            "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')")
    (f,) = [f for f in scan_files({"train.py": known}).findings if f.code == "AMP001"]
    assert f.severity.value == "warning"  # a 7B model: GPU-hours whatever it runs on


def test_a_studio_notebooks_gpu_kernel_is_its_compute():
    import json as _json
    cells = ["import torch\nmodel = Net().to('cuda')\nopt = torch.optim.AdamW(model.parameters())",
             "for x in loader:\n    model(x.to('cuda')).sum().backward()\n    opt.step()"]
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None} for c in cells],
          "metadata": {"kernelspec": {"name": "python3", "language": "python"}, "instance_type": "ml.g5.2xlarge"},
          "nbformat": 4, "nbformat_minor": 5}
    result = scan_files({"tune.ipynb": _json.dumps(nb)})
    (f,) = [f for f in result.findings if f.code == "AMP001"]
    assert f.severity.value == "warning" and "g5.2xlarge" in f.message
    assert not [f for f in result.findings if f.code == "COST005"]  # Studio's idle shutdown is not in the repository


def test_a_tensor_cast_to_the_models_own_dtype_decides_nothing():
    train = ("import torch\nmodel = Net().cuda()\nif __name__ == '__main__':\n    for x in loader:\n"
             "        mask = mask.to(device='cuda', dtype=model.dtype)\n        model(x.cuda(), mask).sum().backward()\n        opt.step()\n")
    assert codes({"train.py": train, "infra/main.tf": P4D_TORCHRUN}, "AMP001", sort=True) == ["AMP001"]


def test_an_mxnet_gluon_loop_is_not_judged_as_pytorch():
    loop = ("import mxnet as mx\nfrom mxnet import gluon\nctx = mx.gpu()\ntrainer = gluon.Trainer(net.collect_params(), 'sgd')\n"
            "for user, item, label in train_iter:\n    with mx.autograd.record():\n        loss = loss_fn(net(user, item), label)\n"
            "    loss.backward()\n    trainer.step(64)\n")
    assert codes({"train.py": loop, "infra/main.tf": P4D_TORCHRUN}, "AMP", sort=True) == []
    torch_loop = "import torch\nmodel = Net().cuda()\n" + MAIN_LOOP
    assert codes({"train.py": torch_loop, "infra/main.tf": P4D_TORCHRUN}, "AMP001", sort=True) == ["AMP001"]


def test_random_inputs_are_no_demo_when_another_file_of_the_workload_loads_data():
    data = "import torch\nfrom torch.utils.data import DataLoader\n\n\ndef make_loader(ds):\n    return DataLoader(ds, num_workers=4, pin_memory=True)\n"
    train = ("import torch\nfrom data import make_loader\nmodel = Net().cuda()\nloader = make_loader(ds)\n"
             "for x in loader:\n    noise = torch.randn(8, 4, 64, 64, device='cuda')\n    model(x.cuda() + noise).sum().backward()\n    opt.step()\n")
    (f,) = [f for f in scan_files({"train.py": train, "data.py": data, "infra/main.tf": P4D_TORCHRUN}).findings if f.code == "AMP001"]
    assert f.severity.value == "warning" and "demo" not in f.message


def test_random_batches_from_a_generator_the_step_calls_make_a_demo():
    demo = ("import torch\n\n\nclass Trainer:\n    def get_next_batch(self):\n        for _ in range(6):\n"
            "            yield torch.randn(32, 3, 128, 128).cuda(), torch.zeros(32).long().cuda()\n\n"
            "    def train(self):\n        m = Net().cuda()\n        for inputs, labels in self.get_next_batch():\n"
            "            loss_fn(m(inputs), labels).backward()\n            opt.step()\n\n\nif __name__ == '__main__':\n    Trainer().train()\n")
    (f,) = [f for f in scan_files({"ps.py": demo, "infra/main.tf": P4D_TORCHRUN}).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "synthetic inputs" in f.message


def test_a_package_init_that_re_exports_a_trainer_is_not_read_past_the_gate():
    """``from .train_loop import *`` in a package __init__ that names no framework: reading it would put every
    trainer of the package (an AMPTrainer's autocast) in each workload that imports the package."""
    amp_trainer = ("import torch\n\n\nclass AMPTrainer:\n    def run_step(self):\n        with torch.autocast('cuda'):\n"
                   "            loss = self.model(self.data)\n        loss.backward()\n        self.opt.step()\n")
    script = ("import torch\nfrom lib.engine import launch\n\n\ndef do_train(model, loader, opt):\n    for x in loader:\n"
              "        model(x.cuda()).sum().backward()\n        opt.step()\n\n\nif __name__ == '__main__':\n    do_train(Net().cuda(), loader, opt)\n")
    files = {"tools/plain_train.py": script, "lib/__init__.py": "", "lib/engine/__init__.py": "from .train_loop import *\nfrom .launch import launch\n",
             "lib/engine/train_loop.py": amp_trainer, "lib/engine/launch.py": "def launch(fn):\n    return fn()\n", "infra/main.tf": P4D_TORCHRUN}
    assert codes(files, "AMP001", sort=True) == ["AMP001"]


@pytest.mark.parametrize("cast, fires", [(".bfloat16()", False), ("", True)])
def test_a_layer_built_and_cast_to_bf16_is_a_bf16_model(cast, fires):
    """``nn.Embedding(...).bfloat16()`` with weights cast by ``type_as`` in forward: the matmuls run in bf16."""
    files = {"train.py": CASTED_LINEAR_BF16.replace("{cast}", cast), "launch.sh": "torchrun --nproc_per_node 8 train.py\n",
             "sky.yaml": "resources:\n  accelerators: H100:8\nrun: bash launch.sh\n"}
    assert bool(findings(files, "AMP001")) is fires


def test_a_tensor_cast_to_bf16_is_no_model_cast():
    src = CASTED_LINEAR_BF16.replace("{cast}", "").replace("model = GPT", "noise = torch.randn(3).bfloat16()\nmodel = GPT")
    files = {"train.py": src, "sky.yaml": "resources:\n  accelerators: H100:8\nrun: torchrun --nproc_per_node 8 train.py\n"}
    assert [f.code for f in findings(files, "AMP001")] == ["AMP001"]


@pytest.mark.parametrize("build, fires", [
    ("Trainer.from_argparse_args(opt)", False),
    ("Trainer(**trainer_kwargs)", False),
    ("Trainer(max_epochs=3)", True),
])
def test_a_lightning_trainer_built_from_flags_or_a_config_has_an_undecided_precision(build, fires):
    src = ("import pytorch_lightning as pl\nfrom pytorch_lightning import Trainer\n"
           f"if __name__ == '__main__':\n    model = Net().cuda()\n    trainer = {build}\n    trainer.fit(model, data)\n")
    files = {"main.py": src, "sky.yaml": "resources:\n  accelerators: A100:1\nrun: python main.py --base configs/ldm.yaml\n"}
    assert bool(findings(files, "AMP001")) is fires


@pytest.mark.parametrize("guard, launch, fires", [
    ("if args.use_amp:", "python train.py", True),                # the flag is off unless passed
    ("if args.use_amp:", "python train.py --use_amp", False),
    ("if args.use_amp and torch.cuda.is_available():", "python train.py", True),
    ("if torch.cuda.is_available():", "python train.py", False),  # a device check: the GPU host takes it
    ("if USE_FP16:", "python train.py", True),                    # a constant that is False: never runs
    ("if scaler_enabled(x):", "python train.py", False),          # undecidable: silent
])
def test_autocast_behind_a_flag_is_on_only_where_the_flag_is(guard, launch, fires):
    assert bool(_guarded(guard, launch)) is fires


@pytest.mark.parametrize("loader, severity", [("data_loader", "warning"), ("range(50)", "info")])
def test_an_epoch_loops_batch_time_meter_is_no_benchmark(loader, severity):
    files = {"main.py": EPOCH_LOOP.replace("{loader}", loader),
             "sky.yaml": "resources:\n  accelerators: V100:8\nrun: torchrun --nproc_per_node 8 main.py\n"}
    (f,) = findings(files, "AMP001")
    assert f.severity.value == severity, f.message


def test_a_device_set_only_inside_a_gpu_count_check_is_a_probe():
    src = ("import torch\nall_gpus = list(range(torch.cuda.device_count()))\nif len(all_gpus) > 0:\n"
           "    device = torch.device('cuda')\n    torch.cuda.set_device(all_gpus[0])\nelse:\n    device = torch.device('cpu')\n"
           "model = Net().to(device)\nfor x, y in loader:\n    model(x.to(device)).sum().backward()\n    opt.step()\n")
    (f,) = findings({"run_trial.py": src}, "AMP001")
    assert f.severity.value == "info"


@pytest.mark.parametrize("labels, path, metric, bench", [
    ("add_fake_labels", "s3://bucket/images", "epoch_time", True),
    ("add_labels", "s3://bucket/10G-image-data-synthetic-raw", "epoch_time", True),
    ("add_labels", "s3://bucket/images", "throughput", True),
    ("add_labels", "s3://bucket/images", "epoch_time", False),
])
def test_a_run_that_calls_its_data_fake_or_times_throughput_is_a_benchmark(labels, path, metric, bench):
    src = RAY_BENCH.replace("{labels}", labels).replace("{path}", path).replace("{metric}", metric)
    files = {"resnet_job.py": src, "sky.yaml": "resources:\n  accelerators: A10G:4\nrun: python resnet_job.py\n"}
    (f,) = findings(files, "AMP001")
    assert ("a benchmark" in f.message) is bench, f.message


def test_a_gans_fake_images_are_no_benchmark():
    src = ("import torch\nfrom torch.utils.data import DataLoader\nG, D = Gen().cuda(), Disc().cuda()\n"
           "for real, _ in DataLoader(faces, batch_size=64, num_workers=8, pin_memory=True):\n    z = torch.randn(64, 100).cuda()\n"
           "    fake_images = G(z)\n    fake_labels = torch.zeros(64).cuda()\n    loss = bce(D(fake_images), fake_labels)\n"
           "    loss.backward()\n    opt.step()\n")
    (f,) = findings({"train_gan.py": src, "sky.yaml": "resources:\n  accelerators: A10G:1\nrun: python train_gan.py\n"}, "AMP001")
    assert "a benchmark" not in f.message


@pytest.mark.parametrize("save", [
    'torch.save({"model": deepcopy(model).half(), "epoch": e}, "last.pt")',
    'ckpt = {"model": deepcopy(model).half(), "epoch": e}\n    torch.save(ckpt, "last.pt")',
])
def test_a_16_bit_copy_written_to_a_checkpoint_is_no_model_cast(save):
    src = ("import torch\nfrom copy import deepcopy\nmodel = Net().cuda()\nfor e in range(3):\n    for x in loader:\n"
           "        model(x.cuda()).sum().backward()\n        opt.step()\n    " + save + "\n")
    files = {"train.py": src, "sky.yaml": "resources:\n  accelerators: A100:1\nrun: python train.py\n"}
    assert [f.code for f in findings(files, "AMP001")] == ["AMP001"]


@pytest.mark.parametrize("dtype, fires", [("torch.bfloat16", False), ("torch.float16", False), ("torch.float32", True)])
def test_a_half_dtype_handed_to_the_repositorys_model_loader_is_a_16_bit_model(dtype, fires):
    files = {"train.py": PARAM_DTYPE_BF16.format(dtype=dtype), "finetune/__init__.py": "", "finetune/wrapped_model.py": WRAPPED,
             "run.sbatch": SBATCH}
    assert bool(findings(files, "AMP001")) is fires


@pytest.mark.parametrize("doc, budget, bound, severity", [
    ("", "training_steps = 100000", "training_steps", "warning"),
    ('"""This script demonstrates how to train a policy with the library."""\n', "training_steps = 5000",
     "training_steps", "info"),
    ("", "training_steps = 10", "training_steps", "info"),
    ("", "num_steps = 10", "20000", "warning"),  # assigned but never read: not the loop's budget
    ('"""Train a diffusion policy on real robot data."""\n', "training_steps = 100000", "training_steps", "warning"),
])
def test_a_demo_or_a_few_step_run_is_advice(doc, budget, bound, severity):
    # a job on a named GPU sizes the spend (one GPU nothing names, for a model of unknown size, is advice anyway)
    job = GPU_JOB.replace("--gres=gpu:1", "--gres=gpu:a100:1")
    files = {"train.py": POLICY_LOOP.format(doc=doc, budget=budget, bound=bound), "job.sbatch": job}
    (amp,) = findings(files, "AMP001")
    assert amp.severity.value == severity, amp.message


def test_trainingarguments_with_a_ten_step_budget_is_a_demo():
    code = ("from transformers import Trainer, TrainingArguments\n"
            "args = TrainingArguments(output_dir='out', max_steps={n})\n"
            "Trainer(model=model, args=args, train_dataset=ds).train()\n")
    job = "#!/bin/bash\n#SBATCH --gres=gpu:a100:1\npython ft.py\n"
    short = findings({"ft.py": code.format(n=10), "job.sbatch": job}, "AMP001")
    long = findings({"ft.py": code.format(n=20000), "job.sbatch": job}, "AMP001")
    assert [f.severity.value for f in short] == ["info"] and "10-step budget" in short[0].message
    assert [f.severity.value for f in long] == ["warning"]


@pytest.mark.parametrize("manifest, root_manifest, reported", [
    ('from setuptools import setup\nsetup(name="transformers", version="4.4.2")\n', None, False),
    ('[project]\nname = "Transformers"\nversion = "4.4.2"\n', None, False),                      # pyproject, PEP 503 case
    ('from setuptools import setup\nsetup(name="lora-nlu-experiments")\n', None, True),          # the repository's own
    ('from setuptools import setup\nsetup(name="transformers")\n', 'from setuptools import setup\nsetup(name="transformers")\n', True),
])
def test_a_folder_whose_manifest_declares_a_known_library_is_vendored(manifest, root_manifest, reported):
    name = "pyproject.toml" if manifest.startswith("[project]") else "setup.py"
    files = {f"examples/NLU/{name}": manifest, "examples/NLU/examples/legacy/run_glue.py": GLUE,
             "examples/NLU/examples/legacy/job.sbatch": SBATCH_RUNS_SCRIPT.format(script="run_glue.py")}
    if root_manifest:
        files["setup.py"] = root_manifest  # the repository is that library: its examples are its own
    assert bool(findings(files, "AMP001")) is reported


# -- a notebook cell gpulint could not read may be the one that sets the precision ---------------------
@pytest.mark.parametrize("bad, fires", [
    ("model = load_model(cfg, dtype=torch.float16)\n<fill in your token>", False),  # may set it: undecided
    ("curl -X POST http://localhost:8080/generate -d '{}'", True),                      # says nothing of precision
])
def test_an_unread_cell_that_mentions_a_dtype_leaves_the_precision_undecided(bad, fires):
    nb = _nb_of_cells(_cell("import torch\nfrom lavis.models import load_model"), _cell(bad),
             _cell("model = model.cuda()\nopt = torch.optim.AdamW(model.parameters())\n"
                   "for x in loader:\n    model(x.cuda()).mean().backward()\n    opt.step()"))
    files = {"demo.ipynb": nb, "job.sbatch": "#!/bin/bash\n#SBATCH --gres=gpu:1\n#SBATCH --partition=a100\njupyter nbconvert --execute demo.ipynb\n"}
    assert bool(findings(files, "AMP001")) is fires


@pytest.mark.parametrize("data, severity", [("/workspace/data/tiny-imagenet-200", None), ("/data/imagenet", "warning")])
def test_a_toy_dataset_named_by_the_launchers_data_path_makes_a_tutorial_sized_run(data, severity):
    files = {"imagenet.py": IMAGENET, "job.sbatch": GPU_JOB.replace("train.py", f"imagenet.py --arch resnet18 {data}")}
    _amp_or_tutorial(files, "imagenet.py", severity, "tiny-imagenet-200")


@pytest.mark.parametrize("dtype, use, fires", [
    ("torch.bfloat16", 'DTYPE', False),
    ("torch.float32", 'DTYPE', True),
    ("torch.float32", 'cfg["dtype"]', False),  # the caller hands the config in: the class's code cannot say
])
def test_layers_built_with_a_16_bit_dtype_are_a_16_bit_model(dtype, use, fires):
    """``nn.Linear(..., dtype=DTYPE)``: on where the dtype is read as 16 bit, undecided where it comes from a
    config the caller passes, and AMP001 only where it is read as fp32."""
    code = ('import torch\nimport torch.nn as nn\nDTYPE = %s\n\n\n'
            'class GPT(nn.Module):\n    def __init__(self, cfg):\n        super().__init__()\n'
            '        self.emb = nn.Embedding(50257, 2048, dtype=%s)\n'
            '        self.out = nn.Linear(2048, 50257, bias=False, dtype=%s)\n\n\n'
            'model = GPT({"dtype": DTYPE}).cuda()\nopt = torch.optim.AdamW(model.parameters())\n'
            'for x, y in loader:\n    torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda()).backward()\n    opt.step()\n'
            ) % (dtype, use, use)
    assert bool(findings({"train.py": code, "job.sbatch": GPU_JOB}, "AMP001")) is fires


@pytest.mark.parametrize("args, severity", [
    ("num_inputs=2, num_outputs=2", None),       # 752 parameters: tutorial-sized, on a Slurm GPU no instance names
    ("2, 2", None),
    ("num_inputs=n_in, num_outputs=2", "info"),  # a size the file does not say: not counted, so nothing sizes the spend
])
def test_a_model_built_with_literal_arguments_is_counted_with_them(args, severity):
    files = {"ddp.py": TOY_NET.format(args=args), "job.sbatch": GPU_JOB.replace("train.py", "ddp.py")}
    _amp_or_tutorial(files, "ddp.py", severity, "0.0M-parameter model")


@pytest.mark.parametrize("context, default, launch, fires", [
    ("te.fp8_autocast()", "False", "", False),
    ("te.fp8_autocast(enabled=True)", "False", "", False),
    ("te.autocast(enabled=args.use_fp8)", "True", "python train.py", False),
    ("te.fp8_autocast(enabled=args.use_fp8)", "False", "python train.py --use-fp8", False),
    ("te.fp8_autocast(enabled=args.use_fp8)", "False", "python train.py", True),  # off unless the flag is passed
    ("te.fp8_autocast(enabled=args.use_fp8)", "False", "", False),  # nothing starts it: decided at run time
    ("te.fp8_autocast(enabled=False)", "False", "", True),
])
def test_transformer_engines_fp8_context_is_mixed_precision(context, default, launch, fires):
    files = {"train.py": TE_TRAIN.replace("CONTEXT", context).replace("DEFAULT", default)}
    if launch:
        files["run.sh"] = f"#!/bin/bash\n{launch}\n"
    assert bool(findings(files, "AMP001")) == fires


@pytest.mark.parametrize("steps, severity", [("10", "info"), ("100000", "warning")])
def test_a_few_step_budget_in_the_script_makes_a_demo_where_the_library_steps(steps, severity):
    files = {"mylib/__init__.py": "", "mylib/engine.py": PIPE_LIB, "examples/train_demo.py": PIPE_DEMO.replace("BUDGET", steps),
             "examples/run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 train_demo.py\n"}
    got = findings(files, "AMP001")
    assert [f.severity.value for f in got] == [severity], [(f.severity.value, f.message) for f in got]


@pytest.mark.parametrize("guard, env, severity", [
    ('device not in ["cpu"]', "CartPole-v0", None),  # tutorial-sized on no named instance: not reported
    ('device not in ["cpu"]', "ALE/Breakout-v5", "info"),  # the GPU only where there is one: no strong evidence
    ('device != "cpu"', "Humanoid-v4", "info"),
    ("True", "CartPole-v0", None),  # a toy environment, whatever the device
    ("True", "Humanoid-v4", "info"),  # a GPU for sure, but one nothing names, for a model of unknown size
])
def test_a_cuda_copy_guarded_by_a_not_cpu_test_is_a_probe_and_classic_control_is_a_toy(guard, env, severity):
    files = {"dqn.py": DQN.replace("GUARD", guard).replace("ENV", env)}
    got = findings(files, "AMP001")
    if severity is None:
        (wl,) = scan_files(files).workloads
        assert got == [] and "CartPole-v0" in wl["resolved"]["tutorial_sized"]
    else:
        (f,) = got
        assert f.severity.value == severity, f.message
        # a probe is weak GPU evidence; an unconditional copy is strong, and only the spend is unsized
        assert ("nothing sizes the spend" in f.message) == (guard == "True"), f.message


def test_an_autocast_whose_arguments_are_a_splat_is_undecided_not_fp16():
    src = ("import torch\n\n\ndef replay(fn, kwargs, *args):\n    with torch.autocast(**kwargs):\n        return fn(*args)\n\n\n"
           "model = torch.nn.Linear(4096, 4096).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
           "for x in batches:\n    loss = replay(model, ctx, x.cuda()).sum()\n    loss.backward()\n    opt.step()\n")
    assert findings({"train.py": src}, "AMP00") == []


@pytest.mark.parametrize("args, severity", [
    ("fast_dev_run=True", "info"),
    ("limit_train_batches=1, max_epochs=1", "info"),
    ("max_steps=50", "info"),
    ("limit_train_batches=1000, max_epochs=10", "warning"),
    ("max_epochs=90", "warning"),
])
def test_a_lightning_trainer_of_a_few_steps_is_a_demo(args, severity):
    (f,) = findings({"bug_report_model.py": BORING.replace("ARGS", args)}, "AMP001")
    assert f.severity.value == severity, f.message


@pytest.mark.parametrize("launch, fires", [("python train_fabric.py", True), ("", False)])
def test_fabric_is_named_as_fabric_and_without_a_launcher_its_precision_is_undecided(launch, fires):
    files = {"train_fabric.py": FABRIC}
    if launch:
        files["run.sh"] = f"#!/bin/bash\n{launch}\n"
    got = findings(files, "AMP001")
    assert bool(got) == fires
    for f in got:
        assert f.message.startswith("Lightning Fabric training") and "Fabric's precision is not set" in f.message, f.message


@pytest.mark.parametrize("load, fires", [(", quantization_config=bnb_config", False), ("", True)])
def test_a_quantization_config_counts_only_where_a_model_load_is_given_it(load, fires):
    files = {"finetune.py": QLORA.replace("LOAD", load), "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 1 finetune.py\n"}
    assert bool(findings(files, "AMP001")) == fires


@pytest.mark.parametrize("name, amp001", [
    ('"unsloth/llama-2-7b-bnb-4bit"', False),
    ('"TheBloke/Llama-2-7B-GPTQ"', False),
    ('"casperhansen/mistral-7b-instruct-v0.1-awq"', False),
    ('pretrained_model_name_or_path="unsloth/mistral-7b-bnb-4bit"', False),
    ('"meta-llama/Llama-2-7b-hf"', True),
])
def test_prequantized_checkpoints_are_not_fp32_training(name, amp001):
    got = codes({"train.py": HF_FINETUNE.replace("NAME", name), "run.sh": "accelerate launch train.py\n"}, "AMP001", fields=SEVERITY_AT)
    assert bool(got) is amp001


@pytest.mark.parametrize("dev, gpu", [("0", True), ("1", True), ('"cuda:0"', True), ("-1", False), ('"cpu"', False),
                                      ("True", False)])
def test_device_ordinals_are_cuda_devices(dev, gpu):
    got = codes({"train.py": ORDINAL_TRAIN.replace("DEV", dev), "run.sh": "python train.py\n"}, "AMP001", fields=SEVERITY_AT)
    assert bool(got) is gpu


@pytest.mark.parametrize("dev, severity", [("0", "warning"), ("-1", "info")])
def test_a_pipeline_on_device_0_is_code_that_takes_the_gpu(dev, severity):
    """HF Trainer alone takes a GPU only if there is one (info); a pipeline on device 0 needs one."""
    got = codes({"train.py": PIPELINE_TRAIN.replace("DEV", dev)}, "AMP001", fields=SEVERITY_AT)
    assert [s for _, s, _, _ in got] == [severity]


def test_a_trial_nothing_launches_is_not_known_to_be_on_a_gpu():
    r = scan_files({"exp/model_def.py": TRIAL.replace("AMP\n", "")})
    assert [f for f in r.findings if f.code == "AMP001"] == []


# one GPU nothing names for a model of unknown size is advice (nothing sizes the spend); several GPUs are a warning
@pytest.mark.parametrize("args, severity", [("gpus=0", None), ("gpus=None", None), ("gpus=1", "info"), ("gpus=8", "warning"),
                                            ("gpus=args.gpus", "info"), ("accelerator='gpu', devices=1", "info"),
                                            ("accelerator='gpu', devices=4", "warning"), ("accelerator='gpu', devices=-1", "warning"),
                                            ("accelerator='gpu', strategy='ddp'", "warning")])
def test_lightning_gpus_zero_trains_on_the_cpu(args, severity):
    got = codes({"train.py": LIGHTNING_GPUS.replace("ARGS", args), "run.sh": "python train.py\n"}, "AMP001", fields=SEVERITY_AT)
    assert [s for _, s, _, _ in got] == ([severity] if severity else [])


def test_the_data_path_of_the_linked_job_makes_it_tutorial_sized():
    files = {"k8s/job.yaml": PYTORCHJOB_IMAGENET.replace("DATA", "/workspace/data/tiny-imagenet-200"),
             "k8s/container-imagenet/imagenet.py": SM_RESNET_LOOP.replace("resnet50", "resnet18"),
             "k8s/container-imagenet/Dockerfile": IMAGE.replace("COPIED", "imagenet.py"), "k8s/container-debug/imagenet.py": SM_RESNET_LOOP}
    r = scan_files(files)
    assert not [f for f in r.findings if f.code == "AMP001" and f.loc.path == "k8s/container-imagenet/imagenet.py"]


def test_one_unnamed_gpu_and_a_model_of_unknown_size_is_info_and_says_why():
    f, wls = _amp({"train.py": CUSTOM_TRAIN, "net.py": "import torch\nclass Net(torch.nn.Module):\n    pass\n"})
    assert f.severity.value == "info"
    assert "nothing sizes the spend: a model of unknown size on one GPU of a kind nothing names" in f.message
    assert wls[0]["resolved"]["spend_unsized"].startswith("a model of unknown size")


@pytest.mark.parametrize("extra, why", [
    ({"run.sh": "torchrun --nproc_per_node 4 train.py\n"}, "four processes"),
    ({"run.sbatch": "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:8\nsrun python train.py\n"}, "two nodes"),
    ({"infra/main.tf": 'resource "aws_instance" "gpu" {\n  instance_type = "g5.2xlarge"\n}\n'}, "a named instance"),
    ({"train.py": DDP_TRAIN}, "data-parallel code"),
])
def test_a_named_instance_several_gpus_or_data_parallel_code_size_the_spend(extra, why):
    f, wls = _amp({"train.py": CUSTOM_TRAIN, "net.py": "class Net:\n    pass\n", **extra})
    assert f.severity.value == "warning", why
    assert all("spend_unsized" not in w["resolved"] for w in wls)


@pytest.mark.parametrize("extra", [
    {"run.sh": "torchrun --nproc_per_node $NGPUS train.py\n"},  # a count read at run time: its caller may pass 1
    {"run.sh": "deepspeed --num_gpus 1 train.py --deepspeed ds.json\n",
     "ds.json": '{"train_batch_size": 8, "zero_optimization": {"stage": 0}, "fp16": {"enabled": false}}'},  # ZeRO-0 shards nothing
])
def test_an_unresolved_process_count_or_zero_stage_0_sizes_nothing(extra):
    f, wls = _amp({"train.py": CUSTOM_TRAIN, "net.py": "class Net:\n    pass\n", **extra})
    assert f.severity.value == "info" and "nothing sizes the spend" in f.message, f.message


def test_a_known_large_model_on_one_unnamed_gpu_sizes_the_spend():
    f, wls = _amp({"train.py": FP32_TRAIN})
    assert f.severity.value == "warning" and "nothing sizes" not in f.message


def test_one_finding_for_two_workloads_takes_the_severity_of_the_sized_one():
    # one script, two experiment configs: one slot (unsized) and eight slots (a multi-GPU job)
    trial = ("import torch\nfrom determined.pytorch import PyTorchTrial\nfrom net import Net\n\n\nclass T(PyTorchTrial):\n"
             "    def __init__(self, context):\n        self.model = context.wrap_model(Net(context.get_hparam('h')))\n"
             "        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.1))\n\n"
             "    def train_batch(self, batch, epoch_idx, batch_idx):\n        loss = self.model(batch).sum()\n"
             "        self.context.backward(loss)\n        self.context.step_optimizer(self.opt)\n        return {'loss': loss}\n")
    cfg = "name: {n}\nentrypoint: model_def:T\nresources:\n  slots_per_trial: {n}\nsearcher:\n  name: single\n  metric: loss\n"
    r = scan_files({"model_def.py": trial, "net.py": "class Net:\n    pass\n",
                    "const.yaml": cfg.format(n=1), "distributed.yaml": cfg.format(n=8)})
    (f,) = [f for f in r.findings if f.code == "AMP001"]
    assert len(f.workloads) == 2 and f.severity.value == "warning", (f.workloads, f.severity, f.message)


def test_a_local_autocast_disabled_region_does_not_turn_amp_off():
    assert [c for c in codes({"rotary.py": ROTARY_LIB, "train.py": AMP_LOOP}, fields=SEVERITY_AT) if c[0] == "AMP001"] == []


@pytest.mark.parametrize("rotary", [ROTARY_LIB, ROTARY_DECORATED], ids=["with", "decorator"])
def test_a_run_without_autocast_is_reported_at_its_loop_not_at_the_local_region(rotary):
    assert "@torch.autocast" in ROTARY_DECORATED
    amp = [c for c in codes({"rotary.py": rotary, "train.py": FP32_LOOP}, fields=SEVERITY_AT) if c[0] == "AMP001"]
    assert [c[2] for c in amp] == ["train.py"]


@pytest.mark.parametrize("switch", ["enabled=use_amp", "enabled=False"])
def test_an_autocast_switch_of_the_run_stays_a_workload_fact(switch):
    # a variable is the run's switch; a literal False at the training step's own level (module code) is too
    loop = AMP_LOOP.replace('dtype=torch.float16', f'dtype=torch.float16, {switch}').replace("scaler = ", "use_amp = False\nscaler = ")
    amp = [c for c in codes({"train.py": loop}, fields=SEVERITY_AT) if c[0] == "AMP001"]
    assert [c[2] for c in amp] == ["train.py"]


# -- AMP001 against a run with TF32 on: says so, and attaches no figure measured against plain fp32 ---------
def test_amp001_with_tf32_on_states_it_and_attaches_no_figure():
    train = FP32_TRAIN.replace("import torch\n", "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n")
    (amp,) = [f for f in scan_files({"train.py": train, **P4D_INFRA}).findings if f.code == "AMP001"]
    assert "TF32 is on (train.py:2)" in amp.message
    assert amp.cost_impact.usd_per_hour is None and "TF32 is on" in amp.cost_impact.basis
    (plain,) = [f for f in scan_files({"train.py": FP32_TRAIN, **P4D_INFRA}).findings if f.code == "AMP001"]
    assert "TF32" not in plain.message and plain.cost_impact.usd_per_hour


# -- code a repository marks as retired (archived/, legacy/, retired_benchmarks/) is advice only -------------
@pytest.mark.parametrize("folder", ["retired_benchmarks/maskrcnn", "archived", "examples/legacy", "deprecated/v1"])
def test_findings_in_retired_code_are_info_and_say_why(folder):
    (amp,) = [f for f in scan_files({f"{folder}/train.py": FP32_TRAIN, **P4D_INFRA}).findings if f.code == "AMP001"]
    assert amp.severity.value == "info" and "marks it as retired" in amp.message


@pytest.mark.parametrize("folder", ["archiver", "old_models", "retirement_plans"])
def test_folders_that_only_resemble_retired_names_keep_their_severity(folder):
    (amp,) = [f for f in scan_files({f"{folder}/train.py": FP32_TRAIN, **P4D_INFRA}).findings if f.code == "AMP001"]
    assert amp.severity.value == "warning"


# -- AMP001's advice for a workload with its own CUDA kernels says how they keep their dtype -------------------
def test_amp001_guidance_names_the_workloads_own_cuda_kernels():
    train = FP32_TRAIN.replace("import torch\n", "import torch\nfrom torch.utils.cpp_extension import load\n"
                                                 "wkv = load(name='wkv', sources=['cuda/wkv_op.cpp', 'cuda/wkv_cuda.cu'])\n")
    (amp,) = [f for f in scan_files({"train.py": train, **P4D_INFRA}).findings if f.code == "AMP001"]
    assert "compiles its own CUDA kernels (train.py:3)" in amp.guidance and "cast_inputs=torch.float32" in amp.guidance
    (plain,) = [f for f in scan_files({"train.py": FP32_TRAIN, **P4D_INFRA}).findings if f.code == "AMP001"]
    assert "CUDA kernels" not in plain.guidance


def test_a_dtype_chosen_at_run_time_is_undecided_not_fp32():
    """``bfloat16 if the GPU supports it else float32`` then ``model.to(dtype)``: AMP001 stays silent and
    `gpulint workloads` says the precision is decided at run time."""
    train = ("import torch\ndtype = torch.bfloat16 if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else torch.float32\n"
             "model = Net().to('cuda').to(dtype)\n"
             "if __name__ == '__main__':\n    for x in loader:\n        model(x.cuda()).sum().backward()\n        opt.step()\n")
    result = scan_files({"train.py": train, "infra/main.tf": P4D_TORCHRUN})
    assert "AMP001" not in {f.code for f in result.findings}
    assert any("decided at run time" in u for w in result.workloads for u in w["unknown"])
    fp32 = scan_files({"train.py": train.replace("torch.bfloat16 if", "torch.float32 if"), "infra/main.tf": P4D_TORCHRUN})
    assert "AMP001" in {f.code for f in fp32.findings}


def test_flags_from_a_changed_hyperparameters_dict_are_unknown_not_defaults():
    """The notebook sets hyperparameters, then changes them in place: the script's argparse defaults
    are not what the job runs with."""
    changed = scan_files({"train.py": SM_BF16_FLAG, "launch.py": SM_LAUNCH % "hp['bf16'] = 1"})
    assert "AMP001" not in {f.code for f in changed.findings}
    assert any("decided at run time" in u for w in changed.workloads for u in w["unknown"])
    literal = scan_files({"train.py": SM_BF16_FLAG, "launch.py": SM_LAUNCH % ""})
    assert "AMP001" in {f.code for f in literal.findings}  # bf16 0 passed as written: fp32


def test_an_example_named_after_its_benchmark_is_tutorial_sized():
    """Keras MNIST read from .npy channel files names no dataset; the script's name does."""
    train = ("import numpy as np\nimport tensorflow as tf\nx = np.load('train.npy')\n"
             "model = tf.keras.Sequential([tf.keras.layers.Dense(10)])\nmodel.compile('adam', 'mse')\n"
             "if __name__ == '__main__':\n    model.fit(x, x, epochs=1)\n")
    tf = 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "p3.2xlarge"\n  user_data = "python %s"\n}\n'
    (toy,) = [f for f in scan_files({"mnist_keras.py": train, "infra/main.tf": tf % "mnist_keras.py"}).findings if f.code == "AMP001"]
    assert toy.severity.value == "info" and "MNIST (by its file name)" in toy.message
    (real,) = [f for f in scan_files({"train.py": train, "infra/main.tf": tf % "train.py"}).findings if f.code == "AMP001"]
    assert real.severity.value == "warning"


@pytest.mark.parametrize("bf16, amp001, unknown", [("True", False, False), ("hp['bf16'] > 0", False, True), ("False", True, False)])
def test_sagemaker_model_parallel_precision_reaches_the_script(bf16, amp001, unknown):
    """SMP's distribution parameters set the job's precision; a value read at run time is undecided."""
    result = scan_files({"launch.py": SMP_LAUNCH.replace("BF", bf16), "train.py": SMP_TRAIN})
    assert ("AMP001" in {f.code for f in result.findings}) is amp001
    assert any("decided at run time" in u for w in result.workloads for u in w["unknown"]) is unknown


def test_a_notebook_whose_kernel_runs_on_a_cpu_instance_trains_on_cpu():
    """SageMaker Studio records the kernel's instance in the notebook metadata: a Trainer run in the
    kernel of an ml.t3.medium notebook is CPU training."""
    assert "AMP001" not in {f.code for f in scan_files({"finetune.ipynb": _notebook("ml.t3.medium")}).findings}
    assert "AMP001" in {f.code for f in scan_files({"finetune.ipynb": _notebook("ml.g5.xlarge")}).findings}
    assert "AMP001" in {f.code for f in scan_files({"finetune.ipynb": _notebook(None)}).findings}


# -- AMP003 ----------------------------------------------------------------------------------------------


def test_fp16_beside_a_precision_decided_at_run_time_is_no_amp003():
    train = ("import argparse\nimport torch\nfrom accelerate import Accelerator\np = argparse.ArgumentParser()\n"
             "p.add_argument('--mixed_precision')\nargs = p.parse_args()\nacc = Accelerator(mixed_precision=args.mixed_precision)\n\n\n"
             "def log_validation(pipe):\n    with torch.autocast('cuda'):\n        return pipe('a prompt')\n\n\n"
             "model = Net().cuda()\nif __name__ == '__main__':\n    for x in loader:\n        acc.backward(model(x).sum())\n        opt.step()\n")
    assert codes({"train.py": train, "infra/main.tf": P4D_TORCHRUN}, "AMP003", sort=True) == []
    decided = train.replace("Accelerator(mixed_precision=args.mixed_precision)", "Accelerator(mixed_precision='fp16')")
    assert codes({"train.py": decided, "infra/main.tf": P4D_TORCHRUN}, "AMP003", sort=True) == ["AMP003"]


# -- AMP001's advice fits the GPU: bf16 on one that has it, fp16 with loss scaling on one that has not, both unknown ---
@pytest.mark.parametrize("instance, says, never", [
    ("p4d.24xlarge", ("Train in bf16:", "dtype=torch.bfloat16"), ("torch.float16", "GradScaler")),
    ("p3.2xlarge", ("Train in fp16", "GradScaler", "dtype=torch.float16"), ("bfloat16",)),
    (None, ("bf16 on an Ampere or newer GPU", "dtype=torch.bfloat16", "On a V100 or T4", "GradScaler"), ()),
])
def test_amp001_guidance_fits_the_gpu_or_says_both_when_it_is_unknown(instance, says, never):
    infra = {"infra/main.tf": P4D_INFRA["infra/main.tf"].replace("p4d.24xlarge", instance)} if instance else {}
    (amp,) = [f for f in scan_files({"train.py": FP32_TRAIN, **infra}).findings if f.code == "AMP001"]
    assert all(s in amp.guidance for s in says), amp.guidance
    assert not any(s in amp.guidance for s in never), amp.guidance


_KERAS_FIT = """\
import tensorflow as tf
from tensorflow import keras

model = keras.applications.ResNet50(weights=None, classes=1000)
model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
model.fit(train_ds, epochs=90)
"""
_JAX_STEP = """\
import jax
import optax
from flax.training import train_state

@jax.jit
def train_step(state, batch):
    grads = jax.grad(lambda p: loss_fn(state.apply_fn, p, batch))(state.params)
    return state.apply_gradients(grads=grads)

for batch in loader:
    state = train_step(state, batch)
"""
_TF = 'resource "aws_instance" "t" {{\n  ami           = "ami-1"\n  instance_type = "{instance}"\n}}\n'


@pytest.mark.parametrize("code, words", [(_KERAS_FIT, "TensorFlow runs fp32 matmuls on TF32 by default"),
                                         (_JAX_STEP, "JAX runs fp32 matmuls on TF32 by default")])
def test_amp001_on_tensorflow_or_jax_says_tf32_is_already_on_for_ampere_and_claims_no_figure(code, words):
    """TensorFlow 2.4+ and JAX run fp32 matmuls on TF32 Tensor Cores on Ampere+ without a switch: the 1.5x saving
    assumed against plain fp32 would overstate, so the finding says why and prices nothing; on a V100 it does not."""
    [f] = findings({"train.py": code, "infra/main.tf": _TF.format(instance="p4d.24xlarge")}, "AMP001")
    assert words in f.message and f.cost_impact.usd_per_hour is None and words in f.cost_impact.basis
    [v100] = findings({"train.py": code, "infra/main.tf": _TF.format(instance="p3.8xlarge")}, "AMP001")
    assert "TF32" not in v100.message


@pytest.mark.parametrize("build, fires", [
    ("AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)", False),  # transformers >= 4.56 spelling
    ("AutoModelForCausalLM.from_config(config, torch_dtype=torch.bfloat16)", False),
    ("AutoModelForCausalLM.from_pretrained('gpt2', dtype=torch.bfloat16)", False),
    ("AutoModelForCausalLM.from_config(config)", True),
    ("AutoModelForCausalLM.from_config(config, dtype=torch.float32)", True),
])
def test_a_model_built_from_its_config_in_bf16_is_a_16_bit_model(build, fires):
    """An untrained model built with ``from_config(config, dtype=torch.bfloat16)`` trains in bf16 (judged wrong 4 times
    on LambdaLabsML/distributed-training-guide, where only from_pretrained's dtype was read)."""
    train = ("import torch\nfrom transformers import AutoConfig, AutoModelForCausalLM\n\n"
             "config = AutoConfig.from_pretrained('gpt2')\n"
             f"model = {build}.cuda()\nopt = torch.optim.AdamW(model.parameters())\n"
             "for batch in loader:\n    loss = model(**batch).loss\n    loss.backward()\n    opt.step()\n")
    assert (codes({"train.py": train, "infra/main.tf": P4D_TORCHRUN}, "AMP001") == ["AMP001"]) is fires
