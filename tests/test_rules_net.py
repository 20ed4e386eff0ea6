"""NET001-NET004 (rules/net_fabric.py): fixture repos through the CLI, and edge cases through a real scan."""
from __future__ import annotations


import pytest

from conftest import FIXTURES, run_cli

from gpulint.testing import scan_files
from helpers import AT, AT_MESSAGE, SEVERITY_AT, cli_findings, codes, findings, rows
from samples import FLAG_TRAIN, GPU_JOB, MAIN_LOOP, P4D_INFRA, P4D_TORCHRUN, _estimator

NET = "NET001,NET002,NET003,NET004"


# -- fixtures through the CLI ----------------------------------------------------------------
def test_pytorchjob_on_p4d_without_efa_fires_per_replica_spec():
    found = cli_findings(FIXTURES / "net-pytorchjob-no-efa", NET)
    assert rows(found, AT, sort=True) == [("NET001", "k8s/pytorchjob.yaml", 25), ("NET001", "k8s/pytorchjob.yaml", 43)]
    master = next(f for f in found if f["line"] == 25)
    assert master["severity"] == "error"
    assert "Master" in master["message"] and "vpc.amazonaws.com/efa" in master["message"]
    assert "4 nodes of p4d.24xlarge" in master["message"] and "400 Gbps" in master["message"]
    cost = master["cost_impact"]
    # no invented figure, but the price it applies to, with its date and source
    assert cost["usd_per_hour"] is None
    assert "4 x p4d.24xlarge at $21.96/h" in cost["basis"] and "us-east-1" in cost["basis"]
    assert "price as of 2026-07-20" in cost["basis"] and "karpenter-provider-aws" in cost["basis"]


def test_pytorchjob_with_efa_and_documented_variables_is_silent():
    assert cli_findings(FIXTURES / "net-pytorchjob-efa", NET) == []


def test_p2p_disable_on_nvswitch_instance():
    found = cli_findings(FIXTURES / "net-p2p-disable", NET)
    assert rows(found, AT, sort=True) == [("NET002", "task.yaml", 6)]
    assert "NCCL_P2P_DISABLE=1" in found[0]["message"] and "NVSwitch" in found[0]["message"]


def test_allreduce_estimate_names_figure_and_bandwidth():
    found = cli_findings(FIXTURES / "net-allreduce-g5", NET)
    assert rows(found, AT, sort=True) == [("NET004", "train.py", 9)]
    msg = found[0]["message"]
    # 2*(16-1)/16 * 6.738e9 * 4 B / (40e9/8 * 0.8) = 12.6 s
    assert "12.6 s per step" in msg and "40 Gbps" in msg and "eta 0.8" in msg and "27.0 GB" in msg
    assert "$79.63 per 1000 steps" in found[0]["cost_impact"]["basis"]
    assert found[0]["cost_impact"]["usd_per_hour"] is None


@pytest.mark.parametrize("name", ["clean", "net-pytorchjob-efa", "spot-resilient"])
def test_other_fixtures_stay_silent(name):
    assert cli_findings(FIXTURES / name, NET) == []


def test_explain_renders_each_rule():
    for code in NET.split(","):
        proc = run_cli("explain", code)
        assert proc.returncode == 0, proc.stderr
        for section in ("Why it costs money", "How to fix", "Cost model", "Sources"):
            assert section in proc.stdout, (code, section)


# -- NET001 edge cases -----------------------------------------------------------------------
DDP = (FIXTURES / "net-p2p-disable" / "train.py").read_text()

A3_JOB = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: llama
spec:
  replicatedJobs:
    - name: workers
      replicas: 2
      template:
        spec:
          parallelism: 1
          template:
            spec:
              nodeSelector:
                node.kubernetes.io/instance-type: a3-highgpu-8g
              containers:
                - name: train
                  image: us-docker.pkg.dev/p/train:1
                  command: ["torchrun", "--nnodes", "2", "--nproc_per_node", "8", "train.py"]
{env}                  resources:
                    limits:
                      nvidia.com/gpu: 8
