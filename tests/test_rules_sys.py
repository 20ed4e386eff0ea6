"""SYS rules (the scan itself: parse errors, unknown instance types, pairing questions): cases on small
repositories, most reproducing a class judged on a real repository (tests/realworld/labels.yaml).
"""
from __future__ import annotations

import pytest

from gpulint.testing import scan_files
from helpers import SEVERITY_AT, codes, findings
from samples import FP32_TRAIN, MAIN_LOOP, SM_RESNET_LOOP, TRAIN, _cell, _nb_of_cells


def _nb_of_sources(*cells: str) -> str:
    import json
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": c} for c in cells],
                       "metadata": {"kernelspec": {"language": "python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5})


POOL = '''\
variable "machine_type" {}
resource "google_container_node_pool" "pool" {
  name    = "pool"
  cluster = "c"
  node_config {
    machine_type = var.machine_type
%s  }
}
'''


GPU_ACCEL = "    guest_accelerator {\n      type  = \"nvidia-l4\"\n      count = 1\n    }\n"


TRAIN_GPU = "import torch\nmodel = Net().cuda()\nfor x in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\n"


# -- a notebook cell that declares its own language ------------------------------------------------
TERMINAL = "docker run --gpus all -it --rm -v $PWD:/work nvcr.io/nvidia/pytorch:24.01-py3\ncd /work && ls -la"


FINETUNE = "accelerate launch --mixed_precision bf16 train.py --epochs 3"


# -- files a launcher names that are not the run's configuration -----------------------------------
EVAL = "import torch\nmodel = load().cuda().eval()\nwith torch.no_grad():\n    model(batch)\n"


def _eval_launch(flag: str, path: str) -> dict:
    return {"eval.py": EVAL, "run_eval.sh": f"#!/bin/bash\npython eval.py {flag} \"{path}\"\n",
            "data/textvqa/train_questions.json": '{"questions": [1, 2,]\n'}


# -- Terraform that Terraform accepts and python-hcl2's grammar does not -----------------------------
MULTILINE_INTERPOLATION = '''\
resource "aws_instance" "trainer" {
  ami           = "ami-123"
  instance_type = "p4d.24xlarge"
  tags = {
    Name = "trainer-${
      var.short ? "a" :
      "b-${var.suffix}"
    }"
  }
}

resource "aws_instance" "second" {
  instance_type = "g5.xlarge"
}
'''


# -- a course notebook's blanks for the reader to fill are not syntax errors ------------------------------
def _notebook(*cells: str) -> str:
    import json
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": c.splitlines(keepends=True)} for c in cells],
                       "metadata": {"kernelspec": {"name": "python3", "language": "python"}}, "nbformat": 4,
                       "nbformat_minor": 5})


# -- SYS001 ----------------------------------------------------------------------------------------------


def test_a_notebook_is_measured_by_its_code_cells_not_its_outputs():
    import json as _json
    image = "iVBORw0KGgo" * 30_000  # ~330 KB of base64 output
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "import torch\nmodel = Net().to('cuda')",
              "outputs": [{"output_type": "display_data", "data": {"image/png": image}, "metadata": {}}]},
             {"cell_type": "code", "metadata": {}, "execution_count": 2, "outputs": [],
              "source": "for x in loader:\n    model(x.to('cuda')).sum().backward()\n    opt.step()"}]
    nb = _json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python"}}, "nbformat": 4, "nbformat_minor": 5})
    result = scan_files({"train.ipynb": nb}, config_text="max-file-size-kb = 100\n")
    assert not [f for f in result.findings if f.code == "SYS001"] and [f for f in result.findings if f.code == "AMP001"]
    big_code = nb.replace("import torch", "import torch\\n" + "x = 1\\n" * 20_000)
    (f,) = [f for f in scan_files({"train.ipynb": big_code}, config_text="max-file-size-kb = 100\n").findings if f.code == "SYS001"]
    assert "code cells larger than max-file-size-kb" in f.message


