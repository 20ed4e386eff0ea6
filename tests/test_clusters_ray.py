"""Ray cluster launcher configs (``ray up``): one capacity target per node type, values and lines."""
from __future__ import annotations

import json
import subprocess
import sys

from gpulint.read.clusters import ray
from gpulint.read.yamlnodes import load_documents
from helpers import line_of as line, only_fact as one

AWS = """\
cluster_name: llm-train
max_workers: 6
provider:
  type: aws
  region: us-east-1
available_node_types:
  head.cpu:
    resources: {}
    node_config:
      InstanceType: m6i.2xlarge
  gpu.spot:
    min_workers: 2
    max_workers: 4
    resources: {"CPU": 48, "GPU": 8}
    node_config:
      InstanceType: p4d.24xlarge
      InstanceMarketOptions:
        MarketType: spot
      NetworkInterfaces:
        - DeviceIndex: 0
          InterfaceType: efa
        - DeviceIndex: 1
          NetworkCardIndex: 1
          InterfaceType: efa
  gpu.big:
    max_workers: 10
    node_config:
      InstanceType: g5.12xlarge
head_node_type: head.cpu
setup_commands:
  - pip install -U "ray[default]"
head_start_ray_commands:
  - ray stop
  - ray start --head --port=6379 --autoscaling-config=~/ray_bootstrap_config.yaml
"""

GCP = """\
cluster_name: tune
provider:
  type: gcp
  region: us-central1
  availability_zone: us-central1-a
  project_id: my-project
available_node_types:
  ray_head:
    resources: {"CPU": 8, "GPU": 1}
    node_config:
      machineType: n1-standard-8
      guestAccelerators:
        - acceleratorType: nvidia-tesla-t4
          acceleratorCount: 1
      scheduling:
        - onHostMaintenance: TERMINATE
  ray_a100:
    min_workers: 0
    max_workers: 3
    node_config:
      machineType: zones/us-central1-a/machineTypes/a2-highgpu-2g
      scheduling:
        - preemptible: true
        - onHostMaintenance: TERMINATE
  ray_l4:
    max_workers: 1
    node_config:
      machineType: g2-standard-8
      scheduling: {provisioningModel: SPOT}
head_node_type: ray_head
"""

AZURE_LEGACY = """\
cluster_name: default
min_workers: 1
max_workers: 3
provider:
  type: azure
  location: westus2
  resource_group: ray-rg
head_node:
  azure_arm_parameters:
    vmSize: Standard_D4s_v3
worker_nodes:
  azure_arm_parameters:
    vmSize: Standard_NC24ads_A100_v4
    priority: Spot
"""


def facts_of(text, path="ray/cluster.yaml"):
    docs = load_documents(text)
    mine = [d for d in docs if ray.looks_like(d, path)]
    return ray.read(mine, path)


def none(facts, kind, target):
    assert not [f for f in facts if f.kind == kind and f.target == target], (kind, target)


def test_aws_node_types_are_targets_with_counts_market_and_efa():
    facts = facts_of(AWS)
    targets = {f.target: f for f in facts if f.kind == "compute.target"}
    assert sorted(targets) == ["gpu.big", "gpu.spot", "head.cpu"]
    t = targets["gpu.spot"]
    assert t.value == {"source": "ray", "provider": "aws", "resource": "RayNodeType/gpu.spot", "role": None,
                       "partition": None}
    assert t.attrs == {"capacity_of": "ray", "cluster": "llm-train", "region": "us-east-1"}
    assert t.loc.line == line(AWS, "gpu.spot:")
    it = one(facts, "compute.instance_type", "gpu.spot")
    assert (it.value, it.loc.line, it.attrs) == ("p4d.24xlarge", line(AWS, "p4d.24xlarge"), {})
    assert (one(facts, "compute.node_count", "gpu.spot").value, one(facts, "compute.node_count", "gpu.spot").loc.line) \
        == (4, line(AWS, "max_workers: 4"))
    assert one(facts, "compute.min_nodes", "gpu.spot").loc.line == line(AWS, "min_workers: 2")
    assert one(facts, "compute.min_nodes", "gpu.spot").value == 2
    cap = one(facts, "compute.capacity", "gpu.spot")
    assert (cap.value, cap.loc.line) == ("spot", line(AWS, "MarketType: spot"))
    efa = one(facts, "compute.efa", "gpu.spot")
    assert (efa.value, efa.loc.line, efa.attrs) == (2, line(AWS, "InterfaceType: efa"), {})
    gpus = one(facts, "compute.gpus_per_node", "gpu.spot")
    assert (gpus.value, gpus.loc.line) == (8, line(AWS, '"GPU": 8'))


