"""IO rules (data loading that starves the GPU): must-fire and must-not cases on small repositories, most
reproducing a class of finding judged on a real repository (tests/realworld/labels.yaml).
"""
from __future__ import annotations

import json
import posixpath
import re
import shutil

import pytest

from conftest import FIXTURES, run_cli
from gpulint.core.fixes import DEFAULT_WORKERS
from gpulint.testing import scan_files
from helpers import SEVERITY_AT, codes, findings
from samples import BIG_IMAGES, GPU_JOB, MAIN_LOOP, P4D_TORCHRUN, _cell, _nb_of_cells


# -- input pipeline: where samples are produced ------------------------------------------------------
TRAIN_LOOP = "model = Net().cuda()\n" + MAIN_LOOP


def _io001(files):
    return [f for f in scan_files(dict(files, **{"infra/main.tf": P4D_TORCHRUN})).findings if f.code == "IO001"]


IMAGES = ("import torch\nfrom PIL import Image\n\n\nclass Images(torch.utils.data.Dataset):\n"
          "    def __getitem__(self, i):\n        return load(self.paths[i])\n\n\ndef load(path):\n    return Image.open(path)\n")


# -- input pipeline: a placeholder loader ----------------------------------------------------------
PLACEHOLDER = '''\
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from accelerate import Accelerator


class Images(Dataset):
    def __getitem__(self, i):
        return Image.open(self.paths[i])


acc = Accelerator(mixed_precision="bf16")
dummy = DataLoader({dataset}, batch_size=1)
model, opt, dummy = acc.prepare(Net().cuda(), opt, dummy)
for x in DataLoader(Images(), batch_size=8, num_workers=8, pin_memory=True):
    acc.backward(model(x.cuda()).sum())
    opt.step()
'''


# -- scope: a module's __main__ block is not its importer's code ----------------------------------
EVAL_MODULE = '''\
import torch
from torch.utils.data import DataLoader


def evaluate(model, loader):
    with torch.no_grad():
        return sum(model(x.cuda()).sum().item() for x in loader)


if __name__ == "__main__":
    demo = DataLoader(load_demo_rows(), batch_size=4)
    print(evaluate(tiny_model().cuda(), demo))
'''


TRAIN_IMPORTING = '''\
import torch
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder
from evaluation import evaluate

ds = ImageFolder("/data/train")

model = Net().cuda()
opt = torch.optim.AdamW(model.parameters())
scaler = torch.cuda.amp.GradScaler()
if __name__ == "__main__":
    for x in DataLoader(ds, batch_size=8, num_workers=8, pin_memory=True):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()
    print(evaluate(model, DataLoader(val_ds, num_workers=4, pin_memory=True)))
'''


DIFFUSION_COLLATE = '''\
import torch
from datasets import load_dataset
from torch.utils.data import DataLoader
from torchvision import transforms
from accelerate import Accelerator

acc = Accelerator(mixed_precision="fp16")
augment = transforms.Compose([transforms.RandomCrop(512), transforms.ToTensor()])
ds = load_dataset("imagefolder", data_dir="data")["train"]


def preprocess(examples):
    examples["pixel_values"] = [augment(im.convert("RGB")) for im in examples["image"]]
    return examples


def collate_fn(examples):
    ids = tokenizer.pad({"input_ids": [e["input_ids"] for e in examples]}, return_tensors="pt").input_ids
    return {{key}: torch.stack([e["pixel_values"] for e in examples]), "input_ids": ids}


train = ds.with_transform(preprocess)
loader = DataLoader(train, batch_size=4, collate_fn=collate_fn)
unet, opt, loader = acc.prepare(unet, opt, loader)
for batch in loader:
    acc.backward(unet(batch["pixel_values"].cuda()).sum())
    opt.step()
'''


HELPER_DATASET = '''\
import torch
from torch.utils.data import DataLoader, TensorDataset


def gen_tensor_dataset(features):
    ids = torch.tensor([f.input_ids for f in features], dtype=torch.long)
    labels = torch.tensor([f.label for f in features], dtype=torch.long)
    return {ret}


model = Bert().cuda()
loader = DataLoader(gen_tensor_dataset(features), batch_size=32)
for ids, labels in loader:
    model(ids.cuda(), labels=labels.cuda()).loss.backward()
    opt.step()
'''


