"""Placement (gpulint.link.placement): jobs that do not name their machine are placed on the repository's cluster
capacity the way the scheduler would place them, and stay unplaced when the repository does not decide it.

Kubernetes here (Karpenter NodePools: labels, taints, a pod's nodeSelector and tolerations); the Slurm side
(--partition, the default queue, --constraint) is tested beside the Slurm cluster readers that state the queues.
"""
from __future__ import annotations

import pytest

from helpers import codes
from samples import DDP_BF16_LOOP
from gpulint.testing import scan_files

TRAIN = DDP_BF16_LOOP

NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: {name}
spec:
  template:
    metadata:
      labels:
        workload: {label}
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      requirements:
        - key: node.kubernetes.io/instance-type
          operator: In
          values: ["{instance}"]
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
      taints:
        - key: nvidia.com/gpu
          value: "true"
          effect: NoSchedule
"""

JOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: llm
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
{placement}          containers:
            - name: trainer
              image: registry.example.com/llm:1.0
              command: [torchrun, --nnodes=4, --nproc_per_node=8, train.py]
              resources:
                limits:
                  nvidia.com/gpu: 8
"""

SELECT = """\
          nodeSelector:
            workload: {label}
          tolerations:
            - key: nvidia.com/gpu
              operator: Exists
              effect: NoSchedule
"""


def _job(label: str | None = "training", tolerate: bool = True) -> str:
    block = SELECT.format(label=label) if label else ""
    if not tolerate:
        block = block.split("          tolerations:")[0]
    if label is None and tolerate:
        block = "          tolerations:\n            - key: nvidia.com/gpu\n              operator: Exists\n"
    return JOB.format(placement=block)


def _compute(result, entry="train.py"):
    wl = next(w for w in result.workloads if w["entrypoint"] == entry)
    return wl, wl["compute"]


def test_pod_selecting_a_nodepool_label_runs_on_its_machine():
    result = scan_files({"train.py": TRAIN, "k8s/job.yaml": _job(),
                         "k8s/nodepool.yaml": NODEPOOL.format(name="gpu", label="training", instance="p4d.24xlarge")})
    wl, comp = _compute(result)
    assert comp["instance"] == "p4d.24xlarge"
    assert comp["placed_on"] == "k8s/nodepool.yaml#NodePool/gpu"
    assert "nodeSelector (workload=training)" in comp["placement"]
    assert comp["capacity"] == "on-demand" and comp["price_capacity"] == "on-demand"
    assert any(r.startswith("placement: ") for r in wl["links"])
    # the pod asks for no EFA device on an EFA machine: now that the machine is known, NET001 can say so
    assert ("NET001", "k8s/job.yaml") in codes({"train.py": TRAIN, "k8s/job.yaml": _job(),
                                                "k8s/nodepool.yaml": NODEPOOL.format(name="gpu", label="training",
                                                                                     instance="p4d.24xlarge")},
                                               "NET001", fields=("code", "path"))


def test_pod_that_does_not_tolerate_the_pools_taint_is_not_placed_there():
    result = scan_files({"train.py": TRAIN, "k8s/job.yaml": _job(tolerate=False),
                         "k8s/nodepool.yaml": NODEPOOL.format(name="gpu", label="training", instance="p4d.24xlarge")})
    _, comp = _compute(result)
    assert comp.get("placed_on") is None and comp["instance"] is None
    assert comp["placement_unknown"].startswith("no GPU node group of the repository carries its nodeSelector")


def test_pod_selecting_a_label_no_pool_has_is_not_placed():
    result = scan_files({"train.py": TRAIN, "k8s/job.yaml": _job(label="inference"),
                         "k8s/nodepool.yaml": NODEPOOL.format(name="gpu", label="training", instance="p4d.24xlarge")})
    wl, comp = _compute(result)
    assert comp.get("placed_on") is None and comp["instance"] is None
    assert any(u.startswith("placement: no GPU node group of the repository carries its nodeSelector") and
               "=inference" in u for u in wl["unknown"])  # workloads says why the machine is unknown


