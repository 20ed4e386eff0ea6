"""MEM rules: fixture repositories through the CLI, and the decision helpers of rules/mem.py."""
import json
import shutil

import pytest

from conftest import FIXTURES, run_cli
from gpulint.pricing.catalogue import Catalogue
from gpulint.resolve.memory import GiB, Estimate
from gpulint.core.model import Fact, Location
from gpulint.resolve import memfit as mem
from gpulint.testing import resolve_by_hand
from gpulint.link.workloads import Workload
from gpulint.testing import scan_files
from helpers import codes, findings
from samples import BIG_IMAGES, MNIST_NET


def scan_json(path, *extra):
    proc = run_cli("scan", path, "--format", "json", "--no-cache", "--exit-zero", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def mem_findings(report):
    return [f for f in report["findings"] if f["code"].startswith("MEM")]


def copy_fixture(name, tmp_path):
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    return dst


# --------------------------------------------------------------------------- fixtures through the CLI

def test_llama70b_full_finetune_on_g5_12xlarge_does_not_fit():
    found = mem_findings(scan_json(FIXTURES / "mem-llama70b-g5"))
    assert [(f["code"], f["path"], f["line"]) for f in found] == [("MEM001", "train.py", 23)]
    f = found[0]
    assert f["severity"] == "error"
    for part in ("Llama-2-70b-hf (69.0B params) full fine-tuning with AdamW", "~1104 GB", "per GPU without sharding",
                 "g5.12xlarge has 4x 22.4 GiB A10G"):
        assert part in f["message"]
    cost = f["cost_impact"]
    assert cost["usd_per_hour"] == pytest.approx(5.67, abs=0.01)
    assert "g5.12xlarge at $5.67/h" in cost["basis"] and "price as of" in cost["basis"] and "us-east-1" in cost["basis"]
    assert "cannot run" in cost["basis"] and "at risk" in cost["basis"]
    assert "ZeRO-3" in f["guidance"] and "Estimate assumptions:" in f["guidance"]


def test_llama70b_zero3_over_four_p4de_nodes_is_silent():
    assert mem_findings(scan_json(FIXTURES / "mem-llama70b-zero3")) == []


def test_llama70b_zero3_on_a_single_p4de_node_does_not_fit(tmp_path):
    repo = copy_fixture("mem-llama70b-zero3", tmp_path)
    tf = repo / "infra" / "main.tf"
    tf.write_text(tf.read_text().replace("count           = 4", "count           = 1"))
    sh = repo / "scripts" / "train.sh"
    sh.write_text(sh.read_text().replace("--num_nodes 4", "--num_nodes 1"))
    found = mem_findings(scan_json(repo))
    assert [(f["code"], f["path"], f["line"]) for f in found] == [("MEM001", "train.py", 23)]
    assert "with ZeRO-3 over 8 GPUs" in found[0]["message"] and "~138 GB" in found[0]["message"]
    assert "p4de.24xlarge has 8x 80.0 GiB A100" in found[0]["message"]


def test_bert_base_on_p4d_names_a_cheaper_instance_and_the_difference():
    found = mem_findings(scan_json(FIXTURES / "mem-bert-p4d"))
    assert [(f["code"], f["path"], f["line"]) for f in found] == [("MEM002", "infra/main.tf", 7)]
    f = found[0]
    for part in ("bert-base-uncased (109M params)", "g6e.12xlarge (4x L40S-48GB, $10.49/h on-demand)",
                 "p4d.24xlarge (8x A100-SXM4-40GB, $21.96/h)", "the same work costs about $3.87/h less at equal utilisation",
                 "$7.2 vs $8.8 per PF-hour of peak dense 16-bit throughput"):
        assert part in f["message"]
    cost = f["cost_impact"]
    assert cost["confidence"] == "low"  # a model under 1B parameters (training-facts §9)
    assert cost["usd_per_hour"] == pytest.approx(21.957642 * (1 - 7.245 / 8.797), abs=0.05)
    assert f"${cost['usd_per_hour']:.2f}/h less" in f["message"]  # the message and the figure agree
    basis = cost["basis"]
    assert basis.count("price as of 2026-07-20") == 2 and basis.count("karpenter-provider-aws") == 2
    assert "8 x 312 TF = 2.50 PF" in basis and "4 x 362.05 TF = 1.45 PF" in basis and "equal utilisation" in basis
    assert "--nproc_per_node 4" in f["guidance"]


def test_bert_base_on_single_l4_is_silent(tmp_path):
    repo = copy_fixture("mem-bert-p4d", tmp_path)
    tf = repo / "infra" / "main.tf"
    tf.write_text(tf.read_text().replace("p4d.24xlarge", "g6.xlarge"))
    (repo / "scripts" / "train.sh").write_text("#!/bin/bash\npython train.py\n")
    assert mem_findings(scan_json(repo)) == []


def test_unknown_instance_gives_sys003_and_no_mem_figure(tmp_path):
    repo = copy_fixture("mem-llama70b-g5", tmp_path)
    tf = repo / "infra" / "main.tf"
    tf.write_text(tf.read_text().replace("g5.12xlarge", "g9.12xlarge"))
    report = scan_json(repo)
    assert mem_findings(report) == []
    assert [f["code"] for f in report["findings"] if f["code"] == "SYS003"] == ["SYS003"]


def test_idle_gpus_under_skypilot():
    found = mem_findings(scan_json(FIXTURES / "mem-idle-python"))
    assert [(f["code"], f["path"], f["line"]) for f in found] == [("MEM004", "sky.yaml", 11)]
    assert "1 GPU process per node" in found[0]["message"] and "7 of 8 GPUs are billed and idle" in found[0]["message"]
    assert found[0]["cost_impact"]["usd_per_hour"] == pytest.approx(21.957642 * 7 / 8, abs=0.01)


def test_one_gpu_for_one_process_is_silent(tmp_path):
    repo = copy_fixture("mem-idle-python", tmp_path)
    sky = repo / "sky.yaml"
    sky.write_text(sky.read_text().replace("A100:8", "A100:1"))
    assert [f for f in mem_findings(scan_json(repo)) if f["code"] == "MEM004"] == []


def test_checkpointing_recommended_for_long_sequences():
    found = mem_findings(scan_json(FIXTURES / "mem-llama7b-no-ckpt"))
    assert [(f["code"], f["path"], f["line"]) for f in found] == [("MEM003", "train.py", 7)]
    msg = found[0]["message"]
    assert "seq 4096 x micro-batch 8" in msg and "~146 GB" in msg and "~8.6 GB" in msg and "80 GiB" in msg
    assert found[0]["severity"] == "info" and found[0]["cost_impact"]["usd_per_hour"] is None


def test_checkpointing_on_or_sequence_unknown_is_silent(tmp_path):
    repo = copy_fixture("mem-llama7b-no-ckpt", tmp_path)
    train = repo / "train.py"
    train.write_text(train.read_text().replace("save_steps=200,", "save_steps=200,\n    gradient_checkpointing=True,"))
    assert mem_findings(scan_json(repo)) == []
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0"\n')
    train.write_text(train.read_text().replace("\n    gradient_checkpointing=True,", ""))
    assert mem_findings(scan_json(repo)) == []


# --------------------------------------------------------------------------- helpers

L = Location("train.py", 1)


def fact(kind, value, path="train.py", line=1, **attrs):
    return Fact(kind, value, Location(path, line), kind, "", attrs)


def workload(facts=(), launchers=(), compute=None, model=None):
    wl = Workload(name="train.py", entrypoint="train.py", code_files=["train.py"], launchers=list(launchers), facts=list(facts))
    return resolve_by_hand(wl, compute, model)


def launch(tool, nproc=None, flags=(), **extra):
    value = {"tool": tool, "script": "train.py", "args": [], "nnodes": None, "nproc_per_node": nproc, **extra}
    return Fact("launch", value, Location("run.sh", 1), tool, "launch1", {"flags": {f: [1, 1] for f in flags}})


@pytest.mark.parametrize("text,expected", [
    ("adamw", "adamw"), ("AdamW", "adamw"), ("adamw_torch_fused", "adamw"), ("Adam", "adam"), ("FusedAdam", "adam"),
    ("adamw_bnb_8bit", "adam8bit"), ("adam8bit", "adam8bit"), ("paged_adamw_8bit", "unknown"), ("lion_8bit", "unknown"),
    ("adafactor", "adafactor"), ("Lamb", "adamw"), ("sgd", "sgd"), ("rmsprop", "unknown"), ("", None), (None, None), (3, None),
])
def test_optimizer_name(text, expected):
    assert mem.optimizer_name(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("full_shard auto_wrap", ("fsdp_full", False)), ("shard_grad_op", ("fsdp_grad_op", False)),
    ("hybrid_shard auto_wrap offload", ("fsdp_hybrid", True)), (["full_shard", "offload"], ("fsdp_full", True)),
    ("", (None, None)), ("auto_wrap", (None, None)), (None, (None, None)),
])
def test_hf_fsdp(text, expected):
    assert mem.hf_fsdp(text) == expected