# -- a measurement script's loader is not a training loader -------------------------------------------
MEASURE = '''\
import torch
from torch.utils.data import DataLoader
from PIL import Image


class Images(torch.utils.data.Dataset):
    def __getitem__(self, i):
        return Image.open(self.paths[i]).convert("RGB")


def run(batch_size):
    loader = DataLoader(Images(), batch_size=batch_size)
    model = VLM().cuda()
    opt = torch.optim.AdamW(model.parameters())
    torch.cuda.reset_peak_memory_stats()
    for batch in loader:
        model(batch.cuda()).mean().backward()
        opt.step()
    return torch.cuda.max_memory_allocated()


if __name__ == "__main__":
    for bs in (1, 2, 4, 8):
        print(bs, run(bs))
'''


# -- batches already on the GPU: no workers, no pinning --------------------------------------------
LOADER = """\
import torch
from torch.utils.data import DataLoader, Dataset
import torchvision
from PIL import Image


class Frames(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        x = torch.tensor(list(Image.open(self.paths[i]).getdata()), dtype=torch.float32)
        return GETITEM


def collate(batch):
    return COLLATE


model = torchvision.models.resnet50().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(Frames(paths), batch_size=64, collate_fn=collate)
for x in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
"""


# -- a loader read only by loops without autograd caches, it does not feed training -----------------
CACHE = """\
import torch
import torchvision
from torch.utils.data import DataLoader
from PIL import Image
from tqdm import tqdm

vae = torchvision.models.resnet50().cuda()
model = torchvision.models.resnet50().cuda()
opt = torch.optim.AdamW(model.parameters())
cache_loader = DataLoader(ImageFolderish(root), batch_size=8)
latents = []
LOOP
for x in latents:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).sum()
    loss.backward()
    opt.step()
"""


NO_GRAD_BODY = "for batch in tqdm(cache_loader, desc='caching'):\n    with torch.no_grad():\n        latents.append(vae(batch.cuda()))\n"


NO_GRAD_OUTSIDE = "with torch.no_grad():\n    for i, batch in enumerate(cache_loader):\n        latents.append(vae(batch.cuda()))\n"


DECORATED = "@torch.no_grad()\ndef encode():\n    for batch in cache_loader:\n        latents.append(vae(batch.cuda()))\n\nencode()\n"


PARTLY = ("for batch in tqdm(cache_loader):\n    with torch.no_grad():\n        z = vae(batch.cuda())\n"
          "    loss = model(z).sum()\n    loss.backward()\n    opt.step()\n")


WITH_GRAD = "for batch in cache_loader:\n    latents.append(vae(batch.cuda()))\n"


# -- an IterableDataset that does not split its stream by worker: adding workers duplicates the data -----
STREAM_TRAIN = """\
import torch, torchvision
from PIL import Image
from torch.utils.data import DataLoader, IterableDataset

class Stream(IterableDataset):
    def __iter__(self):
SHARD
        for p in self.paths:
            yield Image.open(p)

loader = DataLoader(Stream(), batch_size=8)
model = torchvision.models.resnet50().cuda()
for x in loader:
    model(x.cuda()).sum().backward()
    opt.step()
"""


EXPERIENCE_SOURCE = """\
import torch, torchvision
from torch.utils.data import DataLoader, IterableDataset

class ExperienceSource(IterableDataset):
    def __init__(self, generate):
        self.generate = generate

    def __iter__(self):
        return self.generate()

class Agent:
    def play(self):
        while True:
            yield self.env.step(self.policy(self.state))

loader = DataLoader(ExperienceSource(Agent().play), batch_size=32)
model = torchvision.models.resnet50().cuda()
for x in loader:
    model(x.cuda()).sum().backward()
    opt.step()
"""


