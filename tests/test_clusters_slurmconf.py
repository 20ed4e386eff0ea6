"""slurm.conf: a capacity target per partition, its nodes counted from hostlists and its GPUs from their Gres."""
from __future__ import annotations

import jsonschema
import pytest

from gpulint.core import facts as vocabulary
from gpulint.read.builtin import gpulint_file_kinds
from gpulint.read.clusters.slurmconf import gres_gpus, hostlist, read_slurmconf
from helpers import only_fact as one

CONF = """\
# slurm.conf for the training cluster
ClusterName=mlcluster
SlurmctldHost=head01
SelectType=select/cons_tres
GresTypes=gpu

# COMPUTE NODES
NodeName=DEFAULT CPUs=128 RealMemory=1000000 State=UNKNOWN
NodeName=dgx[001-016] Gres=gpu:h100:8 Feature=h100,ib \\
    Sockets=2 CoresPerSocket=56
NodeName=l40s[01-04] Gres=gpu:l40s:4(S:0-1),nvme:1 Feature=l40s
NodeName=cpu[1-8,10] CPUs=64   # no GPUs
NodeSet=hopper Feature=h100

PartitionName=DEFAULT MaxTime=7-00:00:00 State=UP
PartitionName=h100 Nodes=hopper Default=YES MaxTime=2-00:00:00
PartitionName=inference Nodes=l40s[01-04]
PartitionName=cpu Nodes=cpu[1-8,10]
PartitionName=mixed Nodes=dgx[001-002],l40s01
PartitionName=all Nodes=ALL Default=NO
"""


def read(text, path="slurm.conf"):
    out = read_slurmconf(text, path)
    for f in out:
        jsonschema.validate(f.value, vocabulary.KINDS[f.kind].schema)
    return out


def line_of(text, needle):
    hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def none(out, target, kind):
    return not [f for f in out if f.target == target and f.kind == kind]


def test_one_target_per_partition():
    out = read(CONF)
    targets = [f for f in out if f.kind == "compute.target"]
    assert [t.value["partition"] for t in targets] == ["h100", "inference", "cpu", "mixed", "all"]
    t = targets[0]
    assert t.value == {"source": "slurm.conf", "provider": None, "resource": "Partition/h100", "role": None, "partition": "h100"}
    assert t.attrs == {"capacity_of": "slurm", "default": True, "cluster": "mlcluster"}
    assert (t.target, t.loc.line, t.loc.column) == ("Partition/h100", line_of(CONF, "PartitionName=h100"), 1)
    assert all("default" not in x.attrs for x in targets[1:])  # Default=NO, and no other says YES
    assert not [f for f in out if f.kind == "compute.instance_type"]  # on-premises: no instance, no provider


def test_gpus_come_from_the_nodes_gres_through_nodesets():
    out = read(CONF)
    gpn = one(out, "compute.gpus_per_node", "Partition/h100")
    assert (gpn.value, gpn.loc.line, gpn.loc.column) == (8, line_of(CONF, "NodeName=dgx"), 23)
    acc = one(out, "compute.accelerator", "Partition/h100")
    assert acc.value == {"type": "h100", "count": 8} and acc.loc.line == gpn.loc.line
    nodes = one(out, "compute.node_count", "Partition/h100")
    assert (nodes.value, nodes.loc.line, nodes.loc.column) == (16, line_of(CONF, "PartitionName=h100"), 20)
    inf = one(out, "compute.accelerator", "Partition/inference")
    assert inf.value == {"type": "l40s", "count": 4} and inf.loc.line == line_of(CONF, "NodeName=l40s")
    assert one(out, "compute.node_count", "Partition/inference").value == 4


def test_cpu_and_mixed_partitions_state_only_their_node_count():
    out = read(CONF)
    assert one(out, "compute.node_count", "Partition/cpu").value == 9
    assert none(out, "Partition/cpu", "compute.gpus_per_node") and none(out, "Partition/cpu", "compute.accelerator")
    assert one(out, "compute.node_count", "Partition/mixed").value == 3
    assert none(out, "Partition/mixed", "compute.gpus_per_node")  # 8 GPUs on two nodes, 4 on the third
    assert one(out, "compute.node_count", "Partition/all").value == 16 + 4 + 9


