"""Classes of false positives found on repositories outside the tuned set (judged in
tests/realworld/labels.yaml), each reproduced in a few lines written for the purpose."""
import ast

import pytest

from gpulint.read.python.index import Evaluator, OneOf, build_index
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


# -- input pipeline: where samples are produced ------------------------------------------------------
TRAIN_LOOP = "model = Net().cuda()\n" + LOOP
IMAGES = ("import torch\nfrom PIL import Image\n\n\nclass Images(torch.utils.data.Dataset):\n"
          "    def __getitem__(self, i):\n        return load(self.paths[i])\n\n\ndef load(path):\n    return Image.open(path)\n")


def _io001(files):
    return [f for f in scan_files(dict(files, **{"infra/main.tf": P4D})).findings if f.code == "IO001"]


def test_decoding_in_a_method_the_dataset_calls_counts():
    method = ("import torch\nfrom PIL import Image\n\n\nclass Images(torch.utils.data.Dataset):\n"
              "    def __getitem__(self, i):\n        return self._load(self.paths[i])\n\n"
              "    def _load(self, path):\n        return Image.open(path)\n")
    train = "import torch\nimport data\nloader = torch.utils.data.DataLoader(data.Images(), batch_size=8, pin_memory=True)\n" + TRAIN_LOOP
    (f,) = _io001({"train.py": train, "data.py": method})
    assert f.severity.value == "warning"


def test_decoding_counts_where_a_dataset_produces_its_samples():
    train = "import torch\nimport data\nloader = torch.utils.data.DataLoader(data.Images(), batch_size=8, pin_memory=True)\n" + TRAIN_LOOP
    (f,) = _io001({"train.py": train, "data.py": IMAGES})
    assert f.severity.value == "warning" and "PIL.Image.open at data.py:11" in f.message  # through the helper __getitem__ calls
    shown = IMAGES.replace("return Image.open(path)", "return numpy.load(path)") + "\nImage.open('figure.png').show()\n"
    assert _io001({"train.py": train, "data.py": shown}) == []  # an image shown at module level decodes nothing per sample


def test_a_dataset_class_that_indexes_memory_is_a_tensor_dataset():
    data = ("import torch\n\n\nclass Pairs(torch.utils.data.Dataset):\n    def __init__(self, n):\n"
            "        self.x = torch.randn(n, 20)\n        self.y = torch.randn(n, 1)\n\n"
            "    def __getitem__(self, i):\n        return self.x[i], self.y[i]\n")
    train = "import torch\nfrom data import Pairs\nloader = torch.utils.data.DataLoader(Pairs(2048), batch_size=32, pin_memory=True)\n" + TRAIN_LOOP
    assert _io001({"train.py": train, "data.py": data}) == []
    reads = "from PIL import Image\n" + data.replace("return self.x[i], self.y[i]", "return Image.open(self.files[i])")
    assert len(_io001({"train.py": train, "data.py": reads})) == 1


@pytest.mark.parametrize("dataset", [
    "tokenized['train'].shuffle(seed=42).select(range(1000))",
    "tokenized.rename_column('label', 'labels')['train']",
    "Dataset.from_dict({'input_ids': ids}).with_format('torch')",
])
def test_token_rows_stay_token_rows_through_row_methods(dataset):
    train = ("import torch\nfrom datasets import load_dataset, Dataset\nfrom torch.utils.data import DataLoader\n"
             "raw = load_dataset('glue', 'mrpc')\ntokenized = raw.map(tokenize, batched=True)\n"
             f"loader = DataLoader({dataset}, batch_size=8, pin_memory=True)\n" + TRAIN_LOOP)
    assert _io001({"train.py": train}) == []


def test_a_collate_function_that_pads_token_ids_is_a_text_collator():
    train = ("import torch\nfrom torch.utils.data import DataLoader\n\n\ndef collate(rows):\n"
             "    return tokenizer.pad(rows, padding='longest', return_tensors='pt')\n\n\n"
             "loader = DataLoader(rows, batch_size=8, collate_fn=collate, pin_memory=True)\n" + TRAIN_LOOP)
    assert _io001({"train.py": train}) == []


@pytest.mark.parametrize("loader", ["testing_data_loader = DataLoader(ds, batch_size=8)",
                                    "loader = DataLoader(eval_dataset, batch_size=8)"])
def test_evaluation_loaders_by_name_or_dataset_are_left_alone(loader):
    train = "import torch\nfrom torch.utils.data import DataLoader\n" + loader + "\n" + TRAIN_LOOP
    assert [f.code for f in scan_files({"train.py": train, "infra/main.tf": P4D}).findings if f.code.startswith("IO")] == []