"""


def test_a3_on_kubernetes_without_tcpx_settings_fires():
    found = codes({"train.py": DDP, "job.yaml": A3_JOB.format(env="")}, fields=AT_MESSAGE, sort=True, select=NET)
    assert [(c, p, l) for c, p, l, _ in found] == [("NET001", "job.yaml", 15)]
    assert "GPUDirect-TCPX" in found[0][3]


def test_a3_with_tcpx_settings_is_silent():
    env = ("                  env:\n"
           "                    - name: NCCL_GPUDIRECTTCPX_SOCKET_IFNAME\n                      value: eth1,eth2,eth3,eth4\n"
           "                    - name: NCCL_GPUDIRECTTCPX_CTRL_DEV\n                      value: eth0\n"
           "                    - name: NCCL_SOCKET_IFNAME\n                      value: eth0\n")
    assert codes({"train.py": DDP, "job.yaml": A3_JOB.format(env=env)}, fields=AT_MESSAGE, sort=True, select=NET) == []


def test_efa_count_from_a_variable_is_unknown_and_silent():
    job = (FIXTURES / "net-pytorchjob-efa" / "k8s" / "pytorchjob.yaml").read_text().replace(
        "vpc.amazonaws.com/efa: 4", "vpc.amazonaws.com/efa: ${EFA_PER_NODE}")
    assert [c for c in codes({"train.py": DDP, "k8s/pytorchjob.yaml": job}, fields=AT_MESSAGE, sort=True, select=NET) if c[0] == "NET001"] == []


def test_efa_resource_on_an_instance_without_efa_is_silent():
    job = (FIXTURES / "net-pytorchjob-no-efa" / "k8s" / "pytorchjob.yaml").read_text().replace("p4d.24xlarge", "p3.16xlarge")
    assert codes({"train.py": DDP, "k8s/pytorchjob.yaml": job}, fields=AT_MESSAGE, sort=True, select="NET001") == []


def test_unknown_instance_gives_no_net_finding():
    job = (FIXTURES / "net-pytorchjob-no-efa" / "k8s" / "pytorchjob.yaml").read_text().replace("p4d.24xlarge", "p9z.96xlarge")
    assert codes({"train.py": DDP, "k8s/pytorchjob.yaml": job}, fields=AT_MESSAGE, sort=True, select=NET) == []


def test_terraform_asg_of_p4d_without_efa_interfaces_fires():
    tf = """\
resource "aws_launch_template" "gpu" {
  name_prefix   = "trainer-"
  image_id      = "ami-0123456789abcdef0"
  instance_type = "p4d.24xlarge"
}

resource "aws_autoscaling_group" "trainers" {
  desired_capacity = 4
  min_size         = 0
  max_size         = 4
  launch_template {
    id      = aws_launch_template.gpu.id
    version = "$Latest"
  }
}
"""
    found = codes({"train.py": DDP, "infra/main.tf": tf}, fields=AT_MESSAGE, sort=True, select=NET)
    assert [(c, p) for c, p, _, _ in found] == [("NET001", "infra/main.tf")]


# -- NET002 edge cases -----------------------------------------------------------------------
def sky(instance: str, envs: dict, nodes: int = 1) -> str:
    lines = [f"resources:\n  instance_type: {instance}\n", f"num_nodes: {nodes}\n", "envs:\n"]
    lines += [f"  {k}: \"{v}\"\n" for k, v in envs.items()]
    lines.append(f"run: |\n  torchrun --nnodes {nodes} --nproc_per_node 8 train.py\n")
    return "".join(lines)


@pytest.mark.parametrize("instance,envs,nodes,expect", [
    ("p4d.24xlarge", {"FI_PROVIDER": "tcp"}, 2, "FI_PROVIDER=tcp"),
    ("p4d.24xlarge", {"NCCL_NET": "Socket"}, 2, "NCCL_NET=Socket"),
    ("Standard_ND96asr_v4", {"NCCL_IB_DISABLE": "1"}, 2, "InfiniBand"),
    ("p4d.24xlarge", {"NCCL_SHM_DISABLE": "1"}, 1, "shared-memory"),
])
def test_env_antipatterns_on_matching_hardware(instance, envs, nodes, expect):
    found = codes({"train.py": DDP, "sky.yaml": sky(instance, envs, nodes)}, fields=AT_MESSAGE, sort=True, select=NET)
    assert [(c, p, l) for c, p, l, _ in found] == [("NET002", "sky.yaml", 5)]
    assert expect in found[0][3]


@pytest.mark.parametrize("instance,envs,nodes", [
    ("g5.12xlarge", {"NCCL_P2P_DISABLE": "1"}, 1),  # PCIe: the rule names NVLink only
    ("p4d.24xlarge", {"NCCL_P2P_DISABLE": "0"}, 1),  # 0 does not disable
    ("p4d.24xlarge", {"NCCL_P2P_DISABLE": "$DISABLE"}, 1),  # decided at run time
    ("p4d.24xlarge", {"FI_PROVIDER": "tcp"}, 1),  # a single node does not use the fabric
    ("Standard_ND96asr_v4", {"NCCL_IB_DISABLE": "1"}, 1),
    ("p4d.24xlarge", {"FI_PROVIDER": "efa", "NCCL_DEBUG": "WARN"}, 2),
])
def test_env_without_effect_on_this_hardware_is_silent(instance, envs, nodes):
    assert codes({"train.py": DDP, "sky.yaml": sky(instance, envs, nodes)}, fields=AT_MESSAGE, sort=True, select=NET) == []


def test_nccl_debug_info_in_a_cloud_launcher_is_info():
    result = scan_files({"train.py": DDP, "sky.yaml": sky("p4d.24xlarge", {"NCCL_DEBUG": "INFO"})}, select=["NET002"])
    [f] = result.findings
    assert (f.loc.path, f.loc.line, f.severity.value) == ("sky.yaml", 5, "info")


def test_env_exported_in_a_slurm_script_is_checked():
    script = """\
