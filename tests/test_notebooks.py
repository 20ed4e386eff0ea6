"""Jupyter notebooks end to end: code cells are scanned, findings point at the
cell and line (and the line of the .ipynb file), magics do not break parsing."""
from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, run_cli
from gpulint.read.parsers import parse_notebook
from gpulint.core.sources import ParseError

SETUP = "import torch\nmodel = Net(width=1024).cuda()\nopt = torch.optim.AdamW(model.parameters())"
LOOP = "for x in loader:\n    loss = model(x.cuda()).sum()\n    loss.backward()\n    opt.step()"


def code(src):
    return {"cell_type": "code", "execution_count": None, "id": None, "metadata": {}, "outputs": [], "source": src.splitlines(keepends=True)}


def md(src):
    return {"cell_type": "markdown", "id": None, "metadata": {}, "source": src.splitlines(keepends=True)}


def notebook(path, *cells, indent=1):
    cells = [dict(c, id=f"c{i}") for i, c in enumerate(cells)]
    nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb, indent=indent) + "\n")
    return path


def file_line(path, needle):
    return next(i for i, l in enumerate(path.read_text().splitlines(), 1) if needle in l)


def scan(root, *args):
    proc = run_cli("scan", root, "--format", "json", *args)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)["findings"]


# -- positions --------------------------------------------------------------------------------------
def test_fixture_notebook_finding_has_cell_and_file_line():
    (f,) = scan(FIXTURES / "notebook")
    nb = FIXTURES / "notebook" / "finetune_vit.ipynb"
    assert f["code"] == "AMP001"
    assert (f["cell"], f["cell_line"]) == (7, 9)
    assert f["line"] == file_line(nb, "loss.backward()")
    assert f["column"] == 9


def test_text_format_shows_the_cell():
    proc = run_cli("scan", ".", cwd=FIXTURES / "notebook")
    assert proc.stdout.splitlines()[0].startswith("finetune_vit.ipynb:cell 7:9:9: AMP001 [warning]")


def test_github_and_sarif_use_the_file_line():
    gh = run_cli("scan", ".", "--format", "github", cwd=FIXTURES / "notebook").stdout
    assert "file=finetune_vit.ipynb,line=82,col=9" in gh
    sarif = json.loads(run_cli("scan", ".", "--format", "sarif", cwd=FIXTURES / "notebook").stdout)
    (res,) = sarif["runs"][0]["results"]
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 82


def test_cells_share_one_namespace(tmp_path):
    """Imports in one cell, training in a later one, markdown in between."""
    nb = notebook(tmp_path / "train.ipynb", md("# Setup"), code(SETUP), md("## Train\n```python\nloss.backward()\n```"), code(LOOP))
    (f,) = scan(tmp_path)
    assert (f["code"], f["cell"], f["cell_line"]) == ("AMP001", 4, 3)
    assert f["line"] == file_line(nb, '"    loss.backward()')


def test_compact_json_layout_still_gives_cell_positions(tmp_path):
    notebook(tmp_path / "train.ipynb", code(SETUP), code(LOOP), indent=None)
    (f,) = scan(tmp_path)
    assert (f["cell"], f["cell_line"]) == (2, 3)


def test_source_as_one_string(tmp_path):
    cells = [dict(code(SETUP), source=SETUP), dict(code(LOOP), source=LOOP)]
    notebook(tmp_path / "train.ipynb", *cells)
    (f,) = scan(tmp_path)
    assert (f["code"], f["cell"], f["cell_line"]) == ("AMP001", 2, 3)


def test_mixed_precision_notebook_is_silent(tmp_path):
    loop = LOOP.replace("    loss = model", "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        loss = model")
    notebook(tmp_path / "train.ipynb", code(SETUP), code(loop))
    assert scan(tmp_path) == []


def test_inference_notebook_is_silent(tmp_path):
    notebook(tmp_path / "infer.ipynb", code("import torch\nmodel = torch.load('m.pt').cuda().eval()"),
             code("with torch.inference_mode():\n    print(model(x.cuda()))"))
    assert scan(tmp_path) == []


# -- magics ------------------------------------------------------------------------------------------
def test_line_and_cell_magics_do_not_break_parsing(tmp_path):
    notebook(tmp_path / "train.ipynb",
             code("%pip install -q timm\n!nvidia-smi\n%matplotlib inline\n%load_ext autoreload\n%autoreload 2"),
             code("%%bash\nnvidia-smi -L\nls data/ | head"),
             code(SETUP + "\nmodel?"),
             code(LOOP))
    (f,) = scan(tmp_path)
    assert (f["code"], f["cell"], f["cell_line"]) == ("AMP001", 4, 3)