def test_defaults_continuations_and_case():
    text = """\
nodename=DEFAULT Gres=gpu:a100:4
nodename=a[1-2]
NodeName=b1 Gres=gpu:2   # overrides the default
partitionname=A100 nodes=a[1-2] \\
  default=yes
PartitionName=b Nodes=b1
"""
    out = read(text)
    t = one(out, "compute.target", "Partition/A100")
    assert t.attrs.get("default") is True and t.loc.line == 4
    assert one(out, "compute.gpus_per_node", "Partition/A100").value == 4
    assert one(out, "compute.gpus_per_node", "Partition/A100").loc.line == 1  # the DEFAULT line that gives the Gres
    assert one(out, "compute.gpus_per_node", "Partition/b").value == 2
    assert none(out, "Partition/b", "compute.accelerator")  # gpu:2 names no model


def test_nodes_defined_elsewhere_are_counted_not_described():
    text = "include /etc/slurm/nodes.conf\nPartitionName=gpu Nodes=gpu-[01-32] Default=YES\n"
    out = read(text)
    assert one(out, "compute.node_count", "Partition/gpu").value == 32
    assert none(out, "Partition/gpu", "compute.gpus_per_node")


@pytest.mark.parametrize("expr,names", [
    ("gpu[001-003]", ["gpu001", "gpu002", "gpu003"]),
    ("n[1-2,5],login", ["n1", "n2", "n5", "login"]),
    ("r[1-2]-n[01-02]", ["r1-n01", "r1-n02", "r2-n01", "r2-n02"]),
    ("n[2-1]", None), ("n[a-b]", None), ("n[1-3", None), ("n[0-99999999]", None),
])
def test_hostlist(expr, names):
    assert hostlist(expr) == names


@pytest.mark.parametrize("gres,got", [
    ("gpu:a100:8", (8, "a100")), ("gpu:8", (8, None)), ("gpu", (1, None)), ("nvme:1", (0, None)),
    ("gpu:tesla:no_consume:2", (2, "tesla")), ("gpu:a100:2,gpu:v100:2", (4, None)), ("gpu:a100:4(S:0-1)", (4, "a100")),
    ("gpu:a100:$N", None),
])
def test_gres_gpus(gres, got):
    assert gres_gpus(gres) == got


def test_must_not_read_and_never_raises():
    assert read("# nothing here\nSlurmctldHost=h\nNodeName=n1 CPUs=4\n") == []
    for junk in ("PartitionName=", "PartitionName=p Nodes=[[[", "NodeName=n[1-", "=\n=\\", "PartitionName=p Nodes=x[1-999999999]",
                 "NodeSet=s Nodes=s\nPartitionName=p Nodes=s\n", "\\"):
        read(junk)
    out = read("PartitionName=p Nodes=x[1-999999999]\n")  # too many to list: the partition says no count
    assert none(out, "Partition/p", "compute.node_count")


def test_only_slurm_config_names_are_claimed():
    kind = next(k for k in gpulint_file_kinds() if k.name == "slurmconf")
    for name in ("slurm.conf", "slurm-gpu.conf", "slurm_parallelcluster.conf", "prod.slurm.conf"):
        assert kind.claims(name), name
    for name in ("gres.conf", "cgroup.conf", "slurmdbd.conf", "nginx.conf", "slurm.conf.j2", "slurm.yaml"):
        assert not kind.claims(name), name


def test_workloads_command_lists_the_cluster_targets_of_all_three_formats(tmp_path):
    """End to end: `gpulint workloads --format json` over a repository holding a ParallelCluster config, a
    Cluster Toolkit blueprint and a slurm.conf lists their targets, without errors."""
    import json

    from conftest import run_cli
    from test_clusters_parallelcluster import CONFIG
    from test_clusters_toolkit import BLUEPRINT

    (tmp_path / "infra").mkdir()
    (tmp_path / "infra" / "pcluster.yaml").write_text(CONFIG)
    (tmp_path / "infra" / "blueprint.yaml").write_text(BLUEPRINT)
    (tmp_path / "infra" / "slurm.conf").write_text(CONF)
    proc = run_cli("workloads", tmp_path, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    computes = {c["id"]: c for c in json.loads(proc.stdout)["computes"]}
    assert {"infra/pcluster.yaml#train/p5", "infra/pcluster.yaml#block/h100", "infra/blueprint.yaml#a3_partition/a3_nodeset",
            "infra/blueprint.yaml#batch_partition/g2_nodeset", "infra/slurm.conf#Partition/h100"} <= set(computes), sorted(computes)
    p5 = computes["infra/pcluster.yaml#train/p5"]
    assert (p5["source"], p5["instance_written"], p5["nodes"], p5["min_nodes"], p5["capacity"]) == (
        "parallelcluster", "p5.48xlarge", 8, 2, "on-demand")
    assert computes["infra/blueprint.yaml#a3_partition/a3_nodeset"]["nodes"] == 4
    assert computes["infra/slurm.conf#Partition/h100"]["gpus_per_node"] == 8
