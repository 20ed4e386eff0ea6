"""Property tests of every reader and the linker (issue 10): on any input they
return facts or a SYS001, never an exception, never a SYS002; what they return
is plain, picklable, JSON-serialisable data with positions inside the file.

CI runs a small search (profile "ci", tests/conftest.py); a longer one:
``python -m pytest tests/test_properties.py --hypothesis-profile=long``.
"""
from __future__ import annotations

import json
import pickle
import string

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is in the test extras: pip install -e '.[test]'")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from adversarial import cases as adv  # noqa: E402
from gpulint.core.config import Config  # noqa: E402
from gpulint.core.decoding import decode  # noqa: E402
from gpulint.run.discover import display_name  # noqa: E402
from gpulint.run.engine import analyze_file  # noqa: E402
from gpulint.read.python.ipython import python_lines  # noqa: E402
from gpulint.read.parsers import _strip_jsonc  # noqa: E402
from gpulint.core.model import Fact, Location  # noqa: E402
from gpulint.read.templates import PLACEHOLDER, with_placeholders  # noqa: E402
from gpulint.link.workloads import Repo, link  # noqa: E402
from gpulint.read.yamlnodes import load_documents  # noqa: E402

CONFIG = Config()

# -- inputs: fragments of each format, glued at random -----------------------------------------------------
_COMMON = ["\n", " ", "  ", "\t", "'", '"', "\\", "#", ":", "=", "-", "{", "}", "[", "]", "(", ")", ",", "$", "!", "%", "&", "*", "|", ">",
           "<<", "EOF", "0", "8", "1e3", "true", "null", "\x00", "\ufeff", "é", "\r\n"]
FRAGMENTS = {
    "python": _COMMON + ["import torch\n", "from torch.utils.data import DataLoader\n", "for x in loader:\n", "    ", "loss.backward()",
                         "opt.step()", "model = torch.nn.Linear(4, 4).cuda()\n", "def f(", "class A:", "with torch.autocast('cuda'):", "lambda", "if",
                         "else", "await", "yield", "f'{x}'", "'''", "**", "@", "DataLoader(ds, num_workers=", "TrainingArguments(bf16=", "PyTorch(",
                         "instance_type=", "'ml.p4d.24xlarge'", "init_process_group('gloo')", "DataParallel(", "torch.float16", "# gpulint: ignore["],
    "yaml": _COMMON + ["apiVersion: v1\n", "kind: Job\n", "kind: PyTorchJob\n", "spec:\n", "  template:\n", "    containers:\n", "- name: x\n",
                       "resources:\n", "  limits:\n", "nvidia.com/gpu: ", "accelerators: A100:8\n", "num_nodes: ", "run: |\n", "  python train.py\n",
                       "&a ", "*a", "<<: *a\n", "? ", "!Ref ", "!!python/name:os.system", "---\n", "...\n", "{{ .Values.x }}", "{{- if .x }}\n",
                       "{% for %}", "${x}", "%{ if x }", "command: [", "instance_type: ", "workerPoolSpecs:\n", "azureml", "compute: "],
    "json": _COMMON + ['{"', '"zero_optimization": {"stage": ', '"bf16": {"enabled": ', '"fp16": ', '"output_dir": "o"', '"mixed_precision": ',
                       '"train_micro_batch_size_per_gpu": ', "// c\n", "/* c */", ",]", ",}", '"cells": [', "{{ x }}"],
    "toml": _COMMON + ["[tool.gpulint]\n", "[[a]]\n", "x = ", '"""', "'''", "[", "{a = 1}", "1979-05-27T07:32:00Z"],
    "terraform": _COMMON + ['resource "aws_instance" "x" {\n', 'instance_type = "p4d.24xlarge"\n', "count = ", "${var.x}", "module ", "variable ",
                            "locals {", "dynamic ", "for_each = ", "<<EOT\n", "EOT\n", "/*", "*/", "//", 'guest_accelerator {', "machine_type = "],
    "shell": _COMMON + ["#!/bin/bash\n", "#SBATCH --gres=gpu:8\n", "#SBATCH --nodes=2\n", "torchrun --nproc_per_node=8 train.py", "python ",
                        "accelerate launch --mixed_precision bf16 ", "deepspeed ", "export NCCL_", "FI_PROVIDER=efa ", "$(", "`", "${", "<<'EOF'\n",
                        "EOF\n", "&&", ";", "if [ ", "fi", "case ", "esac", "srun ", "--config_file ", "\\\n"],
    "dockerfile": _COMMON + ["FROM nvidia/cuda\n", "RUN ", "CMD [", "ENTRYPOINT ", "ENV NCCL_DEBUG=INFO\n", "ARG X\n", "RUN <<EOF\n", "EOF\n",
                             "python train.py", "torchrun ", "\\\n", "# syntax=docker/dockerfile:1\n", 'SHELL ["/bin/bash", "-c"]\n', "WORKDIR /w\n",
                             "ONBUILD ", "HEALTHCHECK ", "STOPSIGNAL ", "USER ", "COPY ", "LABEL ", "EXPOSE ", "VOLUME "],
    "makefile": _COMMON + ["train:\n", "\tpython train.py\n", "X = $(Y)\n", "$(", "$$", "define x\n", "endef\n", ".PHONY: train\n", "include ",
                           "\ttorchrun --nproc_per_node=$(N) t.py\n", "ifeq (", "endif\n"],
    "slurmconf": _COMMON + ["NodeName=", "PartitionName=", "NodeSet=", "DEFAULT ", "gpu[001-016]", "n[1-2,5]", "[0-99999999]", "Gres=",
                            "gpu:a100:8", "gpu:", "no_consume:", "Nodes=", "ALL", "Default=YES ", "Feature=a,b ", "ClusterName=c\n", "\\\n",
                            "include x\n", "[", "]"],
}
FRAGMENTS["notebook"] = FRAGMENTS["python"] + ["%pip install x\n", "!nvidia-smi \\\n", "%%bash\n", "%%time\n", "files = !ls\n", "obj?\n",
                                               "pip install x\n", "cd ..\n", ">>> ", "In [1]: "]