def test_training_under_a_python_cell_magic_is_scanned(tmp_path):
    notebook(tmp_path / "train.ipynb", code(SETUP), code("%%time\n" + LOOP))
    assert [(f["code"], f["cell"], f["cell_line"]) for f in scan(tmp_path)] == [("AMP001", 2, 4)]


def test_indented_magic_inside_a_block(tmp_path):
    notebook(tmp_path / "train.ipynb", code(SETUP),
             code("for x in loader:\n    !nvidia-smi --query-gpu=utilization.gpu --format=csv\n    loss = model(x.cuda()).sum()\n"
                  "    loss.backward()\n    opt.step()"))
    assert [(f["code"], f["cell"]) for f in scan(tmp_path)] == [("AMP001", 2)]


def test_other_cell_magics_stay_blanked(tmp_path):
    """%%writefile, %%bash and %%html bodies are not run in the kernel: not scanned, not parsed."""
    notebook(tmp_path / "train.ipynb", code(SETUP),
             code("%%writefile train.py\n" + LOOP),
             code("%%bash\nfor f in *.pt; do echo $f; done"),
             code("%%html\n<div>loss: <b>{x}</b></div>"))
    assert scan(tmp_path) == []


def test_python_cell_magics_keep_their_body():
    src = json.dumps({"cells": [code(SETUP),
                                code("%%timeit -n 3\nmodel(x.cuda())\n!nvidia-smi"),
                                code("%%capture out\nimport timm"),
                                code("%%prun -s cumulative\nfor x in loader:\n    %time step(x)")]})
    source = parse_notebook(src, "nb.ipynb")
    lines = source.text.splitlines()
    assert lines[3:6] == ["pass", "model(x.cuda())", "pass"]
    assert lines[6:8] == ["pass", "import timm"]
    assert lines[8:11] == ["pass", "for x in loader:", "    pass"]
    # a name that only starts like a Python cell magic is blanked whole
    other = parse_notebook(json.dumps({"cells": [code("%%timer\nthis is not python")]}), "nb.ipynb")
    assert other.text.splitlines() == ["pass", "pass"]


def test_indented_magics_keep_their_indentation():
    cell = "if ok:\n\tfor x in loader:\n\t    !ls data/\n\t    %time step(x)\n\t    x?\n\t    y = 1"
    source = parse_notebook(json.dumps({"cells": [code(cell)]}), "nb.ipynb")
    assert source.text.splitlines() == ["if ok:", "\tfor x in loader:", "\t    pass", "\t    pass", "\t    pass", "\t    y = 1"]
    assert source.tree is not None


# -- syntax errors --------------------------------------------------------------------------------------
def test_syntax_error_in_one_cell_is_sys001_naming_the_cell(tmp_path):
    notebook(tmp_path / "broken.ipynb", code(SETUP), code("x = = 1\ny = 2"), code(LOOP))
    notebook(tmp_path / "ok.ipynb", code(SETUP), code(LOOP))
    found = scan(tmp_path)
    (err,) = [f for f in found if f["code"] == "SYS001"]
    assert err["path"] == "broken.ipynb" and "syntax error in cell 2" in err["message"]
    # a notebook feeds no workload gpulint can link (nothing launches it): info, not a CI failure;
    # tests/test_parse_tolerance.py covers the error severity of a file that does feed one
    assert err["severity"] == "info"
    assert ("AMP001", "ok.ipynb") in {(f["code"], f["path"]) for f in found}  # the scan goes on


def test_syntax_error_points_at_the_offending_line_and_cell(tmp_path):
    """CPython's position and wording: an unclosed '(' is named where it opens,
    not in the next cell where libcst's parser gave up."""
    nb = notebook(tmp_path / "broken.ipynb", code(SETUP), code("def collate(batch:\n    return batch"), code(LOOP))
    (err,) = [f for f in scan(tmp_path) if f["code"] == "SYS001"]
    assert "cell 2, line 1" in err["message"] and "never closed" in err["message"]
    assert "error at" not in err["message"]  # no virtual-module coordinates
    assert err["line"] == file_line(nb, "def collate(batch:")