def test_processes_per_node():
    c = {"gpus_per_node": 8}
    assert mem.processes_per_node(workload(launchers=[launch("torchrun", 4, ["--nproc_per_node"])], compute=c)) == 4
    assert mem.processes_per_node(workload(launchers=[launch("torchrun")], compute=c)) == 1  # torchrun's default
    assert mem.processes_per_node(workload(launchers=[launch("torchrun", None, ["--nproc_per_node"])], compute=c)) is None
    assert mem.processes_per_node(workload(launchers=[launch("deepspeed")], compute=c)) == 8
    assert mem.processes_per_node(workload(launchers=[launch("deepspeed", None, ["--include"])], compute=c)) is None
    assert mem.processes_per_node(workload(launchers=[launch("python")], compute=c)) == 1
    assert mem.processes_per_node(workload(launchers=[launch("accelerate")], compute=c)) is None
    acc = fact("config.accelerate", {"num_processes": 16, "num_machines": 2})
    assert mem.processes_per_node(workload(facts=[acc], launchers=[launch("accelerate")], compute=c)) == 8
    assert mem.processes_per_node(workload(launchers=[launch("python"), launch("torchrun", 8, ["--nproc_per_node"])])) is None
    assert mem.processes_per_node(workload()) is None


def test_sharding_reading():
    ds3 = fact("sharding", {"via": "deepspeed", "stage": 3, "offload": False, "offload_optimizer": False, "offload_param": False})
    s = mem.sharding_of(workload(facts=[ds3]))
    assert (s.most, s.least, s.offload_opt, s.offload_params) == ("zero3", "zero3", False, False)
    fsdp = fact("sharding", {"via": "fsdp", "stage": 3, "hybrid": False})  # CPUOffload is not among the facts
    s = mem.sharding_of(workload(facts=[fsdp]))
    assert (s.most, s.least, s.offload_opt, s.offload_params) == ("fsdp_full", "fsdp_full", None, None)
    acc = fact("config.accelerate", {"distributed_type": "FSDP", "fsdp": True})
    s = mem.sharding_of(workload(facts=[acc]))
    assert (s.most, s.least) == ("fsdp_full", "none")
    assert not mem.sharding_of(workload()).any


