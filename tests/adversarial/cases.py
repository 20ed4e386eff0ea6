"""Builders of the adversarial corpus (issue 10), one function per kind of hostile input.

Every case is a small dict {relative path: bytes | str} plus what a scan must
say about it: ``sys001`` (a substring of its SYS001 message, "" for any) or
``silent`` (no finding at all). Nothing here is copied from a real
repository; the shapes are written from the formats' specifications.

    python -m adversarial.cases OUT_DIR    # from tests/: write the corpus to scan by hand
"""
from __future__ import annotations

import copy
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
#: fixture repositories whose findings must be the same with the hostile files beside them
BASE = ("pytorch-fp32-loop", "wl-k8s-efa", "wl-skypilot-spot", "wl-sagemaker-spot", "notebook", "accelerate-no-mp")


@dataclass
class Case:
    name: str
    item: str  # the issue item it covers ("10.1" ... "usual suspects")
    files: dict[str, bytes | str]
    sys001: dict[str, str] = field(default_factory=dict)  # path -> substring of its SYS001 message
    silent: tuple[str, ...] = ()  # paths that must give no finding at all


def _nb(cells: list, language: str = "python") -> str:
    return json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": language, "language": language}},
                       "nbformat": 4, "nbformat_minor": 5})


def _code(src: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": src}


def _alias_bomb(levels: int = 9, width: int = 9) -> list[str]:
    """Anchors a..i, each a list of `width` aliases of the previous: width**levels leaves."""
    names = "abcdefghijklmnop"
    lines = [f"{names[0]}: &{names[0]} [" + ",".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"{names[i]}: &{names[i]} [" + ",".join([f"*{names[i - 1]}"] * width) + "]")
    return lines


def content_cases() -> list[Case]:
    """Hostile files that link to nothing: beside the base fixtures, they must not change their findings."""
    big_literal = "import torch\nx = [" + "1, " * 630_000 + "]\n"  # ~1.9 MB on one line
    bomb = _alias_bomb()
    return [
        # -- 10.1 deep nesting (libcst's native parser overflowed its stack) --------------------------
        Case("deep-parens", "10.1", {"h/deep_parens.py": "import torch\nx = " + "(" * 1500 + "1" + ")" * 1500 + "\n"},
             {"h/deep_parens.py": "nesting deeper than 200"}),
        Case("deep-lists", "10.1", {"h/deep_lists.py": "import torch\nx = " + "[" * 1500 + "1" + "]" * 1500 + "\n"},
             {"h/deep_lists.py": "nesting deeper than 200"}),
        Case("deep-calls", "10.1", {"h/deep_calls.py": "import torch\nx = " + "f(" * 1500 + "1" + ")" * 1500 + "\n"},
             {"h/deep_calls.py": "nesting deeper than 200"}),
        Case("deep-unclosed", "10.1", {"h/deep_unclosed.py": "import torch\nx = " + "(" * 5000 + "\n"},
             {"h/deep_unclosed.py": "deeper than 200"}),
        Case("deep-indent", "10.1", {"h/deep_indent.py": "import torch\n" + "".join(" " * i + "if x:\n" for i in range(150))
                                     + " " * 150 + "pass\n"}, {"h/deep_indent.py": "deeper than 200"}),
        Case("deep-unary", "10.1", {"h/deep_unary.py": "import torch\nx = " + "-" * 3000 + "1\n"}, {"h/deep_unary.py": "deeper than 200"}),
        # -- 10.2 long flat expressions (quadratic in libcst) ------------------------------------------
        Case("long-sum-20k", "10.2", {"h/long_sum.py": "import torch\nx = " + "+".join(["a"] * 20_000) + "\n"},
             {"h/long_sum.py": "deeper than 200"}),
        Case("long-sum-100k", "10.2", {"h/long_sum_100k.py": "import torch\nx = " + "+".join(["a"] * 100_000) + "\n"},
             {"h/long_sum_100k.py": "deeper than 200"}),
        Case("long-chain", "10.2", {"h/long_chain.py": "import torch\nx = torch" + ".cuda()" * 3000 + "\n"},
             {"h/long_chain.py": "deeper than 200"}),
        Case("long-sum-in-training-script", "10.2", {"h/train_sum.py": "import torch\nfor x in loader:\n    loss = model(x)\n    loss.backward()\n"
                                                      "    y = " + "+".join(["x"] * 5000) + "\n"}, {"h/train_sum.py": "deeper than 200"}),
        # -- 10.6 deep TOML; deep JSON ------------------------------------------------------------------
        Case("deep-toml", "10.6", {"h/deep.toml": "x = " + "[" * 5000 + "]" * 5000 + "\n"}, {"h/deep.toml": "nested too deeply"}),
        Case("deep-toml-tables", "10.6", {"h/deep_tables.toml": "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n"},
             {"h/deep_tables.toml": ""}),
        Case("deep-json-100k", "usual suspects", {"h/deep.json": "[" * 100_000 + "]" * 100_000}, {"h/deep.json": "nested too deeply"}),
        Case("deep-json-500", "usual suspects", {"h/deep500.json": "[" * 500 + "1" + "]" * 500}, silent=("h/deep500.json",)),
        # -- 10.8 / 10.9 YAML graphs ----------------------------------------------------------------------
        Case("alias-bomb-key", "10.8", {"h/bomb_key.yaml": "\n".join(bomb) + "\n? [" + ",".join(["*i"] * 9) + "]\n: v\n"},
             {"h/bomb_key.yaml": "too large"}),
        Case("alias-bomb-value", "10.8", {"h/bomb_value.yaml": "\n".join(bomb) + "\nj: [" + ",".join(["*i"] * 9) + "]\n"},
             {"h/bomb_value.yaml": "too large"}),
        Case("alias-bomb-merge", "10.8", {"h/bomb_merge.yaml": "a: &a {k0: 0}\n" + "".join(
            f"{n}: &{n} {{<<: [{','.join([f'*{p}'] * 9)}]}}\n" for p, n in zip("abcdefghi", "bcdefghij"))}, {"h/bomb_merge.yaml": "too large"}),
        Case("identical-configmaps", "10.9", {"h/many.yaml": "".join("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n"
                                                                      "data:\n  key: value\n" for _ in range(6000))}, silent=("h/many.yaml",)),
        Case("deep-yaml-flow", "usual suspects", {"h/deep_flow.yaml": "x: " + "[" * 100_000 + "]" * 100_000 + "\n"},
             {"h/deep_flow.yaml": "deeper than 200"}),
        Case("deep-yaml-block", "usual suspects", {"h/deep_block.yaml": "- " * 3000 + "a\n"}, {"h/deep_block.yaml": "YAML nest"}),
        Case("yaml-python-tags", "no execution", {"h/tags.yaml": "a: !!python/object/apply:os.system ['touch EXECUTED']\n"
                                                  "b: !!python/name:os.system\nc: !Ref Subnet\n"}, silent=("h/tags.yaml",)),
        # -- 10.10 a 1.9 MB single-line Python file ---------------------------------------------------
        Case("single-line-1.9MB", "10.10", {"h/one_line.py": big_literal}, {"h/one_line.py": "too large to analyse"}),
        # -- 10.12 silent skips that are SYS001 -------------------------------------------------------------
        Case("oversize", "10.12", {"h/huge.yaml": "a: 1\n" + "# padding\n" * 230_000}, {"h/huge.yaml": "larger than max-file-size-kb"}),
        Case("nul-bytes", "10.12", {"h/nul.py": b"import torch\n\x00\x01\x02"}, {"h/nul.py": "binary content"}),
        Case("binary-yaml", "usual suspects", {"h/blob.yaml": bytes(range(256)) * 8}, {"h/blob.yaml": "binary content"}),
        Case("binary-no-nul", "usual suspects", {"h/blob.py": bytes(range(128, 256)) * 8}, {"h/blob.py": "not UTF-8"}),
        Case("notebook-top-level-list", "10.12", {"h/list.ipynb": '["torch"]'}, {"h/list.ipynb": "not a Jupyter notebook"}),
        # (a notebook must mention an ML framework to be read at all: the text gate of code files)
        Case("notebook-no-cells", "10.12", {"h/nocells.ipynb": json.dumps({"metadata": {"torch": 1}})}, {"h/nocells.ipynb": "no 'cells' list"}),
        Case("notebook-v3", "10.12", {"h/v3.ipynb": json.dumps({"worksheets": [{"cells": ["import torch"]}], "nbformat": 3})},
             {"h/v3.ipynb": "format 3"}),
        Case("notebook-cell-not-object", "10.12", {"h/cell.ipynb": json.dumps({"cells": [5, "import torch"]})},
             {"h/cell.ipynb": "cell 1 is a JSON int"}),
        Case("notebook-source-not-text", "10.12", {"h/src.ipynb": json.dumps({"cells": [{"cell_type": "code", "source": 5}], "torch": 1})},
             {"h/src.ipynb": "'source' is not text"}),
        Case("notebook-deep-json", "usual suspects", {"h/deep.ipynb": '{"torch": ' + "[" * 100_000 + "]" * 100_000 + "}"},
             {"h/deep.ipynb": "nested too deeply"}),
        Case("notebook-deep-code", "10.1", {"h/deep_code.ipynb": _nb([_code("import torch\nx = " + "(" * 1500 + ")" * 1500)])},
             {"h/deep_code.ipynb": "deeper than 200"}),
        # -- the usual suspects ------------------------------------------------------------------------------
        Case("syntax-error", "usual suspects", {"h/syntax.py": "import torch\ndef f(:\n    pass\n"}, {"h/syntax.py": "syntax error"}),
        Case("utf8-bom", "usual suspects", {"h/bom.yaml": "\ufeffa: 1\n".encode("utf-8")}, silent=("h/bom.yaml",)),
        Case("latin-1-declared", "usual suspects", {"h/latin1_ok.py": "# -*- coding: latin-1 -*-\nimport torch\nname = 'caf\xe9'\n".encode("latin-1")},
             silent=("h/latin1_ok.py",)),
        Case("latin-1-undeclared", "usual suspects", {"h/latin1.yaml": "name: caf\xe9\n".encode("latin-1")}, {"h/latin1.yaml": "not UTF-8"}),
        Case("bad-coding-declaration", "usual suspects", {"h/badcoding.py": b"# -*- coding: no-such-codec -*-\nimport torch\n"},
             {"h/badcoding.py": "encoding"}),
        Case("utf16-yaml", "usual suspects", {"h/utf16.yaml": "a: 1\n".encode("utf-16")}, silent=("h/utf16.yaml",)),
        Case("tabs", "usual suspects", {"h/tabs.py": "import torch\nif x:\n\tif y:\n        pass\n", "h/tabs.yaml": "a:\n\tb: 1\n"},
             {"h/tabs.py": "", "h/tabs.yaml": ""}),
        Case("empty-files", "usual suspects", {"h/empty.py": "", "h/empty.yaml": "", "h/empty.json": "", "h/empty.toml": "", "h/empty.ipynb": "",
                                               "h/empty.sh": "", "h/empty.tf": "", "h/Dockerfile": "", "h/empty.mk": ""},
             silent=("h/empty.py", "h/empty.yaml", "h/empty.json", "h/empty.toml", "h/empty.ipynb", "h/empty.sh", "h/empty.tf",
                     "h/Dockerfile", "h/empty.mk")),
        Case("unterminated-string", "usual suspects", {"h/unterminated.py": "import torch\nx = '''never closed\n" + "y = 1\n" * 100},
             {"h/unterminated.py": "syntax error"}),
        Case("unterminated-heredoc", "usual suspects", {"h/heredoc.sh": "#!/bin/bash\ncat <<EOF > cfg.yaml\nlr: 1\npython train.py\n",
                                                        "h/heredoc.Dockerfile": "FROM ubuntu\nRUN <<EOF\napt-get update\n"}),
        Case("unbalanced-quotes", "usual suspects", {"h/quotes.sh": "#!/bin/bash\necho \"never closed\ntorchrun --nproc_per_node=8 x.py '\n",
                                                     "h/quotes.yaml": "a: \"never closed\nb: 1\n", "h/quotes.mk": "train:\n\tpython 'x.py\n"},
             {"h/quotes.yaml": ""}),
        Case("shell-deep-substitution", "usual suspects", {"h/subst.sh": "#!/bin/bash\nX=" + "$(" * 3000 + "echo" + ")" * 3000 + "\n"
                                                           "python " + "${" * 3000 + "\n"}),
        Case("shell-long-line", "usual suspects", {"h/long.sh": "#!/bin/bash\npython train.py " + "--flag x " * 100_000 + "\n"}),
        Case("terraform-deep", "usual suspects", {"h/deep.tf": "locals {\n  x = " + "[" * 3000 + "]" * 3000 + "\n}\n",
                                                  "h/truncated.tf": 'resource "aws_instance" "x" {\n  instance_type = "p4d.24xlarge"\n'},
             {"h/truncated.tf": ""}),
        Case("dockerfile-every-instruction", "usual suspects", {"h/all.Dockerfile": "".join(
            f"{ins} x\n" for ins in ("FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER",
                                     "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL", "NOSUCH")) + 'SHELL ["/bin/bash", "-c"]\nCMD python x.py\n'}),
        Case("makefile-recursive", "usual suspects", {"h/Makefile": "X = $(X) $(X)\nY := $(" * 2000 + "\ntrain:\n\t$(X) python train.py\n"}),
        Case("non-python-notebook", "issue 9", {"h/analysis.ipynb": _nb([_code("library(ggplot2)\nx <- c(1, 2, 3e)\n")], language="R")},
             silent=("h/analysis.ipynb",)),
    ]


# -- wrong types in every field ---------------------------------------------------------------------------
_WRONG = (None, 7, -1, 3.5, True, "x", "", [], [1, "a"], {}, {"a": {"b": 1}})


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, path + (i,))