#!/bin/bash
#SBATCH --nodes=1
export NCCL_P2P_DISABLE=1
torchrun --nproc_per_node 8 train.py
"""
    cfg = '[[workloads]]\nentrypoint = "train.py"\ninstance = "p5.48xlarge"\n'
    found = codes({"train.py": DDP, "run.sbatch": script}, fields=AT_MESSAGE, sort=True, select=NET, config_text=cfg)
    assert [(c, p, l) for c, p, l, _ in found] == [("NET002", "run.sbatch", 3)]


# -- NET003 ----------------------------------------------------------------------------------
def test_tcpxo_profile_sourcing_counts_as_configured():
    envs = {"NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY": "/dev/aperture_devices", "NCCL_LIB_DIR": "/var/lib/tcpxo/lib64"}
    assert codes({"train.py": DDP, "sky.yaml": sky("a3-megagpu-8g", envs, 2)}, fields=AT_MESSAGE, sort=True, select=NET) == []


def test_tcpxo_partial_settings_fire():
    envs = {"NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY": "/dev/aperture_devices", "NCCL_FASTRAK_CTRL_DEV": "enp0s12"}
    found = codes({"train.py": DDP, "sky.yaml": sky("a3-megagpu-8g", envs, 2)}, fields=AT_MESSAGE, sort=True, select=NET)
    assert [(c, l) for c, _, l, _ in found] == [("NET003", 5)]
    assert "NCCL_FASTRAK_IFNAME" in found[0][3] and "NCCL_SOCKET_IFNAME" in found[0][3]
    assert "NCCL_FASTRAK_CTRL_DEV" not in found[0][3].split("but")[1]


# -- NET004 edge cases -----------------------------------------------------------------------
LLAMA = (FIXTURES / "net-allreduce-g5" / "train.py").read_text()


def test_threshold_option_raises_the_bar():
    files = {"train.py": LLAMA, "sky.yaml": (FIXTURES / "net-allreduce-g5" / "sky.yaml").read_text()}
    assert codes(files, fields=AT_MESSAGE, sort=True, select="NET004", config_text="[rules.NET004]\nthreshold_seconds = 20\n") == []
    assert len(codes(files, fields=AT_MESSAGE, sort=True, select="NET004", config_text="[rules.NET004]\nthreshold_seconds = 10\n")) == 1


def test_lora_sends_only_adapter_gradients():
    lora = LLAMA.replace("model = DDP(model.cuda())",
                         "from peft import LoraConfig, get_peft_model\nmodel = DDP(get_peft_model(model, LoraConfig(r=8)).cuda())")
    files = {"train.py": lora, "sky.yaml": (FIXTURES / "net-allreduce-g5" / "sky.yaml").read_text()}
    assert codes(files, fields=AT_MESSAGE, sort=True, select="NET004") == []


def test_unknown_model_size_is_silent():
    files = {"train.py": LLAMA.replace("meta-llama/Llama-2-7b-hf", "acme/in-house-model"),
             "sky.yaml": (FIXTURES / "net-allreduce-g5" / "sky.yaml").read_text()}
    assert codes(files, fields=AT_MESSAGE, sort=True, select="NET004") == []


def test_skypilot_master_addr_command_substitution_links_the_script():
    task = """\
resources:
  instance_type: g5.12xlarge