# -- severity follows the GPU evidence -----------------------------------------------------------------
HF_NOTEBOOK_CELL = ("from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments\n"
                    "model = AutoModelForSequenceClassification.from_pretrained('bert-base-uncased')\n"
                    "args = TrainingArguments(output_dir='out', num_train_epochs=3)\n"
                    "Trainer(model=model, args=args, train_dataset=train_ds).train()\n")


def test_amp001_is_advice_where_only_a_cpu_capable_framework_says_gpu():
    (f,) = [f for f in scan_files({"train.py": HF_NOTEBOOK_CELL}).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "on a GPU if there is one" in f.message
    sm = ("from sagemaker.huggingface import HuggingFace\n"
          "HuggingFace(entry_point='train.py', instance_type='ml.g5.2xlarge', role=role).fit()\n")
    (f,) = [f for f in scan_files({"train.py": HF_NOTEBOOK_CELL, "launch.py": sm}).findings if f.code == "AMP001"]
    assert f.severity.value == "warning" and "g5.2xlarge" in f.message


SPOT_SKY = "resources:\n  accelerators: A100:8\n  use_spot: true\nrun: |\n  torchrun --nproc_per_node 8 %s\n"
BENCH = ("import time\nimport torch\n\n\ndef measure(model, opt, n=15):\n    times = []\n    for _ in range(n):\n"
         "        start = time.time()\n        loss = model(torch.randn(64, 3, 224, 224).cuda()).sum()\n        loss.backward()\n"
         "        opt.step()\n        torch.cuda.synchronize()\n        times.append(time.time() - start)\n    return times\n\n\n"
         "if __name__ == '__main__':\n    measure(Net().cuda(), opt)\n")


@pytest.mark.parametrize("name, body", [("ddp_sweep.py", BENCH), ("benchmark_resnet.py", BENCH.replace("time.time()", "0"))])
def test_a_benchmark_needs_no_checkpoint_and_may_measure_fp32(name, body):
    result = scan_files({name: body, "sky.yaml": SPOT_SKY % name})
    assert not [f for f in result.findings if f.code.startswith("SPOT")]
    (f,) = [f for f in result.findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "a benchmark" in f.message
    untimed = BENCH.replace("time.time()", "0").replace("torch.cuda.synchronize()", "pass")
    reads_data = untimed.replace("import torch\n", "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\n")
    trains = scan_files({"train.py": reads_data,
                         "sky.yaml": SPOT_SKY % "train.py"})
    assert "SPOT001" in {f.code for f in trains.findings}


SKYSERVE = ("service:\n  readiness_probe: /v1/models\n  replicas: 2\n%s"
            "resources:\n  accelerators: L4:1\n%s  ports: 8000\nrun: |\n  python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B-Instruct\n")


@pytest.mark.parametrize("service, resources", [
    ("", "  any_of:\n    - use_spot: true\n    - use_spot: false\n"),
    ("  replica_policy:\n    min_replicas: 2\n    dynamic_ondemand_fallback: true\n", "  use_spot: true\n"),
    ("  replica_policy:\n    min_replicas: 2\n    base_ondemand_fallback_replicas: 1\n", "  use_spot: true\n"),
])
def test_skypilot_spot_serving_with_an_on_demand_fallback_is_fine(service, resources):
    assert codes({"serve.yaml": SKYSERVE % (service, resources)}, "COST004") == []


def test_skypilot_spot_only_serving_is_told_the_skyserve_fallback():
    (f,) = [f for f in scan_files({"serve.yaml": SKYSERVE % ("", "  use_spot: true\n")}).findings if f.code == "COST004"]
    assert "dynamic_ondemand_fallback" in f.guidance


@pytest.mark.parametrize("name, total", [("meta-llama/Llama-4-Scout-17B-16E-Instruct", 109e9), ("acme/Foo-17B-16E-chat", None),
                                         ("Qwen/Qwen3-30B-A3B", 30e9)])
def test_a_size_beside_an_expert_count_is_the_active_size(name, total):
    from gpulint.resolve.modelsize import from_name
    size = from_name(name)
    assert (size.params if size else None) == total


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


def test_a_gke_pod_is_priced_on_a_machine_that_holds_all_the_gpus_it_requests():
    (w,) = [w for w in scan_files({"k8s/tgi.yaml": GKE_TGI}).workloads if w.get("compute")]
    assert w["compute"]["instance"] == "g2-standard-24"  # 2x L4; g2-standard-4 has one
    assert "SkyPilot" not in w["compute"].get("assumed", "")


@pytest.mark.parametrize("test", ['sys.platform == "win32"', 'os.name == "nt"', 'platform.system() == "Windows"'])
def test_gloo_on_a_windows_branch_is_not_the_gpu_hosts_backend(test):
    train = ("import os, sys, platform\nimport torch\nimport torch.distributed as dist\n"
             f"if {test}:\n    dist.init_process_group('gloo')\nelse:\n    dist.init_process_group('nccl')\n"
             "model = torch.nn.parallel.DistributedDataParallel(Net().cuda())\n" + LOOP)
    assert codes({"train.py": train, "infra/main.tf": P4D}, "NET005") == []
    linux_gloo = train.replace("dist.init_process_group('nccl')", "dist.init_process_group('gloo')")
    assert codes({"train.py": linux_gloo, "infra/main.tf": P4D}, "NET005") == ["NET005"]


@pytest.mark.parametrize("load", ["from lightning.pytorch.demos import WikiText2\nds = WikiText2()",
                                  "from torch_geometric.datasets import Planetoid\nds = Planetoid('/tmp', 'Cora')",
                                  "from datasets import load_dataset\nds = load_dataset('beans')"])
def test_tutorial_datasets_make_a_workload_tutorial_sized(load):
    train = f"import torch\n{load}\nmodel = Net().cuda()\n" + LOOP
    (f,) = [f for f in scan_files({"train.py": train, "infra/main.tf": P4D}).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "tutorial-sized" in f.message


def test_fp32_left_at_the_trainers_default_says_so():
    (f,) = [f for f in scan_files({"train.py": HF_NOTEBOOK_CELL}).findings if f.code == "AMP001"]
    assert "sets neither bf16 nor fp16 (default fp32)" in f.message and "disables" not in f.message


def test_a_skyserve_service_is_priced_for_all_its_replicas():
    yaml_text = SKYSERVE.replace("accelerators: L4:1", "accelerators: A100:1") % ("", "")
    (f,) = [f for f in scan_files({"serve.yaml": yaml_text}).findings if f.code == "COST003"]
    assert "for 2 replicas" in f.message


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


def test_a_model_that_is_one_layer_is_counted():
    train = "import torch\nmodel = torch.nn.Linear(20, 1).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + LOOP
    assert _model(scan_files({"train.py": train}))["params"] == 21


def test_a_step_on_random_tensors_in_a_file_that_reads_no_data_is_a_demo():
    demo = ("import torch\nmodel = Transformer(dim=256, n_layers=2).cuda()\nopt = torch.optim.AdamW(model.parameters())\n"
            "for i in range(10):\n    tokens = torch.randint(0, 32000, (8, 256), device='cuda')\n"
            "    model(tokens).sum().backward()\n    opt.step()\n")
    (f,) = [f for f in scan_files({"train.py": demo, "infra/main.tf": P4D}).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "synthetic inputs (torch.randint)" in f.message
    real = demo.replace("import torch\n", "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\n")
    (f,) = [f for f in scan_files({"train.py": real, "infra/main.tf": P4D}).findings if f.code == "AMP001"]
    assert f.severity.value == "warning"


def test_an_image_tag_naming_a_bundled_server_does_not_make_a_cluster_a_server():
    ray = """apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: rl
spec:
  workerGroupSpecs:
  - groupName: gpu-group
    replicas: 2
    template:
      spec:
        containers:
        - name: worker
          image: example/rl-trainer:app-v0.5-vllm0.9.1-cu124
          resources:
            limits:
              nvidia.com/gpu: 8
        nodeSelector:
          cloud.google.com/gke-accelerator: nvidia-h100-80gb
          cloud.google.com/gke-spot: "true"
"""
    assert codes({"k8s/ray.yaml": ray}, "COST004") == []
    server = ray.replace("example/rl-trainer:app-v0.5-vllm0.9.1-cu124", "vllm/vllm-openai:v0.9.1")
    assert codes({"k8s/ray.yaml": server}, "COST004") == ["COST004"]


def test_a_checkpoint_load_does_not_hide_the_layers_but_a_pickled_model_does():
    resume = MNIST_NET.replace("model = Net().cuda()", "state = torch.load('snapshot.pt')\nmodel = Net().cuda()")
    assert _model(scan_files({"train.py": resume}))["params"] > 0
    pickled = MNIST_NET.replace("model = Net().cuda()", "model = torch.load('model.pt')")
    assert not any(w["resolved"].get("model") for w in scan_files({"train.py": pickled}).workloads)


def test_a_notebook_on_a_machine_nobody_names_gets_advice():
    import json as _json
    cells = ["import torch\nmodel = Net().to('cuda')\nopt = torch.optim.AdamW(model.parameters())",
             "for x in loader:\n    model(x.to('cuda')).sum().backward()\n    opt.step()"]
    nb = _json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None} for c in cells],
                      "metadata": {"kernelspec": {"name": "python3", "language": "python"}}, "nbformat": 4, "nbformat_minor": 5})
    (f,) = [f for f in scan_files({"tune.ipynb": nb}).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "kernel's machine nothing in the repository names" in f.message
    script = "import torch\nmodel = Net().to('cuda')\nopt = torch.optim.AdamW(model.parameters())\n" + LOOP
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


@pytest.mark.parametrize("layers", ["tf.keras.layers.InputLayer(input_shape=()), tf.keras.layers.Dense(10)",
                                    "tf.keras.layers.Conv2D(8, 3, strides=0, input_shape=(28, 28, 1))",
                                    "tf.keras.layers.Dense(10, input_shape=('a',))"])
def test_layer_sizes_the_arithmetic_cannot_follow_are_unknown_not_a_crash(layers):
    train = f"import tensorflow as tf\nmodel = tf.keras.Sequential([{layers}])\nmodel.compile(loss='mse')\nmodel.fit(ds)\n"
    result = scan_files({"train.py": train})
    assert not [f for f in result.findings if f.code.startswith("SYS")]
    assert not any(w["resolved"].get("model") for w in result.workloads)


def test_a_pool_whose_variable_resolves_to_a_cpu_machine_is_no_pairing_question():
    tf = ('variable "machine_type" {\n  default = "%s"\n}\n\nresource "google_container_node_pool" "pool" {\n'
          '  name    = "pool"\n  cluster = "c"\n  node_config {\n    machine_type = var.machine_type\n  }\n}\n')
    train = "import torch\nmodel = Net().cuda()\n" + LOOP
    files = {"a.py": train, "b.py": train, "infra/main.tf": tf % "e2-standard-8"}
    assert codes(files, "SYS005") == []
    assert codes(dict(files, **{"infra/main.tf": tf % "a2-highgpu-1g"}), "SYS005") == ["SYS005"]


def test_a_front_end_that_forwards_requests_serves_no_model_itself():
    pod = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: api\nspec:\n  containers:\n  - name: api\n    image: example/api:1\n"
           "    command: [python, serve.py]\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
           "  nodeSelector:\n    node.kubernetes.io/instance-type: g5.xlarge\n")
    forward = ("import torch\nimport requests\nfrom fastapi import FastAPI\napp = FastAPI()\ntorch.zeros(1).to('cuda')\n\n\n"
               "@app.post('/generate')\ndef generate(req: dict):\n    return requests.post('http://vllm:8000/v1/completions', json=req).json()\n")
    assert codes({"serve.py": forward, "k8s/pod.yaml": pod}, "INF001") == []
    loads = forward.replace("torch.zeros(1).to('cuda')", "model = torch.jit.load('model.pt').to('cuda').eval()")
    assert codes({"serve.py": loads, "k8s/pod.yaml": pod}, "INF001") == ["INF001"]


