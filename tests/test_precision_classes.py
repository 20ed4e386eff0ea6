"""Classes of false positives found by reading findings on real repositories (tests/realworld/labels.yaml),
each reproduced here in a few lines written for the purpose."""
import ast

import pytest

from gpulint.read.python.index import Evaluator, build_index
from gpulint.testing import scan_files

P4D = 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "p4d.24xlarge"\n  user_data = "torchrun --nproc_per_node 8 train.py"\n}\n'


def _value_passed(src: str):
    ix = build_index(ast.parse(src), src)
    call = next(c for c in ix.calls if c.attr == "submit")
    return Evaluator(ix).value(call.kwarg("hyperparameters"), call.scope)


@pytest.mark.parametrize("change", ['hp["bf16"] = 1', 'hp.update({"bf16": 1})', 'hp |= {"bf16": 1}', 'hp.setdefault("bf16", 1)'])
def test_a_dict_changed_after_it_was_built_is_not_its_literal(change):
    """SageMaker jobs whose hyperparameters get bf16 added after the literal were judged fp32."""
    assert _value_passed(f'hp = {{"epochs": 3}}\n{change}\nsubmit(hyperparameters=hp)\n') is not None
    assert not isinstance(_value_passed(f'hp = {{"epochs": 3}}\n{change}\nsubmit(hyperparameters=hp)\n'), dict)


def test_an_unchanged_dict_and_another_dicts_change_keep_the_literal():
    assert _value_passed('hp = {"epochs": 3}\nsubmit(hyperparameters=hp)\n') == {"epochs": 3}
    assert _value_passed('hp = {"epochs": 3}\nother["x"] = 1\nsubmit(hyperparameters=hp)\n') == {"epochs": 3}


def test_dict_of_star_star_and_keywords_is_merged():
    files = {"train.py": (
        "import torch\nfrom torch.utils.data import DataLoader\nfrom PIL import Image\n"
        "base = dict(batch_size=64)\nkw = dict(**base, num_workers=8, pin_memory=True)\n"
        "loader = DataLoader(ds, **kw)\nmodel = model.cuda()\n"
        "if __name__ == '__main__':\n    for x in loader:\n        model(x.cuda()).sum().backward()\n        opt.step()\n"),
        "infra/main.tf": P4D}
    result = scan_files(files)
    (loader,) = [f["value"] for w in result.workloads for f in w["facts"] if f["kind"] == "dataloader"]
    assert (loader["num_workers"], loader["pin_memory"]) == (8, True)  # read through both dicts, not opaque
    assert [f.code for f in result.findings if f.code.startswith("IO")] == []


LOOP = "model = model.cuda()\nif __name__ == '__main__':\n    for x in loader:\n        model(x.cuda()).sum().backward()\n        opt.step()\n"


def test_io001_warns_only_where_samples_are_decoded_on_the_host():
    plain = {"train.py": "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=64, pin_memory=True)\n" + LOOP,
             "infra/main.tf": P4D}
    assert [f for f in scan_files(plain).findings if f.code == "IO001"] == []  # nothing decoded: a guess, not reported
    images = dict(plain, **{"data.py": "import torch\nfrom PIL import Image\n\n\nclass Images(torch.utils.data.Dataset):\n"
                                       "    def __getitem__(self, i):\n        return Image.open(self.paths[i])\n"})
    images["train.py"] = "import data\n" + images["train.py"]
    (f,) = [f for f in scan_files(images).findings if f.code == "IO001"]
    assert f.severity.value == "warning" and "PIL.Image.open at data.py:7" in f.message


def test_io001_silent_for_tokenised_rows():
    files = {"train.py": ("import torch\nfrom datasets import load_from_disk\nfrom torch.utils.data import DataLoader\n"
                          "ds = load_from_disk('tokenized')\nloader = DataLoader(ds['train'], batch_size=8, pin_memory=True)\n" + LOOP),
             "infra/main.tf": P4D}
    assert [f for f in scan_files(files).findings if f.code == "IO001"] == []


def test_inf001_needs_more_than_a_gpu_probe():
    handler = ("import torch\nfrom fastapi import FastAPI\napp = FastAPI()\n"
               "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
               "model = torch.jit.load('m.pt').to(device).eval()\n\n\n@app.post('/predict')\ndef predict(x):\n"
               "    return model(x)\n")
    assert [f for f in scan_files({"serve.py": handler}).findings if f.code == "INF001"] == []
    on_cuda = handler.replace("torch.device('cuda' if torch.cuda.is_available() else 'cpu')", "torch.device('cuda')")
    (f,) = [f for f in scan_files({"serve.py": on_cuda}).findings if f.code == "INF001"]
    assert f.severity.value == "info"  # an unknown model on an unknown GPU: advice, no figure


