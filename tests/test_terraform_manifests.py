"""Kubernetes manifests inside Terraform (kubectl_manifest yaml_body, kubernetes_manifest manifest): read by the
Kubernetes reader at their lines in the .tf file; Terraform interpolations never become values."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpulint.read.errors import PartialRead
from gpulint.read.terraform.reader import read
from helpers import facts_of_kind as of, line_of as line, only_fact as one

pytest.importorskip("gpulint.read.shell.commands")

KARPENTER = '''\
locals {
  gpu_family = "p5"
}

variable "gpu_type" {
  default = "p5.48xlarge"
}

resource "aws_eks_node_group" "system" {
  cluster_name   = "ml"
  instance_types = ["m6i.xlarge"]
  scaling_config {
    desired_size = 2
    min_size     = 2
    max_size     = 3
  }
}

resource "kubectl_manifest" "gpu_pool" {
  yaml_body = <<-YAML
    apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata:
      name: gpu-${local.gpu_family}
    spec:
      template:
        spec:
          nodeClassRef:
            group: karpenter.k8s.aws
            kind: EC2NodeClass
            name: default
          requirements:
            - key: node.kubernetes.io/instance-type
              operator: In
              values: ["p5.48xlarge", "${var.gpu_type}"]
            - key: karpenter.sh/capacity-type
              operator: In
              values: ["on-demand"]
      limits:
        nvidia.com/gpu: 64
  YAML
}
'''


def test_kubectl_manifest_nodepool_at_its_tf_lines():
    facts = read(KARPENTER, "infra/karpenter.tf")
    t = "NodePool/gpu-p5"  # the local's literal value names it
    target = one(facts, "compute.target", t)
    assert target.value["source"] == "kubernetes" and target.value["provider"] == "aws"
    assert target.attrs["terraform_resource"] == "kubectl_manifest.gpu_pool"
    assert target.loc.line == line(KARPENTER, "name: gpu-${local.gpu_family}")
    assert target.loc.column == 7  # dedented heredoc: the YAML's column plus the heredoc's indent
    # the literal instance type is read; the variable's is not guessed (a tfvars file may override its default)
    types = of(facts, "compute.instance_type", t)
    assert [(f.value, f.loc.line) for f in types] == [("p5.48xlarge", line(KARPENTER, 'values: ["p5.48xlarge"'))]
    cap = one(facts, "compute.capacity", t)
    assert (cap.value, cap.loc.line) == ("on-demand", line(KARPENTER, 'values: ["on-demand"]'))
    # the .tf's own resource keeps its target; the ids cannot collide
    assert one(facts, "compute.target", "aws_eks_node_group.system").value["source"] == "terraform"


RAYJOB_TF = '''\
locals {
  image = "rayproject/ray:2.40.0-gpu"
  rayjob = <<-EOT
    apiVersion: ray.io/v1
    kind: RayJob
    metadata:
      name: ft
    spec:
      entrypoint: python /app/train.py --epochs ${var.epochs}
      rayClusterSpec:
        headGroupSpec:
          template:
            spec:
              containers: [{name: head, image: "${local.image}"}]
        workerGroupSpecs:
          - groupName: gpu
            replicas: ${var.workers}
            template:
              spec:
                containers:
                  - name: w
                    image: ${local.image}
                    env:
                      - {name: NCCL_DEBUG, value: INFO}
                      - {name: RUN_ID, value: "${random_id.run.hex}"}
                      - {name: HOME_VAR, value: "$${HOME}"}
                    resources: {limits: {nvidia.com/gpu: 8}}
  EOT
}

resource "kubectl_manifest" "rayjob" {
  yaml_body = local.rayjob
}
'''


def test_a_manifest_in_a_local_with_interpolations():
    facts = read(RAYJOB_TF, "infra/ray.tf")
    g = "RayJob/ft/gpu"
    assert one(facts, "compute.target", g).attrs["terraform_resource"] == "kubectl_manifest.rayjob"
    assert one(facts, "compute.gpus_per_node", g).value == 8
    # replicas: ${var.workers}: stated but not decided here
    count = one(facts, "compute.node_count", g)
    assert count.value is None and count.loc.line == line(RAYJOB_TF, "replicas: ${var.workers}")
    env = {f.value["name"]: f.value["value"] for f in of(facts, "env", g)}
    assert env == {"NCCL_DEBUG": "INFO", "RUN_ID": None, "HOME_VAR": "${HOME}"}
    launch = one(facts, "launch")
    assert launch.target == g and launch.value["script"] == "/app/train.py"
    assert launch.loc.line == line(RAYJOB_TF, "entrypoint:")
    assert not [f for f in facts if "${" in json.dumps(f.value) and f.kind.startswith("compute.")]


MANIFEST_OBJ = '''\
resource "kubernetes_manifest" "trainer" {
  manifest = {
    apiVersion = "batch/v1"
    kind       = "Job"
    metadata = {
      name      = "llm-sft"
      namespace = var.namespace
    }
    spec = {
      parallelism = 2
      template = {
        spec = {
          nodeSelector = {
            "node.kubernetes.io/instance-type" = var.instance_type
            "karpenter.sh/capacity-type"       = "spot"
          }
          containers = [{
            name    = "trainer"
            image   = "ghcr.io/example/sft:1.2"
            command = ["torchrun", "--nproc_per_node=8", "sft.py"]
            resources = {
              limits = { "nvidia.com/gpu" = 8 }
            }
          }]
          restartPolicy = "Never"
        }
      }
    }
  }
}

resource "kubectl_manifest" "encoded" {
  yaml_body = yamlencode({
    apiVersion = "apps/v1"
    kind       = "Deployment"
    metadata   = { name = "vllm" }
    spec = {
      replicas = 1
      template = {
        spec = {
          containers = [{
            name  = "vllm"
            image = "vllm/vllm-openai:v0.9.1"
            args  = ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
            resources = { limits = { "nvidia.com/gpu" = 1 } }
          }]
        }
      }
    }
  })
}
'''


def test_hcl_objects_are_manifests_too():
    facts = read(MANIFEST_OBJ, "infra/k8s.tf")
    job = "Job/llm-sft"
    t = one(facts, "compute.target", job)
    assert t.attrs["terraform_resource"] == "kubernetes_manifest.trainer"
    assert t.loc.line == line(MANIFEST_OBJ, 'name      = "llm-sft"')
    assert not of(facts, "compute.instance_type", job)  # var.instance_type: not decided in this file
    cap = one(facts, "compute.capacity", job)
    assert (cap.value, cap.loc.line) == ("spot", line(MANIFEST_OBJ, '"karpenter.sh/capacity-type"'))
    gpus = one(facts, "compute.gpus_per_node", job)
    assert (gpus.value, gpus.loc.line) == (8, line(MANIFEST_OBJ, 'limits = { "nvidia.com/gpu" = 8 }'))
    assert one(facts, "compute.node_count", job).value == 2
    launch = one(facts, "launch", job)
    assert launch.value["script"] == "sft.py" and launch.loc.line == line(MANIFEST_OBJ, 'command = ["torchrun"')
    dep = "Deployment/vllm"
    assert one(facts, "compute.target", dep).value["role"] == "serving"
    assert one(facts, "model.name", dep).value == "meta-llama/Llama-3.1-8B-Instruct"
    assert one(facts, "compute.target", dep).attrs["terraform_resource"] == "kubectl_manifest.encoded"


def test_what_is_not_read():
    text = '''\
resource "kubectl_manifest" "from_file" {
  yaml_body = file("${path.module}/nodepool.yaml")
}

resource "kubectl_manifest" "templated" {
  yaml_body = templatefile("${path.module}/job.yaml.tpl", { gpus = 8 })
}

resource "kubectl_manifest" "loop" {
  yaml_body = <<-YAML
    apiVersion: v1
    kind: Pod
    metadata: {name: p}
    spec:
      containers:
    %{ for i in range(2) ~}
        - name: c${i}
          image: x
          resources: {limits: {nvidia.com/gpu: 1}}
    %{ endfor ~}
  YAML
}

resource "kubectl_manifest" "broken" {
  yaml_body = <<-YAML
    apiVersion: v1
    kind: [Pod
  YAML
}

resource "kubectl_manifest" "cpu" {
  yaml_body = <<-YAML
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      template:
        spec:
          containers: [{name: web, image: nginx}]
  YAML
}

resource "helm_release" "other" {
  values = [<<-EOT
    apiVersion: v1
    kind: Pod
    metadata: {name: not-a-manifest}
    spec:
      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
  EOT
  ]
}
'''
    try:
        facts = read(text, "infra/none.tf")
    except PartialRead as exc:  # pragma: no cover - nothing here may fail
        raise AssertionError(exc.failures)
    assert not [f for f in facts if f.kind.startswith("compute.") or f.kind == "launch"]


def test_duplicate_names_across_manifests_stay_distinct():
    pod = '''\
resource "kubectl_manifest" "%s" {
  yaml_body = <<-YAML
    apiVersion: v1
    kind: Pod
    metadata: {name: same}
    spec:
      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
  YAML
}
'''
    facts = read(pod % "a" + "\n" + pod % "b", "infra/dup.tf")
    targets = of(facts, "compute.target")
    assert [(f.target, f.attrs["terraform_resource"]) for f in targets] == [
        ("Pod/same", "kubectl_manifest.a"), ("Pod/same#2", "kubectl_manifest.b")]


def test_workloads_json_lists_manifest_targets(tmp_path):
    (tmp_path / "infra").mkdir()
    (tmp_path / "infra" / "karpenter.tf").write_text(KARPENTER, encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "gpulint", "workloads", "--format", "json", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode in (0, 1), run.stderr
    data = json.loads(run.stdout)
    ids = [c["id"] for c in data["computes"]]
    assert "infra/karpenter.tf#NodePool/gpu-p5" in ids and "infra/karpenter.tf#aws_eks_node_group.system" in ids


def test_every_fact_has_its_registered_shape():
    import jsonschema

    from gpulint.core import facts as vocabulary

    for text in (KARPENTER, RAYJOB_TF, MANIFEST_OBJ):
        for f in read(text, "infra/x.tf"):
            jsonschema.validate(f.value, vocabulary.KINDS[f.kind].schema)


HELM_SLINKY = '''\
resource "helm_release" "slurm" {
  name       = "slurm"
  repository = "oci://ghcr.io/slinkyproject/charts"
  chart      = "slurm"
  values = [
    file("${path.module}/base-values.yaml"),
    <<-YAML
    nodesets:
      gpu:
        replicas: 2
        slurmd:
          resources:
            limits:
              nvidia.com/gpu: 8
        partition:
          enabled: true
    YAML
    ,
    yamlencode({
      nodesets = {
        a10 = {
          replicas = 3
          slurmd   = { resources = { limits = { "nvidia.com/gpu" = 4 } } }
          podSpec  = { nodeSelector = { "node.kubernetes.io/instance-type" = "g5.12xlarge" } }
        }
      }
    }),
  ]
}

resource "helm_release" "ingress" {
  name   = "ingress"
  chart  = "ingress-nginx"
  values = [yamlencode({ controller = { replicaCount = 2 } })]
}
'''


def test_helm_release_values_are_read_as_cluster_definitions_at_their_tf_lines():
    facts = read(HELM_SLINKY, "infra/slurm.tf")
    targets = {f.target: f for f in of(facts, "compute.target")}
    assert sorted(targets) == ["a10", "gpu"]  # the ingress chart's values define no capacity
    assert targets["gpu"].value["source"] == "slinky" and targets["gpu"].value["partition"] == "gpu"
    assert one(facts, "compute.gpus_per_node", "gpu").loc.line == line(HELM_SLINKY, "nvidia.com/gpu: 8")
    assert one(facts, "compute.node_count", "gpu").value == 2
    assert one(facts, "compute.instance_type", "a10").value == "g5.12xlarge"
    assert one(facts, "compute.gpus_per_node", "a10").value == 4