def profile_for(params=68976648192, compute=None, facts=(), launchers=(), dims=None, name="meta-llama/Llama-2-70b-hf"):
    compute = compute or {"instance": "g5.12xlarge", "gpu_memory_gib": 22.35, "gpus_per_node": 4, "gpu_count": 4, "nodes": 1}
    model = {"name": name, "params": params, "dims": dims or {}}
    facts = [fact("trains", {"via": "hf_trainer"}), fact("model.name", name), *facts]
    return mem.profile(workload(facts=facts, launchers=launchers, compute=compute, model=model))


def test_optimistic_estimate_takes_the_smallest_reading():
    p = profile_for(launchers=[launch("torchrun", 4, ["--nproc_per_node"])])
    setup, est = mem.optimistic_training(p)
    # no precision fact: fp32; HF Trainer's default optimizer: AdamW -> 4 + 4 + 8 = 16 B/param
    assert (setup.sharding, setup.optimizer, setup.precision) == ("none", "adamw", "fp32")
    assert est.total_bytes == pytest.approx(16 * 68976648192, rel=1e-6)
    assert mem.optimistic_per_gpu(p, est) == (est.total_bytes, "")  # DDP: every rank holds everything
    # one process may spread the model over the node's 4 GPUs (device_map="auto")
    single = profile_for(launchers=[launch("python")])
    per_gpu, how = mem.optimistic_per_gpu(single, mem.optimistic_training(single)[1])
    assert per_gpu == pytest.approx(16 * 68976648192 / 4, rel=1e-6) and "4 GPUs" in how