def test_a_dtype_chosen_at_run_time_is_undecided_not_fp32():
    """``bfloat16 if the GPU supports it else float32`` then ``model.to(dtype)``: AMP001 stays silent and
    `gpulint workloads` says the precision is decided at run time."""
    train = ("import torch\ndtype = torch.bfloat16 if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else torch.float32\n"
             "model = Net().to('cuda').to(dtype)\n"
             "if __name__ == '__main__':\n    for x in loader:\n        model(x.cuda()).sum().backward()\n        opt.step()\n")
    result = scan_files({"train.py": train, "infra/main.tf": P4D})
    assert "AMP001" not in {f.code for f in result.findings}
    assert any("decided at run time" in u for w in result.workloads for u in w["unknown"])
    fp32 = scan_files({"train.py": train.replace("torch.bfloat16 if", "torch.float32 if"), "infra/main.tf": P4D})
    assert "AMP001" in {f.code for f in fp32.findings}


SM_TRAIN = ("import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument('--bf16', type=int, default=0)\n"
            "args = p.parse_args()\nmodel = Net().cuda()\n"
            "if __name__ == '__main__':\n    for x in loader:\n        with torch.autocast('cuda', dtype=torch.bfloat16, enabled=args.bf16):\n"
            "            loss = model(x.cuda()).sum()\n        loss.backward()\n        opt.step()\n")
SM_LAUNCH = ("from sagemaker.pytorch import PyTorch\nhp = {'bf16': 0, 'epochs': 1}\n%s\n"
             "est = PyTorch(entry_point='train.py', instance_type='ml.p4d.24xlarge', hyperparameters=hp, role=role)\nest.fit()\n")


def test_flags_from_a_changed_hyperparameters_dict_are_unknown_not_defaults():
    """The notebook sets hyperparameters, then changes them in place: the script's argparse defaults
    are not what the job runs with."""
    changed = scan_files({"train.py": SM_TRAIN, "launch.py": SM_LAUNCH % "hp['bf16'] = 1"})
    assert "AMP001" not in {f.code for f in changed.findings}
    assert any("decided at run time" in u for w in changed.workloads for u in w["unknown"])
    literal = scan_files({"train.py": SM_TRAIN, "launch.py": SM_LAUNCH % ""})
    assert "AMP001" in {f.code for f in literal.findings}  # bf16 0 passed as written: fp32


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


@pytest.mark.parametrize("folder", ["third_party", "dependencies", "deps", "submodules", "vendor"])
def test_copies_of_other_projects_are_context_not_workloads(folder):
    from gpulint.link.scope import Scope

    assert Scope().outside(f"inference/{folder}/AutoGPTQ/examples/peft_lora.py")
    assert Scope(include_vendored=True).outside(f"inference/{folder}/AutoGPTQ/examples/peft_lora.py") is None
    assert Scope().outside("inference/quantize/peft_lora.py") is None


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


@pytest.mark.parametrize("bf16, amp001, unknown", [("True", False, False), ("hp['bf16'] > 0", False, True), ("False", True, False)])
def test_sagemaker_model_parallel_precision_reaches_the_script(bf16, amp001, unknown):
    """SMP's distribution parameters set the job's precision; a value read at run time is undecided."""
    result = scan_files({"launch.py": SMP_LAUNCH.replace("BF", bf16), "train.py": SMP_TRAIN})
    assert ("AMP001" in {f.code for f in result.findings}) is amp001
    assert any("decided at run time" in u for w in result.workloads for u in w["unknown"]) is unknown


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


def test_a_notebook_whose_kernel_runs_on_a_cpu_instance_trains_on_cpu():
    """SageMaker Studio records the kernel's instance in the notebook metadata: a Trainer run in the
    kernel of an ml.t3.medium notebook is CPU training."""
    assert "AMP001" not in {f.code for f in scan_files({"finetune.ipynb": _notebook("ml.t3.medium")}).findings}
    assert "AMP001" in {f.code for f in scan_files({"finetune.ipynb": _notebook("ml.g5.xlarge")}).findings}
    assert "AMP001" in {f.code for f in scan_files({"finetune.ipynb": _notebook(None)}).findings}
