"""Classes of false positives (and misses) found by the fourteenth and later held-out rounds (judged
in tests/realworld/labels.yaml), each reproduced in a few lines written for the purpose."""
import pytest

from gpulint.testing import scan_files


def codes(files: dict, prefix: str = "") -> list[tuple[str, str, str, int]]:
    return [(f.code, f.severity.value, f.loc.path, f.loc.line) for f in scan_files(files).findings
            if f.code.startswith(prefix)]


# -- a byte-identical copy of a launched script is that job, not a workload of its own -------------------
FP32_TRAIN = """\
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf").cuda()
opt = torch.optim.AdamW(model.parameters())
for batch in loader:
    model(**batch).loss.backward()
    opt.step()
"""
JOB = "#!/bin/bash\n#SBATCH --gres=gpu:8\npython job/train.py\n"


def test_a_stray_identical_copy_of_a_launched_script_is_no_workload():
    r = scan_files({"job/train.py": FP32_TRAIN, "old/train.py": FP32_TRAIN, "job/run.sbatch": JOB})
    assert sorted(w["entrypoint"] for w in r.workloads) == ["job/train.py"]
    (wl,) = r.workloads
    assert any(reason.startswith("copy: old/train.py is a byte-identical copy of job/train.py") for reason in wl["links"])
    assert {f.loc.path for f in r.findings if f.code == "AMP001"} == {"job/train.py"}


@pytest.mark.parametrize("files", [
    # the copy differs by one line: a variant of its own, which may run elsewhere
    {"job/train.py": FP32_TRAIN, "old/train.py": FP32_TRAIN + "print('done')\n", "job/run.sbatch": JOB},
    # neither copy is launched: nothing says which one is the job, both are reported
    {"a/train.py": FP32_TRAIN, "b/train.py": FP32_TRAIN},
])
def test_copies_that_differ_or_that_nothing_launches_stay_workloads(files):
    r = scan_files(files)
    assert len(r.workloads) == 2
    assert len({f.loc.path for f in r.findings if f.code == "AMP001"}) == 2


def test_an_identical_script_of_another_name_is_a_workload_of_its_own():
    r = scan_files({"job/train.py": FP32_TRAIN, "job/train_copy.py": FP32_TRAIN, "job/run.sbatch": JOB})
    assert sorted(w["entrypoint"] for w in r.workloads) == ["job/train.py", "job/train_copy.py"]


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
DDP_TRAIN = CUSTOM_TRAIN.replace("model = Net(hidden=args.hidden).cuda()",
                                 "model = torch.nn.parallel.DistributedDataParallel(Net(hidden=args.hidden).cuda())")


def _amp(files):
    r = scan_files(files)
    (f,) = [f for f in r.findings if f.code == "AMP001"]
    return f, r.workloads


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


# -- INF001 warns only where an instance type is named: a GPU count (a Determined slot) names no GPU -------
SERVE = """\
import torch
from transformers import AutoModel

model = AutoModel.from_pretrained("bert-large-uncased").cuda().eval()
with torch.no_grad():
    for batch in loader:
        out = model(**batch)
"""


@pytest.mark.parametrize("compute, severity", [
    ({"job.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: embed\nspec:\n  containers:\n  - name: c\n    image: x\n"
                  "    command: [python, embed.py]\n    resources:\n      limits:\n        nvidia.com/gpu: 2\n"}, "info"),
    ({"job.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: embed\nspec:\n  nodeSelector:\n"
                  "    node.kubernetes.io/instance-type: g5.2xlarge\n  containers:\n  - name: c\n    image: x\n"
                  "    command: [python, embed.py]\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"}, "warning"),
])
def test_fp32_inference_warns_only_on_a_named_instance(compute, severity):
    r = scan_files({"embed.py": SERVE, **compute})
    (f,) = [f for f in r.findings if f.code == "INF001"]
    assert f.severity.value == severity
    if severity == "info":
        assert "nothing names the GPU instance" in f.cost_impact.basis