def test_optimistic_estimate_needs_the_gpu_count_of_a_sharded_job():
    ds3 = fact("sharding", {"via": "deepspeed", "stage": 3, "offload": False, "offload_optimizer": False, "offload_param": False})
    p = profile_for(facts=[ds3], compute={"instance": "p4de.24xlarge", "gpu_memory_gib": 80, "gpus_per_node": 8, "nodes": None})
    assert mem.optimistic_training(p) is None
    p = profile_for(facts=[ds3], compute={"instance": "p4de.24xlarge", "gpu_memory_gib": 80, "gpus_per_node": 8, "nodes": 4})
    setup, est = mem.optimistic_training(p)
    assert setup.n_gpus == 32 and est.total_bytes == pytest.approx(16 * 68976648192 / 32, rel=1e-6)


def test_fits_leaves_room_for_what_is_not_counted():
    counted = Estimate(int(0.9 * 24 * GiB), lower_bound=False)
    assert mem.fits(counted, 24) and not mem.fits(Estimate(int(0.91 * 24 * GiB)), 24)
    assert mem.fits(Estimate(int(0.5 * 24 * GiB), lower_bound=True), 24)
    assert not mem.fits(Estimate(int(0.6 * 24 * GiB), lower_bound=True), 24)


def test_checkpointing_needed():
    dims = {"layers": 32, "hidden": 4096, "heads": 32}
    fsdp = fact("config.hf_args", {"fsdp": "full_shard auto_wrap"})
    bf16 = fact("precision", {"mechanism": "hf_args", "dtype": "bf16", "enabled": True})  # fp32 would double activations
    c = {"instance": "p4de.24xlarge", "gpu_memory_gib": 80, "gpus_per_node": 8, "nodes": 1}
    p = profile_for(6738415616, c, facts=[fsdp, bf16], launchers=[launch("torchrun", 8, ["--nproc_per_node"])], dims=dims,
                    name="meta-llama/Llama-2-7b-hf")
    off, on = mem.checkpointing_needed(p, 80, 4096, 8)
    assert off.breakdown["activations"] == 32 * 34 * 4096 * 8 * 4096  # Korthikanti, FlashAttention: 34*s*b*h per layer
    assert on.breakdown["activations"] == 32 * 2 * 4096 * 8 * 4096  # full recomputation: 2*s*b*h per layer
    assert mem.checkpointing_needed(p, 80, 512, 8) is None  # fits without recomputation
    assert mem.checkpointing_needed(p, 80, 4096, 256) is None  # does not fit even with it (MEM001's case)
    no_dims = profile_for(6738415616, c, facts=[fsdp], name="meta-llama/Llama-2-7b-hf")
    assert mem.checkpointing_needed(no_dims, 80, 4096, 8) is None


def test_cheaper_fit_keeps_the_features_in_use():
    cat = Catalogue.load()
    c = {"instance": "p4d.24xlarge", "provider": "aws", "gpu_memory_gib": 40, "gpus_per_node": 8, "gpu_count": 8, "nodes": 1}
    bf16 = fact("precision", {"mechanism": "hf_args", "dtype": "bf16", "enabled": True})
    ddp = [launch("torchrun", 8, ["--nproc_per_node"])]
    model = {"name": "bert-base-uncased", "params": 109482240, "dims": {}}
    base = [fact("trains", {"via": "hf_trainer"}), fact("model.name", "bert-base-uncased")]

    def pick(facts, launchers):
        wl = workload(facts=base + facts, launchers=launchers, compute=c, model=model)
        got = mem.cheaper_fit(wl, mem.profile(wl), cat)
        return got and got.candidate.instance.name

    assert pick([bf16], ddp) == "g6e.12xlarge"  # several GPUs and bf16
    assert pick([bf16], [launch("python")]) == "g6.xlarge"  # one process: one GPU is enough
    assert pick([], [launch("python")]) == "g4dn.xlarge"  # no bf16 in use: T4 qualifies
    # four nodes: the candidate must keep RDMA and the 400 Gbps fabric (g6e.12xlarge has EFA at 100 Gbps)
    c4 = {**c, "nodes": 4}
    wl = workload(facts=base + [bf16], launchers=[launch("torchrun", 8, ["--nproc_per_node"], nnodes=4)], compute=c4, model=model)
    assert mem.cheaper_fit(wl, mem.profile(wl), cat) is None
    big = {"name": "meta-llama/Llama-2-13b-hf", "params": 13015864320, "dims": {}}
    wl = workload(facts=base + [bf16], launchers=ddp, compute=c, model=big)
    assert mem.cheaper_fit(wl, mem.profile(wl), cat) is None