def test_a_helm_charts_templates_that_do_not_parse_are_skipped_in_silence():
    broken = "{{- range .Values.pools }}\napiVersion: v1\nkind: ConfigMap\n  bad: indent\n{{- end }}\n"
    chart = {"charts/app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\n", "charts/app/templates/cm.yaml": broken}
    assert codes(chart, "SYS001", sort=True) == []
    assert codes({"k8s/cm.yaml": broken}, "SYS001", sort=True) == ["SYS001"]  # the same text outside a chart is reported


# -- parsing and scope ----------------------------------------------------------------------------
def test_jsonc_with_a_trailing_comma_before_a_comment_parses():
    text = '{\n  "name": "dev",\n  "features": {\n    "a": {},\n  },\n  "mounts": [\n    "x",\n  ],\n  // "forwardPorts": []\n}\n'
    assert findings({".devcontainer/devcontainer.json": text}, "SYS001") == []
    # the same text is an error where the tool reads strict JSON
    assert [f.code for f in findings({"configs/ds_config.json": text}, "SYS001")] == ["SYS001"]


def test_go_testdata_folders_are_test_inputs():
    files = {"runner/host/testdata/invalid_json.json": '{"a": 1\n "b": 2}\n', "train.py": "print(1)\n"}
    assert findings(files, "SYS001") == []


def test_a_notebook_cell_that_does_not_parse_is_skipped_and_the_rest_is_read():
    nb = _nb_of_sources("curl -X POST https://example.com/generate -d '{\"inputs\": \"hi\"}'",
             "from sagemaker.pytorch import PyTorch\n"
             "PyTorch(entry_point='train.py', instance_type='ml.p4d.24xlarge', role=role, framework_version='2.1').fit()\n")
    train = "import torch\nmodel = Net().cuda()\nfor x in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\n"
    result = scan_files({"launch.ipynb": nb, "train.py": train})
    (err,) = [f for f in result.findings if f.code == "SYS001"]
    assert "cell 1" in err.message and err.severity.value == "info"
    wl = next(w for w in result.workloads if w["entrypoint"] == "train.py")
    assert wl["compute"], wl  # the estimator of the next cell is read


def test_a_cell_magic_without_a_name_is_not_python():
    nb = _nb_of_sources("%% endpoint-config.yaml\nresources:\n  memory: 30Gi\n", "import torch\nprint(torch.__version__)\n")
    assert findings({"deploy.ipynb": nb}, "SYS001") == []


@pytest.mark.parametrize("files", [
    {"templates/kustomization.tftpl.yaml": "resources:\n%{ for r in list ~}\n  - ${r}\n%{ endfor ~}\n  : bad\n"},
    {"k8s_templates/peft/Chart.yaml": "apiVersion: v2\nname: peft\nversion: 0.1.0\n",
     "k8s_templates/peft/peft.yaml": "{{- define \"x\" }}\nkey: [unclosed\n{{- end }}\n"},
])
def test_files_that_are_templates_by_name_or_place_are_skipped_in_silence(files):
    assert findings(files, "SYS001") == []


def test_a_broken_yaml_that_is_no_template_is_still_reported():
    assert [f.code for f in findings({"configs/train.yaml": "key: [unclosed\n"}, "SYS001")] == ["SYS001"]


def test_json_key_positions_are_read_only_when_asked():
    """Most JSON files (data, eval results) are never asked for a position; a config's finding still points
    at its key."""
    from gpulint.read.parsers import parse_json
    doc = parse_json('{\n  "train_batch_size": 8,\n  "fp16": {\n    "enabled": false\n  }\n}\n', "ds.json").tree[0]
    assert doc.marks == {} and doc.marks_of is not None
    assert doc.at(("fp16", "enabled"))[0] == 4 and doc.marks_of is None


@pytest.mark.parametrize("section, key, language", [
    ("vscode", "languageId", "shellscript"),
    ("vscode", "languageId", "powershell"),
    ("dotnet_interactive", "language", "pwsh"),
    ("polyglot_notebook", "kernelName", "bash"),
])
def test_a_cell_whose_metadata_declares_another_language_is_no_python_syntax_error(section, key, language):
    nb = _nb_of_cells(_cell("import torch"), _cell(TERMINAL, language, section, key), _cell("print(torch.__version__)"))
    assert findings({"guide.ipynb": nb}, "SYS001") == []