# -- a loader built in a function of an imported module that the workload never calls -------------------
LOADERS = """\
from PIL import Image
from torch.utils.data import DataLoader, Dataset

class Images(Dataset):
    def __getitem__(self, i):
        return Image.open(self.paths[i])

def prior_splits(paths):
    return DataLoader(Images(), batch_size=8)

def decoder_loader(paths):
    return DataLoader(Images(), batch_size=8, num_workers=8, pin_memory=True)
"""


PKG_TRAIN = """\
import torch, torchvision
from pkg import decoder_loader, prior_splits
loader = CALL
model = torchvision.models.resnet50().cuda()
for x in loader:
    model(x.cuda()).sum().backward()
    opt.step()
"""


CUDA_MAIN_LOOP = "model = model.cuda()\nif __name__ == '__main__':\n    for x in loader:\n        model(x.cuda()).sum().backward()\n        opt.step()\n"


# -- IO001 -----------------------------------------------------------------------------------------------


# -- loaders, compute --------------------------------------------------------------------------------
def test_a_prompt_loader_for_generating_samples_is_not_a_training_loader():
    train = ("import torch\nfrom torch.utils.data import DataLoader\nfrom PIL import Image\n"
             "sample_dataloader = DataLoader(PromptDataset(prompt, 100), batch_size=4)\n"
             "for example in sample_dataloader:\n    images = pipeline(example['prompt']).images\n"
             "model = Net().cuda()\n" + MAIN_LOOP)
    assert codes({"train.py": train, "infra/main.tf": P4D_TORCHRUN}, "IO", sort=True) == []


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
    assert [f.code for f in scan_files({"train.py": train, "infra/main.tf": P4D_TORCHRUN}).findings if f.code.startswith("IO")] == []


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


def test_the_finding_cites_a_decode_in_the_sample_path_before_a_transform():
    data = ("import torch\nfrom PIL import Image\nfrom torchvision import transforms\n\n\nclass Images(torch.utils.data.Dataset):\n"
            "    def __init__(self, paths):\n        self.crop = transforms.RandomCrop(512)\n        self.paths = paths\n\n"
            "    def __getitem__(self, i):\n        return self.crop(Image.open(self.paths[i]))\n")
    train = "import torch\nfrom data import Images\nloader = torch.utils.data.DataLoader(Images(p), batch_size=8, pin_memory=True)\n" + TRAIN_LOOP
    (f,) = _io001({"train.py": train, "data.py": data})
    assert "PIL.Image.open at data.py:12" in f.message


@pytest.mark.parametrize("dataset, fires", [
    ("[0 for _ in range(20)]", False), ("list(range(20))", False), ("range(20)", False), ("(1, 2, 3)", False),
    ("Images()", True),
])
def test_a_loader_over_a_literal_list_has_nothing_for_workers_to_do(dataset, fires):
    files = {"train.py": PLACEHOLDER.replace("{dataset}", dataset),
             "sky.yaml": "resources:\n  accelerators: A100:8\nrun: accelerate launch train.py\n"}
    assert bool([f for f in findings(files, "IO00") if f.loc.line == 13]) is fires


@pytest.mark.parametrize("key, fires", [('"pixel_values"', True), ('"labels"', False)])
def test_a_collate_that_pads_captions_and_stacks_images_is_no_text_collate(key, fires):
    src = DIFFUSION_COLLATE.replace("{key}", key)
    if not fires:  # a text dataset: the collate pads ids and stacks labels
        src = src.replace('torch.stack([e["pixel_values"] for e in examples])', '[e["labels"] for e in examples]').replace(
            "ds.with_transform(preprocess)", "load_dataset('json', data_files='rows.json')['train']")
    files = {"train.py": src, "sky.yaml": "resources:\n  accelerators: A10G:1\nrun: accelerate launch train.py\n"}
    assert bool([f for f in findings(files, "IO001") if f.loc.line == 23]) is fires