def test_mem002_confidence_follows_training_facts_section_9():
    cat = Catalogue.load()
    inst = {i.name: i for i in cat.instances()}
    small = profile_for(109482240, name="bert-base-uncased")
    large = profile_for(6738415616, name="meta-llama/Llama-2-7b-hf")
    assert mem.mem002_confidence(small, inst["p4d.24xlarge"], inst["g6e.12xlarge"], cat, True) == "low"
    assert mem.mem002_confidence(large, inst["p4d.24xlarge"], inst["g6e.12xlarge"], cat, True) == "low"  # NVSwitch -> PCIe
    assert mem.mem002_confidence(large, inst["p4de.24xlarge"], inst["p5.4xlarge"], cat, False) == "medium"
    assert mem.mem002_confidence(large, inst["g6e.4xlarge"], inst["g5.xlarge"], cat, False) == "medium"  # A10G capped
    assert mem.mem002_confidence(large, inst["g6e.4xlarge"], inst["Standard_NC40ads_H100_v5"], cat, False) == "low"


def test_idle_gpus_helper_respects_self_parallel_code():
    c = {"instance": "p4d.24xlarge", "gpus_per_node": 8, "gpu_count": 8}
    loop = fact("trains", {"via": "loop"})
    assert mem.idle_gpus(workload(facts=[loop], launchers=[launch("python")], compute=c))[:2] == (1, 8)
    assert mem.idle_gpus(workload(facts=[loop, fact("dataparallel", {})], launchers=[launch("python")], compute=c)) is None
    assert mem.idle_gpus(workload(facts=[fact("trains", {"via": "lightning"})], launchers=[launch("python")], compute=c)) is None
    assert mem.idle_gpus(workload(facts=[loop], launchers=[launch("torchrun", 8, ["--nproc_per_node"])], compute=c)) is None
    assert mem.idle_gpus(workload(facts=[loop], launchers=[launch("torchrun", 2, ["--nproc_per_node"])], compute=c))[:2] == (2, 8)
    mp = launch("torchrun", 2, ["--nproc_per_node"], args=["--tensor-model-parallel-size", "4"])
    assert mem.idle_gpus(workload(facts=[loop], launchers=[mp], compute=c)) is None
    assert mem.idle_gpus(workload(facts=[loop], launchers=[], compute=c)) is None
    unknown = {"instance": None, "gpus_per_node": 8}  # e.g. an accelerator type the catalogue lacks
    assert mem.idle_gpus(workload(facts=[loop], launchers=[launch("python")], compute=unknown)) is None


def test_malformed_model_and_compute_values_do_not_raise():
    assert mem.profile(workload(model={"params": "70B"})) is None
    assert mem.profile(workload(model={"params": True})) is None
    assert mem.profile(workload()) is None
    wl = workload(facts=[fact("config.hf_args", {"fsdp": 3, "optim": ["x"], "per_device_train_batch_size": "eight"})],
                  compute={"gpus_per_node": "8"}, model={"name": None, "params": 10**9, "dims": {"layers": "32"}})
    p = mem.profile(wl)
    assert p is not None and mem.shape_of(wl) == (None, None)
    assert mem.idle_gpus(wl) is None


def test_cheaper_fit_compares_the_math_and_the_capacity_the_workload_runs():
    """fp32 work is compared on fp32 throughput (a T4 is far slower than an A10G there), spot work on
    spot prices, and undecided precision must win on both readings."""
    cat = Catalogue.load()
    model = {"name": "bert-base-uncased", "params": 109482240, "dims": {}}
    base = [fact("trains", {"via": "hf_trainer"}), fact("model.name", "bert-base-uncased")]
    c = {"instance": "g5.12xlarge", "nodes": 1}
    fp32 = workload(facts=base, launchers=[launch("python")], compute=c, model=model)
    got = mem.cheaper_fit(fp32, mem.profile(fp32), cat)
    assert got.math == "fp32" and got.capacity == "on-demand"
    g = cat.gpu(got.candidate.instance)
    assert got.candidate.usd_per_pflop_hour == pytest.approx(got.candidate.usd_per_hour / (got.candidate.instance.gpu_count * g.fp32_tflops / 1000))
    spot = workload(facts=base, launchers=[launch("python")], compute={**c, "capacity": "spot"}, model=model)
    got = mem.cheaper_fit(spot, mem.profile(spot), cat)
    assert got is None or (got.capacity == "spot" and got.current_usd_per_hour == cat.price(cat.resolve("g5.12xlarge"), "spot").usd_per_hour)
    undecided = workload(facts=base + [fact("precision", {"mechanism": "autocast", "dtype": None, "enabled": None})],
                         launchers=[launch("python")], compute=c, model=model)
    got = mem.cheaper_fit(undecided, mem.profile(undecided), cat)
    assert got is None or got.math == "16-bit and fp32"


