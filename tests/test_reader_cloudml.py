"""Azure ML and Vertex AI job specs -> facts at exact lines; other YAML stays silent."""
from __future__ import annotations

import copy

import pytest

from gpulint.read.cloudml import looks_like_azureml, looks_like_vertex, read_azureml, read_vertex
from gpulint.read.yamlnodes import Doc, load_documents

# After the Azure ML CLI v2 DeepSpeed example (commandJob schema, pytorch distribution).
AML_JOB = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
command: >-
  python train.py --deepspeed --deepspeed_config ds_config.json
experiment_name: DistributedJob-DeepSpeed
display_name: deepspeed-training
code: src
environment:
  build:
    path: docker-context
compute: azureml:gpu-v100-cluster
distribution:
  type: pytorch
  process_count_per_instance: 8
resources:
  instance_count: 2
environment_variables:
  NCCL_DEBUG: INFO
  NCCL_IB_DISABLE: 1
"""

AML_ACCELERATE = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
name: pix2seq
command: |
  echo "rank $NODE_RANK"
  accelerate launch --config_file accelerate_config_multi.yaml --num_machines 2 train.py
environment: azureml:acpt-pytorch-2.2-cuda12.1@latest
compute: azureml:a100-cluster
queue_settings:
  job_tier: Spot
resources:
  instance_count: 2
  instance_type: Standard_ND96amsr_A100_v4
"""

AML_CLUSTER = """\
$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json
name: gpu-cluster
type: amlcompute
size: Standard_ND96asr_v4
min_instances: 0
max_instances: 4
tier: low_priority
"""

AML_PIPELINE = """\
$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json
type: pipeline
jobs:
  prep:
    type: command
    command: python prep.py
    compute: azureml:cpu-cluster
  train:
    type: command
    command: python train.py --epochs 3
    compute: azureml:gpu-cluster
    resources:
      instance_count: 1
"""

# gcloud ai custom-jobs create --config=...: full CustomJob with jobSpec, two pools, spot.
VERTEX_JOB = """\
displayName: llama-ft
jobSpec:
  workerPoolSpecs:
    - machineSpec:
        machineType: a2-highgpu-8g
        acceleratorType: NVIDIA_TESLA_A100
        acceleratorCount: 8
      replicaCount: 1
      containerSpec:
        imageUri: us-docker.pkg.dev/example/train:latest
        command:
          - torchrun
        args:
          - --nnodes=3
          - --nproc_per_node=8
          - train.py
        env:
          - name: NCCL_DEBUG
            value: INFO
    - machineSpec:
        machineType: a2-highgpu-8g
        acceleratorType: NVIDIA_TESLA_A100
        acceleratorCount: 8
      replicaCount: 2
      containerSpec:
        imageUri: us-docker.pkg.dev/example/train:latest
        command: ["torchrun"]
        args: ["--nnodes=3", "--nproc_per_node=8", "train.py"]
  scheduling:
    strategy: SPOT
"""

# The --config form with a single pool as a mapping (as in johndpope/vertex-jumpstart job_config.yaml).
VERTEX_SINGLE = """\
workerPoolSpecs:
  machineSpec:
    machineType: g2-standard-12
    acceleratorType: NVIDIA_L4
    acceleratorCount: 1
  replicaCount: 1
  containerSpec:
    imageUri: 'gcr.io/example/pytorch-training:v1.0.1'
    args: ["python3", "-m", "trainer.task", "--epochs", "3"]
    env:
      - name: GCS_BUCKET_NAME
        value: gs://bucket
"""

VERTEX_PACKAGE = """\
worker_pool_specs:
  - machine_spec:
      machine_type: n1-standard-8
      accelerator_type: NVIDIA_TESLA_T4
      accelerator_count: 2
    replica_count: 1
    python_package_spec:
      executor_image_uri: us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-1:latest
      package_uris: [gs://bucket/trainer-0.1.tar.gz]
      python_module: trainer.task
      args: ["--lr", "0.001"]
"""


def line_of(text, needle):
    hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def only(facts, kind, target=None):
    found = [f for f in facts if f.kind == kind and (target is None or f.target == target)]
    assert len(found) == 1, (kind, target, found)
    return found[0]