def test_without_the_declaration_the_same_cell_is_a_python_syntax_error():
    nb = _nb_of_cells(_cell("import torch"), _cell(TERMINAL), _cell("print(torch.__version__)"))
    (err,) = findings({"guide.ipynb": nb}, "SYS001")
    assert "cell 2" in err.message


def test_a_shell_cell_is_read_as_a_launch_and_a_python_cell_as_python():
    """The declared shell cell launches train.py with bf16 (no AMP001); a cell declared Python is Python."""
    launched = _nb_of_cells(_cell(FINETUNE, "shellscript"))
    result = scan_files({"run.ipynb": launched, "train.py": TRAIN})
    wl = next(w for w in result.workloads if w["entrypoint"] == "train.py")
    assert any(l["path"] == "run.ipynb" for l in wl["launchers"]), wl["launchers"]
    python = _nb_of_cells(_cell("import torch\nx = torch.ones(3)", "python"))
    assert findings({"py.ipynb": python}, "SYS001") == []
    broken = _nb_of_cells(_cell("import torch\nx = = 1", "python"))
    assert findings({"bad.ipynb": broken}, "SYS001")


@pytest.mark.parametrize("flag, path, severity", [
    ("--config", "data/textvqa/train_questions.json", "error"),                 # a file the launch reads as its config
    ("--config", "/path/to/textvqa/train_questions.json", "info"),              # a placeholder for the reader's own file
    ("--config", "<data-root>/textvqa/train_questions.json", "info"),
    ("--textvqa_questions_json_path", "data/textvqa/train_questions.json", "info"),  # data the script reads
    ("--train_file", "data/textvqa/train_questions.json", "info"),
])
def test_a_broken_file_fails_ci_only_when_a_launch_reads_it_as_configuration(flag, path, severity):
    (err,) = findings(_eval_launch(flag, path), "SYS001")
    assert err.severity.value == severity


def test_a_file_past_the_size_budget_is_info_even_where_a_launch_reads_it():
    files = {"eval.py": EVAL, "run_eval.sh": "#!/bin/bash\npython eval.py --config conf/big.json\n",
             "conf/big.json": '{"rows": [' + ", ".join(['"x"'] * 800) + "]}\n"}
    (err,) = [f for f in scan_files(files, config_text="max-file-size-kb = 1\n").findings if f.code == "SYS001"]
    assert err.severity.value == "info" and "max-file-size-kb" in err.message
    assert "UTF-8" not in err.guidance and "limit" in err.guidance


def test_a_multiline_interpolation_is_blanked_and_the_rest_of_the_file_is_read():
    result = scan_files({"main.tf": MULTILINE_INTERPOLATION})
    assert [f for f in result.findings if f.code == "SYS001"] == []
    assert sorted(c["instance"] for c in result.computes) == ["g5.xlarge", "p4d.24xlarge"]


@pytest.mark.parametrize("broken", [
    'resource "aws_instance" "x" {\n  instance_type = "p4d.24xlarge"\n  tags = {\n    Name = "x-${var.a"\n  }\n',
    'resource "aws_instance" "x" {\n  instance_type = = "p4d.24xlarge"\n}\n',
])
def test_a_real_hcl_syntax_error_is_still_reported(broken):
    assert findings({"main.tf": broken}, "SYS001")


def test_files_under_a_project_generators_placeholder_folder_are_templates():
    broken = "from .modeling_{{cookiecutter.lowercase_modelname}} import {{cookiecutter.camelcase_modelname}}Model\n"
    files = {"templates/cookiecutter-template-{{cookiecutter.modelname}}/__init__.py": "import torch\n" + broken,
             "src/pkg/__init__.py": "import torch\n" + broken}
    assert [f.loc.path for f in findings(files, "SYS001")] == ["src/pkg/__init__.py"]