ACC_CONFIG = "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nmixed_precision: bf16\nnum_machines: 1\nnum_processes: 8\n"


ACC_TRAIN = ("from accelerate import Accelerator\nfrom transformers import AutoModelForCausalLM\nacc = Accelerator()\n"
             "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-3.1-8B')\n"
             "model, opt, loader = acc.prepare(model, opt, loader)\nfor b in loader:\n    acc.backward(model(**b).loss)\n    opt.step()\n")


# -- a SageMaker data-parallel distribution starts one process per GPU: a cheaper fit keeps several GPUs -----
SM_NOTEBOOK_DP = """\
from sagemaker.huggingface import HuggingFace
est = HuggingFace(entry_point="train.py", source_dir="scripts", instance_type="ml.p3.16xlarge", instance_count=2,
                  transformers_version="4.26", pytorch_version="1.13", py_version="py39",
                  hyperparameters={"model_name": "distilbert-base-uncased", "epochs": 1},
                  distribution={"smdistributed": {"dataparallel": {"enabled": True}}})
est.fit()
"""


SM_HF_TRAINER = """\
import argparse
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
p = argparse.ArgumentParser()
p.add_argument("--model_name", default="distilbert-base-uncased")
args = p.parse_args()
model = AutoModelForSequenceClassification.from_pretrained(args.model_name)
Trainer(model=model, args=TrainingArguments(output_dir="out")).train()
"""


# -- MEM002 ----------------------------------------------------------------------------------------------


def test_a_tutorial_sized_model_on_a_big_instance_is_advice_without_the_utilisation_figure():
    launch = ("from sagemaker.pytorch import PyTorch\n"
              "PyTorch(entry_point='train.py', instance_type='ml.p3.16xlarge', instance_count=1, role=role).fit()\n")
    result = scan_files({"train.py": MNIST_NET.replace("opt = torch.optim.Adam", "opt = torch.optim.SGD"), "launch.py": launch})
    found = [f for f in result.findings if f.code == "MEM002"]
    for f in found:
        assert f.severity.value == "info" and f.cost_impact.usd_per_hour is None and "tutorial-sized" in f.message


def test_a_sagemaker_data_parallel_job_counts_one_process_per_gpu():
    r = scan_files({"launch.py": SM_NOTEBOOK_DP, "scripts/train.py": SM_HF_TRAINER})
    (launch,) = [l for w in r.workloads for l in w["launchers"]]
    assert launch["attrs"]["process_per_gpu"] is True
    (f,) = [f for f in r.findings if f.code == "MEM002"]  # a cheaper fit for a data-parallel job keeps 2+ GPUs per node
    assert "(1x " not in f.message and "fits 2 x " in f.message and "instead of 2 x p3.16xlarge" in f.message, f.message


@pytest.mark.parametrize("folder, severity", [("distributed_data_parallelism", "info"), ("ddp-example", "info"),
                                              ("text_classification", "warning")])
def test_a_multi_gpu_example_named_for_its_parallelism_gets_mem002_at_info(folder, severity):
    r = scan_files({f"{folder}/launch.py": SM_NOTEBOOK_DP, f"{folder}/scripts/train.py": SM_HF_TRAINER})
    (f,) = [f for f in r.findings if f.code == "MEM002"]
    assert f.severity.value == severity
    assert ("is named for its parallelism: 16 GPUs look like the point of the example" in f.message) == (severity == "info")


# -- MEM004 ----------------------------------------------------------------------------------------------