num_nodes: 4
run: |
  torchrun --nnodes 4 --nproc_per_node 4 --master_addr $(echo "$SKYPILOT_NODE_IPS" | head -n1) --node_rank $SKYPILOT_NODE_RANK train.py
"""
    assert [c for c, _, _, _ in codes({"train.py": LLAMA, "sky.yaml": task}, fields=AT_MESSAGE, sort=True, select="NET004")] == ["NET004"]


def test_garbled_inputs_never_raise():
    files = {"train.py": DDP, "job.yaml": "kind: PyTorchJob\nspec: [unclosed\n", "sky.yaml": "resources: 3\nenvs: [1, 2]\nrun: 7\n",
             "main.tf": 'resource "aws_launch_template" "x" { instance_type = \n'}
    result = scan_files(files, select=NET.split(","))
    assert [f for f in result.findings if f.code.startswith("NET")] == []


# -- context: a branch decided by one part of an ``and`` -------------------------------------------
DP_FALLBACK = '''\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DataParallel, DistributedDataParallel as DDP

RANK = int(os.getenv("RANK", -1))
cuda = torch.cuda.is_available()
model = Net().cuda()
if {test}:
    model = DataParallel(model)
if RANK != -1:
    dist.init_process_group("nccl")
    model = DDP(model)
for x in loader:
    model(x.cuda()).sum().backward()
    opt.step()
'''


# -- a tutorial-sized workload: the NET and IO advice follow AMP001's judgement ---------------------------
MNIST_DDP = '''\
import torch
import torch.distributed as dist
from torchvision import datasets, transforms

dist.init_process_group(backend="gloo")
train = datasets.{dataset}("data", train=True, download=True, transform=transforms.ToTensor())
loader = torch.utils.data.DataLoader(train, batch_size=64)
model = torch.nn.parallel.DistributedDataParallel(Net().cuda())
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in loader:
    torch.nn.functional.nll_loss(model(x.cuda()), y.cuda()).backward()
    opt.step()
'''


# -- a test of constants the file binds decides its branch ------------------------------------------------
DP = """\
import torch
from torch import nn
import torchvision

num_gpus = GPUS
REBIND