def test_two_pools_with_different_machines_leave_it_unknown_and_say_why():
    files = {"train.py": TRAIN, "k8s/job.yaml": _job(),
             "k8s/a100.yaml": NODEPOOL.format(name="a100", label="training", instance="p4d.24xlarge"),
             "k8s/h100.yaml": NODEPOOL.format(name="h100", label="training", instance="p5.48xlarge")}
    wl, comp = _compute(scan_files(files))
    assert comp.get("placed_on") is None and comp["instance"] is None
    assert "2 candidates differ" in comp["placement_unknown"]
    assert any(u.startswith("placement: ") and "p5.48xlarge" in u for u in wl["unknown"])
    assert not codes(files, "NET001")  # which machine runs it is not in the repository


def test_a_gpu_pod_without_selector_is_not_placed_even_on_the_only_gpu_pool():
    files = {"train.py": TRAIN, "k8s/job.yaml": _job(label=None),
             "k8s/gpu.yaml": NODEPOOL.format(name="gpu", label="training", instance="p5.48xlarge"),
             "k8s/cpu.yaml": NODEPOOL.format(name="cpu", label="general", instance="m5.2xlarge").replace(
                 "      taints:\n        - key: nvidia.com/gpu\n          value: \"true\"\n          effect: NoSchedule\n", "")}
    _, comp = _compute(scan_files(files))
    # other node groups may exist outside the repository: which one runs it is not stated
    assert comp["instance"] is None and comp.get("placed_on") is None
    assert comp["placement_unknown"].startswith("it selects no node label") and "k8s/gpu.yaml" in comp["placement_unknown"]


def test_a_pod_that_names_its_instance_type_is_not_placed():
    job = _job().replace("          nodeSelector:\n", "          nodeSelector:\n            node.kubernetes.io/instance-type: g5.48xlarge\n")
    result = scan_files({"train.py": TRAIN, "k8s/job.yaml": job,
                         "k8s/nodepool.yaml": NODEPOOL.format(name="gpu", label="training", instance="p4d.24xlarge")})
    _, comp = _compute(result)
    assert comp["instance"] == "g5.48xlarge" and comp.get("placed_on") is None


# -- infrastructure-only jobs ----------------------------------------------------------------------------------------

IMAGE_JOB = JOB.replace("command: [torchrun, --nnodes=4, --nproc_per_node=8, train.py]",
                        "command: [torchrun, --nnodes=4, --nproc_per_node=8, /opt/megatron/pretrain_gpt.py, --train-iters, "
                        "\"500000\"]").format(placement="          nodeSelector:\n            node.kubernetes.io/instance-type: "
                                                        "p5.48xlarge\n")


def test_a_training_launcher_whose_script_is_in_the_image_is_a_workload_with_unknown_code():
    result = scan_files({"k8s/job.yaml": IMAGE_JOB})
    [wl] = result.workloads
    assert wl["code_known"] is False and wl["role"] == "training" and wl["code_files"] == []
    assert wl["compute"]["instance"] == "p5.48xlarge"
    assert any(u.startswith("code: /opt/megatron/pretrain_gpt.py is not a file of the repository") for u in wl["unknown"])
    # the launcher, compute and environment checks run: 4 nodes of p5 with no EFA request
    assert codes({"k8s/job.yaml": IMAGE_JOB}, fields=("code", "path", "line")) == [("NET001", "k8s/job.yaml", 19)]


def test_the_job_environment_checks_run_on_unknown_code():
    # NCCL reads the job's environment whatever code runs: P2P off on NVSwitch is NET002 on an image job too
    env = IMAGE_JOB.replace("              resources:\n",
                            "              env:\n                - name: NCCL_P2P_DISABLE\n                  value: \"1\"\n"
                            "              resources:\n")
    assert "NCCL_P2P_DISABLE" in env
    assert ("NET002", "k8s/job.yaml") in codes({"k8s/job.yaml": env}, fields=("code", "path"))
    assert "NET002" not in codes({"k8s/job.yaml": IMAGE_JOB})