def test_a_dataset_rebound_through_row_methods_in_earlier_cells_is_still_token_rows():
    train = ("import torch\nfrom datasets import load_dataset\nfrom torch.utils.data import DataLoader\n"
             "raw = load_dataset('glue', 'mrpc')\ntokenized = raw.map(tokenize, batched=True)\n"
             "tokenized = tokenized.rename_column('label', 'labels')\ntokenized.set_format('torch')\n\n\n"
             "def create_dataloaders(bs=8):\n    return DataLoader(tokenized['train'], shuffle=True, batch_size=bs)\n\n\n"
             "loader = create_dataloaders()\n" + TRAIN_LOOP)
    assert _io001({"train.py": train}) == []


def test_a_loader_over_an_attribute_bound_to_an_in_memory_buffer_is_left_alone():
    buffer = ("import torch\n\n\nclass Buffer(torch.utils.data.Dataset):\n    def __init__(self):\n        self.items = []\n\n"
              "    def __getitem__(self, i):\n        return self.items[i]\n")
    trainer = ("import torch\nfrom torch.utils.data import DataLoader\nfrom buffer import Buffer\n\n\nclass Trainer:\n"
               "    def __init__(self):\n        self.replay_buffer = Buffer()\n        self.model = Net().cuda()\n\n"
               "    def fit(self):\n        loader = DataLoader(self.replay_buffer, batch_size=8, pin_memory=True)\n"
               "        for x in loader:\n            self.model(x.cuda()).sum().backward()\n            self.opt.step()\n\n\n"
               "if __name__ == '__main__':\n    Trainer().fit()\n")
    assert _io001({"train.py": trainer, "buffer.py": buffer}) == []