@pytest.mark.parametrize("ret, fires", [("TensorDataset(ids, labels)", False), ("ImageFolder(root)", True)])
def test_a_dataset_a_helper_returns_is_read_through_the_helper(ret, fires):
    src = HELPER_DATASET.replace("{ret}", ret)
    if fires:
        src = src.replace("import torch\n", "import torch\nfrom torchvision.datasets import ImageFolder\n")
    files = {"train.py": src, "sky.yaml": "resources:\n  accelerators: V100:1\nrun: python train.py\n"}
    assert bool(findings(files, "IO00")) is fires


@pytest.mark.parametrize("model, severity", [("black-forest-labs/FLUX.1-dev", "info"), ("runwayml/stable-diffusion-v1-5", "warning")])
def test_decoding_beside_a_billion_parameter_step_is_advice(model, severity):
    files = {"train.py": BIG_IMAGES, "run.sh": f"accelerate launch train.py --pretrained_model_name_or_path {model}\n",
             "sky.yaml": "resources:\n  accelerators: A100-80GB:1\nrun: bash run.sh\n"}
    io = findings(files, "IO00")
    assert [f.severity.value for f in io if f.code == "IO001"] == [severity], [f.message for f in io]
    assert not [f for f in io if f.code == "IO002"] or severity == "warning"


@pytest.mark.parametrize("name, reported", [("eval/measure_vram.py", False), ("profile_step.py", False), ("train.py", True)])
def test_io_advice_skips_a_measurement_script(name, reported):
    files = {name: MEASURE, "job.sbatch": GPU_JOB.replace("train.py", posixpath.basename(name))}
    assert bool(findings(files, "IO")) is reported


@pytest.mark.parametrize("dataset, reported", [("MockVLMDataset(size=1000)", False), ("_RandomTokenDataset(n=64)", False),
                                               ("ImageFolder(root)", True)])
def test_a_loader_over_a_dataset_named_for_made_up_samples_gets_no_io_advice(dataset, reported):
    code = ("import torch\nfrom torch.utils.data import DataLoader\nfrom torchvision.datasets import ImageFolder\nfrom data import *\n"
            f"loader = DataLoader({dataset}, batch_size=8)\n"
            "model = Net().cuda()\nopt = torch.optim.AdamW(model.parameters())\n"
            "for x in loader:\n    model(x.cuda()).mean().backward()\n    opt.step()\n")
    assert bool(findings({"train.py": code, "job.sbatch": GPU_JOB}, "IO001")) is reported


@pytest.mark.parametrize("collate, reported", [
    ("partial(collate_batch, device=device)", False),
    ("collate_batch", False),            # the file's collate moves the batch to the device itself
    ("pad_only", True),
])
def test_a_collate_function_that_builds_batches_on_the_gpu_gets_no_io_advice(collate, reported):
    code = ("import torch\nfrom functools import partial\nfrom torch.utils.data import DataLoader\n"
            "from torchvision.datasets import ImageFolder\n\n\n"
            "def collate_batch(batch, device='cuda'):\n    x = torch.stack(batch)\n    return x.to(device)\n\n\n"
            "def pad_only(batch):\n    return torch.nn.utils.rnn.pad_sequence(batch)\n\n\n"
            "device = torch.device('cuda')\n"
            f"loader = DataLoader(ImageFolder(root), batch_size=8, collate_fn={collate})\n"
            "model = Net().to(device)\nopt = torch.optim.AdamW(model.parameters())\n"
            "for x in loader:\n    model(x).mean().backward()\n    opt.step()\n")
    assert bool(findings({"train.py": code, "job.sbatch": GPU_JOB}, "IO")) is reported


@pytest.mark.parametrize("use, reported", [
    ("batch = next(iter(train_dl))\nprint({k: v.shape for k, v in batch.items()})", False),  # a look at one batch
    ("for batch in train_dl:\n    model(**batch).loss.backward()\n    opt.step()", True),
])
def test_a_loader_that_is_only_peeked_into_is_not_the_training_loader(use, reported):
    nb = _nb_of_cells(_cell("import torch\nfrom torch.utils.data import DataLoader\nfrom torchvision.datasets import ImageFolder\n"
                   "from transformers import Trainer, TrainingArguments"),
             _cell("train_dl = DataLoader(ImageFolder(root), collate_fn=collate, batch_size=4)"), _cell(use),
             _cell("model = Vit().cuda()\nopt = torch.optim.AdamW(model.parameters())\n"
                   "Trainer(model=model, args=TrainingArguments('out', dataloader_num_workers=4), train_dataset=ds).train()"))
    assert bool(findings({"vit.ipynb": nb, "job.sbatch": GPU_JOB.replace("python train.py", "jupyter nbconvert --execute vit.ipynb")},
                         "IO")) is reported