def test_rules_that_read_training_code_stay_silent_on_unknown_code():
    # no precision, no checkpoint, no loader evidence: with the code unseen, none of them is evidence of absence
    spot = IMAGE_JOB.replace("            node.kubernetes.io/instance-type: p5.48xlarge\n",
                             "            node.kubernetes.io/instance-type: p5.48xlarge\n            "
                             "karpenter.sh/capacity-type: spot\n")
    found = set(codes({"k8s/job.yaml": spot}))
    assert not found & {"AMP001", "SPOT001", "SPOT002", "IO001", "MEM003"}, found


SPOT_IMAGE_JOB = IMAGE_JOB.replace("            node.kubernetes.io/instance-type: p5.48xlarge\n",
                                   "            node.kubernetes.io/instance-type: p5.48xlarge\n            "
                                   "karpenter.sh/capacity-type: spot\n")


@pytest.mark.parametrize("folder, fires", [("/tmp/ckpt", True), ("/local_disk0/run1", True), ("/fsx/ckpt/run1", False),
                                           ("s3://bucket/ckpt", False), ("$CKPT_DIR", False)])
def test_a_spot_image_job_whose_launch_line_checkpoints_to_instance_storage_is_spot004(folder, fires):
    """The code is in the image, but the folder its launch line passes to --save is where its checkpoints go:
    instance-local storage on spot loses them with the node; a shared file system or a variable is left alone."""
    job = SPOT_IMAGE_JOB.replace('--train-iters, "500000"', f'--train-iters, "500000", --save, "{folder}"')
    assert folder in job
    result = scan_files({"k8s/job.yaml": job})
    [wl] = result.workloads
    assert wl["code_known"] is False and any(r.startswith("checkpoint: ") and "--save" in r for r in wl["links"])
    spot004 = [f for f in result.findings if f.code == "SPOT004"]
    assert bool(spot004) == fires, spot004
    if fires:
        assert f"--save '{folder}' on the launch line" in spot004[0].message and spot004[0].loc.path == "k8s/job.yaml"
    assert not {f.code for f in result.findings} & {"SPOT001", "SPOT002"}  # the code may save and resume elsewhere too


def test_a_spot_image_job_that_names_no_checkpoint_folder_gets_no_spot_finding():
    assert not {c for c in codes({"k8s/job.yaml": SPOT_IMAGE_JOB}) if c.startswith("SPOT")}


def test_an_image_script_with_no_training_evidence_is_not_a_workload():
    evaluation = IMAGE_JOB.replace("/opt/megatron/pretrain_gpt.py, --train-iters, \"500000\"", "/opt/app/evaluate.py")
    assert scan_files({"k8s/job.yaml": evaluation}).workloads == []


def test_a_script_of_the_repository_is_linked_as_code_not_as_an_infrastructure_job():
    job = JOB.format(placement="          nodeSelector:\n            node.kubernetes.io/instance-type: p5.48xlarge\n")
    result = scan_files({"k8s/job.yaml": job, "train.py": TRAIN})
    [wl] = result.workloads
    assert wl["entrypoint"] == "train.py" and "code_known" not in wl


# -- Slurm: jobs on the queues of a ParallelCluster config -------------------------------------------------------------

PCLUSTER = """\
Region: us-east-1
Image:
  Os: ubuntu2204
HeadNode:
  InstanceType: m5.8xlarge
  Networking:
    SubnetId: subnet-0123456789abcdef0
Scheduling:
  Scheduler: slurm
  SlurmQueues:
    - Name: compute-gpu
      CapacityType: ONDEMAND
      Networking:
        SubnetIds: [subnet-0123456789abcdef0]
      ComputeResources:
        - Name: distributed-ml
          InstanceType: p4d.24xlarge
          MinCount: 0
          MaxCount: 4
{efa}    - Name: spot-gpu
      CapacityType: SPOT
      Networking:
        SubnetIds: [subnet-0123456789abcdef0]
      ComputeResources:
        - Name: g5
          InstanceType: g5.12xlarge
          MaxCount: 8
"""
EFA_ON = "          Efa:\n            Enabled: true\n"

