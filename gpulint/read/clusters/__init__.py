"""Cluster definitions -> compute targets: the capacity jobs run on.

Platform teams describe their GPU capacity in cluster files, not in the job:
an AWS ParallelCluster config's Slurm queues, an eksctl ClusterConfig's node
groups, a SageMaker HyperPod cluster's instance groups, an AWS Batch compute
environment, a GCP Cluster Toolkit blueprint's partitions, ``slurm.conf``
node and partition lines, a Ray cluster launcher's node types, Slinky's
NodeSets (Slurm nodes as pods). Each format is
one module of this package exposing

    looks_like(doc, path) -> bool      # a cheap test on one parsed document
    read(docs, path) -> list[Fact]     # the documents that look like it

and emitting its targets through :func:`gpulint.read.clusters.common.capacity`,
so that every format says the same things the same way (instance, node counts,
capacity type, RDMA attached or not, and the keys jobs are placed by: a Slurm
partition, node labels and taints). Jobs are placed on these targets by
``gpulint.link.placement``.

A format is added by writing its module and listing it in ``FORMATS`` below. ``slurm.conf`` is not YAML: it
is a file kind of its own (``slurmconf``, gpulint.read.builtin) read by :mod:`.slurmconf`.
"""
from __future__ import annotations

import importlib

from gpulint.core.model import Fact
from gpulint.core.sources import Source

#: (format, module) in the order they are tried; the first format that claims a document reads it
FORMATS: list[tuple[str, str]] = [
    ("parallelcluster", "gpulint.read.clusters.parallelcluster"),
    ("toolkit", "gpulint.read.clusters.toolkit"),
    ("eksctl", "gpulint.read.clusters.eksctl"),
    ("hyperpod", "gpulint.read.clusters.hyperpod"),
    ("cloudformation", "gpulint.read.clusters.cloudformation"),
    ("ray", "gpulint.read.clusters.ray"),
    ("slinky", "gpulint.read.clusters.slinky"),
]

#: cheap text gates: a file with none of these strings holds no cluster definition of a listed format
NEEDS: tuple[str, ...] = (
    "SlurmQueues", "deployment_groups",  # ParallelCluster config, Cluster Toolkit blueprint
    "eksctl.io/",  # eksctl ClusterConfig
    "InstanceGroupName", "worker_groups",  # SageMaker HyperPod create-cluster input, provisioning_parameters.json
    # CloudFormation resources that are capacity
    "AWS::SageMaker::Cluster", "AWS::Batch::", "AWS::EKS::Nodegroup", "AWS::EC2::Instance", "AWS::EC2::LaunchTemplate",
    "AWS::AutoScaling::AutoScalingGroup", "Custom::PclusterCluster", "AWS::ParallelCluster::Cluster",
    "available_node_types", "head_node", "worker_nodes",  # Ray cluster launcher config
    "slinky.slurm.net", "nodesets",  # Slinky NodeSet resources, the values of its slurm Helm chart
)


def read_clusters(source: Source) -> list[Fact]:
    """The capacity facts of every document of one YAML/JSON file that some listed format claims."""
    return read_cluster_docs([d for d in source.tree or [] if not d.template], source.path)


def read_cluster_docs(docs: list, path: str) -> list[Fact]:
    """The capacity facts of the documents some listed format claims (documents of a file, or written in another
    file's value: a Terraform ``helm_release``'s values)."""
    out: list[Fact] = []
    for _name, module in FORMATS:
        if not docs:
            break
        mod = importlib.import_module(module)
        mine = [d for d in docs if mod.looks_like(d, path)]
        if mine:
            out += mod.read(mine, path)
            taken = {id(d) for d in mine}
            docs = [d for d in docs if id(d) not in taken]
    return out