def test_a_loop_that_breaks_at_its_first_batch_only_peeks():
    nb = _nb_of_cells(_cell("import torch\nfrom torch.utils.data import DataLoader"),
             _cell("train_dl = DataLoader(ImageRows(root), batch_size=4)"),
             _cell("for batch in train_dl:\n    print(batch.shape)\n    break"),
             _cell("model = Vit().cuda()\nopt = torch.optim.AdamW(model.parameters())\n"
                   "for x in other_loader:\n    model(x.cuda()).mean().backward()\n    opt.step()"))
    job = GPU_JOB.replace("python train.py", "jupyter nbconvert --execute vit.ipynb")
    assert findings({"vit.ipynb": nb, "job.sbatch": job}, "IO") == []


@pytest.mark.parametrize("getitem, collate, advised", [
    ("x", "torch.stack(batch)", True),
    ("x.cuda()", "torch.stack(batch)", False),
    ("x.to('cuda')", "torch.stack(batch)", False),
    ("x", "torch.stack(batch).to(device)", False),
    ("x", "torch.stack(batch).to(memory_format=torch.contiguous_format).float()", True),
    ("x", "torch.stack(batch).to(torch.float16)", True),
    ("x.to(dtype=torch.float16)", "torch.stack(batch)", True),
])
def test_a_dataset_or_collate_that_hands_out_cuda_tensors_gets_no_worker_or_pinning_advice(getitem, collate, advised):
    got = findings({"train.py": LOADER.replace("GETITEM", getitem).replace("COLLATE", collate)}, "IO00")
    assert bool(got) == advised, [f.message for f in got]


@pytest.mark.parametrize("loop, advised", [
    (NO_GRAD_BODY, False), (NO_GRAD_OUTSIDE, False), (DECORATED, False), (PARTLY, True), (WITH_GRAD, True),
])
def test_a_loader_read_only_without_autograd_gets_no_training_loader_advice(loop, advised):
    src = CACHE.replace("LOOP", loop).replace("ImageFolderish(root)", "torchvision.datasets.ImageFolder(root)")
    got = findings({"train.py": src}, "IO00")
    assert bool(got) == advised, [f.message for f in got]


@pytest.mark.parametrize("files, io001", [
    ({"train.py": STREAM_TRAIN.replace("SHARD\n", "")}, False),
    ({"train.py": STREAM_TRAIN.replace("SHARD", "        info = torch.utils.data.get_worker_info()")}, True),
    ({"train.py": EXPERIENCE_SOURCE}, False),
])
def test_io001_is_silent_for_iterable_datasets_that_do_not_shard_by_worker(files, io001):
    got = codes({**files, "run.sh": "python train.py\n"}, "IO001", fields=SEVERITY_AT)
    assert bool(got) is io001
    if "Image.open" in files["train.py"]:
        assert codes({**files, "run.sh": "python train.py\n"}, "IO002", fields=SEVERITY_AT)  # pinning still applies to decoded images


@pytest.mark.parametrize("call, charged", [("decoder_loader(paths)", False), ("prior_splits(paths)", True)])
def test_a_loader_counts_only_for_workloads_that_reach_it(call, charged):
    files = {"pkg/__init__.py": "import torch\nfrom pkg.loaders import decoder_loader, prior_splits\n", "pkg/loaders.py": LOADERS,
             "train.py": PKG_TRAIN.replace("CALL", call), "run.sh": "python train.py\n"}
    got = codes(files, "IO", fields=SEVERITY_AT)
    assert (("IO001", "warning", "pkg/loaders.py", 9) in got) is charged
    assert all(line == 9 for _, _, _, line in got)  # the workers-and-pinning loader at line 12 is never charged