def test_aws_head_always_runs_and_cluster_cap_bounds_a_type():
    facts = facts_of(AWS)
    head = one(facts, "compute.target", "head.cpu")
    assert head.attrs["head"] is True and "head" not in one(facts, "compute.target", "gpu.spot").attrs
    assert one(facts, "compute.node_count", "head.cpu").value == 1
    assert one(facts, "compute.min_nodes", "head.cpu").value == 1
    assert one(facts, "compute.min_nodes", "head.cpu").loc.line == line(AWS, "head.cpu:")
    # max_workers: 10 of the type, but the cluster launches at most 6 workers in all
    big = one(facts, "compute.node_count", "gpu.big")
    assert (big.value, big.loc.line) == (6, line(AWS, "max_workers: 6"))
    none(facts, "compute.min_nodes", "gpu.big")  # min_workers unstated: no floor is claimed
    none(facts, "compute.capacity", "gpu.big")
    none(facts, "compute.gpus_per_node", "gpu.big")  # auto-detected from the instance by Ray: not stated here
    efa = one(facts, "compute.efa", "gpu.big")
    assert (efa.value, efa.attrs) == (0, {"absent": True})


def test_gcp_machine_types_accelerators_and_preemptible():
    facts = facts_of(GCP)
    assert one(facts, "compute.target", "ray_head").value["provider"] == "gcp"
    assert one(facts, "compute.target", "ray_head").attrs["region"] == "us-central1"
    assert one(facts, "compute.instance_type", "ray_head").value == "n1-standard-8"
    acc = one(facts, "compute.accelerator", "ray_head")
    assert acc.value == {"type": "nvidia-tesla-t4", "count": 1} and acc.loc.line == line(GCP, "nvidia-tesla-t4")
    assert one(facts, "compute.gpus_per_node", "ray_head").value == 1  # resources.GPU
    none(facts, "compute.capacity", "ray_head")  # onHostMaintenance is no market
    a100 = one(facts, "compute.instance_type", "ray_a100")
    assert (a100.value, a100.loc.line) == ("a2-highgpu-2g", line(GCP, "a2-highgpu-2g"))
    cap = one(facts, "compute.capacity", "ray_a100")
    assert (cap.value, cap.loc.line) == ("spot", line(GCP, "preemptible: true"))
    assert one(facts, "compute.min_nodes", "ray_a100").value == 0
    assert one(facts, "compute.node_count", "ray_a100").value == 3
    l4 = one(facts, "compute.capacity", "ray_l4")
    assert (l4.value, l4.loc.line) == ("spot", line(GCP, "provisioningModel: SPOT"))
    # no cluster max_workers: the type's own cap stands
    assert one(facts, "compute.node_count", "ray_l4").value == 1
    assert not [f for f in facts if f.kind == "compute.efa"]  # EFA is AWS's


def test_legacy_head_node_and_worker_nodes_on_azure():
    facts = facts_of(AZURE_LEGACY)
    assert sorted(f.target for f in facts if f.kind == "compute.target") == ["ray.head.default", "ray.worker.default"]
    w = "ray.worker.default"
    assert one(facts, "compute.target", w).value["provider"] == "azure"
    assert one(facts, "compute.target", w).attrs["region"] == "westus2"
    it = one(facts, "compute.instance_type", w)
    assert (it.value, it.loc.line) == ("Standard_NC24ads_A100_v4", line(AZURE_LEGACY, "NC24ads"))
    assert (one(facts, "compute.node_count", w).value, one(facts, "compute.node_count", w).loc.line) == (3, 3)
    assert (one(facts, "compute.min_nodes", w).value, one(facts, "compute.min_nodes", w).loc.line) == (1, 2)
    assert one(facts, "compute.capacity", w).loc.line == line(AZURE_LEGACY, "priority: Spot")
    h = "ray.head.default"
    assert one(facts, "compute.target", h).attrs["head"] is True
    assert one(facts, "compute.instance_type", h).value == "Standard_D4s_v3"
    assert one(facts, "compute.node_count", h).value == 1 and one(facts, "compute.min_nodes", h).value == 1
    none(facts, "compute.capacity", h)