# -- a SageMaker data-parallel distribution starts one process per GPU: a cheaper fit keeps several GPUs -----
SM_NOTEBOOK_DP = """\
from sagemaker.huggingface import HuggingFace
est = HuggingFace(entry_point="train.py", source_dir="scripts", instance_type="ml.p3.16xlarge", instance_count=2,
                  transformers_version="4.26", pytorch_version="1.13", py_version="py39",
                  hyperparameters={"model_name": "distilbert-base-uncased", "epochs": 1},
                  distribution={"smdistributed": {"dataparallel": {"enabled": True}}})
est.fit()
"""
SM_TRAIN = """\
import argparse
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
p = argparse.ArgumentParser()
p.add_argument("--model_name", default="distilbert-base-uncased")
args = p.parse_args()
model = AutoModelForSequenceClassification.from_pretrained(args.model_name)
Trainer(model=model, args=TrainingArguments(output_dir="out")).train()
"""


def test_a_sagemaker_data_parallel_job_counts_one_process_per_gpu():
    r = scan_files({"launch.py": SM_NOTEBOOK_DP, "scripts/train.py": SM_TRAIN})
    (launch,) = [l for w in r.workloads for l in w["launchers"]]
    assert launch["attrs"]["process_per_gpu"] is True
    (f,) = [f for f in r.findings if f.code == "MEM002"]  # a cheaper fit for a data-parallel job keeps 2+ GPUs per node
    assert "(1x " not in f.message and "fits 2 x " in f.message and "instead of 2 x p3.16xlarge" in f.message, f.message


@pytest.mark.parametrize("folder, severity", [("distributed_data_parallelism", "info"), ("ddp-example", "info"),
                                              ("text_classification", "warning")])
def test_a_multi_gpu_example_named_for_its_parallelism_gets_mem002_at_info(folder, severity):
    r = scan_files({f"{folder}/launch.py": SM_NOTEBOOK_DP, f"{folder}/scripts/train.py": SM_TRAIN})
    (f,) = [f for f in r.findings if f.code == "MEM002"]
    assert f.severity.value == severity
    assert ("is named for its parallelism: 16 GPUs look like the point of the example" in f.message) == (severity == "info")


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


def test_a_copy_with_a_launcher_of_the_twin_in_its_own_folder_is_not_called_stray():
    # sala/scripts/run.sh starts the job's copy by a path out of its folder: which namesake it meant is not
    # certain (a relative name run from another working directory links like this), so both stay workloads
    r = scan_files({"job/train.py": FP32_TRAIN, "sala/train.py": FP32_TRAIN,
                    "sala/scripts/run.sh": "python ../../job/train.py\n"})
    assert sorted(w["entrypoint"] for w in r.workloads) == ["job/train.py", "sala/train.py"]
    # a launcher beside the copy it runs links that copy: the other namesake is the stray one
    r = scan_files({"job/train.py": FP32_TRAIN, "sala/train.py": FP32_TRAIN, "sala/scripts/run.sh": "python train.py\n"})
    assert [w["entrypoint"] for w in r.workloads] == ["sala/train.py"]


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


def test_a_local_autocast_disabled_region_does_not_turn_amp_off():
    assert [c for c in codes({"rotary.py": ROTARY_LIB, "train.py": AMP_LOOP}) if c[0] == "AMP001"] == []


@pytest.mark.parametrize("rotary", [ROTARY_LIB, ROTARY_DECORATED], ids=["with", "decorator"])
def test_a_run_without_autocast_is_reported_at_its_loop_not_at_the_local_region(rotary):
    assert "@torch.autocast" in ROTARY_DECORATED
    amp = [c for c in codes({"rotary.py": rotary, "train.py": FP32_LOOP}) if c[0] == "AMP001"]
    assert [c[2] for c in amp] == ["train.py"]


@pytest.mark.parametrize("switch", ["enabled=use_amp", "enabled=False"])
def test_an_autocast_switch_of_the_run_stays_a_workload_fact(switch):
    # a variable is the run's switch; a literal False at the training step's own level (module code) is too
    loop = AMP_LOOP.replace('dtype=torch.float16', f'dtype=torch.float16, {switch}').replace("scaler = ", "use_amp = False\nscaler = ")
    amp = [c for c in codes({"train.py": loop}) if c[0] == "AMP001"]
    assert [c[2] for c in amp] == ["train.py"]


# -- DataParallel as the else of the script's own DDP branch is a fallback, not the script's parallelism ---
DP_SCRIPT = """\
import torch
model = build()
if args.distributed:
    model = torch.nn.parallel.DistributedDataParallel(model.cuda())
{other}
for x in loader:
    model(x.cuda()).sum().backward()
    opt.step()
"""
P4D = {"infra/main.tf": 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "p4d.24xlarge"\n}\n'}


