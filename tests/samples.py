"""Small repositories' texts (scripts, launchers, manifests) that tests of several families scan, written once.

Each is written for the purpose, never copied from a real repository; the tests that use one say which
pattern of a real repository it stands for.
"""
from __future__ import annotations

import json


P4D_TORCHRUN = 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "p4d.24xlarge"\n  user_data = "torchrun --nproc_per_node 8 train.py"\n}\n'


MAIN_LOOP = "if __name__ == '__main__':\n    for x in loader:\n        model(x.cuda()).sum().backward()\n        opt.step()\n"


MNIST_NET = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.drop = nn.Dropout(0.25)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)
        self.head = nn.Sequential(nn.Linear(28 * 28, 512), nn.ReLU(), nn.LSTM(512, 256, num_layers=2), nn.BatchNorm1d(256))


model = Net().cuda()
opt = torch.optim.Adam(model.parameters())
''' + MAIN_LOOP


FLAG_TRAIN = '''\
import argparse
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--model_id", type=str, default="meta-llama/Llama-2-13b-hf")
    p.add_argument("--bf16", type=bool, default=True if torch.cuda.get_device_capability()[0] == 8 else False)
    p.add_argument("--fsdp", type=str, default=None)
    return p.parse_known_args()


def training_function(args):
    model = AutoModelForCausalLM.from_pretrained(args.model_id)
    targs = TrainingArguments(output_dir="/tmp", bf16=args.bf16, fsdp=args.fsdp)
    Trainer(model=model, args=targs, train_dataset=ds).train()


def main():
    args, _ = parse()
    training_function(args)


if __name__ == "__main__":
    main()
'''


def _estimator(hp: str, model: str = "meta-llama/Llama-2-13b-hf") -> str:
    return (f"from sagemaker.huggingface import HuggingFace\nhp = {{'model_id': '{model}', {hp}}}\n"
            "HuggingFace(entry_point='train.py', instance_type='ml.p4d.24xlarge', instance_count=2, role=role,\n"
            "            hyperparameters=hp, distribution={'torch_distributed': {'enabled': True}}).fit()\n")


SERVER = '''\
import torch
from fastapi import FastAPI
from transformers import AutoModel, AutoTokenizer
app = FastAPI()
tokenizer = AutoTokenizer.from_pretrained("THUDM/chatglm3-6b", trust_remote_code=True)
model = AutoModel.from_pretrained("THUDM/chatglm3-6b"{kw}).cuda()
model.eval()


@app.post("/chat")
def chat(q: str):
    with torch.no_grad():
        return model.chat(tokenizer, q)
'''


DEPLOY = '''\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat
spec:
  replicas: 1
  selector:
    matchLabels: {app: chat}
  template:
    metadata:
      labels: {app: chat}
    spec:
      nodeSelector:
        node.kubernetes.io/instance-type: g5.xlarge
      containers:
        - name: chat
          image: chat:1
          command: ["python", "api_server.py"]
          resources:
            limits:
              nvidia.com/gpu: 1
'''


BIG_IMAGES = '''\
import argparse
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from diffusers import FluxTransformer2DModel

p = argparse.ArgumentParser()
p.add_argument("--pretrained_model_name_or_path", type=str, default=None, required=True)
args = p.parse_args()


class ClassImages(Dataset):
    def __getitem__(self, i):
        return Image.open(self.paths[i])


def main(args):
    transformer = FluxTransformer2DModel.from_pretrained(args.pretrained_model_name_or_path, subfolder="transformer").cuda()
    loader = DataLoader(ClassImages(), batch_size=1, num_workers=0)
    for x in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = transformer(x.cuda()).sum()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main(args)
'''


def _cell(source: str, language: str | None = None, section: str = "vscode", key: str = "languageId") -> dict:
    meta = {section: {key: language}} if language else {}
    return {"cell_type": "code", "metadata": meta, "outputs": [], "source": source}


def _nb_of_cells(*cells: dict) -> str:
    return json.dumps({"cells": list(cells), "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                       "nbformat": 4, "nbformat_minor": 5})


TRAIN = "import torch\nmodel = Net().cuda()\nfor x in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\n"


GPU_JOB = "#!/bin/bash\n#SBATCH --gres=gpu:1\n#SBATCH --partition=a100\npython train.py\n"


EKS_GROUP = """\
module "eks" {
  source = "terraform-aws-modules/eks/aws"
  eks_managed_node_groups = {
    gpu_training = {
      instance_types = ["p5.48xlarge"]
      min_size     = 2
      max_size     = 2
      desired_size = 2
EXTRA
    }
  }
}
"""


TGI = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm
spec:
  replicas: REPLICAS
  selector:
    matchLabels: {app: llm}
  template:
    metadata:
      labels: {app: llm}
    spec:
      nodeSelector:
        cloud.google.com/gke-accelerator: nvidia-l4
        cloud.google.com/gke-spot: "true"
      containers:
        - name: tgi
          image: ghcr.io/huggingface/text-generation-inference:2.0
          args: ["--model-id", "mistralai/Mistral-7B-Instruct-v0.2"]
          resources:
            limits:
              nvidia.com/gpu: 1
"""


HPA = """\
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: llm
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: TARGET
  minReplicas: 1
  maxReplicas: 4
"""


SM_RESNET_LOOP = """\
import torch, torchvision
model = torchvision.models.resnet50().cuda()
for x, y in loader:
    loss_fn(model(x.cuda()), y.cuda()).backward()
    opt.step()
"""


TRIAL = """\
import torch
import torchvision
from determined.pytorch import DataLoader, PyTorchTrial, PyTorchTrialContext


class ImageNetTrial(PyTorchTrial):
    def __init__(self, context: PyTorchTrialContext):
        self.context = context
        self.model = self.context.wrap_model(torchvision.models.resnet50())
        self.opt = self.context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.1))
AMP
    def build_training_data_loader(self):
        return DataLoader(self.train_set, batch_size=self.context.get_per_slot_batch_size(), num_workers=8)

    def train_batch(self, batch, epoch_idx, batch_idx):
        images, labels = batch
        loss = torch.nn.functional.cross_entropy(self.model(images), labels)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {"loss": loss}
"""


PYTORCHJOB_IMAGENET = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: imagenet
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: pytorch
              image: <your_image>
              resources:
                limits:
                  nvidia.com/gpu: 1
              command: [python, -m, torch.distributed.run, imagenet.py, --arch=resnet50, DATA]
"""


IMAGE = "FROM pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\nWORKDIR /workspace\nCOPY COPIED .\nENTRYPOINT [\"python\"]\n"


FP32_TRAIN = """\
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf").cuda()
opt = torch.optim.AdamW(model.parameters())
for batch in loader:
    model(**batch).loss.backward()
    opt.step()
"""


P4D_INFRA = {"infra/main.tf": 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "p4d.24xlarge"\n}\n'}


NB_JOB = """\
from sagemaker.pytorch import PyTorch
est = PyTorch(entry_point="compile.py", source_dir="src", instance_type="{kind}", instance_count=1,
              role=role, framework_version="2.1", py_version="py310")
est.fit()
"""

#: a multi-node DDP job done right (NCCL, bf16 autocast, a long loop): the job a placement test places on capacity
DDP_BF16_LOOP = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(4096, 4096).cuda())
opt = torch.optim.AdamW(model.parameters())
for step in range(100_000):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(torch.randn(64, 4096).cuda()).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
"""