def test_a_tensor_cast_to_the_models_own_dtype_decides_nothing():
    train = ("import torch\nmodel = Net().cuda()\nif __name__ == '__main__':\n    for x in loader:\n"
             "        mask = mask.to(device='cuda', dtype=model.dtype)\n        model(x.cuda(), mask).sum().backward()\n        opt.step()\n")
    assert codes({"train.py": train, "infra/main.tf": P4D}, "AMP001") == ["AMP001"]


def test_fp16_beside_a_precision_decided_at_run_time_is_no_amp003():
    train = ("import argparse\nimport torch\nfrom accelerate import Accelerator\np = argparse.ArgumentParser()\n"
             "p.add_argument('--mixed_precision')\nargs = p.parse_args()\nacc = Accelerator(mixed_precision=args.mixed_precision)\n\n\n"
             "def log_validation(pipe):\n    with torch.autocast('cuda'):\n        return pipe('a prompt')\n\n\n"
             "model = Net().cuda()\nif __name__ == '__main__':\n    for x in loader:\n        acc.backward(model(x).sum())\n        opt.step()\n")
    assert codes({"train.py": train, "infra/main.tf": P4D}, "AMP003") == []
    decided = train.replace("Accelerator(mixed_precision=args.mixed_precision)", "Accelerator(mixed_precision='fp16')")
    assert codes({"train.py": decided, "infra/main.tf": P4D}, "AMP003") == ["AMP003"]