def test_dataparallel_in_the_else_of_a_ddp_branch_is_not_reported():
    files = {"train.py": DP_SCRIPT.format(other="else:\n    model = torch.nn.DataParallel(model).cuda()"), **P4D}
    assert [c for c in codes(files) if c[0] == "NET006"] == []


def test_dataparallel_under_a_test_of_its_own_is_still_reported():
    files = {"train.py": DP_SCRIPT.format(other="if args.dp:\n    model = torch.nn.DataParallel(model).cuda()"), **P4D}
    assert [c[:3] for c in codes(files) if c[0] == "NET006"] == [("NET006", "warning", "train.py")]


# -- a JSON file past the size budget that nothing reads is data, skipped in silence ------------------------
def test_an_oversized_json_nothing_reads_is_skipped_quietly():
    files = {"train.py": FP32_TRAIN, "tokenizer/vocab.json": '{"rows": [' + ", ".join(['"x"'] * 800) + "]}\n",
             "notes.py": "x = (\n" + "1,\n" * 800 + ")\n"}
    sys001 = sorted(f.loc.path for f in scan_files(files, config_text="max-file-size-kb = 1\n").findings if f.code == "SYS001")
    assert sys001 == ["notes.py"]  # code past the budget is still said (it may train); the vocabulary is not


# -- AMP001 against a run with TF32 on: says so, and attaches no figure measured against plain fp32 ---------
def test_amp001_with_tf32_on_states_it_and_attaches_no_figure():
    train = FP32_TRAIN.replace("import torch\n", "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n")
    (amp,) = [f for f in scan_files({"train.py": train, **P4D}).findings if f.code == "AMP001"]
    assert "TF32 is on (train.py:2)" in amp.message
    assert amp.cost_impact.usd_per_hour is None and "TF32 is on" in amp.cost_impact.basis
    (plain,) = [f for f in scan_files({"train.py": FP32_TRAIN, **P4D}).findings if f.code == "AMP001"]
    assert "TF32" not in plain.message and plain.cost_impact.usd_per_hour


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


@pytest.mark.parametrize("me", ["self", "s"])
def test_layer_sizes_read_tuple_unpacked_literals_under_any_instance_name(me):
    (wl,) = scan_files({"train.py": TINY.format(me=me)}).workloads
    assert wl["resolved"]["model"]["params"] == 11 * 64 + 64 * 11 + 11


def test_a_layer_sized_by_an_unpacked_unknown_stays_unknown():
    src = TINY.format(me="s").replace("V, C, steps = 11, 64, 1000", "V, C, steps = args.v, 64, 1000")
    (wl,) = scan_files({"train.py": src}).workloads
    assert (wl["resolved"].get("model") or {}).get("params") is None


# -- code a repository marks as retired (archived/, legacy/, retired_benchmarks/) is advice only -------------
@pytest.mark.parametrize("folder", ["retired_benchmarks/maskrcnn", "archived", "examples/legacy", "deprecated/v1"])
def test_findings_in_retired_code_are_info_and_say_why(folder):
    (amp,) = [f for f in scan_files({f"{folder}/train.py": FP32_TRAIN, **P4D}).findings if f.code == "AMP001"]
    assert amp.severity.value == "info" and "marks it as retired" in amp.message


@pytest.mark.parametrize("folder", ["archiver", "old_models", "retirement_plans"])
def test_folders_that_only_resemble_retired_names_keep_their_severity(folder):
    (amp,) = [f for f in scan_files({f"{folder}/train.py": FP32_TRAIN, **P4D}).findings if f.code == "AMP001"]
    assert amp.severity.value == "warning"


# -- the gloo group of a torch_xla code path is the TPU's, not the CUDA training's ---------------------------
XLA_UTILS = """\
import torch.distributed as dist
import torch_xla.core.xla_model as xm

def setup():
    dist.init_process_group("gloo", init_method="xla://")
    return xm.xla_device()
"""
CUDA_UTILS = """\
import torch.distributed as dist

def setup():
    dist.init_process_group("gloo")
    return "cuda"
"""
RUN = """\
import os
import torch
if os.environ.get("USE_CUDA"):
    from cuda_utils import setup
else:
    from xla_utils import setup
device = setup()
model = torch.nn.Linear(4096, 4096).to(device)
opt = torch.optim.AdamW(model.parameters())
for x in loader:
    model(x.to(device)).sum().backward()
    opt.step()
"""