def test_syntax_error_location_carries_the_cell(tmp_path):
    notebook(tmp_path / "broken.ipynb", code(SETUP), code("def collate(batch:\n    return batch"), code(LOOP))
    (err,) = [f for f in scan(tmp_path) if f["code"] == "SYS001"]
    assert (err.get("cell"), err.get("cell_line")) == (2, 1)


def test_syntax_error_maps_to_cell_and_file_line_in_parse_error(tmp_path):
    nb = notebook(tmp_path / "broken.ipynb", code(SETUP), md("# Train"), code("print('ok')\nx = = 1\ny = 2"), code(LOOP))
    (err,) = parse_notebook(nb.read_text(), "broken.ipynb").cell_errors  # the other cells are read
    assert err.message == "Python syntax error in cell 3, line 2: invalid syntax"
    assert (err.line, err.column) == (file_line(nb, '"x = = 1'), 5)
    assert (err.location.cell, err.location.cell_line, err.location.line) == (3, 2, err.line)


def test_syntax_error_at_end_of_last_cell_stays_in_that_cell(tmp_path):
    """CPython reports an unfinished block one line past the end of the module."""
    nb = notebook(tmp_path / "broken.ipynb", code(SETUP), code("for x in loader:"))
    (err,) = parse_notebook(nb.read_text(), "broken.ipynb").cell_errors
    assert err.message.startswith("Python syntax error in cell 2, line 1: expected an indented block")
    assert err.line == file_line(nb, '"for x in loader:')


def test_invalid_notebook_json_is_sys001(tmp_path):
    (tmp_path / "torn.ipynb").write_text('{"cells": [{"cell_type": "code", "source": ["import torch\\n"]}\n')
    (err,) = [f for f in scan(tmp_path) if f["code"] == "SYS001"]
    assert (err["code"], err["path"]) == ("SYS001", "torn.ipynb")
    assert "not valid JSON" in err["message"]


# -- suppressions in cells ---------------------------------------------------------------------------
def test_suppression_comment_in_a_cell(tmp_path):
    notebook(tmp_path / "train.ipynb", code(SETUP), code(LOOP.replace("loss.backward()", "loss.backward()  # gpulint: ignore[AMP001]")))
    assert scan(tmp_path) == []


def test_unused_suppression_in_a_cell_points_at_the_cell(tmp_path):
    nb = notebook(tmp_path / "train.ipynb", code(SETUP + "  # gpulint: ignore[NET006]"), code(LOOP))
    found = {f["code"]: f for f in scan(tmp_path)}
    assert found["SYS004"]["line"] == file_line(nb, "gpulint: ignore[NET006]")
    assert "AMP001" in found


def test_shell_cells_launch_scripts_with_their_flags(tmp_path):
    """`!accelerate launch --mixed_precision bf16 ...` in a cell is a launcher of train.py: its flag decides
    the precision (no AMP001), and the launch points at the cell."""
    import json as _json

    from gpulint.testing import scan_tree, write_tree

    nb = {"cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["%pip install accelerate\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [],
         "source": ["!accelerate launch --num_processes 8 \\\n", "    --mixed_precision bf16 train.py --epochs 3\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["%%bash\n", "export NCCL_P2P_DISABLE=1\n", "python eval.py\n"]},
    ], "metadata": {"kernelspec": {"language": "python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    train = ("from accelerate import Accelerator\nimport torch\naccelerator = Accelerator()\n"
             "model, opt = accelerator.prepare(model, opt)\nfor batch in loader:\n    loss = model(**batch).loss\n"
             "    accelerator.backward(loss)\n    opt.step()\n")
    write_tree(tmp_path, {"run.ipynb": _json.dumps(nb, indent=1), "train.py": train, "eval.py": "import torch\n"})
    result, wls = scan_tree(tmp_path)
    wl = next(w for w in wls if w.entrypoint == "train.py")
    (launch,) = wl.launchers
    assert launch.value["tool"] == "accelerate" and launch.value["mixed_precision"] == "bf16"
    assert (launch.loc.path, launch.loc.cell, launch.loc.cell_line) == ("run.ipynb", 2, 1)
    assert wl.resolution.precision.mixed is True
    assert not [f for f in result.findings if f.code == "AMP001"]
    ev = next(w for w in wls if w.entrypoint == "eval.py")
    assert [e.value["name"] for e in ev.env] == ["NCCL_P2P_DISABLE"] and ev.launchers[0].loc.cell == 3