def aml(text):
    return read_azureml(load_documents(text), "job.yaml")


def vertex(text):
    return read_vertex(load_documents(text), "job.yaml")


# ---------------------------------------------------------------- Azure ML


def test_azureml_command_job():
    pytest.importorskip("gpulint.read.shell.commands")
    facts = aml(AML_JOB)
    target = "command/deepspeed-training"
    t = only(facts, "compute.target", target)
    assert t.value == {"source": "azureml", "provider": "azure", "resource": "azureml:gpu-v100-cluster",
                       "role": "training"}
    assert t.loc.line == line_of(AML_JOB, "compute:")
    nodes = only(facts, "compute.node_count", target)
    assert nodes.value == 2 and nodes.loc.line == line_of(AML_JOB, "instance_count")
    env = {f.value["name"]: f.value["value"] for f in facts if f.kind == "env"}
    assert env == {"NCCL_DEBUG": "INFO", "NCCL_IB_DISABLE": "1"}
    launch = only(facts, "launch", target)
    # Azure ML itself starts process_count_per_instance copies on each of instance_count nodes
    assert launch.value["tool"] == "python" and launch.value["script"] == "train.py"
    assert launch.value["nproc_per_node"] == 8 and launch.value["nnodes"] == 2
    assert launch.attrs == {"distribution": "pytorch"}
    assert launch.loc.line == line_of(AML_JOB, "command:")
    assert not [f for f in facts if f.kind == "compute.instance_type"]  # the cluster's VM is defined elsewhere


def test_azureml_serverless_spot_and_multiline_command():
    pytest.importorskip("gpulint.read.shell.commands")
    facts = aml(AML_ACCELERATE)
    target = "command/pix2seq"
    inst = only(facts, "compute.instance_type", target)
    assert inst.value == "Standard_ND96amsr_A100_v4" and inst.loc.line == line_of(AML_ACCELERATE, "instance_type")
    cap = only(facts, "compute.capacity", target)
    assert cap.value == "spot" and cap.loc.line == line_of(AML_ACCELERATE, "job_tier")
    launch = only(facts, "launch", target)
    assert launch.value["tool"] == "accelerate" and launch.value["script"] == "train.py"
    assert launch.loc.line == line_of(AML_ACCELERATE, "accelerate launch")
    assert only(facts, "compute.target", target).value["role"] is None  # no distribution block


def test_azureml_compute_cluster_low_priority():
    facts = aml(AML_CLUSTER)
    target = "amlcompute/gpu-cluster"
    assert only(facts, "compute.instance_type", target).value == "Standard_ND96asr_v4"
    cap = only(facts, "compute.capacity", target)
    assert cap.value == "spot" and cap.loc.line == line_of(AML_CLUSTER, "tier:")
    assert only(facts, "compute.node_count", target).value == 4
    assert only(facts, "compute.min_nodes", target).value == 0


def test_azureml_pipeline_steps():
    pytest.importorskip("gpulint.read.shell.commands")
    facts = aml(AML_PIPELINE)
    assert {f.target for f in facts if f.kind == "compute.target"} == {"pipeline/prep", "pipeline/train"}
    launch = only(facts, "launch", "pipeline/train")
    assert launch.value["args"] == ["--epochs", "3"]
    assert launch.loc.line == line_of(AML_PIPELINE, "python train.py")


# ---------------------------------------------------------------- Vertex AI