@pytest.mark.parametrize("blank", ["PROJECT_ID = # TODO: set your project", "REGION = <your-region>",
                                   "ENDPOINT =   # Enter your ENDPOINT here."])
def test_a_blank_to_fill_in_a_notebook_cell_is_read_as_unknown(blank):
    nb = _notebook("import torch, torchvision\n" + blank + "\nmodel = torchvision.models.resnet50().cuda()\n"
                   "for x, y in loader:\n    loss_fn(model(x.cuda()), y.cuda()).backward()\n    opt.step()\n")
    got = codes({"lab.ipynb": nb}, fields=SEVERITY_AT)
    assert not [c for c in got if c[0] == "SYS001"]
    assert [c for c in got if c[0] == "AMP001"]  # the rest of the cell is read


def test_a_real_syntax_error_in_a_cell_is_still_reported():
    nb = _notebook("import torch\nmodel = torch.nn.Linear(8, 8\nprint(model)\n")
    assert [c for c in codes({"lab.ipynb": nb}, fields=SEVERITY_AT) if c[0] == "SYS001"]


# -- a JSON file past the size budget that nothing reads is data, skipped in silence ------------------------
def test_an_oversized_json_nothing_reads_is_skipped_quietly():
    files = {"train.py": FP32_TRAIN, "tokenizer/vocab.json": '{"rows": [' + ", ".join(['"x"'] * 800) + "]}\n",
             "notes.py": "x = (\n" + "1,\n" * 800 + ")\n"}
    sys001 = sorted(f.loc.path for f in scan_files(files, config_text="max-file-size-kb = 1\n").findings if f.code == "SYS001")
    assert sys001 == ["notes.py"]  # code past the budget is still said (it may train); the vocabulary is not


# -- SYS003 ----------------------------------------------------------------------------------------------


# -- notebook lines when the notebook's metadata holds a "source" key of its own; SYS003 on old GPU types ----
def test_lines_map_to_the_file_when_the_metadata_holds_a_source_key():
    import json
    nb = json.loads(_notebook("import sagemaker\n", "from sagemaker.pytorch import PyTorch\n\nest = PyTorch(\n    entry_point='train.py',\n"
                              "    train_instance_type='ml.p2.xlarge',\n    train_instance_count=1,\n)\nest.fit()\n"))
    nb["metadata"]["pycharm"] = {"stem_cell": {"cell_type": "raw", "metadata": {}, "source": []}}
    text = json.dumps(nb, indent=1)
    r = scan_files({"launch.ipynb": text, "train.py": SM_RESNET_LOOP})
    (f,) = [f for f in r.findings if f.code == "SYS003"]
    want = next(i for i, line in enumerate(text.splitlines(), 1) if "ml.p2.xlarge" in line)
    assert (f.loc.line, f.loc.cell, f.loc.cell_line) == (want, 2, 5)
    assert "older GPU generation without Tensor Cores" in f.message


# -- SYS005 ----------------------------------------------------------------------------------------------


def test_a_pool_whose_variable_resolves_to_a_cpu_machine_is_no_pairing_question():
    tf = ('variable "machine_type" {\n  default = "%s"\n}\n\nresource "google_container_node_pool" "pool" {\n'
          '  name    = "pool"\n  cluster = "c"\n  node_config {\n    machine_type = var.machine_type\n  }\n}\n')
    train = "import torch\nmodel = Net().cuda()\n" + MAIN_LOOP
    files = {"a.py": train, "b.py": train, "infra/main.tf": tf % "e2-standard-8"}
    assert codes(files, "SYS005", sort=True) == []
    assert codes(dict(files, **{"infra/main.tf": tf % "a2-highgpu-1g"}), "SYS005", sort=True) == ["SYS005"]


@pytest.mark.parametrize("accel, reported", [("", False), (GPU_ACCEL, True)])
def test_a_pool_of_unknown_machine_type_asking_for_no_gpu_is_not_an_ambiguous_gpu_target(accel, reported):
    files = {"infra/pool.tf": POOL % accel, "a.py": TRAIN_GPU, "b.py": TRAIN_GPU}
    assert bool(findings(files, "SYS005")) is reported