SBATCH = """\
#!/bin/bash
#SBATCH --job-name=llm
#SBATCH --nodes=4
{extra}#SBATCH --exclusive

srun torchrun --nnodes 4 --nproc_per_node 8 train.py
"""


def _slurm(files: dict) -> dict:
    wl = next(w for w in scan_files(files).workloads if w["entrypoint"] == "train.py")
    return wl["compute"]


def test_a_job_without_partition_runs_on_the_first_queue_the_default():
    comp = _slurm({"train.py": TRAIN, "cluster/config.yaml": PCLUSTER.format(efa=EFA_ON), "jobs/llm.sbatch": SBATCH.format(extra="")})
    assert comp["instance"] == "p4d.24xlarge" and comp["nodes"] == 4
    assert comp["placed_on"] == "cluster/config.yaml#compute-gpu/distributed-ml"
    assert "default partition" in comp["placement"]
    assert comp["efa_requested"] == 4  # Efa.Enabled attaches all four of p4d's interfaces
    assert comp["usd_per_hour"] and comp["price_capacity"] == "on-demand"


def test_the_queue_a_job_names_decides_machine_and_market():
    comp = _slurm({"train.py": TRAIN, "cluster/config.yaml": PCLUSTER.format(efa=EFA_ON),
                   "jobs/llm.sbatch": SBATCH.format(extra="#SBATCH --partition=spot-gpu\n")})
    assert comp["instance"] == "g5.12xlarge" and comp["capacity"] == "spot"
    assert comp["placement"].startswith("--partition spot-gpu is the queue")


def test_a_partition_the_repository_does_not_define_places_nothing():
    comp = _slurm({"train.py": TRAIN, "cluster/config.yaml": PCLUSTER.format(efa=EFA_ON),
                   "jobs/llm.sbatch": SBATCH.format(extra="#SBATCH -p a100-onprem\n")})
    assert comp.get("placed_on") is None and comp["instance"] is None
    assert comp["placement_unknown"] == ("--partition a100-onprem: no queue of that name in the repository's cluster "
                                         "files (cluster/config.yaml)")


def test_a_multi_node_job_on_a_queue_without_efa_is_net001_at_the_queue():
    files = {"train.py": TRAIN, "cluster/config.yaml": PCLUSTER.format(efa=""), "jobs/llm.sbatch": SBATCH.format(extra="")}
    found = [f for f in __import__("helpers").findings(files, "NET001")]
    assert [(f.loc.path, f.loc.line) for f in found] == [("cluster/config.yaml", 16)]  # the compute resource: where Efa goes
    assert found[0].message.startswith("jobs/llm.sbatch runs on cluster/config.yaml#compute-gpu/distributed-ml, which does not enable EFA") and "4 nodes of p4d.24xlarge" in found[0].message
    assert not codes({**files, "cluster/config.yaml": PCLUSTER.format(efa=EFA_ON)}, "NET001")


def test_constraint_picks_the_compute_resource_of_a_queue_with_two():
    two = PCLUSTER.format(efa=EFA_ON).replace("    - Name: spot-gpu", "        - Name: h100\n          InstanceType: p5.48xlarge\n"
                                                                   "          MaxCount: 2\n    - Name: spot-gpu")
    files = {"train.py": TRAIN, "cluster/config.yaml": two, "jobs/llm.sbatch": SBATCH.format(extra="")}
    comp = _slurm(files)
    assert comp.get("placed_on") is None and "candidates differ" in comp["placement_unknown"]
    files["jobs/llm.sbatch"] = SBATCH.format(extra="#SBATCH --constraint=p5.48xlarge\n")
    comp = _slurm(files)
    assert comp["instance"] == "p5.48xlarge" and "--constraint p5.48xlarge" in comp["placement"]


SLURM_CONF = """\
ClusterName=lab
NodeName=gpu[01-04] Gres=gpu:a100:8 CPUs=128 RealMemory=1000000
PartitionName=gpu Nodes=gpu[01-04] Default=YES MaxTime=INFINITE
"""


