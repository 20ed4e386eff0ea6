"""Platform coverage (issue 25): what gpulint makes of repositories whose GPU capacity lives in cluster files.

    python scripts/platform_coverage.py --manifest tests/realworld/heldout17.yaml --gpulint /venv/bin/gpulint -o RUN.json
    python scripts/platform_coverage.py --load RUN.json                 # the markdown table of a saved run
    python scripts/platform_coverage.py --compare BEFORE.json AFTER.json  # before -> after, per repository
    python scripts/platform_coverage.py --manifest M --census          # only the census of cluster files (markdown)

scripts/realworld.py counts findings and workloads; it does not count compute targets, and most of a platform
repository's targets are capacity that no workload uses (a ParallelCluster queue, an eksctl node group). This script
runs ``gpulint workloads --format json`` and ``gpulint scan --format json --exit-zero`` on the same pinned snapshots
(extracted by realworld.py's code, into the same work folder) and counts per repository:

* targets: every entry of the workloads report's ``computes`` (it lists every resolved target, used or not);
  GPU targets (``device == "gpu"``), GPU targets naming a catalogue instance, targets no workload uses;
* cluster targets: targets defined in a file the census below classes as a cluster definition (a file-based
  test, so it does not depend on how a gpulint version names its sources), or whose source is one of gpulint's
  cluster readers (CLUSTER_SOURCES), and how many of them are GPU / priced;
* workloads, workloads with a compute target, workloads on a catalogue instance, workloads on a cluster target;
* findings per code, and how many are warnings or errors.

The census (``--census``, also stored in every run) counts each repository's files per cluster-definition format by
text patterns (ParallelCluster config, eksctl ClusterConfig, HyperPod cluster JSON, CloudFormation resource types,
Karpenter NodePool, slurm.conf, Cluster Toolkit blueprint, Ray cluster launcher YAML, KubeRay, Slinky NodeSet values,
Terraform node pools and kubectl_manifest, CycleCloud templates, sbatch scripts with --partition, Kubernetes jobs whose
script is not in the repository, i.e. lives in the image), with example paths and how many mention a GPU.

Standard library and PyYAML only, like realworld.py. Not part of CI (the snapshots come from outside).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realworld as rw  # noqa: E402  (the manifest, snapshot extraction and gpulint runner are shared)

RECORD_VERSION = 1
MAX_BYTES = 2_000_000
TEXT_EXT = {".yaml", ".yml", ".json", ".tf", ".tfvars", ".conf", ".txt", ".sh", ".bash", ".sbatch", ".slurm",
            ".j2", ".template", ".tpl", ".cfg", ".ini", ""}

# -- census -----------------------------------------------------------------------------------------------
GPU_TEXT = re.compile(
    r"\b(?:ml\.)?(?:p[2-6][a-z]*|g[3-6][a-z]*|trn[12]n?|inf[12])\.(?:\d*x)?large\b|\bp6-b200\b|"
    r"\ba[234]-(?:high|mega|ultra|edge)gpu|\bg2-standard-\d|nvidia-(?:tesla-)?[a-z][a-z0-9]*\d[a-z0-9]*(?:-\d+gb)?|"
    r"\bStandard_N[CDV]\w+|nvidia\.com/gpu|aws\.amazon\.com/neuron|[Gg]res\s*=\s*gpu|--gres[= ]gpu|--gpus(?:-per-node)?[= ]|"
    r"guest_accelerator|accelerator_type|instance-gpu-(?:count|name|manufacturer|memory)|instance-accelerator", re.I)

#: (format id, label, kind): "file" = a cluster definition file a reader can read; "embedded" = a cluster definition
#: inside shell, Markdown or an env file (generated at deploy time); "job" = a job, not capacity
FORMATS: list[tuple[str, str, str]] = [
    ("pcluster", "ParallelCluster config (HeadNode + Scheduling)", "file"),
    ("eksctl", "eksctl ClusterConfig", "file"),
    ("hyperpod_json", "HyperPod create-cluster JSON (InstanceGroups)", "file"),
    ("hyperpod_provisioning", "HyperPod provisioning_parameters.json", "file"),
    ("cfn_sagemaker_cluster", "CloudFormation AWS::SageMaker::Cluster", "file"),
    ("cfn_batch_ce", "CloudFormation AWS::Batch::ComputeEnvironment", "file"),
    ("cfn_batch_jobdef", "CloudFormation AWS::Batch::JobDefinition", "job"),
    ("cfn_eks_nodegroup", "CloudFormation AWS::EKS::Nodegroup", "file"),
    ("cfn_pcs", "CloudFormation AWS::PCS::ComputeNodeGroup", "file"),
    ("cfn_pcluster", "CloudFormation ParallelCluster custom resource", "file"),
    ("cfn_ec2", "CloudFormation AWS::EC2::Instance/LaunchTemplate/fleets, AWS::AutoScaling::AutoScalingGroup", "file"),
    ("karpenter", "Karpenter NodePool", "file"),
    ("slurm_conf", "slurm.conf (NodeName/PartitionName lines, templates included)", "file"),
    ("gres_conf", "gres.conf", "file"),
    ("toolkit", "Cluster Toolkit blueprint (blueprint_name + deployment_groups)", "file"),
    ("ray_launcher", "Ray cluster launcher YAML (available_node_types)", "file"),
    ("kuberay", "KubeRay RayCluster/RayJob/RayService", "file"),
    ("kuberay_values", "KubeRay Helm values (rayStartParams, no kind)", "file"),
    ("slinky", "Slinky NodeSet CR or slurm chart values (nodesets:)", "file"),
    ("cyclecloud", "CycleCloud cluster template ([[nodearray]])", "file"),
    ("tf_nodepool", "Terraform node pool / compute resource (google_container_node_pool, aws_eks_node_group, "
                    "aws_batch_compute_environment, aws_launch_template, ...)", "file"),
    ("tf_module_nodes", "Terraform module inputs for nodes (eks_managed_node_groups, slurm nodesets/partitions)", "file"),
    ("tf_kubectl", "kubectl_manifest / kubernetes_manifest in .tf", "file"),
    ("cfn_param_instance", "CloudFormation whose InstanceType is a Parameter (Ref; the Default is the value)", "file"),
    ("embedded_pcluster", "ParallelCluster config inside shell/Markdown (heredoc, code block)", "embedded"),
    ("embedded_eksctl", "eksctl ClusterConfig inside shell/Markdown", "embedded"),
    ("embedded_hyperpod", "HyperPod cluster JSON / provisioning_parameters generated by shell or shown in Markdown", "embedded"),
    ("env_instance", "env/vars file or script exporting *INSTANCE_TYPE* (feeds a generated cluster config)", "embedded"),
    ("shell_create", "shell/Markdown that creates capacity (pcluster create-cluster, eksctl create, aws sagemaker "
                     "create-cluster, gcloud node-pools create, ray up)", "embedded"),
    ("sbatch", "sbatch scripts (#SBATCH)", "job"),
    ("sbatch_partition", "sbatch scripts with --partition/-p", "job"),
    ("k8s_job_image_script", "Kubernetes jobs whose script is not in the repository (in the image)", "job"),
]
LABEL = {f: l for f, l, _ in FORMATS}
KIND = {f: k for f, _, k in FORMATS}
IS_CLUSTER = {f: k == "file" for f, _, k in FORMATS}

_CFN_TYPE = re.compile(r"""["']?Type["']?\s*:\s*["']?(AWS::[A-Za-z0-9]+::[A-Za-z0-9]+|Custom::Pcluster\w*)""")
_CFN_MAP = {"AWS::SageMaker::Cluster": "cfn_sagemaker_cluster", "AWS::Batch::ComputeEnvironment": "cfn_batch_ce",
            "AWS::Batch::JobDefinition": "cfn_batch_jobdef", "AWS::EKS::Nodegroup": "cfn_eks_nodegroup",
            "AWS::PCS::ComputeNodeGroup": "cfn_pcs", "AWS::ParallelCluster::Cluster": "cfn_pcluster",
            "AWS::EC2::Instance": "cfn_ec2", "AWS::EC2::LaunchTemplate": "cfn_ec2", "AWS::EC2::SpotFleet": "cfn_ec2",
            "AWS::EC2::EC2Fleet": "cfn_ec2", "AWS::AutoScaling::AutoScalingGroup": "cfn_ec2"}
_TF_NODE = re.compile(r'resource\s+"(google_container_node_pool|google_container_cluster|aws_eks_node_group|'
                      r'azurerm_kubernetes_cluster_node_pool|aws_batch_compute_environment|aws_sagemaker_cluster|'
                      r'awscc_sagemaker_cluster|awscc_pcs_compute_node_group|aws_pcs_compute_node_group|'
                      r'google_compute_instance_template|google_compute_instance|aws_launch_template|aws_instance|'
                      r'aws_autoscaling_group|google_tpu_v2_vm)"')
_TF_MODULE_NODES = re.compile(r"\b(eks_managed_node_groups|self_managed_node_groups|slurm_nodeset|nodeset_name|"
                              r"partition_name|node_pools\s*=|managed_node_groups)\b")
_TF_KUBECTL = re.compile(r'resource\s+"(kubectl_manifest|kubernetes_manifest)"')
_SHELL_CREATE = re.compile(r"\bpcluster\s+create-cluster\b|\beksctl\s+create\s+(?:cluster|nodegroup)\b|"
                           r"\baws\s+sagemaker\s+create-cluster\b|\bgcloud\s+container\s+node-pools\s+create\b|"
                           r"\bgcloud\s+container\s+clusters\s+create\b|\baws\s+batch\s+create-compute-environment\b|"
                           r"\bgcluster\s+(?:deploy|create)\b|\bray\s+up\b")
_ENV_INSTANCE = re.compile(r"^\s*(?:export\s+)?\w*INSTANCE_TYPE\w*\s*=\s*[\"']?(?:ml\.)?[a-z][a-z0-9-]*\.?\w+", re.M)
_CFN_REF_INSTANCE = re.compile(r"""InstanceType["']?\s*:\s*(?:!Ref\b|\{\s*["']?Ref["']?\s*:)""")
_SBATCH = re.compile(r"^#SBATCH\b", re.M)
_SBATCH_PART = re.compile(r"^#SBATCH\s+(?:-p\s*\S|--partition[= ]\S)", re.M)
_JOB_KINDS = {"Job", "Pod", "PyTorchJob", "MPIJob", "TFJob", "JobSet", "RayJob", "HyperPodPyTorchJob", "CronJob",
              "Deployment", "StatefulSet", "LeaderWorkerSet", "TrainJob", "XGBoostJob", "PaddleJob"}
_SCRIPT_TOKEN = re.compile(r"(?:^|[\s\"'=/])([\w.-]+\.(?:py|sh))\b")


def _classify_text(rel: str, text: str, names: set[str]) -> dict[str, bool]:
    """The census formats one file belongs to, each with whether the file mentions a GPU."""
    base = PurePosixPath(rel).name.lower()
    ext = PurePosixPath(rel).suffix.lower()
    hit: set[str] = set()
    yamlish = ext in (".yaml", ".yml", ".j2", ".template", ".tpl") or base.endswith((".yaml.j2", ".yml.j2"))
    if yamlish and re.search(r"^HeadNode:", text, re.M) and re.search(r"^Scheduling:", text, re.M):
        hit.add("pcluster")
    if (yamlish or ext == ".json") and re.search(r"kind:\s*ClusterConfig", text) and "eksctl.io" in text:
        hit.add("eksctl")
    if ext == ".json" and '"InstanceGroups"' in text and '"InstanceType"' in text and (
            '"ClusterName"' in text or '"LifeCycleConfig"' in text or '"InstanceGroupName"' in text):
        hit.add("hyperpod_json")
    if ext == ".json" and (base == "provisioning_parameters.json" or ('"controller_group"' in text and '"worker_groups"' in text)):
        hit.add("hyperpod_provisioning")
    if "AWS::" in text or "Custom::Pcluster" in text:
        for t in _CFN_TYPE.findall(text):
            fmt = _CFN_MAP.get(t) or ("cfn_pcluster" if t.startswith("Custom::Pcluster") else None)
            if fmt:
                hit.add(fmt)
    if re.search(r"kind:\s*NodePool\b", text) and re.search(r"apiVersion:\s*karpenter\.sh/", text):
        hit.add("karpenter")
    if (re.match(r"slurm\.conf(?:\.|$)", base) and re.search(r"ClusterName\s*=|SlurmctldHost|SchedulerType|NodeName", text, re.I)) or (re.search(r"^\s*NodeName\s*=", text, re.M | re.I)
                                             and re.search(r"^\s*PartitionName\s*=", text, re.M | re.I)):
        hit.add("slurm_conf")
    if re.match(r"gres\.conf(?:\.|$)", base):
        hit.add("gres_conf")
    if re.search(r"^blueprint_name:", text, re.M) and "deployment_groups:" in text:
        hit.add("toolkit")
    if "available_node_types:" in text and ("head_node_type:" in text or "cluster_name:" in text):
        hit.add("ray_launcher")
    if re.search(r"kind:\s*(?:RayCluster|RayJob|RayService)\b", text):
        hit.add("kuberay")
    elif yamlish and "rayStartParams" in text:
        hit.add("kuberay_values")
    if re.search(r"kind:\s*NodeSet\b", text) or (yamlish and re.search(r"^nodesets:", text, re.M)):
        hit.add("slinky")
    if "[[nodearray" in text.lower():
        hit.add("cyclecloud")
    if ext in (".tf", ".tfvars"):
        if _TF_NODE.search(text):
            hit.add("tf_nodepool")
        if _TF_MODULE_NODES.search(text):
            hit.add("tf_module_nodes")
        if _TF_KUBECTL.search(text):
            hit.add("tf_kubectl")
    if ext in (".sh", ".bash", "", ".md") or base.endswith(".sh.j2"):
        if _SHELL_CREATE.search(text):
            hit.add("shell_create")
        if re.search(r"^\s*HeadNode:", text, re.M) and re.search(r"^\s*Scheduling:", text, re.M):
            hit.add("embedded_pcluster")
        if re.search(r"kind:\s*ClusterConfig", text):
            hit.add("embedded_eksctl")
        if ('"InstanceGroups"' in text and '"InstanceType"' in text) or ('"controller_group"' in text and '"worker_groups"' in text):
            hit.add("embedded_hyperpod")
    if ext in (".sh", ".bash", "", ".env", ".conf", ".txt", ".vars", ".cfg") and _ENV_INSTANCE.search(text):
        hit.add("env_instance")
    if ("AWS::" in text or "AWSTemplateFormatVersion" in text) and _CFN_REF_INSTANCE.search(text):
        hit.add("cfn_param_instance")
    if _SBATCH.search(text):
        hit.add("sbatch")
        if _SBATCH_PART.search(text):
            hit.add("sbatch_partition")
    if yamlish and re.search(r"^kind:\s*(\w+)", text, re.M) and ("command:" in text or "args:" in text):
        if _job_script_in_image(text, names):
            hit.add("k8s_job_image_script")
    gpu = bool(GPU_TEXT.search(text))
    return {f: gpu for f in hit}


def _job_script_in_image(text: str, names: set[str]) -> bool:
    """A Kubernetes job whose container runs a .py/.sh that no file of the repository is named like."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    except yaml.YAMLError:
        return False
    for d in docs:
        if d.get("kind") not in _JOB_KINDS:
            continue
        scripts: set[str] = set()

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                for k, v in node.items():
                    if k in ("command", "args"):
                        items = v if isinstance(v, list) else [v]
                        for it in items:
                            if isinstance(it, str):
                                scripts.update(_SCRIPT_TOKEN.findall(it))
                    else:
                        walk(v)
            elif isinstance(node, list):
                for it in node:
                    walk(it)

        walk(d.get("spec"))
        if scripts and not any(s in names for s in scripts):
            return True
    return False