def test_interpolated_values_are_not_facts():
    text = AWS.replace("InstanceType: p4d.24xlarge", "InstanceType: ${GPU_TYPE}").replace(
        "max_workers: 4", "max_workers: $MAX")
    facts = facts_of(text)
    none(facts, "compute.instance_type", "gpu.spot")
    # the type's own cap is not literal: neither it nor the cluster's is claimed as its count
    none(facts, "compute.node_count", "gpu.spot")
    assert one(facts, "compute.target", "gpu.spot")


def test_kubernetes_provider_states_only_what_ray_advertises():
    text = """\
cluster_name: k8s
provider: {type: kubernetes, namespace: ray}
max_workers: 2
available_node_types:
  worker_gpu:
    min_workers: 0
    max_workers: 2
    resources: {GPU: 1}
    node_config:
      apiVersion: v1
      kind: Pod
      spec:
        containers: [{name: ray-node, image: rayproject/ray:2.9.0-gpu}]
head_node_type: head
"""
    facts = facts_of(text)
    t = one(facts, "compute.target", "worker_gpu")
    assert t.value["provider"] is None
    assert one(facts, "compute.gpus_per_node", "worker_gpu").value == 1
    assert not [f for f in facts if f.kind in ("compute.instance_type", "compute.efa")]


def test_not_a_ray_cluster():
    others = [
        "provider: {type: aws}\nname: something\n",  # no node types
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  available_node_types: a\n",
        "available_node_types:\n  a: {node_config: {InstanceType: p4d.24xlarge}}\n",  # no provider
        "head_node: {InstanceType: m5.large}\nprovider: aws\n",  # provider is not a mapping
        "- a\n- b\n",
    ]
    for text in others:
        assert not any(ray.looks_like(d, "x.yaml") for d in load_documents(text)), text


def test_odd_shapes_do_not_raise():
    text = """\
cluster_name: odd
max_workers: [1]
provider: {type: aws}
available_node_types:
  a: [1, 2]
  b:
    max_workers: {x: 1}
    min_workers: null
    resources: [GPU]
    node_config:
      InstanceType: [p4d.24xlarge]
      InstanceMarketOptions: spot
      NetworkInterfaces: {InterfaceType: efa}
  c: {node_config: null}
head_node_type: [b]
"""
    facts = facts_of(text)
    assert sorted(f.target for f in facts if f.kind == "compute.target") == ["b", "c"]
    assert not [f for f in facts if f.kind in ("compute.instance_type", "compute.node_count", "compute.capacity",
                                               "compute.efa", "compute.gpus_per_node")]


def test_workloads_json_lists_ray_node_types(tmp_path):
    (tmp_path / "infra").mkdir()
    (tmp_path / "infra" / "cluster.yaml").write_text(AWS, encoding="utf-8")
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.nn.Linear(4, 4).cuda()\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "gpulint", "workloads", "--format", "json", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode in (0, 1), run.stderr
    data = json.loads(run.stdout)
    text = json.dumps(data)
    for name in ("gpu.spot", "gpu.big", "head.cpu"):
        assert name in text, name
    assert "p4d.24xlarge" in text and "SYS001" not in text


def test_every_fact_has_its_registered_shape():
    import jsonschema

    from gpulint.core import facts as vocabulary

    for text in (AWS, GCP, AZURE_LEGACY):
        for f in facts_of(text):
            jsonschema.validate(f.value, vocabulary.KINDS[f.kind].schema)
            assert f.target