def test_random_transforms_applied_once_in_init_are_not_per_sample_work():
    data = ("import torch\nfrom torchvision import transforms\n\n\nclass Precomputed(torch.utils.data.Dataset):\n"
            "    def __init__(self, images):\n        crop = transforms.RandomCrop(512)\n        self.pixels = [crop(im) for im in images]\n\n"
            "    def __getitem__(self, i):\n        return self.pixels[i]\n")
    train = ("import torch\nfrom data import Precomputed\nloader = torch.utils.data.DataLoader(ds, batch_size=1, pin_memory=True)\n"
             + TRAIN_LOOP)
    assert _io001({"train.py": train, "data.py": data}) == []  # augmented once: nothing per sample
    per_item = data.replace("self.pixels = [crop(im) for im in images]", "self.crop, self.images = crop, images").replace(
        "return self.pixels[i]", "return self.crop(self.images[i])")
    (f,) = _io001({"train.py": train, "data.py": per_item})
    assert f.severity.value == "warning"


ENGINE = ("import torch\n\n\ndef train_one_epoch(model, loader, opt):\n    for x in loader:\n"
          "        model(x.cuda()).sum().backward()\n        opt.step()\n")


def test_a_script_that_calls_a_modules_training_function_is_a_workload():
    main = ("import argparse\nimport torch\nfrom engine import train_one_epoch\n\n\ndef main():\n    model = Net().cuda()\n"
            "    for epoch in range(100):\n        train_one_epoch(model, loader, opt)\n\n\nif __name__ == '__main__':\n    main()\n")
    result = scan_files({"main_pretrain.py": main, "engine.py": ENGINE, "infra/main.tf": P4D})
    (w,) = [w for w in result.workloads if w["entrypoint"] == "main_pretrain.py"]
    assert w["role"] == "training" and any("calls train_one_epoch" in r for r in w["links"])
    assert [f.code for f in result.findings if f.code == "AMP001"] == ["AMP001"]
    evaluates = main.replace("from engine import train_one_epoch", "from engine import train_one_epoch, evaluate").replace(
        "train_one_epoch(model, loader, opt)", "evaluate(model, loader)")
    assert not [w for w in scan_files({"eval.py": evaluates, "engine.py": ENGINE}).workloads if w["entrypoint"] == "eval.py"]


def test_a_script_that_runs_a_repository_trainer_class_is_a_workload():
    trainer = ("import torch\n\n\nclass Trainer:\n    def __init__(self, model):\n        self.model = model\n\n"
               "    def run(self):\n        for x in self.loader:\n            self.model(x.cuda()).sum().backward()\n            self.opt.step()\n")
    script = ("import torch\nfrom mingpt.trainer import Trainer\n\nif __name__ == '__main__':\n    t = Trainer(Net())\n    t.run()\n")
    result = scan_files({"projects/chargpt/chargpt.py": script, "mingpt/__init__.py": "", "mingpt/trainer.py": trainer})
    assert [w["role"] for w in result.workloads if w["entrypoint"] == "projects/chargpt/chargpt.py"] == ["training"]