def text_of(kind: str, max_size: int = 40):
    return st.lists(st.one_of(st.sampled_from(FRAGMENTS[kind]), st.text(max_size=4)), max_size=max_size).map("".join)


def notebooks():
    cell = st.fixed_dictionaries({"cell_type": st.sampled_from(["code", "code", "markdown", "raw", 5]),
                                  "source": st.one_of(text_of("notebook", 20), st.lists(text_of("notebook", 5), max_size=4), st.integers())})
    lang = st.sampled_from(["python", "R", "julia", None, 3])
    return st.builds(lambda cells, language, junk: json.dumps({"cells": cells if not junk else junk, "metadata": {"kernelspec": {"language": language}},
                                                               "nbformat": 4}),
                     st.lists(cell, max_size=5), lang, st.sampled_from([None, None, None, 7, "x", [1]]))


KIND_OF = {"python": "train.py", "notebook": "nb.ipynb", "yaml": "job.yaml", "json": "ds.json", "toml": "pyproject.toml",
           "terraform": "main.tf", "shell": "train.sh", "dockerfile": "Dockerfile", "makefile": "Makefile",
           "slurmconf": "slurm.conf"}


def check_result(res, text: str) -> None:
    assert not [f for f in res.findings if f.code == "SYS002"], [f.message for f in res.findings]
    pickle.loads(pickle.dumps(res))  # what a worker sends back
    lines = text.count("\n") + 2
    for f in res.facts:
        assert isinstance(f, Fact)
        json.dumps(f.to_json(), default=str)
        assert 1 <= f.loc.line <= lines + 1, f
    for f in res.findings:
        json.dumps(f.to_json())
        assert f.loc.line >= 1


@pytest.mark.parametrize("kind", sorted(KIND_OF))
def test_every_reader_returns_facts_or_sys001(host, kind):
    strategy = notebooks() if kind == "notebook" else text_of(kind)

    @given(strategy)
    def run(text):
        for data in (text, text.encode("utf-8", "surrogatepass")):
            res = analyze_file(KIND_OF[kind], data, kind, host.registry, CONFIG, _rules(host), force=True)
            check_result(res, text)

    run()


def _rules(host, _cache={}):
    if "rules" not in _cache:
        from gpulint.run.engine import Scanner

        _cache["rules"] = Scanner(host, CONFIG).rules()
    return _cache["rules"]


# -- real-shaped documents with any subtree replaced by anything -----------------------------------------------
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
                           max_leaves=12)


@st.composite
def mutated_documents(draw):
    import yaml

    docs = [doc for src in ("wl-k8s-efa/k8s/pytorchjob.yaml", "wl-skypilot-spot/sky/finetune.yaml") for doc in yaml.safe_load_all((adv.FIXTURES / src).read_text())]
    doc = draw(st.sampled_from(docs))
    paths = list(adv._paths(doc))
    for _ in range(draw(st.integers(1, 4))):
        doc = adv._replace(doc, draw(st.sampled_from(paths)), draw(JSON_VALUES))
        paths = list(adv._paths(doc)) or [()]
    return yaml.safe_dump(doc, sort_keys=False)


@given(mutated_documents())
def test_infrastructure_readers_on_any_field_value(host, text):
    res = analyze_file("k8s/job.yaml", text, "yaml", host.registry, CONFIG, _rules(host))
    check_result(res, text)
    assert not [f for f in res.findings if f.code == "SYS001"]  # valid YAML is always read