def census(tree: Path) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """Per census format: files, files mentioning a GPU, files under a tests folder, up to 3 example paths;
    and the paths of every file classed as a cluster definition (a target defined there is a cluster target)."""
    files = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d not in (".git",)]
        for fn in filenames:
            p = Path(dirpath) / fn
            files.append(p)
    names = {p.name for p in files}
    out: dict[str, dict[str, Any]] = {}
    clusters: set[str] = set()
    for p in sorted(files):
        rel = p.relative_to(tree).as_posix()
        ext = p.suffix.lower()
        if ext not in TEXT_EXT and ext != ".md":
            continue
        try:
            if p.stat().st_size > MAX_BYTES:
                continue
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        # Markdown counts only for cluster definitions shown inline and the commands that create capacity
        # (READMEs are the how-to of these repositories); see the "embedded" formats
        for fmt, gpu in _classify_text(rel, text, names).items():
            if ext == ".md" and KIND[fmt] != "embedded":
                continue
            if IS_CLUSTER[fmt]:
                clusters.add(rel)
            row = out.setdefault(fmt, {"files": 0, "gpu": 0, "tests": 0, "examples": [], "gpu_examples": []})
            row["files"] += 1
            row["gpu"] += gpu
            row["tests"] += rw.in_tests(rel) or "/tests/" in f"/{rel}"
            if len(row["examples"]) < 3:
                row["examples"].append(rel)
            if gpu and len(row["gpu_examples"]) < 2:
                row["gpu_examples"].append(rel)
    return {f: out[f] for f, _, _ in FORMATS if f in out}, clusters