def test_a_thin_entry_script_that_names_no_framework_is_read_when_it_imports_training():
    trainer = ("import torch\n\n\nclass Trainer:\n    def run(self):\n        for x in self.loader:\n"
               "            self.model(x.cuda()).sum().backward()\n            self.opt.step()\n")
    thin = "from trainer import task\nfrom pkg.trainer import Trainer\n\nif __name__ == '__main__':\n    Trainer().run()\n"
    result = scan_files({"experiment.py": thin, "pkg/__init__.py": "", "pkg/trainer.py": trainer})
    assert [w["role"] for w in result.workloads if w["entrypoint"] == "experiment.py"] == ["training"]
    unrelated = "import json\n\nif __name__ == '__main__':\n    print(json.dumps({}))\n"
    result = scan_files({"report.py": unrelated, "pkg/__init__.py": "", "pkg/trainer.py": trainer})
    assert not [w for w in result.workloads if w["entrypoint"] == "report.py"]


def test_a_launched_thin_script_is_read_whole_so_its_imports_link_the_training():
    engine = ENGINE.replace("def train_one_epoch(model, loader, opt):", "def train(model=None, loader=None, opt=None):")
    thin = "from mylib.engine import train\n\nif __name__ == '__main__':\n    train()\n"
    result = scan_files({"tools/train_net.py": thin, "mylib/__init__.py": "", "mylib/engine.py": engine,
                         "run.sh": "torchrun --nproc_per_node 8 tools/train_net.py\n"})
    (w,) = [w for w in result.workloads if w["entrypoint"] == "tools/train_net.py"]
    assert w["role"] == "training" and "mylib/engine.py" in w["code_files"]


def test_a_model_named_by_an_argparse_default_is_sized_by_what_the_launcher_passes():
    train = ("import argparse\nimport torch\nfrom transformers import AutoModelForCausalLM\np = argparse.ArgumentParser()\n"
             "p.add_argument('--model_name', default='meta-llama/Llama-2-7b-hf')\nargs = p.parse_args()\n"
             "model = AutoModelForCausalLM.from_pretrained(args.model_name).cuda()\n" + LOOP)
    launched = {"train.py": train, "run.sh": "torchrun --nproc_per_node 8 train.py\n"}
    assert _model(scan_files(launched))["name"] == "meta-llama/Llama-2-7b-hf"
    other = dict(launched, **{"run.sh": "torchrun --nproc_per_node 8 train.py --model_name gpt2\n"})
    assert _model(scan_files(other))["name"] == "gpt2"


def test_the_finding_cites_a_decode_in_the_sample_path_before_a_transform():
    data = ("import torch\nfrom PIL import Image\nfrom torchvision import transforms\n\n\nclass Images(torch.utils.data.Dataset):\n"
            "    def __init__(self, paths):\n        self.crop = transforms.RandomCrop(512)\n        self.paths = paths\n\n"
            "    def __getitem__(self, i):\n        return self.crop(Image.open(self.paths[i]))\n")
    train = "import torch\nfrom data import Images\nloader = torch.utils.data.DataLoader(Images(p), batch_size=8, pin_memory=True)\n" + TRAIN_LOOP
    (f,) = _io001({"train.py": train, "data.py": data})
    assert "PIL.Image.open at data.py:12" in f.message


@pytest.mark.parametrize("fetch, run", [
    ("wget https://raw.githubusercontent.com/pytorch/examples/main/imagenet/main.py -O /workspace/imagenet.py",
     "python -m torch.distributed.run /workspace/imagenet.py --arch resnet18"),
    ("git clone https://github.com/example/resnet-ddp.git", "cd resnet-ddp && torchrun --nproc_per_node 8 imagenet.py"),
])
def test_a_script_the_launcher_downloads_is_not_the_repositorys_file_of_that_name(fetch, run):
    pod = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: train\nspec:\n  containers:\n  - name: t\n    image: pytorch/pytorch\n"
           f"    command: [sh, -c]\n    args: [\"{fetch}; {run}\"]\n    resources:\n      limits:\n        nvidia.com/gpu: 8\n")
    local = "import torch\nmodel = Net().cuda()\n" + LOOP
    result = scan_files({"k8s/pod.yaml": pod, "mpijob/imagenet.py": local})
    (w,) = [w for w in result.workloads if w["entrypoint"] == "mpijob/imagenet.py"]
    assert not w["launchers"]
    plain = pod.replace(f"{fetch}; ", "")
    (w,) = [w for w in scan_files({"k8s/pod.yaml": plain, "imagenet.py": local}).workloads if w["entrypoint"] == "imagenet.py"]
    assert w["launchers"]  # control: the same launch of the repository's own file links


