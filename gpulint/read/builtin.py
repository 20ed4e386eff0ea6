"""The built-in file kinds and fact extractors, registered as a plugin.

This module is announced in the ``gpulint`` entry-point group like any
outside plugin; readers of infrastructure files are imported only when a file
of their kind is met.
"""
from __future__ import annotations

import re

import importlib

from gpulint.hookspecs import hookimpl
from gpulint.read.kinds import Extractor, FileKind
from gpulint.read.parsers import parse_json, parse_notebook, parse_python, parse_text, parse_toml, parse_yaml
from gpulint.core.model import Fact
from gpulint.core.sources import Source


@hookimpl
def gpulint_file_kinds():
    return [
        FileKind("python", ("*.py", "*.pyw"), parse_python, shebang=("python",)),
        FileKind("notebook", ("*.ipynb",), parse_notebook),
        # manifests kept as templates for envsubst or sed (``job.yaml-template``, ``pod.yaml.tpl``) are YAML whose
        # ``${VAR}`` placeholders are plain strings: read like the manifests they become
        FileKind("yaml", ("*.yaml", "*.yml", "*.yaml-template", "*.yml-template", "*.yaml.template", "*.yml.template",
                          "*.yaml.tmpl", "*.yml.tmpl", "*.yaml.tpl", "*.yml.tpl"), parse_yaml),
        FileKind("json", ("*.json",), parse_json, comment=()),
        FileKind("toml", ("*.toml",), parse_toml),
        FileKind("terraform", ("*.tf", "*.tfvars"), parse_text("terraform"), comment=("#", "//")),
        FileKind("shell", ("*.sh", "*.bash", "*.slurm", "*.sbatch", "*.zsh"), parse_text("shell"), shebang=("sh", "bash", "zsh")),
        FileKind("dockerfile", ("Dockerfile", "*.Dockerfile", "Dockerfile.*", "*.dockerfile", "Containerfile"), parse_text("dockerfile"), priority=1),
        FileKind("makefile", ("Makefile", "makefile", "GNUmakefile", "*.mk"), parse_text("makefile")),
        # Slurm's own configuration (node and partition lines: the capacity jobs are placed on); named by what
        # Slurm and cluster repositories call it, never every ``*.conf`` (cgroup.conf, gres.conf, nginx.conf ...)
        FileKind("slurmconf", ("slurm.conf", "slurm-*.conf", "slurm_*.conf", "*.slurm.conf"), parse_text("slurmconf")),
        # read for the console scripts it declares (gpulint.read.packaging), like setup.py and pyproject.toml
        FileKind("setupcfg", ("setup.cfg",), parse_text("setupcfg"), comment=("#", ";")),
    ]


def _lazy(module: str, func: str, *, docs: bool = False):
    """Import a reader on first use, so a scan without such files never pays for it."""

    def run(source: Source) -> list[Fact]:
        reader = getattr(importlib.import_module(module), func)
        return reader(source.tree, source.path) if docs else reader(source.text, source.path)

    return run



def _yaml_infra(source: Source) -> list[Fact]:
    docs = [d for d in source.tree or [] if not d.template]  # a template's values are unknown until rendered
    out: list[Fact] = []
    dvc = importlib.import_module("gpulint.read.dvc")
    dvc_docs = [d for d in docs if dvc.looks_like_dvc(d, source.path)]
    if dvc_docs:
        out += dvc.read_dvc(dvc_docs, source.path)
        docs = [d for d in docs if d not in dvc_docs]
    k8s = importlib.import_module("gpulint.read.kubernetes")
    k8s_docs = [d for d in docs if k8s.looks_like_kubernetes(d)]
    if k8s_docs:
        out += k8s.read_kubernetes(k8s_docs, source.path)
    taken = {id(d) for d in k8s_docs}  # identity: comparing documents by value is quadratic on repeated ones
    rest = [d for d in docs if id(d) not in taken]
    if rest:
        compose = importlib.import_module("gpulint.read.compose")
        compose_docs = [d for d in rest if compose.looks_like_compose(d, source.path)]
        if compose_docs:
            out += compose.read_compose(compose_docs, source.path)
            rest = [d for d in rest if d not in compose_docs]
        sky = importlib.import_module("gpulint.read.skypilot")
        sky_docs = [d for d in rest if sky.looks_like_skypilot(d)]
        if sky_docs:
            out += sky.read_skypilot(sky_docs, source.path)
        cloud = importlib.import_module("gpulint.read.cloudml")
        az = [d for d in rest if cloud.looks_like_azureml(d)]
        if az:
            out += cloud.read_azureml(az, source.path)
        vx = [d for d in rest if cloud.looks_like_vertex(d)]
        if vx:
            out += cloud.read_vertex(vx, source.path)
        det = importlib.import_module("gpulint.read.determined")
        experiments = [d for d in rest if det.looks_like_determined(d)]
        if experiments:
            out += det.read_determined(experiments, source.path)
    return out


def _terraform_json(source: Source) -> list[Fact]:
    """Terraform's JSON syntax (``*.tf.json``, ``*.tfvars.json``): its values join the module's."""
    if not source.path.endswith((".tf.json", ".tfvars.json")) or not source.tree:
        return []
    from gpulint.read.terraform.reader import read_json_values

    return read_json_values(source.tree[0], source.path)