def test_gloo_in_the_xla_path_is_not_net005_but_gloo_in_the_cuda_path_is():
    net = [c[2] for c in codes({"run.py": RUN, "xla_utils.py": XLA_UTILS, "cuda_utils.py": CUDA_UTILS, **P4D}) if c[0] == "NET005"]
    assert net == ["cuda_utils.py"]


# -- a script with a model_fn that a training job runs (to compile or export) does not serve around the clock --
COMPILE = """\
import torch
from transformers import AutoModelForSequenceClassification


def model_fn(model_dir):
    return AutoModelForSequenceClassification.from_pretrained(model_dir).cuda().eval()


if __name__ == "__main__":
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
    model.save_pretrained("/opt/ml/model")
"""
NB_JOB = """\
from sagemaker.pytorch import PyTorch
est = PyTorch(entry_point="compile.py", source_dir="src", instance_type="{kind}", instance_count=1,
              role=role, framework_version="2.1", py_version="py310")
est.fit()
"""


def test_cost006_is_silent_for_a_serving_script_whose_compute_is_a_training_job():
    cost = [c for c in codes({"src/compile.py": COMPILE, "run.py": NB_JOB.format(kind="ml.g5.xlarge")}) if c[0] == "COST006"]
    assert cost == []



# -- a batch job that writes a model (an adapter merge, an export) is no fp32 serving -------------------------
MERGE = """\
import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM

base = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf").cuda()
model = PeftModel.from_pretrained(base, "/opt/ml/input/data/adapter")
with torch.no_grad():
    model = model.merge_and_unload()
{tail}
"""
EST = NB_JOB.replace("compile.py", "merge.py").format(kind="ml.g5.12xlarge")


def test_inf001_is_silent_for_a_batch_job_that_writes_the_model():
    files = {"src/merge.py": MERGE.format(tail='model.save_pretrained("/opt/ml/model")'), "run.py": EST}
    assert [c for c in codes(files) if c[0] == "INF001"] == []


def test_inf001_says_runs_for_a_batch_job_that_only_generates():
    files = {"src/merge.py": MERGE.format(tail='print(model.generate(**batch))'), "run.py": EST}
    (inf,) = [f for f in scan_files(files).findings if f.code == "INF001"]
    assert "the model runs in fp32" in inf.message


# -- AMP001's advice for a workload with its own CUDA kernels says how they keep their dtype -------------------
def test_amp001_guidance_names_the_workloads_own_cuda_kernels():
    train = FP32_TRAIN.replace("import torch\n", "import torch\nfrom torch.utils.cpp_extension import load\n"
                                                 "wkv = load(name='wkv', sources=['cuda/wkv_op.cpp', 'cuda/wkv_cuda.cu'])\n")
    (amp,) = [f for f in scan_files({"train.py": train, **P4D}).findings if f.code == "AMP001"]
    assert "compiles its own CUDA kernels (train.py:3)" in amp.guidance and "cast_inputs=torch.float32" in amp.guidance
    (plain,) = [f for f in scan_files({"train.py": FP32_TRAIN, **P4D}).findings if f.code == "AMP001"]
    assert "CUDA kernels" not in plain.guidance


# -- a few-shot run on Omniglot is tutorial-sized: its gloo all-reduce is advice -----------------------------
META = """\
import learn2learn as l2l
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
device = torch.device("cuda")
tasksets = l2l.vision.benchmarks.get_tasksets("{data}", train_ways=5, train_samples=10, root="data")
model = l2l.vision.models.OmniglotFC(28 ** 2, 5).to(device)
opt = torch.optim.Adam(model.parameters())
for it in range(1000):
    x, y = tasksets.train.sample()
    torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()
    opt.step()
"""


@pytest.mark.parametrize("data, severity", [("omniglot", "info"), ("tiered-imagenet", "warning")])
def test_net005_on_an_omniglot_meta_learning_run_is_info(data, severity):
    files = {"train.py": META.format(data=data), "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 4 train.py\n"}
    assert [c[:2] for c in codes(files) if c[0] == "NET005"] == [("NET005", severity)]


# -- a custom autograd Function's backward is not the training step; a trainer's backward helper is ---------
HELPER = """\
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


def test_a_trainers_backward_helper_is_still_its_training_step():
    (wl,) = scan_files({"train.py": HELPER}).workloads
    assert wl["resolved"]["role_reason"] == "loop at train.py:10"