def test_a_notebook_is_measured_by_its_code_cells_not_its_outputs():
    import json as _json
    image = "iVBORw0KGgo" * 30_000  # ~330 KB of base64 output
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "import torch\nmodel = Net().to('cuda')",
              "outputs": [{"output_type": "display_data", "data": {"image/png": image}, "metadata": {}}]},
             {"cell_type": "code", "metadata": {}, "execution_count": 2, "outputs": [],
              "source": "for x in loader:\n    model(x.to('cuda')).sum().backward()\n    opt.step()"}]
    nb = _json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python"}}, "nbformat": 4, "nbformat_minor": 5})
    result = scan_files({"train.ipynb": nb}, config_text="max-file-size-kb = 100\n")
    assert not [f for f in result.findings if f.code == "SYS001"] and [f for f in result.findings if f.code == "AMP001"]
    big_code = nb.replace("import torch", "import torch\\n" + "x = 1\\n" * 20_000)
    (f,) = [f for f in scan_files({"train.ipynb": big_code}, config_text="max-file-size-kb = 100\n").findings if f.code == "SYS001"]
    assert "code cells larger than max-file-size-kb" in f.message


def test_an_mxnet_gluon_loop_is_not_judged_as_pytorch():
    loop = ("import mxnet as mx\nfrom mxnet import gluon\nctx = mx.gpu()\ntrainer = gluon.Trainer(net.collect_params(), 'sgd')\n"
            "for user, item, label in train_iter:\n    with mx.autograd.record():\n        loss = loss_fn(net(user, item), label)\n"
            "    loss.backward()\n    trainer.step(64)\n")
    assert codes({"train.py": loop, "infra/main.tf": P4D}, "AMP") == []
    torch_loop = "import torch\nmodel = Net().cuda()\n" + LOOP
    assert codes({"train.py": torch_loop, "infra/main.tf": P4D}, "AMP001") == ["AMP001"]


def test_a_tutorial_sized_model_on_a_big_instance_is_advice_without_the_utilisation_figure():
    launch = ("from sagemaker.pytorch import PyTorch\n"
              "PyTorch(entry_point='train.py', instance_type='ml.p3.16xlarge', instance_count=1, role=role).fit()\n")
    result = scan_files({"train.py": MNIST_NET.replace("opt = torch.optim.Adam", "opt = torch.optim.SGD"), "launch.py": launch})
    found = [f for f in result.findings if f.code == "MEM002"]
    for f in found:
        assert f.severity.value == "info" and f.cost_impact.usd_per_hour is None and "tutorial-sized" in f.message


def test_a_helm_charts_templates_that_do_not_parse_are_skipped_in_silence():
    broken = "{{- range .Values.pools }}\napiVersion: v1\nkind: ConfigMap\n  bad: indent\n{{- end }}\n"
    chart = {"charts/app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\n", "charts/app/templates/cm.yaml": broken}
    assert codes(chart, "SYS001") == []
    assert codes({"k8s/cm.yaml": broken}, "SYS001") == ["SYS001"]  # the same text outside a chart is reported


def test_random_inputs_are_no_demo_when_another_file_of_the_workload_loads_data():
    data = "import torch\nfrom torch.utils.data import DataLoader\n\n\ndef make_loader(ds):\n    return DataLoader(ds, num_workers=4, pin_memory=True)\n"
    train = ("import torch\nfrom data import make_loader\nmodel = Net().cuda()\nloader = make_loader(ds)\n"
             "for x in loader:\n    noise = torch.randn(8, 4, 64, 64, device='cuda')\n    model(x.cuda() + noise).sum().backward()\n    opt.step()\n")
    (f,) = [f for f in scan_files({"train.py": train, "data.py": data, "infra/main.tf": P4D}).findings if f.code == "AMP001"]
    assert f.severity.value == "warning" and "demo" not in f.message


