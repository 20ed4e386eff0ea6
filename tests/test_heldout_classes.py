"""Classes of false positives found on repositories outside the tuned set (judged in
tests/realworld/labels.yaml), each reproduced in a few lines written for the purpose."""
import ast

import pytest

from gpulint.pyindex import Evaluator, OneOf, build_index
from gpulint.testing import scan_files

P4D = 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "p4d.24xlarge"\n  user_data = "torchrun --nproc_per_node 8 train.py"\n}\n'
LOOP = "if __name__ == '__main__':\n    for x in loader:\n        model(x.cuda()).sum().backward()\n        opt.step()\n"


def codes(files: dict, prefix: str = "") -> list[str]:
    return sorted(f.code for f in scan_files(files).findings if f.code.startswith(prefix))


def _value_at(src: str, call_attr: str, kw: str):
    ix = build_index(ast.parse(src), src)
    call = next(c for c in ix.calls if c.attr == call_attr)
    return Evaluator(ix).value(call.kwarg(kw), call.scope)


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


def test_a_notebook_estimator_built_from_a_rebound_dict_on_cpu_choices_is_cpu():
    """Cells that rebuild ``params`` for each framework, with ``"local" if local_mode else "ml.c5.xlarge"``."""
    launch = ("from sagemaker.pytorch import PyTorch\nfrom sagemaker.sklearn import SKLearn\n"
              "if local_mode:\n    it = 'local'\nelse:\n    it = 'ml.c5.xlarge'\n"
              "params = {'entry_point': 'sk.py', 'instance_type': it}\nSKLearn(**params).fit()\n"
              "if local_mode:\n    it = 'local'\nelse:\n    it = 'ml.c5.xlarge'\n"
              "params = {'entry_point': 'train.py', 'instance_type': it}\nPyTorch(**params).fit()\n")
    train = ("import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\nmodel = Net().to(device)\n"
             "if __name__ == '__main__':\n    for x in loader:\n        model(x.to(device)).sum().backward()\n        opt.step()\n")
    assert codes({"launch.py": launch, "train.py": train}, "AMP") == []
    gpu = launch.replace("'ml.c5.xlarge'", "'ml.g5.2xlarge'")
    assert codes({"launch.py": gpu, "train.py": train}, "AMP") == ["AMP001"]


# -- precision set where gpulint had not looked ----------------------------------------------------
DS_TRAIN = ("import argparse\nimport deepspeed\nimport torch\np = argparse.ArgumentParser()\np.add_argument('--deepspeed_config')\n"
            "args = p.parse_args()\nmodel, opt, _, _ = deepspeed.initialize(model=Net(), config=args.deepspeed_config)\n"
            "for x in loader:\n    loss = model(x.cuda()).sum()\n    model.backward(loss)\n    model.step()\n")


def test_deepspeed_auto_outside_the_hf_integration_is_not_fp32():
    """``"bf16": {"enabled": "auto"}`` with a bare deepspeed.initialize: no TrainingArguments decide it."""
    files = {"train.py": DS_TRAIN, "ds_config.json": '{"bf16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": 4}',
             "run.sh": "deepspeed train.py --deepspeed_config ds_config.json\n"}
    assert codes(files, "AMP001") == []
    off = dict(files, **{"ds_config.json": '{"bf16": {"enabled": false}, "train_micro_batch_size_per_gpu": 4}'})
    assert codes(off, "AMP001") == ["AMP001"]


def test_zero_init_and_set_default_dtype_build_the_model_in_16_bit():
    for build in ("with deepspeed.zero.Init(dtype=torch.bfloat16):\n    net = Net()\n",
                  "torch.set_default_dtype(torch.bfloat16)\nnet = Net()\n"):
        train = DS_TRAIN.replace("model, opt", build + "model, opt").replace("model=Net()", "model=net")
        files = {"train.py": train, "ds_config.json": '{"train_micro_batch_size_per_gpu": 4}',
                 "run.sh": "deepspeed train.py --deepspeed_config ds_config.json\n"}
        assert codes(files, "AMP001") == [], build