def main(PARAM):
    model = torchvision.models.resnet50().cuda()
    if torch.cuda.is_available() and num_gpus > 1:
        model = nn.DataParallel(model, list(range(num_gpus)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in batches:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()


main()
"""


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


# -- NET004 ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("hp, expect", [
    ("'bf16': True, 'fsdp': '\"full_shard auto_wrap\"'", "2 B/param, x1.5 for ZeRO-3/FSDP"),
    ("'fsdp': 'full_shard auto_wrap'", "2 B/param, x1.5 for ZeRO-3/FSDP"),
])
def test_fsdp_through_hyperparameters_sizes_the_traffic_as_sharded(hp, expect):
    """HF ``fsdp=args.fsdp`` set by the estimator's hyperparameters (quoted, as SageMaker passes them):
    16-bit traffic and parameters gathered as well as gradients reduced."""
    found = findings({"train.py": FLAG_TRAIN, "launch.py": _estimator(hp, "EleutherAI/gpt-neox-20b")}, "NET004")
    assert len(found) == 1 and expect in found[0].message, [f.message for f in found]


# -- NET005 ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("test", ['sys.platform == "win32"', 'os.name == "nt"', 'platform.system() == "Windows"'])
def test_gloo_on_a_windows_branch_is_not_the_gpu_hosts_backend(test):
    train = ("import os, sys, platform\nimport torch\nimport torch.distributed as dist\n"
             f"if {test}:\n    dist.init_process_group('gloo')\nelse:\n    dist.init_process_group('nccl')\n"
             "model = torch.nn.parallel.DistributedDataParallel(Net().cuda())\n" + MAIN_LOOP)
    assert codes({"train.py": train, "infra/main.tf": P4D_TORCHRUN}, "NET005", sort=True) == []
    linux_gloo = train.replace("dist.init_process_group('nccl')", "dist.init_process_group('gloo')")
    assert codes({"train.py": linux_gloo, "infra/main.tf": P4D_TORCHRUN}, "NET005", sort=True) == ["NET005"]


@pytest.mark.parametrize("dataset, net005, io", [("MNIST", "info", False), ("ImageNet", "warning", True)])
def test_a_tutorial_sized_workload_gets_no_io_advice_and_its_gloo_backend_at_info(dataset, net005, io):
    result = scan_files({"mnist_ddp.py" if dataset == "MNIST" else "train.py": MNIST_DDP.format(dataset=dataset)})
    assert [f.severity.value for f in result.findings if f.code == "NET005"] == [net005]
    assert bool([f for f in result.findings if f.code.startswith("IO")]) is io


def test_gloo_in_the_xla_path_is_not_net005_but_gloo_in_the_cuda_path_is():
    net = [c[2] for c in codes({"run.py": RUN, "xla_utils.py": XLA_UTILS, "cuda_utils.py": CUDA_UTILS, **P4D_INFRA}, fields=SEVERITY_AT) if c[0] == "NET005"]
    assert net == ["cuda_utils.py"]


@pytest.mark.parametrize("data, severity", [("omniglot", "info"), ("tiered-imagenet", "warning")])
def test_net005_on_an_omniglot_meta_learning_run_is_info(data, severity):
    files = {"train.py": META.format(data=data), "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 4 train.py\n"}
    assert [c[:2] for c in codes(files, fields=SEVERITY_AT) if c[0] == "NET005"] == [("NET005", severity)]


# -- NET006 ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("test, fires", [
    ("cuda and RANK == -1 and torch.cuda.device_count() > 1", False),
    ("torch.cuda.device_count() > 1", False),
    ("cuda and RANK == -1", True),
    ("cuda or torch.cuda.device_count() > 1", True),
])
def test_a_data_parallel_fallback_behind_an_and_of_a_gpu_count_is_the_multi_gpu_branch(test, fires):
    files = {"train.py": DP_FALLBACK.replace("{test}", test),
             "sky.yaml": "resources:\n  accelerators: A100:8\nrun: torchrun --nproc_per_node 8 train.py\n"}
    assert bool(findings(files, "NET006")) is fires


def test_dataparallel_in_a_test_function_is_no_training_dataparallel():
    code = ("import torch\n\n\ndef test_best_model(model):\n    model = torch.nn.DataParallel(model)\n"
            "    with torch.no_grad():\n        return model(x)\n\n\n"
            "model = Net().cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "for x in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\ntest_best_model(model)\n")
    assert findings({"tune.py": code, "job.sbatch": GPU_JOB.replace("train.py", "tune.py")}, "NET006") == []


@pytest.mark.parametrize("gpus, rebind, param, reported", [
    ("1", "", "", False),  # num_gpus > 1 never holds
    ("4", "", "", True),
    ("1", "num_gpus = torch.cuda.device_count()", "", True),  # bound twice: not a constant
    ("1", "", "num_gpus=8", True),  # the function's own parameter
])
def test_a_branch_on_a_module_constant_is_decided_by_its_value(gpus, rebind, param, reported):
    src = DP.replace("GPUS", gpus).replace("REBIND", rebind).replace("PARAM", param)
    assert bool(findings({"train.py": src}, "NET006")) == reported


@pytest.mark.parametrize("binding, reported", [
    ("    n_gpu = 1\n", False),
    ("    if torch.cuda.is_available():\n        n_gpu = torch.cuda.device_count()\n    else:\n        n_gpu = 1\n", True),
])
def test_a_local_bound_in_two_branches_is_not_a_constant(binding, reported):
    src = ("import torch\nimport torchvision\n\n\ndef main():\n" + binding +
           "    model = torchvision.models.resnet50().cuda()\n    if n_gpu > 1:\n        model = torch.nn.DataParallel(model)\n"
           "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    for x in batches:\n"
           "        with torch.autocast('cuda', dtype=torch.bfloat16):\n            loss = model(x.cuda()).sum()\n"
           "        loss.backward()\n        opt.step()\n\n\nmain()\n")
    assert bool(findings({"train.py": src}, "NET006")) == reported


def test_dataparallel_in_the_else_of_a_ddp_branch_is_not_reported():
    files = {"train.py": DP_SCRIPT.format(other="else:\n    model = torch.nn.DataParallel(model).cuda()"), **P4D_INFRA}
    assert [c for c in codes(files, fields=SEVERITY_AT) if c[0] == "NET006"] == []


def test_dataparallel_under_a_test_of_its_own_is_still_reported():
    files = {"train.py": DP_SCRIPT.format(other="if args.dp:\n    model = torch.nn.DataParallel(model).cuda()"), **P4D_INFRA}
    assert [c[:3] for c in codes(files, fields=SEVERITY_AT) if c[0] == "NET006"] == [("NET006", "warning", "train.py")]