def test_dict_of_star_star_and_keywords_is_merged():
    files = {"train.py": (
        "import torch\nfrom torch.utils.data import DataLoader\nfrom PIL import Image\n"
        "base = dict(batch_size=64)\nkw = dict(**base, num_workers=8, pin_memory=True)\n"
        "loader = DataLoader(ds, **kw)\nmodel = model.cuda()\n"
        "if __name__ == '__main__':\n    for x in loader:\n        model(x.cuda()).sum().backward()\n        opt.step()\n"),
        "infra/main.tf": P4D_TORCHRUN}
    result = scan_files(files)
    (loader,) = [f["value"] for w in result.workloads for f in w["facts"] if f["kind"] == "dataloader"]
    assert (loader["num_workers"], loader["pin_memory"]) == (8, True)  # read through both dicts, not opaque
    assert [f.code for f in result.findings if f.code.startswith("IO")] == []


def test_io001_warns_only_where_samples_are_decoded_on_the_host():
    plain = {"train.py": "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=64, pin_memory=True)\n" + CUDA_MAIN_LOOP,
             "infra/main.tf": P4D_TORCHRUN}
    assert [f for f in scan_files(plain).findings if f.code == "IO001"] == []  # nothing decoded: a guess, not reported
    images = dict(plain, **{"data.py": "import torch\nfrom PIL import Image\n\n\nclass Images(torch.utils.data.Dataset):\n"
                                       "    def __getitem__(self, i):\n        return Image.open(self.paths[i])\n"})
    images["train.py"] = "import data\n" + images["train.py"]
    (f,) = [f for f in scan_files(images).findings if f.code == "IO001"]
    assert f.severity.value == "warning" and "PIL.Image.open at data.py:7" in f.message


def test_io001_silent_for_tokenised_rows():
    files = {"train.py": ("import torch\nfrom datasets import load_from_disk\nfrom torch.utils.data import DataLoader\n"
                          "ds = load_from_disk('tokenized')\nloader = DataLoader(ds['train'], batch_size=8, pin_memory=True)\n" + CUDA_MAIN_LOOP),
             "infra/main.tf": P4D_TORCHRUN}
    assert [f for f in scan_files(files).findings if f.code == "IO001"] == []


# -- IO002 -----------------------------------------------------------------------------------------------


def test_an_imported_modules_main_block_is_not_the_importers_code():
    files = {"train.py": TRAIN_IMPORTING, "evaluation.py": EVAL_MODULE,
             "sky.yaml": "resources:\n  accelerators: A100:1\nrun: python train.py\n"}
    assert [(f.code, f.loc.path) for f in findings(files, "IO")] == []
    # the same loader written at the module's top level runs on import: the importer's code
    top = EVAL_MODULE.replace('if __name__ == "__main__":\n    demo', 'if True:\n    demo')
    assert ("IO002", "evaluation.py") in [(f.code, f.loc.path) for f in findings({**files, "evaluation.py": top}, "IO")]


def test_io001_advice_and_fix_name_the_same_number_of_workers(tmp_path):
    """Issue 50: IO001's advice said num_workers=8 while its fix inserted 4; both now read fixes.DEFAULT_WORKERS."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "pytorch-fp32-loop", repo)
    explain = run_cli("explain", "IO001").stdout
    how = explain.split("How to fix", 1)[1].split("Cost model", 1)[0]
    assert set(re.findall(r"num_workers=(\d+)", how)) == {str(DEFAULT_WORKERS)}, how
    diff = run_cli("scan", repo, "--diff", "--unsafe-fixes", "--select", "IO001").stdout
    added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added and all(f"num_workers={DEFAULT_WORKERS})" in line for line in added), diff
    [io001] = [f for f in json.loads(run_cli("scan", repo, "--format", "json", "--select", "IO001").stdout)["findings"]]
    assert set(re.findall(r"num_workers=(\d+)", io001["guidance"])) == {str(DEFAULT_WORKERS)}
