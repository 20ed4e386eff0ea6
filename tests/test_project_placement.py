"""A Slurm job that names no partition, in a repository of several clusters, runs on the one cluster file of its
own project folder (issue 46, placement); the GPUs and EFA devices of a Slurm node that is a pod are the pod's."""
from __future__ import annotations

from gpulint.testing import scan_files
from samples import DDP_BF16_LOOP

# ---------------------------------------------------------------- placement in the job's project folder

NODESET = """\
nodesets:
  gpu:
    enabled: true
    replicas: 4
    slurmd:
      resources:
        limits:
          nvidia.com/gpu: {gpus}
          vpc.amazonaws.com/efa: {efa}
    podSpec:
      nodeSelector:
        node.kubernetes.io/instance-type: {instance}
    partition:
      enabled: true
      config: "Default=YES"
"""

JOB = """\
#!/bin/bash
#SBATCH --nodes=4
#SBATCH --exclusive
srun torchrun --nproc_per_node={gpus} --nnodes=4 ../../train/train.py
"""


def _placed(files: dict[str, str]):
    result = scan_files(files)
    return result, {w["launchers"][0]["path"]: w["compute"] for w in result.workloads if w["launchers"]}


def test_a_job_beside_the_only_cluster_file_of_its_folder_runs_there():
    files = {"train/train.py": DDP_BF16_LOOP,
             "clusters/p5/values.yaml": NODESET.format(gpus=8, efa=32, instance="p5.48xlarge"),
             "clusters/p5/job.sbatch": JOB.format(gpus=8),
             "clusters/g5/values.yaml": NODESET.format(gpus=8, efa=1, instance="g5.48xlarge"),
             "clusters/g5/job.sbatch": JOB.format(gpus=8),
             "clusters/jobs/elsewhere.sbatch": JOB.format(gpus=8)}
    _, by_launcher = _placed(files)
    p5, g5 = by_launcher["clusters/p5/job.sbatch"], by_launcher["clusters/g5/job.sbatch"]
    assert p5["instance"] == "p5.48xlarge" and g5["instance"] == "g5.48xlarge"
    assert "assumed: the only cluster file in the job's folder clusters/p5/ (clusters/p5/values.yaml)" in p5["placement"]
    # a job whose folder holds no cluster file, in a repository of several: not placed, and said so
    other = by_launcher["clusters/jobs/elsewhere.sbatch"]
    assert other["instance"] is None and "several clusters" in (other.get("placement_unknown") or "")


def test_two_cluster_files_in_the_jobs_folder_place_nothing():
    files = {"train/train.py": DDP_BF16_LOOP,
             "clusters/p5/values.yaml": NODESET.format(gpus=8, efa=32, instance="p5.48xlarge"),
             "clusters/p5/values-big.yaml": NODESET.format(gpus=8, efa=32, instance="p4d.24xlarge"),
             "clusters/p5/job.sbatch": JOB.format(gpus=8),
             "clusters/g5/values.yaml": NODESET.format(gpus=8, efa=1, instance="g5.48xlarge")}
    _, by_launcher = _placed(files)
    assert by_launcher["clusters/p5/job.sbatch"]["instance"] is None


def _codes(files):
    result, _ = _placed(files)
    return sorted(f.code for f in result.findings if f.code in ("MEM004", "NET001"))


def test_a_slurmd_pod_with_half_the_gpus_and_half_the_efa_is_a_fair_share():
    base = {"train/train.py": DDP_BF16_LOOP, "clusters/p5/job.sbatch": JOB.format(gpus=4),
            "clusters/g5/values.yaml": NODESET.format(gpus=8, efa=1, instance="g5.48xlarge")}
    # a Slurm node that is a pod with 4 of the p5's 8 GPUs: torchrun's 4 per node use all of it, and 16 of 32 EFA
    # devices are those GPUs' share
    assert _codes({**base, "clusters/p5/values.yaml": NODESET.format(gpus=4, efa=16, instance="p5.48xlarge")}) == []
    # 8 of 32 EFA devices for half the GPUs is less than their share
    assert _codes({**base, "clusters/p5/values.yaml": NODESET.format(gpus=4, efa=8, instance="p5.48xlarge")}) == ["NET001"]