def test_an_on_premises_partition_is_priced_per_gpu_hour_never_as_a_cloud_machine():
    files = {"train.py": TRAIN, "etc/slurm.conf": SLURM_CONF, "jobs/llm.sbatch": SBATCH.format(extra="#SBATCH --gres=gpu:8\n")}
    result = scan_files(files)
    part = next(c for c in result.computes if c["id"].startswith("etc/slurm.conf#"))
    assert part["instance"] is None and part["priced_per_gpu_hour"]["gpu_model"].startswith("A100")
    comp = _slurm(files)
    assert comp["placed_on"] == part["id"] and comp["instance"] is None
    assert comp["priced_per_gpu_hour"]["gpu_model"].startswith("A100")  # the partition's Gres names the model
    assert "cloud list price of the same GPU-hours" in comp["price_source"]


def test_a_hyperpod_group_serves_the_partition_its_provisioning_parameters_assign():
    from pathlib import Path

    from gpulint.testing import scan_tree

    result, _ = scan_tree(Path(__file__).parent.parent / "fixtures" / "wm-hyperpod-partitions")
    wl = next(w for w in result.workloads if w["entrypoint"] == "jobs/finetune.py")
    comp = wl["compute"]
    assert comp["instance"] == "p4d.24xlarge" and comp["placed_on"] == "cluster/cluster-config.json#a100"
    assert "provisioning_parameters.json:6 assigns it" in comp["placement"]


def test_a_job_without_partition_is_not_placed_when_the_repository_has_several_clusters():
    files = {"train.py": TRAIN, "clusters/a/config.yaml": PCLUSTER.format(efa=EFA_ON),
             "clusters/b/config.yaml": PCLUSTER.format(efa=EFA_ON).replace("p4d.24xlarge", "p5.48xlarge"),
             "jobs/llm.sbatch": SBATCH.format(extra="")}
    comp = _slurm(files)
    assert comp.get("placed_on") is None and comp["instance"] is None
    assert comp["placement_unknown"] == ("no --partition, and the repository defines several clusters "
                                         "(clusters/a/config.yaml, clusters/b/config.yaml)")


def test_a_job_without_partition_is_not_placed_on_a_cluster_template_far_from_it():
    files = {"examples/esm/train.py": TRAIN, "architectures/pcluster/templates/vanilla.yaml": PCLUSTER.format(efa=EFA_ON),
             "examples/esm/train.sbatch": SBATCH.format(extra="")}
    wl = next(w for w in scan_files(files).workloads if w["entrypoint"] == "examples/esm/train.py")
    assert wl["compute"].get("placed_on") is None
    assert wl["compute"]["placement_unknown"].startswith("no --partition, and the only cluster file is not beside the job")


@pytest.mark.parametrize("procs, fires", [("4", True), ("8", False), ("1", False), ("$NPROC", False)])
def test_idle_gpus_on_an_image_job_go_by_the_launchers_process_count(procs, fires):
    """MEM004 on an infrastructure-only job: torchrun starting 4 processes on an 8-GPU p5 leaves 4 idle whatever the
    image's code does; one process of unseen code may drive every GPU (DataParallel, device_map), so it stays silent,
    as does a count read from a variable."""
    job = IMAGE_JOB.replace("--nproc_per_node=8", f"--nproc_per_node={procs}")
    result = scan_files({"k8s/job.yaml": job})
    [wl] = result.workloads
    assert wl["code_known"] is False
    mem004 = [f for f in result.findings if f.code == "MEM004"]
    assert bool(mem004) == fires, mem004
    if fires:
        assert "4 of 8 GPUs are billed and idle" in mem004[0].message and mem004[0].loc.path == "k8s/job.yaml"