_GPU_METRICS = (
    ("dcgm-exporter", "NVIDIA DCGM exporter"), ("dcgm_exporter", "NVIDIA DCGM exporter"), ("dcgmExporter", "GPU operator DCGM exporter"),
    ("gpu-operator", "NVIDIA GPU operator (DCGM exporter on by default)"), ("nvidia_gpu", "CloudWatch agent nvidia_gpu metrics"),
    ("\"DCGM\"", "GKE managed DCGM metrics"), ("'DCGM'", "GKE managed DCGM metrics"), ("dcgm", "NVIDIA DCGM"),
)


def _gpu_monitoring(source: Source) -> list[Fact]:
    """Where the repository installs GPU utilisation metrics (COST007 reads these): the first marker per file."""
    low = source.text.lower()
    for marker, what in _GPU_METRICS:
        at = low.find(marker.lower())
        if at >= 0:
            line = source.text.count("\n", 0, at) + 1
            return [Fact("infra.gpu_monitoring", {"via": what}, source.loc(line, 1), key=marker)]
    return []


#: ``{num_gpus_flag}`` in a ``!cmd``: IPython substitutes the Python value, which gpulint does not know
_IPYTHON_EXPR = re.compile(r"(?<![$\w{]){([A-Za-z_][\w.]*(?:\[[^\]{}]*\])?)}(?!})")


def _unset_variable(m: "re.Match") -> str:
    """An IPython interpolation as a shell variable nothing sets (same length is not needed: the shell reader's
    columns are the command's, and the name keeps the expression readable), so the shell reader treats the
    word as unresolved instead of as literal text."""
    return "${IPY_" + re.sub(r"\W", "_", m.group(1)) + "}"


def _notebook_shell(source: Source) -> list[Fact]:
    """Launches and environment in a notebook's shell cells (``!accelerate launch ...``, ``%%bash``),
    read by the shell reader, at their cell and line."""
    if not source.shell:
        return []
    from dataclasses import replace

    from gpulint.read.shell.scanner import ShellScanner

    scanner = ShellScanner(source.path)
    out: list[Fact] = []
    for line, text in source.shell:
        try:
            facts = scanner.feed(_IPYTHON_EXPR.sub(_unset_variable, text), line, 1)
        except Exception:  # noqa: BLE001 - one odd command must not lose the notebook's Python facts
            continue
        out += [replace(f, loc=source.loc(f.loc.line, f.loc.column)) for f in facts]
    return out


def _clusters(source: Source) -> list[Fact]:
    from gpulint.read.clusters import read_clusters

    return read_clusters(source)


def _trainer_toml(source: Source) -> list[Fact]:
    from gpulint.read.trainer_toml import toml_facts  # on first use: most repositories hold no job TOML

    return toml_facts(source)


def _packaging(source: Source) -> list[Fact]:
    if source.path.rsplit("/", 1)[-1] not in ("setup.py", "pyproject.toml", "setup.cfg"):
        return []
    from gpulint.read.packaging import read_packaging

    return read_packaging(source.text, source.path)


def _python(source: Source) -> list[Fact]:
    from gpulint.read.python.facts import python_facts

    return python_facts(source)


def _configs(source: Source) -> list[Fact]:
    from gpulint.read.configs import config_facts

    return config_facts(source)


@hookimpl
def gpulint_fact_extractors():
    from gpulint.read.clusters import NEEDS as CLUSTER_WORDS
    from gpulint.read.python.facts import ML_WORDS

    return [
        Extractor("python", ("python", "notebook"), _python, needs=ML_WORDS),
        Extractor("configs", ("yaml", "json"), _configs),
        # torchtitan's job TOML (``--job.config_file``): its [training] dtype, [checkpoint] and [activation_checkpoint]
        Extractor("trainer-toml", ("toml",), _trainer_toml, needs=("[job]",)),
        Extractor("notebook-shell", ("notebook", "python"), _notebook_shell),  # python: Databricks notebook sources
        Extractor("yaml-infra", ("yaml",), _yaml_infra, needs=("apiVersion", "resources", "run:", "num_nodes", "workerPoolSpecs", "azureml", "command:", "cmd:",
                                                           "entrypoint:")),
        # cluster definitions (ParallelCluster, eksctl, HyperPod, Batch, Cluster Toolkit, Ray ...): capacity jobs run on
        Extractor("clusters", ("yaml", "json"), _clusters, needs=CLUSTER_WORDS or ("\x00",)),
        Extractor("terraform", ("terraform",), _lazy("gpulint.read.terraform.reader", "read")),
        Extractor("terraform-json", ("json",), _terraform_json),
        Extractor("gpu-monitoring", ("yaml", "json", "terraform", "shell", "dockerfile", "toml"), _gpu_monitoring,
                  needs=("dcgm", "DCGM", "gpu-operator", "nvidia_gpu")),
        Extractor("shell", ("shell",), _lazy("gpulint.read.shell.scanner", "read_shell")),
        Extractor("dockerfile", ("dockerfile",), _lazy("gpulint.read.dockerfile", "read_dockerfile")),
        Extractor("makefile", ("makefile",), _lazy("gpulint.read.makefile", "read_makefile")),
        Extractor("slurmconf", ("slurmconf",), _lazy("gpulint.read.clusters.slurmconf", "read_slurmconf")),
        # console scripts of the repository's packaging (the linker resolves `fairseq-train ...` launches with them)
        Extractor("packaging", ("python", "toml", "setupcfg"), _packaging, needs=("console_scripts", "scripts")),
    ]