def test_vertex_custom_job_pools_spot_and_launch():
    pytest.importorskip("gpulint.read.shell.commands")
    facts = vertex(VERTEX_JOB)
    for pool, replicas in (("llama-ft/pool0", 1), ("llama-ft/pool1", 2)):
        t = only(facts, "compute.target", pool)
        assert t.value == {"source": "vertex", "provider": "gcp", "resource": "llama-ft", "role": "training"}
        assert t.attrs["replicas"] == replicas
        assert only(facts, "compute.instance_type", pool).value == "a2-highgpu-8g"
        assert only(facts, "compute.accelerator", pool).value == {"type": "NVIDIA_TESLA_A100", "count": 8}
        assert only(facts, "compute.gpus_per_node", pool).value == 8
        assert only(facts, "compute.node_count", pool).value == 3  # chief + workers form one world
        cap = only(facts, "compute.capacity", pool)
        assert cap.value == "spot" and cap.loc.line == line_of(VERTEX_JOB, "strategy: SPOT")
        launch = only(facts, "launch", pool)
        assert launch.value["nnodes"] == 3 and launch.value["nproc_per_node"] == 8
    gpus = only(facts, "compute.gpus_per_node", "llama-ft/pool0")
    assert gpus.key == "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount"
    assert gpus.loc.line == 7
    env = only(facts, "env", "llama-ft/pool0")
    assert env.value == {"name": "NCCL_DEBUG", "value": "INFO"} and env.loc.line == line_of(VERTEX_JOB, "- name:")


def test_vertex_single_pool_mapping_with_args_as_program():
    pytest.importorskip("gpulint.read.shell.commands")
    facts = vertex(VERTEX_SINGLE)
    target = "CustomJob/pool0"
    acc = only(facts, "compute.accelerator", target)
    assert acc.value == {"type": "NVIDIA_L4", "count": 1} and acc.key == "workerPoolSpecs.machineSpec.acceleratorType"
    assert not [f for f in facts if f.kind == "compute.capacity"]  # no scheduling strategy
    launch = only(facts, "launch", target)
    assert launch.value["tool"] == "python" and launch.value["module"] == "trainer.task"
    assert launch.loc.line == line_of(VERTEX_SINGLE, "args:")


def test_vertex_python_package_snake_case():
    pytest.importorskip("gpulint.read.shell.commands")
    facts = vertex(VERTEX_PACKAGE)
    target = "CustomJob/pool0"
    assert only(facts, "compute.accelerator", target).value == {"type": "NVIDIA_TESLA_T4", "count": 2}
    assert only(facts, "compute.instance_type", target).loc.line == line_of(VERTEX_PACKAGE, "machine_type")
    launch = only(facts, "launch", target)
    assert launch.value["module"] == "trainer.task" and launch.loc.line == line_of(VERTEX_PACKAGE, "python_module")


def test_vertex_container_args_without_program_are_not_guessed():
    text = VERTEX_SINGLE.replace('["python3", "-m", "trainer.task", "--epochs", "3"]', '["--epochs", "3"]')
    assert not [f for f in vertex(text) if f.kind == "launch"]


# ---------------------------------------------------------------- silence and robustness


@pytest.mark.parametrize("text", [
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {command: python x.py}\n",
    "resources:\n  accelerators: A100:8\nrun: python train.py\n",       # SkyPilot
    "name: ci\non: push\njobs: {}\n",
    "type: command\ncommand: python x.py\n",                              # neither $schema nor compute/env
])
def test_other_yaml_is_not_azureml_or_vertex(text):
    docs = load_documents(text)
    assert not any(looks_like_azureml(d) or looks_like_vertex(d) for d in docs)
    assert read_azureml(docs, "x.yaml") == [] and read_vertex(docs, "x.yaml") == []


def _mutations(data):
    def paths(node, path=()):
        yield path
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            yield from paths(v, path + (k,))

    for path in list(paths(data))[1:]:
        for bad in (None, 7, "x", [], {}, [None], {"a": None}, True):
            out = copy.deepcopy(data)
            node = out
            for part in path[:-1]:
                node = node[part]
            node[path[-1]] = bad
            yield out


@pytest.mark.parametrize("text,reader", [
    (AML_JOB, read_azureml), (AML_ACCELERATE, read_azureml), (AML_CLUSTER, read_azureml),
    (AML_PIPELINE, read_azureml), (VERTEX_JOB, read_vertex), (VERTEX_SINGLE, read_vertex),
    (VERTEX_PACKAGE, read_vertex),
])
def test_wrong_types_anywhere_never_raise(text, reader):
    pytest.importorskip("gpulint.read.shell.commands")
    for doc in load_documents(text):
        for data in _mutations(doc.data):
            reader([Doc(data, doc.marks, doc.start_line)], "job.yaml")