def test_a_ray_train_driver_is_not_the_only_gpu_process():
    train = ("import torch\nfrom ray.train import ScalingConfig\nfrom ray.train.torch import TorchTrainer, prepare_model\n\n\n"
             "def loop(config):\n    model = prepare_model(Net())\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n\n\n"
             "if __name__ == '__main__':\n    TorchTrainer(loop, scaling_config=ScalingConfig(num_workers=4, use_gpu=True)).fit()\n")
    sky = "resources:\n  accelerators: L4:2\nnum_nodes: 2\nrun: |\n  python train.py\n"
    assert codes({"train.py": train, "sky.yaml": sky}, "MEM004", sort=True) == []
    plain = train.replace("from ray.train import ScalingConfig\nfrom ray.train.torch import TorchTrainer, prepare_model\n", "").replace(
        "prepare_model(Net())", "Net().cuda()").replace("TorchTrainer(loop, scaling_config=ScalingConfig(num_workers=4, use_gpu=True)).fit()", "loop({})")
    assert codes({"train.py": plain, "sky.yaml": sky}, "MEM004", sort=True) == ["MEM004"]


@pytest.mark.parametrize("procs, fires", [("$NP", False), ("32", False), ("8", True)])
def test_an_unresolved_num_processes_overrides_the_accelerate_config(procs, fires):
    sky = ("resources:\n  accelerators: H100:8\nnum_nodes: 4\nfile_mounts:\n  /sft: ./sft\nrun: |\n"
           "  NP=$(($SKYPILOT_NUM_GPUS_PER_NODE * $SKYPILOT_NUM_NODES))\n"
           f"  accelerate launch --config_file /sft/fsdp.yaml --num_machines 4 --num_processes {procs} /sft/train.py\n")
    files = {"job.yaml": sky, "sft/fsdp.yaml": ACC_CONFIG, "sft/train.py": ACC_TRAIN}
    assert bool(findings(files, "MEM004")) is fires  # 8 processes over 4 machines: 2 of each node's 8 GPUs


@pytest.mark.parametrize("device_map, fires", [("", True), (', device_map="auto"', False)])
def test_one_process_on_eight_gpus_idles_seven_unless_the_load_spreads_the_model(device_map, fires):
    src = BIG_IMAGES.replace('subfolder="transformer").cuda()', f'subfolder="transformer"{device_map})')
    files = {"train.py": src, "run.sh": "python train.py --pretrained_model_name_or_path black-forest-labs/FLUX.1-dev\n",
             "sky.yaml": "resources:\n  accelerators: A100-80GB:8\nrun: bash run.sh\n"}
    assert bool(findings(files, "MEM004")) is fires


LIGHTNING_JOB = """\
import lightning as L

model, data = LitModel(), LitData()
{trainers}
"""
P4D_TF = 'resource "aws_instance" "trainer" {\n  ami           = "ami-0123456789abcdef0"\n  instance_type = "p4d.24xlarge"\n}\n'


@pytest.mark.parametrize("trainers,fires", [
    ('L.Trainer(devices=2, precision="bf16-mixed").fit(model, data)', True),
    ('L.Trainer(accelerator="gpu", gpus=1, precision="bf16-mixed").fit(model, data)', True),  # Lightning 1.x
    ('L.Trainer(devices=8, precision="bf16-mixed").fit(model, data)', False),
    ('L.Trainer(devices=-1, precision="bf16-mixed").fit(model, data)', False),  # every device of the node
    ('L.Trainer(devices="auto", precision="bf16-mixed").fit(model, data)', False),
    ('L.Trainer(devices=N_GPUS, precision="bf16-mixed").fit(model, data)', False),  # not a literal
    # the fitting Trainer takes every GPU; a second one only tests: they disagree, so nothing is claimed
    ('L.Trainer(devices=-1, precision="bf16-mixed").fit(model, data)\nL.Trainer(devices=1).test(model, data)', False),
])
def test_a_lightning_trainer_told_to_use_fewer_gpus_than_the_node_has_idles_the_rest(trainers, fires):
    files = {"train.py": LIGHTNING_JOB.format(trainers=trainers), "run.sh": "python train.py\n", "infra/main.tf": P4D_TF}
    found = findings(files, "MEM004")
    assert bool(found) is fires
    if fires:
        assert found[0].loc.path == "train.py" and found[0].loc.line == 4
        assert "Set devices=8" in found[0].guidance


def test_profile_and_sharding_are_computed_once_per_resolved_workload():
    from dataclasses import replace

    wl = resolve_by_hand(Workload(name="t", entrypoint="train.py", facts=[]), compute={"instance": "p4d.24xlarge"},
                         model={"name": "m", "params": 10**9})
    p = mem.profile(wl)
    assert p is not None and mem.profile(wl) is p and mem.sharding_of(wl) is p.sharding
    wl.resolution = replace(wl.resolution)  # a new resolution: computed again
    assert mem.profile(wl) is not p and mem.profile(wl) == p