# -- counting one gpulint run ------------------------------------------------------------------------------
def _compute_ids(wl: dict) -> list[str]:
    ids = []
    for c in [wl.get("compute"), *(wl.get("job_computes") or [])]:
        if isinstance(c, dict) and c.get("id"):
            ids.append(str(c["id"]))
        # a job the scheduler places on cluster capacity (a Slurm partition, a node group) names it in placed_on
        if isinstance(c, dict) and c.get("placed_on"):
            ids.append(str(c["placed_on"]))
    return ids


def _path_of(compute_id: str) -> str:
    return compute_id.split("#", 1)[0]


#: compute.target sources of gpulint's cluster readers (issue 25, gpulint/read/clusters/): a target from one of them
#: is a cluster target even in a file the census patterns do not class (a JSON test config, a CloudFormation
#: template whose only capacity-like resource the census counts as a job)
CLUSTER_SOURCES = {"parallelcluster", "eksctl", "hyperpod", "cloudformation", "toolkit", "slurm.conf", "ray"}


def is_cluster_target(c: dict, clusters: set[str]) -> bool:
    return str(c.get("source")) in CLUSTER_SOURCES or _path_of(str(c.get("id") or "")) in clusters


def counts(wl_doc: dict | None, scan: dict | None, clusters: set[str]) -> dict[str, Any]:
    computes = [c for c in (wl_doc or {}).get("computes") or [] if isinstance(c, dict)]
    workloads = [w for w in (wl_doc or {}).get("workloads") or [] if isinstance(w, dict)]
    used = {i for w in workloads for i in _compute_ids(w)}
    by_id = {str(c.get("id")): c for c in computes}
    gpu = [c for c in computes if c.get("device") == "gpu"]
    cluster = [c for c in computes if is_cluster_target(c, clusters)]
    cluster_ids = {str(c.get("id")) for c in cluster}
    findings = (scan or {}).get("findings") or []
    per_code = Counter(f.get("code") for f in findings)
    severe = Counter(f.get("code") for f in findings if f.get("severity") in ("warning", "error"))

    def on_instance(w: dict) -> bool:
        return any(rw._instance(by_id.get(i) or {}) or rw._instance(c) for i, c in
                   ((str(c.get("id")), c) for c in [w.get("compute"), *(w.get("job_computes") or [])] if isinstance(c, dict)))

    return {
        "targets": len(computes),
        "gpu_targets": len(gpu),
        "gpu_targets_instance": sum(1 for c in gpu if c.get("instance")),
        "targets_unused": sum(1 for c in computes if str(c.get("id")) not in used),
        "cluster_targets": len(cluster),
        "cluster_gpu": sum(1 for c in cluster if c.get("device") == "gpu"),
        "cluster_instance": sum(1 for c in cluster if c.get("instance")),
        "sources": dict(Counter(str(c.get("source")) for c in computes)),
        "workloads": len(workloads),
        "workloads_with_compute": sum(1 for w in workloads if _compute_ids(w)),
        "workloads_on_instance": sum(1 for w in workloads if on_instance(w)),
        "workloads_on_cluster": sum(1 for w in workloads if any(i in cluster_ids or _path_of(i) in clusters
                                                                 for i in _compute_ids(w))),
        "findings": len(findings),
        "findings_warning_or_error": sum(severe.values()),
        "per_code": dict(sorted(per_code.items())),
        "per_code_warning_or_error": dict(sorted(severe.items())),
    }