def _replace(doc, path, value):
    doc = copy.deepcopy(doc)
    if not path:
        return value
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return doc


def _mutations(doc) -> list:
    """`doc` with each node in turn replaced by values of other types."""
    out = []
    for path in _paths(doc):
        for value in _WRONG:
            out.append(_replace(doc, path, value))
    return out


def wrong_type_cases() -> dict[str, str]:
    """Every field of a Kubernetes PyTorchJob, a SkyPilot task and an Azure ML
    job (shapes of the bundled fixtures) given every wrong type, one file per
    field; and every keyword of a SageMaker estimator given wrong literals."""
    files: dict[str, str] = {}
    sources = {"k8s": FIXTURES / "wl-k8s-efa" / "k8s" / "pytorchjob.yaml", "sky": FIXTURES / "wl-skypilot-spot" / "sky" / "finetune.yaml"}
    azure = {"$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json", "command": "python train.py",
             "code": "src", "environment": "azureml:pytorch@latest", "compute": "azureml:gpu-cluster",
             "resources": {"instance_count": 2, "instance_type": "Standard_ND96asr_v4"}, "distribution": {"type": "pytorch", "process_count_per_instance": 8}}
    docs = {name: list(yaml.safe_load_all(p.read_text())) for name, p in sources.items()}
    docs["azureml"] = [azure]
    for name, ds in docs.items():
        for d_i, doc in enumerate(ds):
            for p_i, path in enumerate(_paths(doc)):
                variants = [_replace(doc, path, v) for v in _WRONG]
                text = yaml.safe_dump_all(variants, sort_keys=False)
                # keep launchers from naming the base fixtures' scripts: a mutation is not their launcher
                files[f"types/{name}/{d_i}_{p_i}.yaml"] = text.replace("train.py", "nowhere.py").replace("sft.py", "nowhere.py")
    estimator_kwargs = {"entry_point": "'nowhere.py'", "source_dir": "'src'", "instance_type": "'ml.p4d.24xlarge'", "instance_count": "2",
                        "use_spot_instances": "True", "max_run": "3600", "max_wait": "7200", "checkpoint_s3_uri": "'s3://b/c'",
                        "distribution": "{'torch_distributed': {'enabled': True}}", "hyperparameters": "{'epochs': 3, 'bf16': True}",
                        "environment": "{'NCCL_DEBUG': 'INFO'}"}
    wrong_literals = ("None", "7", "'x'", "[]", "[1, 'a']", "{}", "{'a': {'b': 1}}", "True", "3.5", "f'{x}'", "lambda: 0", "x.y", "*args")
    for key in estimator_kwargs:
        for w_i, lit in enumerate(wrong_literals):
            kwargs = dict(estimator_kwargs, **{key: lit})
            if lit == "*args":
                kwargs.pop(key)
            call = ",\n    ".join(f"{k}={v}" for k, v in kwargs.items()) + (",\n    *args" if lit == "*args" else "")
            files[f"types/sagemaker/{key}_{w_i}.py"] = ("import sagemaker\nfrom sagemaker.pytorch import PyTorch\n\n"
                                                        f"est = PyTorch(\n    {call},\n)\nest.fit({{'train': 's3://b/d'}})\n")
    return files


# -- writing -------------------------------------------------------------------------------------------------
def write(root: Path, files: dict[str, bytes | str]) -> None:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))


def base_one(root: Path, name: str) -> None:
    shutil.copytree(FIXTURES / name, root / name)


def base(root: Path) -> None:
    for name in BASE:
        base_one(root, name)


def build(root: Path) -> list[Case]:
    """The base fixtures and every content case under `root`; returns the cases."""
    cases = content_cases()
    base(root)
    for case in cases:
        write(root, case.files)
    return cases


if __name__ == "__main__":
    out = Path(sys.argv[1])
    build(out / "content")
    write(out / "types", wrong_type_cases())
    print(f"wrote {out}/content and {out}/types")