def test_random_batches_from_a_generator_the_step_calls_make_a_demo():
    demo = ("import torch\n\n\nclass Trainer:\n    def get_next_batch(self):\n        for _ in range(6):\n"
            "            yield torch.randn(32, 3, 128, 128).cuda(), torch.zeros(32).long().cuda()\n\n"
            "    def train(self):\n        m = Net().cuda()\n        for inputs, labels in self.get_next_batch():\n"
            "            loss_fn(m(inputs), labels).backward()\n            opt.step()\n\n\nif __name__ == '__main__':\n    Trainer().train()\n")
    (f,) = [f for f in scan_files({"ps.py": demo, "infra/main.tf": P4D}).findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "synthetic inputs" in f.message


def test_an_absolute_container_path_matching_only_a_file_name_is_the_images_file():
    job = ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: imagenet\nspec:\n  pytorchReplicaSpecs:\n    Worker:\n"
           "      replicas: 2\n      template:\n        spec:\n          containers:\n          - name: pytorch\n"
           "            image: kubeflow/pytorch-elastic-example-imagenet:latest\n"
           "            command: [python, -m, torch.distributed.run, /workspace/examples/imagenet.py, --arch=resnet18]\n")
    local = "import torch\nmodel = Net().cuda()\n" + LOOP
    (w,) = [w for w in scan_files({"k8s/job.yaml": job, "mpijob/imagenet.py": local}).workloads if w["entrypoint"] == "mpijob/imagenet.py"]
    assert not w["launchers"]
    (w,) = [w for w in scan_files({"k8s/job.yaml": job, "examples/imagenet.py": local}).workloads if w["entrypoint"] == "examples/imagenet.py"]
    assert w["launchers"]  # the folders match: the image holds this file


def test_a_package_init_that_re_exports_a_trainer_is_not_read_past_the_gate():
    """``from .train_loop import *`` in a package __init__ that names no framework: reading it would put every
    trainer of the package (an AMPTrainer's autocast) in each workload that imports the package."""
    amp_trainer = ("import torch\n\n\nclass AMPTrainer:\n    def run_step(self):\n        with torch.autocast('cuda'):\n"
                   "            loss = self.model(self.data)\n        loss.backward()\n        self.opt.step()\n")
    script = ("import torch\nfrom lib.engine import launch\n\n\ndef do_train(model, loader, opt):\n    for x in loader:\n"
              "        model(x.cuda()).sum().backward()\n        opt.step()\n\n\nif __name__ == '__main__':\n    do_train(Net().cuda(), loader, opt)\n")
    files = {"tools/plain_train.py": script, "lib/__init__.py": "", "lib/engine/__init__.py": "from .train_loop import *\nfrom .launch import launch\n",
             "lib/engine/train_loop.py": amp_trainer, "lib/engine/launch.py": "def launch(fn):\n    return fn()\n", "infra/main.tf": P4D}
    assert codes(files, "AMP001") == ["AMP001"]


def test_a_container_path_to_a_file_beside_its_launcher_links_it():
    """SageMaker uploads source_dir (script.sh and train.py) to a channel: /opt/ml/input/data/code/train.py is the
    train.py beside the script.sh that runs it."""
    sh = "#!/bin/bash\ncd /tmp\npython3 /opt/ml/input/data/code/train_lora.py --epochs 1\n"
    local = "import torch\nmodel = Net().cuda()\n" + LOOP
    (w,) = [w for w in scan_files({"jobs/flux/scripts/script.sh": sh, "jobs/flux/scripts/train_lora.py": local}).workloads
            if w["entrypoint"] == "jobs/flux/scripts/train_lora.py"]
    assert w["launchers"]


def test_a_notebook_image_named_by_its_tag_is_a_notebook():
    sts = ("apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: lab\nspec:\n  replicas: 1\n  template:\n    spec:\n"
           "      containers:\n      - name: lab\n        image: tensorflow/tensorflow:latest-gpu-jupyter\n"
           "        resources:\n          limits:\n            nvidia.com/gpu: 1\n"
           "      nodeSelector:\n        cloud.google.com/gke-accelerator: nvidia-l4\n")
    assert codes({"k8s/lab.yaml": sts}, "COST005") == ["COST005"]


def test_a_ray_train_driver_is_not_the_only_gpu_process():
    train = ("import torch\nfrom ray.train import ScalingConfig\nfrom ray.train.torch import TorchTrainer, prepare_model\n\n\n"
             "def loop(config):\n    model = prepare_model(Net())\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n\n\n"
             "if __name__ == '__main__':\n    TorchTrainer(loop, scaling_config=ScalingConfig(num_workers=4, use_gpu=True)).fit()\n")
    sky = "resources:\n  accelerators: L4:2\nnum_nodes: 2\nrun: |\n  python train.py\n"
    assert codes({"train.py": train, "sky.yaml": sky}, "MEM004") == []
    plain = train.replace("from ray.train import ScalingConfig\nfrom ray.train.torch import TorchTrainer, prepare_model\n", "").replace(
        "prepare_model(Net())", "Net().cuda()").replace("TorchTrainer(loop, scaling_config=ScalingConfig(num_workers=4, use_gpu=True)).fit()", "loop({})")
    assert codes({"train.py": plain, "sky.yaml": sky}, "MEM004") == ["MEM004"]