def test_a_job_without_partition_on_a_cluster_with_two_gpu_partitions_and_no_default_says_which():
    conf = ("ClusterName=lab\nNodeName=a[01-02] Gres=gpu:a100:8 CPUs=128\nNodeName=h[01-02] Gres=gpu:h100:8 CPUs=192\n"
            "PartitionName=a100 Nodes=a[01-02]\nPartitionName=h100 Nodes=h[01-02]\n")
    files = {"train.py": TRAIN, "etc/slurm.conf": conf, "jobs/llm.sbatch": SBATCH.format(extra="#SBATCH --gres=gpu:8\n")}
    comp = _slurm(files)
    assert comp.get("placed_on") is None
    assert comp["placement_unknown"] == "no --partition, no queue marked default, and GPU queues: a100, h100"
    files["etc/slurm.conf"] = conf.replace("PartitionName=h100 Nodes=h[01-02]", "PartitionName=h100 Nodes=h[01-02] Default=YES")
    comp = _slurm(files)
    assert comp["placed_on"].endswith("h100") and "placement_unknown" not in comp


def _pool_with(requirement: str) -> str:
    """NODEPOOL whose instance-type requirement is replaced by another (key, operator, values)."""
    return NODEPOOL.format(name="gpu", label="training", instance="x").replace(
        '        - key: node.kubernetes.io/instance-type\n          operator: In\n          values: ["x"]\n', requirement)


_REQ = "        - key: {key}\n          operator: {op}\n{values}"


@pytest.mark.parametrize("key, op, values", [
    ("karpenter.k8s.aws/instance-category", "In", '["g", "p"]'),
    ("eks.amazonaws.com/instance-category", "In", '["g"]'),  # EKS Auto Mode spells the keys in its own domain
    ("karpenter.k8s.aws/instance-gpu-manufacturer", "In", '["nvidia"]'),
    ("karpenter.k8s.aws/instance-gpu-count", "Gt", '["0"]'),
    ("eks.amazonaws.com/instance-gpu-count", "Exists", None),
    ("karpenter.k8s.aws/instance-family", "In", '["g5", "g6e", "p4d"]'),
    ("karpenter.azure.com/sku-gpu-count", "Gt", '["0"]'),
])
def test_a_pool_that_admits_only_gpu_instances_is_gpu_capacity_and_places_a_gpu_pod(key, op, values):
    req = _REQ.format(key=key, op=op, values=f"          values: {values}\n" if values else "")
    files = {"train.py": TRAIN, "k8s/job.yaml": _job(), "k8s/nodepool.yaml": _pool_with(req)}
    result = scan_files(files)
    pool = next(c for c in result.computes if c["id"] == "k8s/nodepool.yaml#NodePool/gpu")
    assert pool["device"] == "gpu" and pool["instance"] is None
    assert pool["device_reason"].startswith(f"it launches only GPU instances ({key} {op}")
    wl, comp = _compute(result)
    assert comp["placed_on"] == "k8s/nodepool.yaml#NodePool/gpu" and comp["instance"] is None
    assert any(u.startswith("instance: any GPU instance that ") and "(placed on k8s/nodepool.yaml)" in u for u in wl["unknown"])
    assert comp.get("price") is None  # a candidate set is never priced as one of its machines


@pytest.mark.parametrize("key, op, values", [
    ("karpenter.k8s.aws/instance-category", "In", '["c", "g"]'),  # CPU types too
    ("karpenter.k8s.aws/instance-category", "In", '["inf", "trn"]'),  # Neuron devices, not GPUs
    ("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist", None),
    ("karpenter.k8s.aws/instance-gpu-count", "Lt", '["2"]'),  # 0 GPUs is below 2
    ("karpenter.k8s.aws/instance-family", "In", '["m5", "g5"]'),
    ("karpenter.k8s.aws/instance-category", "NotIn", '["c", "m", "r"]'),  # t, x, z ... are left
])
def test_a_pool_that_admits_other_instances_too_is_not_gpu_capacity(key, op, values):
    req = _REQ.format(key=key, op=op, values=f"          values: {values}\n" if values else "")
    result = scan_files({"train.py": TRAIN, "k8s/job.yaml": _job(), "k8s/nodepool.yaml": _pool_with(req)})
    pool = next(c for c in result.computes if c["id"] == "k8s/nodepool.yaml#NodePool/gpu")
    assert pool["device"] == "unknown"
    _, comp = _compute(result)
    assert comp.get("placed_on") is None