def test_a_dtype_read_from_the_recipe_config_is_undecided():
    """torchtune-style recipes: ``with training.set_default_dtype(self._dtype)`` and ``.to(dtype=self._dtype)``."""
    recipe = ("import torch\nfrom recipes import training\n\n\nclass Recipe:\n    def setup(self, cfg):\n"
              "        self._dtype = training.get_dtype(cfg.dtype)\n        with training.set_default_dtype(self._dtype):\n"
              "            self.model = build(cfg).cuda()\n\n    def train(self):\n        for x in self.loader:\n"
              "            self.model(x.cuda()).sum().backward()\n            self.opt.step()\n\n\n"
              "if __name__ == '__main__':\n    Recipe().train()\n")
    assert codes({"train.py": recipe, "infra/main.tf": P4D}, "AMP001") == []
    cast = recipe.replace("with training.set_default_dtype(self._dtype):\n            self.model = build(cfg).cuda()",
                          "self.model = build(cfg).cuda().to(dtype=self._dtype)")
    assert codes({"train.py": cast, "infra/main.tf": P4D}, "AMP001") == []
    device_only = recipe.replace("with training.set_default_dtype(self._dtype):\n            self.model = build(cfg).cuda()",
                                 "self.model = build(cfg).to(self._device)")
    assert codes({"train.py": device_only, "infra/main.tf": P4D}, "AMP001") == ["AMP001"]  # a device is no dtype


def test_autocast_bound_by_functools_partial_is_autocast():
    train = ("import torch\nfrom functools import partial\nctx = partial(torch.cuda.amp.autocast, enabled=True, dtype=torch.bfloat16)\n"
             "model = Net().cuda()\nif __name__ == '__main__':\n    for x in loader:\n        with ctx():\n"
             "            loss = model(x.cuda()).sum()\n        loss.backward()\n        opt.step()\n")
    assert codes({"train.py": train, "infra/main.tf": P4D}, "AMP001") == []


def test_a_config_named_as_the_fp32_variant_is_advice():
    files = {"train.py": DS_TRAIN, "ds_config_fp32.json": '{"fp16": {"enabled": false}, "train_micro_batch_size_per_gpu": 4}',
             "run.sh": "deepspeed train.py --deepspeed_config ds_config_fp32.json\n"}
    (f,) = [f for f in scan_files(files).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "named as the fp32 variant" in f.message


def test_tensorflow_compat_v2_is_tensorflow():
    train = ("import tensorflow.compat.v2 as tf\n(x, y), _ = tf.keras.datasets.mnist.load_data()\n"
             "model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])\n"
             "model.compile(loss='sparse_categorical_crossentropy')\nmodel.fit(x, y)\n")
    result = scan_files({"train.py": train})
    assert any(f["kind"] == "dataset" and f["value"]["name"] == "mnist" for w in result.workloads for f in w["facts"])


# -- model size counted from literal layers --------------------------------------------------------
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
''' + LOOP


def _model(result):
    (w,) = [w for w in result.workloads if w["resolved"].get("model")]
    return w["resolved"]["model"]


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


def test_amp001_on_a_counted_small_model_is_advice_without_a_figure():
    (f,) = [f for f in scan_files({"train.py": MNIST_NET, "infra/main.tf": P4D}).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "tutorial-sized: a 2.9M-parameter model" in f.message
    assert f.cost_impact.usd_per_hour is None and "below the" in f.cost_impact.basis


# -- loaders, compute --------------------------------------------------------------------------------
def test_a_prompt_loader_for_generating_samples_is_not_a_training_loader():
    train = ("import torch\nfrom torch.utils.data import DataLoader\nfrom PIL import Image\n"
             "sample_dataloader = DataLoader(PromptDataset(prompt, 100), batch_size=4)\n"
             "for example in sample_dataloader:\n    images = pipeline(example['prompt']).images\n"
             "model = Net().cuda()\n" + LOOP)
    assert codes({"train.py": train, "infra/main.tf": P4D}, "IO") == []


def test_skypilot_on_kubernetes_is_not_priced_as_a_cloud_instance():
    task = "resources:\n  infra: k8s\n  accelerators: H100:8\nrun: |\n  torchrun --nproc_per_node 8 train.py\n"
    result = scan_files({"sky.yaml": task, "train.py": "import torch\nmodel = Net().cuda()\n" + LOOP})
    (w,) = [w for w in result.workloads if w.get("compute")]
    assert w["compute"].get("instance") is None and not w["compute"].get("price")
    assert "k8s" in str(w["compute"])