# -- tables ------------------------------------------------------------------------------------------------
COLS = [("targets", "targets"), ("gpu_targets", "GPU targets"), ("gpu_targets_instance", "GPU w/ instance"),
        ("targets_unused", "unused"), ("cluster_targets", "cluster-file targets"), ("cluster_gpu", "cluster GPU"),
        ("cluster_instance", "cluster w/ instance"), ("workloads", "workloads"),
        ("workloads_on_instance", "wl on catalogue instance"), ("workloads_on_cluster", "wl on cluster target"),
        ("findings", "findings"), ("findings_warning_or_error", "warn+err")]


def _codes(d: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items()) or "-"


def render_run(record: dict) -> str:
    head = ["repo", *(c[1] for c in COLS), "findings per code"]
    lines = [f"gpulint {record.get('gpulint_version')} ({record.get('gpulint_commit') or '?'}), {record.get('started')}", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    tot = Counter()
    codes = Counter()
    for r in record["repos"]:
        c = r["counts"]
        for k, _ in COLS:
            tot[k] += c[k]
        codes.update(c["per_code"])
        lines.append("| " + " | ".join([r["repo"], *(str(c[k]) for k, _ in COLS), _codes(c["per_code"])]) + " |")
    lines.append("| **total** | " + " | ".join(str(tot[k]) for k, _ in COLS) + f" | {_codes(dict(sorted(codes.items())))} |")
    return "\n".join(lines) + "\n"


def render_compare(old: dict, new: dict) -> str:
    o = {r["repo"]: r["counts"] for r in old["repos"]}
    n = {r["repo"]: r["counts"] for r in new["repos"]}
    repos = [r["repo"] for r in new["repos"] if r["repo"] in o]
    head = ["repo", *(c[1] for c in COLS), "findings per code (before → after)"]
    lines = [f"before: gpulint {old.get('gpulint_version')} ({(old.get('gpulint_commit') or '?')[:12]}); "
             f"after: gpulint {new.get('gpulint_version')} ({(new.get('gpulint_commit') or '?')[:12]})", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    to, tn = Counter(), Counter()

    def cell(a: int, b: int) -> str:
        return str(a) if a == b else f"{a} → **{b}**"

    for repo in repos:
        a, b = o[repo], n[repo]
        for k, _ in COLS:
            to[k] += a[k]
            tn[k] += b[k]
        codes = sorted(set(a["per_code"]) | set(b["per_code"]))
        cc = ", ".join(f"{c} {cell(a['per_code'].get(c, 0), b['per_code'].get(c, 0))}" for c in codes) or "-"
        lines.append("| " + " | ".join([repo, *(cell(a[k], b[k]) for k, _ in COLS), cc]) + " |")
    lines.append("| **total** | " + " | ".join(cell(to[k], tn[k]) for k, _ in COLS) + " | |")
    only = sorted(set(o) ^ set(n))
    if only:
        lines.append(f"\nnot in both runs: {', '.join(only)}")
    return "\n".join(lines) + "\n"


def render_census(record: dict) -> str:
    out = ["| repo | format | files | mention a GPU | in tests | examples |", "|---|---|---|---|---|---|"]
    totals: dict[str, Counter] = defaultdict(Counter)
    repos_with: Counter = Counter()
    for r in record["repos"]:
        for fmt, row in r.get("census", {}).items():
            ex = row["gpu_examples"] or row["examples"]
            out.append(f"| {r['repo']} | {LABEL[fmt]} | {row['files']} | {row['gpu']} | {row['tests']} | "
                       + "<br>".join(f"`{e}`" for e in ex[:2]) + " |")
            totals[fmt].update({"files": row["files"], "gpu": row["gpu"], "tests": row["tests"]})
            repos_with[fmt] += 1
    summary = ["| format | kind | repositories | files | mention a GPU | in tests |", "|---|---|---|---|---|---|"]
    for fmt, label, kind in sorted(FORMATS, key=lambda f: (-totals[f[0]]["gpu"], -totals[f[0]]["files"])):
        t = totals[fmt]
        summary.append(f"| {label} | {kind} | {repos_with[fmt]} | {t['files']} | {t['gpu']} | {t['tests']} |")
    return "\n".join(summary) + "\n\n" + "\n".join(out) + "\n"


# -- the command line --------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", type=Path, default=rw.PROJECT / "tests" / "realworld" / "heldout17.yaml")
    ap.add_argument("--mirror", type=Path, default=rw.DEFAULT_MIRROR)
    ap.add_argument("--work", type=Path, default=rw.DEFAULT_WORK, help="where pinned commits are extracted (as realworld.py)")
    ap.add_argument("--gpulint", help="command that runs gpulint (default: the installed gpulint)")
    ap.add_argument("--repos", help="only these repositories (owner/name, comma separated)")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--gpulint-commit", help="the commit of a gpulint installed without its checkout (non-editable)")
    ap.add_argument("-o", "--output", type=Path, help="write the run's JSON here (for --compare and --load)")
    ap.add_argument("--load", type=Path, help="print the table of a saved run")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="before -> after table of two saved runs")
    ap.add_argument("--census", action="store_true", help="print the census of cluster files (of the run, or of --load)")
    args = ap.parse_args(argv)

    if args.compare:
        old, new = (json.loads(p.read_text()) for p in args.compare)
        sys.stdout.write(render_compare(old, new))
        return 0
    if args.load:
        record = json.loads(args.load.read_text())
        sys.stdout.write(render_census(record) if args.census else render_run(record))
        return 0
    if rw._inside(args.work, rw.PROJECT):
        ap.error(f"--work {args.work} is inside the repository; extract snapshots elsewhere")
    repos = rw.load_manifest(args.manifest)
    if args.repos:
        wanted = {r.strip() for r in args.repos.split(",") if r.strip()}
        repos = [r for r in repos if r.repo in wanted]
    cmd = rw.gpulint_command(args.gpulint)
    version = rw.gpulint_version(cmd)
    src = rw.gpulint_source(cmd)
    gcommit = rw.gpulint_identity(src)[0] if src else args.gpulint_commit
    record: dict[str, Any] = {"record_version": RECORD_VERSION, "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                              "gpulint_command": " ".join(cmd), "gpulint_version": version, "gpulint_commit": gcommit,
                              "manifest": str(args.manifest), "repos": []}
    for repo in repos:
        gd = rw.git_dir(args.mirror, repo)
        full = rw.resolve_commit(gd, repo.commit) if gd else None
        if full is None:
            print(f"skip {repo.repo}: no snapshot with commit {repo.commit} under {args.mirror}", file=sys.stderr)
            continue
        repo.commit = full
        tree, _ext = rw.ensure_extracted(gd, repo, args.work)
        print(f"{repo.repo} @ {full[:12]}", file=sys.stderr, flush=True)
        cen, clusters = census(tree)
        wl_doc, wl_meta, scan, scan_meta = None, {}, None, {}
        if not args.census:
            wl_doc, wl_meta = rw.run_json(cmd + ["workloads", str(tree), "--format", "json"], args.timeout, tree)
            scan, scan_meta = rw.run_json(cmd + ["scan", str(tree), "--format", "json", "--exit-zero"], args.timeout, tree)
        record["repos"].append({
            "repo": repo.repo, "commit": full, "kinds": repo.kinds,
            "workloads_run": wl_meta, "scan": scan_meta,
            "counts": counts(wl_doc, scan, clusters), "census": cen,
            "cluster_files": len(clusters),
            "targets": [{k: c.get(k) for k in ("id", "source", "resource", "device", "instance", "nodes", "capacity")}
                        for c in (wl_doc or {}).get("computes") or [] if isinstance(c, dict)],
        })
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(record, indent=1) + "\n")
    sys.stdout.write(render_census(record) if args.census else render_run(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