# -- the pieces -------------------------------------------------------------------------------------------------------
@given(JSON_VALUES)
def test_yaml_loader_round_trips_plain_data(value):
    import yaml

    (doc,) = load_documents(yaml.safe_dump(value))
    assert doc.data == value


@given(text_of("yaml", 60))
def test_template_placeholders_keep_every_position(text):
    filled = with_placeholders(text)
    if filled is None:
        return
    out, inline = filled
    assert len(out) == len(text)
    assert [i for i, c in enumerate(out) if c == "\n"] == [i for i, c in enumerate(text) if c == "\n"]
    for a, b in inline:
        assert all(c in (PLACEHOLDER, "\ue001", "\n") for c in out[a:b])


@given(text_of("json", 60))
def test_jsonc_stripping_keeps_every_position(text):
    out = _strip_jsonc(text)
    if out is not None:
        assert len(out) == len(text) and out.count("\n") == text.count("\n")


@given(st.text(alphabet=string.printable + "%!?é\t", max_size=200))
def test_ipython_cells_keep_their_line_count(cell):
    assert len(python_lines(cell)) == len(cell.splitlines() or [""])


@given(st.binary(max_size=300), st.sampled_from(sorted(KIND_OF)))
def test_any_bytes_decode_or_say_why_not(data, kind):
    text, why = decode(data, kind)
    assert (text is None) == bool(why)


@given(st.text(max_size=30).map(lambda s: s.encode("utf-8", "surrogatepass").decode("utf-8", "surrogateescape")) | st.binary(max_size=20).map(
    lambda b: b.decode("utf-8", "surrogateescape")))
def test_display_names_are_always_printable_utf8(name):
    display_name(name).encode("utf-8")


# -- the linker ---------------------------------------------------------------------------------------------------
PATHS = ["train.py", "src/train.py", "src/data.py", "launch.sh", "k8s/job.yaml", "configs/ds.json", "infra/main.tf", "nb.ipynb"]
KINDS = {"train.py": "python", "src/train.py": "python", "src/data.py": "python", "launch.sh": "shell", "k8s/job.yaml": "yaml",
         "configs/ds.json": "json", "infra/main.tf": "terraform", "nb.ipynb": "notebook"}
FACT_KINDS = ["trains", "launch", "import", "config_ref", "compute.target", "compute.instance_type", "compute.accelerator", "compute.node_count",
              "compute.gpus_per_node", "compute.capacity", "env", "precision", "config.accelerate", "uses_gpu", "checkpoint.save"]


@st.composite
def facts(draw):
    path = draw(st.sampled_from(PATHS))
    kind = draw(st.sampled_from(FACT_KINDS))
    value = draw(st.one_of(JSON_VALUES, st.fixed_dictionaries({"script": st.sampled_from(PATHS + ["/workspace/src/train.py", "$X", None]),
                                                               "path": st.sampled_from(PATHS + [None, 5]),
                                                               "tool": st.sampled_from(["python", "torchrun", "accelerate", None]),
                                                               "args": st.lists(st.sampled_from(["--config", "configs/ds.json", "-x=1", 5]), max_size=3),
                                                               "role": st.sampled_from(["training", "serving", None])})))
    target = draw(st.sampled_from(["", "", "aws_instance.x", "Job/train"]))
    return Fact(kind, value, Location(path, draw(st.integers(1, 50)), 1), "", target, {})


@given(st.lists(facts(), max_size=25))
def test_the_linker_never_fails_and_links_only_repository_files(found):
    by_path: dict[str, list[Fact]] = {}
    for f in found:
        by_path.setdefault(f.loc.path, []).append(f)
    workloads = link(Repo(by_path, KINDS))
    for wl in workloads:
        assert wl.entrypoint in KINDS
        assert set(wl.code_files) <= set(KINDS) and set(wl.configs) <= set(KINDS)


# -- the reports' JSON writer is json.dumps(indent=2, ensure_ascii=False, allow_nan=False), byte for byte -------
from gpulint.report.base import dumps  # noqa: E402

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=40)


@given(_JSON)
def test_the_report_json_writer_prints_what_json_dumps_prints(doc):
    assert dumps(doc) == json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)


def test_the_report_json_writer_refuses_what_json_dumps_refuses():
    for bad in (float("nan"), [float("inf")], {"a": object()}):
        with pytest.raises((ValueError, TypeError)):
            dumps(bad)
    assert dumps({1: "a", 2.5: "b", True: "c", None: "d"}) == json.dumps({1: "a", 2.5: "b", True: "c", None: "d"}, indent=2)
