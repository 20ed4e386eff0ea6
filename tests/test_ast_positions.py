"""Python is read with CPython's ast: positions are characters (ast counts UTF-8 bytes),
libcst's tree is only parsed when something asks for it, fixes still land on the code
the finding names, and syntax newer than the running Python is said to be such."""
from __future__ import annotations

import json
import sys

import libcst
import pytest

from gpulint.cli.main import main
from gpulint.read.parsers import parse_notebook, parse_python
from gpulint.read.python.facts import python_facts
from gpulint.testing import scan_tree, write_tree

LOOP = "for x in loader:\n    model(x).sum().backward()\n    opt.step()\n"


def _col(text: str, needle: str) -> tuple[int, int]:
    """1-based line and character column of the first `needle` in `text`."""
    at = text.index(needle)
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def test_columns_count_characters_not_utf8_bytes():
    text = ('import torch\nfrom torch.utils.data import DataLoader\n'
            'étiquette = "données d\'entraînement 日本語"; loader = DataLoader(jeu_données, num_workers=4)\n'
            'x = "ü"; torch.save(modèle, "ckpt/é.pt")\n' + LOOP)
    facts = python_facts(parse_python(text, "train.py"))
    (loader,) = [f for f in facts if f.kind == "dataloader"]
    assert (loader.loc.line, loader.loc.column) == _col(text, "DataLoader(jeu")
    call = "DataLoader(jeu_données, num_workers=4)"
    assert loader.loc.end_line == loader.loc.line and loader.loc.end_column == loader.loc.column + len(call)
    (save,) = [f for f in facts if f.kind == "checkpoint.save"]
    assert (save.loc.line, save.loc.column) == _col(text, "torch.save")
    assert save.loc.end_column == save.loc.column + len('torch.save(modèle, "ckpt/é.pt")')


def test_notebook_cells_keep_their_lines_and_character_columns():
    cells = [
        {"cell_type": "markdown", "source": ["# Entraînement"]},
        {"cell_type": "code", "source": ["!pip install torch\n", "import torch\n"]},
        {"cell_type": "code", "source": ["nom = 'modèle ü'; m = torch.nn.Linear(2, 2).cuda()\n",
                                         "with torch.autocast('cuda', dtype=torch.bfloat16):\n", "    y = m(x)\n"]},
    ]
    nb = json.dumps({"cells": cells, "metadata": {"kernelspec": {"language": "python"}}, "nbformat": 4, "nbformat_minor": 5},
                    indent=1)
    facts = python_facts(parse_notebook(nb, "nb.ipynb"))
    (gpu,) = [f for f in facts if f.kind == "uses_gpu"]
    assert (gpu.loc.cell, gpu.loc.cell_line) == (3, 1)
    assert gpu.loc.column == len("nom = 'modèle ü'; m = ") + 1
    (amp,) = [f for f in facts if f.kind == "precision" and f.value.get("mechanism") == "autocast"]
    assert (amp.loc.cell, amp.loc.cell_line, amp.loc.column) == (3, 2, len("with ") + 1)


def test_libcst_tree_is_parsed_only_when_asked_for():
    text = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n" + LOOP
    source = parse_python(text, "train.py")
    assert python_facts(source)
    assert source._cst is None and not source._cst_tried  # facts never needed it
    tree = source.tree  # a plugin's rule walking libcst nodes still gets the module
    assert isinstance(tree, libcst.Module) and tree.code == text
    assert source.tree is tree  # parsed once
    call = tree.body[1].body[0].value
    assert isinstance(call, libcst.Call)
    loc = source.node_loc(call)
    assert (loc.line, loc.column) == (2, len("model = ") + 1)


def test_fix_lands_on_the_call_after_non_ascii_text(tmp_path, capsys):
    files = {"train.py": "from torch.utils.data import DataLoader\nfrom torchvision.datasets import ImageFolder\n"
                         "jeu_données = ImageFolder('/données')\n"
                         "étape = 'préparation'; loader = DataLoader(jeu_données, num_workers=4)  # données\n"
                         "model = model.cuda()\n" + LOOP}
    write_tree(tmp_path, files)
    capsys.readouterr()
    assert main(["scan", str(tmp_path), "--select", "IO002", "--fix"]) == 0
    assert "Fixed 1 finding" in capsys.readouterr().err
    text = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert "loader = DataLoader(jeu_données, num_workers=4, pin_memory=True)  # données\n" in text
    libcst.parse_module(text)
    result, _ = scan_tree(tmp_path)
    assert not [f for f in result.findings if f.code in ("IO002", "SYS001", "SYS002")]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="PEP 695 generics parse on Python 3.12+")
def test_syntax_newer_than_the_running_python_is_a_sys001_that_says_so(tmp_path):
    write_tree(tmp_path, {"train.py": "import torch\n\ndef first[T](xs: list[T]) -> T:\n    return xs[0]\n" + LOOP})
    result, _ = scan_tree(tmp_path)
    (sys001,) = [f for f in result.findings if f.code == "SYS001"]
    assert sys001.loc.line == 3
    assert f"newer syntax than Python {sys.version_info[0]}.{sys.version_info[1]}" in sys001.message
    assert sys001.severity.value == "info" and "newer Python" in sys001.guidance  # valid code: never fails CI


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="PEP 701 f-strings parse on Python 3.12+")
def test_a_pep_701_f_string_in_a_training_script_is_info_not_an_error(tmp_path):
    """A Python 3.12 f-string that reuses its quotes inside the braces, in an entry point SageMaker runs."""
    write_tree(tmp_path, {"train.py": 'import torch\nname = {"a": 1}\nprint(f"{name["a"]}")\n' + LOOP,
                          "launch.py": "from sagemaker.pytorch import PyTorch\nPyTorch(entry_point='train.py', instance_type='ml.g5.2xlarge').fit()\n"})
    result, _ = scan_tree(tmp_path)
    (sys001,) = [f for f in result.findings if f.code == "SYS001"]
    assert sys001.severity.value == "info"


def test_a_syntax_error_is_reported_at_cpythons_position(tmp_path):
    write_tree(tmp_path, {"train.py": "import torch\nmodel = torch.nn.Linear(2, 2\nx = 1\n"})
    result, _ = scan_tree(tmp_path)
    (sys001,) = [f for f in result.findings if f.code == "SYS001"]
    assert sys001.loc.line == 2 and "newer syntax" not in sys001.message
