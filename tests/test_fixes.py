"""Autofix: every fix applied through the command line, the tree re-scanned, the finding
gone and the fixed file still parsing; --diff shows the same edit and writes nothing;
fixes that cannot be made mechanically are not offered."""
from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import libcst
import pytest
import yaml

from conftest import run_cli

from gpulint.cli.main import main
from gpulint.core.fixes import (
    FixError,
    InsertAfterImports,
    Materializer,
    RemoveEnv,
    SetConfigValue,
    SetKeyword,
    TextEdit,
    apply_edits,
    plan_fixes,
)
from gpulint.core.model import Finding, Fix, Location, Severity
from gpulint.testing import write_tree
from helpers import AT, codes

TF_P4D = 'resource "aws_instance" "trainer" {\n  ami           = "ami-0abc"\n  instance_type = "p4d.24xlarge"\n}\n'
TF_V100 = TF_P4D.replace("p4d.24xlarge", "p3.8xlarge")
LOOP = """\
model = model.cuda()
for x in loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
"""


def _d(text: str) -> str:
    return textwrap.dedent(text)


def cli(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def parses(path: Path) -> None:
    """The fixed file, read back by the standard parser of its language."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        libcst.parse_module(text)
    elif path.suffix in (".yaml", ".yml"):
        list(yaml.safe_load_all(text))
    elif path.suffix == ".json":
        json.loads(text)
    elif path.suffix in (".sh", ".sbatch", ".slurm"):
        subprocess.run(["bash", "-n", str(path)], check=True)
    elif path.suffix == ".tf":
        import hcl2

        hcl2.loads(text)


# (id, files, code, --unsafe-fixes?, file that changes, text it must contain afterwards)
CASES = [
    ("IO002 multi-line call with a trailing comma", {
        "train.py": "import torch\nfrom torch.utils.data import DataLoader\nfrom torchvision.datasets import ImageFolder\nds = ImageFolder('/data/train')\n\nloader = DataLoader(\n    ds,\n    batch_size=32,\n    num_workers=4,\n)\n" + LOOP,
    }, "IO002", False, "train.py", "    num_workers=4,\n    pin_memory=True,\n)"),
    ("IO002 one-line call", {
        "train.py": "from torch.utils.data import DataLoader\nfrom torchvision.datasets import ImageFolder\nds = ImageFolder('/data/train')\nloader = DataLoader(ds, num_workers=4)  # training data\n" + LOOP,
    }, "IO002", False, "train.py", "DataLoader(ds, num_workers=4, pin_memory=True)  # training data"),
    ("IO001 num_workers absent", {
        "train.py": "import torch.utils.data as tud\nfrom torchvision.datasets import ImageFolder\nds = ImageFolder('/data/train')\nloader = tud.DataLoader(ds, batch_size=32, pin_memory=True)\n" + LOOP,
    }, "IO001", True, "train.py", "tud.DataLoader(ds, batch_size=32, pin_memory=True, num_workers=4)"),
    ("IO001 num_workers=0", {
        "train.py": "from torch.utils.data import DataLoader\nfrom torchvision.datasets import ImageFolder\nds = ImageFolder('/data/train')\nloader = DataLoader(ds, num_workers=0, pin_memory=True)\n" + LOOP,
    }, "IO001", True, "train.py", "DataLoader(ds, num_workers=4, pin_memory=True)"),
    ("NET005 positional gloo", {
        "train.py": "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\ndist.init_process_group(\"gloo\")\nmodel = DDP(model.cuda())\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n",
    }, "NET005", True, "train.py", 'dist.init_process_group("nccl")'),
    ("NET005 keyword gloo keeps its quotes", {
        "train.py": "import torch.distributed as dist\ndist.init_process_group(backend='gloo', init_method='env://')\nmodel = torch.nn.parallel.DistributedDataParallel(model.cuda())\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n",
    }, "NET005", True, "train.py", "dist.init_process_group(backend='nccl', init_method='env://')"),
    ("AMP005 statement after the imports", {
        "train.py": '"""Train."""\nimport torch\nfrom torch.utils.data import DataLoader\n\n' + LOOP,
        "infra/main.tf": TF_P4D,
    }, "AMP005", True, "train.py", "from torch.utils.data import DataLoader\ntorch.backends.cuda.matmul.allow_tf32 = True\n\nmodel"),
    ("AMP005 through an import alias", {
        "train.py": "#!/usr/bin/env python\nimport os\nimport torch as T\n" + LOOP,
        "infra/main.tf": TF_P4D,
    }, "AMP005", True, "train.py", "import torch as T\nT.backends.cuda.matmul.allow_tf32 = True\n"),
    ("AMP005 explicitly off", {
        "train.py": "import torch\ntorch.backends.cuda.matmul.allow_tf32 = False  # reproducibility\n" + LOOP,
        "infra/main.tf": TF_P4D,
    }, "AMP005", True, "train.py", "torch.backends.cuda.matmul.allow_tf32 = True  # reproducibility"),
    ("AMP001 accelerate config mixed_precision no", {
        "train.py": "from accelerate import Accelerator\naccelerator = Accelerator()\nmodel, opt, loader = accelerator.prepare(model, opt, loader)\nfor batch in loader:\n    loss = model(**batch).loss\n    accelerator.backward(loss)\n    opt.step()\n",
        "accelerate_config.yaml": 'compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmixed_precision: "no"  # was fp16\nnum_machines: 1\nnum_processes: 8\n',
        "infra/main.tf": TF_P4D,
    }, "AMP001", True, "accelerate_config.yaml", 'mixed_precision: "bf16"  # was fp16\n'),
    ("AMP001 Accelerator(mixed_precision='no')", {
        "train.py": "from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='no')\nmodel, opt, loader = accelerator.prepare(model, opt, loader)\nfor batch in loader:\n    loss = model(**batch).loss\n    accelerator.backward(loss)\n    opt.step()\n",
        "infra/main.tf": TF_P4D,
    }, "AMP001", True, "train.py", "Accelerator(mixed_precision='bf16')"),
    ("AMP001 HF TrainingArguments", {
        "train.py": "from transformers import Trainer, TrainingArguments\nargs = TrainingArguments(\n    output_dir='out',\n    dataloader_num_workers=4,\n)\nTrainer(model=m, args=args, train_dataset=ds).train()\n",
        "infra/main.tf": TF_P4D,
    }, "AMP001", True, "train.py", "    dataloader_num_workers=4,\n    bf16=True,\n)"),
    ("AMP001 HF TrainingArguments bf16=False", {
        "train.py": "from transformers import Trainer, TrainingArguments\nargs = TrainingArguments(output_dir='out', bf16=False, dataloader_num_workers=4)\nTrainer(model=m, args=args).train()\n",
        "infra/main.tf": TF_P4D,
    }, "AMP001", True, "train.py", "bf16=True, dataloader_num_workers=4)"),
    ("AMP001 Lightning default precision", {
        "train.py": "import lightning as L\ntrainer = L.Trainer(accelerator='gpu', devices=8)\ntrainer.fit(model, datamodule=dm)\n",
        "infra/main.tf": TF_P4D,
    }, "AMP001", True, "train.py", "L.Trainer(accelerator='gpu', devices=8, precision=\"bf16-mixed\")"),
    ("NET002 Kubernetes env entry", {
        "train.py": "import torch.distributed as dist\ndist.init_process_group('nccl')\nmodel = torch.nn.parallel.DistributedDataParallel(model.cuda())\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n",
        "k8s/job.yaml": _d("""\
            apiVersion: batch/v1
            kind: Job
            metadata:
              name: train
            spec:
              template:
                spec:
                  nodeSelector:
                    node.kubernetes.io/instance-type: p4d.24xlarge
                  containers:
                    - name: pytorch
                      image: registry.example.com/train:1.0
                      command: ["torchrun", "--nproc_per_node", "8", "train.py"]
                      env:
                        - name: NCCL_P2P_DISABLE
                          value: "1"
                        - name: NCCL_DEBUG
                          value: WARN
                      resources:
                        limits:
                          nvidia.com/gpu: 8
                  restartPolicy: Never
            """),
    }, "NET002", True, "k8s/job.yaml", "env:\n            - name: NCCL_DEBUG\n              value: WARN\n"),
    ("NET002 SkyPilot envs map", {
        "train.py": "import torch.distributed as dist\ndist.init_process_group('nccl')\nmodel = torch.nn.parallel.DistributedDataParallel(model.cuda())\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n",
        "task.yaml": "resources:\n  cloud: aws\n  instance_type: p4d.24xlarge\nenvs:\n  NCCL_P2P_DISABLE: \"1\"\n  NCCL_DEBUG: WARN\nrun: |\n  torchrun --nproc_per_node 8 train.py\n",
    }, "NET002", True, "task.yaml", "envs:\n  NCCL_DEBUG: WARN\nrun:"),
    ("NET002 export in a SkyPilot run script", {
        "train.py": "import torch.distributed as dist\ndist.init_process_group('nccl')\nmodel = torch.nn.parallel.DistributedDataParallel(model.cuda())\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n",
        "task.yaml": "resources:\n  cloud: aws\n  instance_type: p4d.24xlarge\nrun: |\n  export NCCL_P2P_DISABLE=1\n  torchrun --nproc_per_node 8 train.py\n",
    }, "NET002", True, "task.yaml", "run: |\n  torchrun --nproc_per_node 8 train.py\n"),
]


@pytest.mark.parametrize("files,code,unsafe,changed,after", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_fix_applies_rescan_clean_file_parses_and_diff_writes_nothing(tmp_path, capsys, files, code, unsafe, changed, after):
    write_tree(tmp_path, files)
    before = {p: (tmp_path / p).read_text() for p in files}
    assert any(c == code for c, _, _ in codes(tmp_path, fields=AT)), f"{code} does not fire on the case"
    unsafe_flag = ["--unsafe-fixes"] if unsafe else []

    rc, diff, err = cli(capsys, "scan", tmp_path, "--select", code, "--diff", *unsafe_flag)
    assert rc == 1 and f"--- a/{changed}" in diff and f"+++ b/{changed}" in diff, err
    assert {p: (tmp_path / p).read_text() for p in files} == before  # --diff never writes
    if unsafe:  # an unsafe fix needs --unsafe-fixes, and says so
        rc, plain, err = cli(capsys, "scan", tmp_path, "--select", code, "--diff")
        assert rc == 0 and plain == "" and "more with --unsafe-fixes" in err

    rc, out, err = cli(capsys, "scan", tmp_path, "--select", code, "--fix", *unsafe_flag, "--format", "json")
    assert "Fixed 1 finding" in err, err
    assert after in (tmp_path / changed).read_text()
    assert [f for f in json.loads(out)["findings"] if f["code"] == code] == []  # --fix reports what is left
    parses(tmp_path / changed)
    for p in files:  # nothing else was touched
        if p != changed:
            assert (tmp_path / p).read_text() == before[p]
    left = codes(tmp_path, fields=AT)
    assert not [c for c in left if c[0] == code], left
    assert not [c for c in left if c[0] in ("SYS001", "SYS002")], left


def test_fix_json_states_what_it_changes_and_why_unsafe(tmp_path, capsys):
    write_tree(tmp_path, {"train.py": "from torch.utils.data import DataLoader\nfrom torchvision.datasets import ImageFolder\nds = ImageFolder('/data/train')\nloader = DataLoader(ds)\n" + LOOP})
    rc, out, _ = cli(capsys, "scan", tmp_path, "--format", "json")
    by_code = {f["code"]: f for f in json.loads(out)["findings"]}
    assert by_code["IO002"]["fix"] == {"description": "Add pin_memory=True to the DataLoader call", "applicability": "safe"}
    io1 = by_code["IO001"]["fix"]
    assert io1["applicability"] == "unsafe" and "num_workers=4" in io1["description"] and "picklable" in io1["unsafe_because"]
    assert "AMP001" in by_code and "fix" not in by_code["AMP001"]  # a raw loop needs autocast: no mechanical fix


def test_both_dataloader_fixes_land_on_one_call(tmp_path, capsys):
    write_tree(tmp_path, {"train.py": "from torch.utils.data import DataLoader\nfrom torchvision.datasets import ImageFolder\nds = ImageFolder('/data/train')\nloader = DataLoader(ds)\n" + LOOP})
    rc, out, err = cli(capsys, "scan", tmp_path, "--fix", "--unsafe-fixes", "--select", "IO")
    assert "Fixed 2 findings in 1 file" in err and rc == 0
    assert "DataLoader(ds, num_workers=4, pin_memory=True)" in (tmp_path / "train.py").read_text()


@pytest.mark.parametrize("files,code", [
    ({"train.py": _d("""\
        import argparse
        from torch.utils.data import DataLoader
        from torchvision.datasets import ImageFolder
        p = argparse.ArgumentParser()
        p.add_argument("--workers", type=int, default=0)
        args = p.parse_args()
        loader = DataLoader(ImageFolder(args.data), num_workers=args.workers, pin_memory=True)
        """) + LOOP, "run.sh": "python train.py\n"}, "IO001"),
    ({"train.py": "from transformers import Trainer, TrainingArguments\nargs = TrainingArguments(output_dir='o')\nTrainer(model=m, args=args).train()\n",
      "infra/main.tf": TF_V100}, "AMP001"),  # V100 has no bf16; fp16 needs loss scaling: not mechanical
    ({"train.py": "from transformers import Trainer, TrainingArguments\nargs = TrainingArguments(output_dir='o')\nTrainer(model=m, args=args).train()\n",
      "run.sh": "torchrun --nproc_per_node 8 train.py\n"}, "AMP001"),  # GPU unknown
], ids=["value from argparse", "GPU without bf16", "GPU unknown"])
def test_no_fix_where_the_edit_is_not_mechanical(tmp_path, capsys, files, code):
    write_tree(tmp_path, files)
    before = {p: (tmp_path / p).read_text() for p in files}
    rc, out, _ = cli(capsys, "scan", tmp_path, "--format", "json", "--select", code)
    (f,) = [f for f in json.loads(out)["findings"] if f["code"] == code]
    assert "fix" not in f
    rc, out, err = cli(capsys, "scan", tmp_path, "--fix", "--unsafe-fixes", "--select", code)
    assert "Fixed 0 findings" in err and code in out
    assert {p: (tmp_path / p).read_text() for p in files} == before


def test_gloo_is_switched_only_in_cuda_only_code():
    """A Gloo process group next to an NCCL one (`nccl if cuda else gloo` as two calls), or in code
    that says it runs on the CPU, was chosen on purpose: no fix is offered for it."""
    from types import SimpleNamespace

    from gpulint.core import fixes
    from gpulint.core.model import Fact

    gloo = Fact("process_group", {"backend": "gloo", "explicit": True}, Location("t.py", 6, 5, 6, 45))
    nccl = Fact("process_group", {"backend": "nccl", "explicit": True}, Location("t.py", 4, 5, 4, 45))
    cpu = Fact("cpu_only", {"via": "device"}, Location("t.py", 2, 1))
    assert fixes.nccl_backend(gloo, SimpleNamespace(facts=[gloo])).description == 'Use the "nccl" backend instead of "gloo" in init_process_group'
    assert fixes.nccl_backend(gloo, SimpleNamespace(facts=[nccl, gloo])) is None
    assert fixes.nccl_backend(gloo, SimpleNamespace(facts=[cpu, gloo])) is None


def test_fix_that_would_break_the_file_is_refused():
    """A plan whose edit leaves the file unparsable keeps the file as it was."""
    text = "x = f(a)\n"
    loc = Location("m.py", 1, 5, 1, 9)
    f = Finding("IO002", "n", Severity.INFO, Location("m.py", 1, 5), "m",
                fix=Fix("bad", "safe", (SetKeyword(loc, "pin_memory", "True"),)))

    def check(path, new):
        try:
            libcst.parse_module(new)
        except libcst.ParserSyntaxError as exc:
            return exc.message
        return "pretend it broke" if "pin_memory" in new else None

    plan = plan_fixes([f], lambda p: text, lambda p: "python", check)
    assert plan.texts == {} and plan.applied == [] and "would not parse" in plan.refused[0][1]


def test_materializer_refuses_what_changed_since_the_scan():
    text = "loader = DataLoader(ds, num_workers=n)\n"
    mat = Materializer(lambda p: text, lambda p: "python")
    loc = Location("t.py", 1, 10, 1, 39)
    with pytest.raises(FixError, match="does not change"):
        mat.edits(Fix("x", "unsafe", (SetKeyword(loc, "num_workers", 4, replace=(0,)),)))
    with pytest.raises(FixError, match="changed"):
        mat.edits(Fix("x", "safe", (SetKeyword(Location("t.py", 1, 3), "pin_memory", True),)))
    with pytest.raises(FixError, match="notebook"):
        mat.edits(Fix("x", "safe", (SetKeyword(Location("t.ipynb", 1, 10, cell=1, cell_line=1), "pin_memory", True),)))
    (edit,) = mat.edits(Fix("x", "safe", (SetKeyword(loc, "pin_memory", True),)))
    assert apply_edits(text, [edit]) == "loader = DataLoader(ds, num_workers=n, pin_memory=True)\n"


@pytest.mark.parametrize("call,after", [
    ("DataLoader()", "DataLoader(pin_memory=True)"),
    ("DataLoader(ds  # the data, cached\n)", "DataLoader(ds, pin_memory=True  # the data, cached\n)"),
    ("DataLoader(ds, )", "DataLoader(ds, pin_memory=True, )"),
    ("DataLoader(\n    ds,  # the data\n)", "DataLoader(\n    ds,  # the data\n    pin_memory=True,\n)"),
    ("DataLoader(*parts)", "DataLoader(*parts, pin_memory=True)"),
    ("DataLoader(\n    ds,\n    shuffle=True\n)", "DataLoader(\n    ds,\n    shuffle=True,\n    pin_memory=True\n)"),
    ("DataLoader(ds,\n           shuffle=True)", "DataLoader(ds,\n           shuffle=True, pin_memory=True)"),
    ("DataLoader(\n    ds, shuffle=True\n)", "DataLoader(\n    ds, shuffle=True, pin_memory=True\n)"),
])
def test_keyword_insertion_respects_commas_comments_and_layout(call, after):
    text = f"loader = {call}\n"
    end = text.rstrip("\n")
    loc = Location("t.py", 1, 10, end.count("\n") + 1, len(end.rsplit("\n", 1)[-1]) + 1)
    mat = Materializer(lambda p: text, lambda p: "python")
    new = apply_edits(text, mat.edits(Fix("x", "safe", (SetKeyword(loc, "pin_memory", True),))))
    assert new == f"loader = {after}\n"
    libcst.parse_module(new)


def test_insert_after_imports_adds_the_import_when_missing_and_is_idempotent():
    op = InsertAfterImports("t.py", "torch", "{module}.backends.cuda.matmul.allow_tf32 = True")
    text = '"""Doc."""\nfrom torch import nn\n\nx = 1\n'
    mat = Materializer(lambda p: text, lambda p: "python")
    new = apply_edits(text, mat.edits(Fix("x", "unsafe", (op,))))
    assert new == '"""Doc."""\nfrom torch import nn\nimport torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n\nx = 1\n'
    with pytest.raises(FixError, match="already"):
        Materializer(lambda p: new, lambda p: "python").edits(Fix("x", "unsafe", (op,)))


def test_config_value_keeps_quotes_and_refuses_another_value():
    for text, want in (('mixed_precision: "no"\n', 'mixed_precision: "bf16"\n'), ("mixed_precision: no\n", "mixed_precision: bf16\n"),
                       ('  "mixed_precision": "no",\n', '  "mixed_precision": "bf16",\n')):
        mat = Materializer(lambda p, t=text: t, lambda p: "yaml")
        op = SetConfigValue(Location("a.yaml", 1), "mixed_precision", "bf16", replace=("no",))
        assert apply_edits(text, mat.edits(Fix("x", "unsafe", (op,)))) == want
    mat = Materializer(lambda p: "mixed_precision: fp16\n", lambda p: "yaml")
    with pytest.raises(FixError, match="now fp16"):
        mat.edits(Fix("x", "unsafe", (SetConfigValue(Location("a.yaml", 1), "mixed_precision", "bf16", replace=("no",)),)))


@pytest.mark.parametrize("kind,text,line,after", [
    ("shell", "#!/bin/bash\nexport NCCL_P2P_DISABLE=1\ntorchrun train.py\n", 2, "#!/bin/bash\ntorchrun train.py\n"),
    ("shell", "#!/bin/bash\nNCCL_P2P_DISABLE=1 torchrun train.py\n", 2, "#!/bin/bash\ntorchrun train.py\n"),
    ("dockerfile", "FROM x\nENV NCCL_P2P_DISABLE=1\nCMD [\"torchrun\"]\n", 2, "FROM x\nCMD [\"torchrun\"]\n"),
    ("terraform", 'env = {\n  NCCL_P2P_DISABLE = "1"\n  NCCL_DEBUG = "WARN"\n}\n', 2, 'env = {\n  NCCL_DEBUG = "WARN"\n}\n'),
    ("terraform", 'container {\n  env {\n    name  = "NCCL_P2P_DISABLE"\n    value = "1"\n  }\n}\n', 3, "container {\n}\n"),
    ("yaml", "env:\n  - name: NCCL_P2P_DISABLE\n    value: \"1\"\nimage: x\n", 2, "image: x\n"),
])
def test_remove_env_is_line_preserving(kind, text, line, after):
    mat = Materializer(lambda p: text, lambda p: kind)
    op = RemoveEnv(Location("f", line), "NCCL_P2P_DISABLE", "1")
    assert apply_edits(text, mat.edits(Fix("x", "unsafe", (op,)))) == after


def test_remove_env_refuses_shared_lines():
    text = "ENV NCCL_P2P_DISABLE=1 OTHER=2\n"
    with pytest.raises(FixError):
        Materializer(lambda p: text, lambda p: "dockerfile").edits(Fix("x", "unsafe", (RemoveEnv(Location("f", 1), "NCCL_P2P_DISABLE", "1"),)))


def test_apply_edits_keeps_insertions_at_one_point_in_order():
    text = "f(a)"
    edits = [TextEdit("p", 3, 3, ", x=1"), TextEdit("p", 3, 3, ", y=2"), TextEdit("p", 3, 3, ", x=1")]
    assert apply_edits(text, edits) == "f(a, x=1, y=2)"


def test_fix_through_stdin_prints_the_fixed_text(tmp_path):
    src = "from torch.utils.data import DataLoader\nfrom torchvision.datasets import ImageFolder\nds = ImageFolder('/data/train')\nloader = DataLoader(ds)\n" + LOOP
    (tmp_path / "train.py").write_text(src)
    proc = run_cli("scan", "-", "--stdin-filename", "train.py", "--fix", cwd=tmp_path, input_text=src)
    assert proc.stdout == src.replace("DataLoader(ds)", "DataLoader(ds, pin_memory=True)")
    assert "IO001" in proc.stderr and "Fixed 1 finding" in proc.stderr  # the report goes to standard error
    assert (tmp_path / "train.py").read_text() == src


def test_diff_exit_codes_and_untouched_files_through_the_cli(tmp_path):
    src = "from torch.utils.data import DataLoader\nfrom torchvision.datasets import ImageFolder\nds = ImageFolder('/data/train')\nloader = DataLoader(ds, num_workers=4)\n" + LOOP
    (tmp_path / "train.py").write_text(src)
    proc = run_cli("scan", ".", "--diff", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout.startswith("--- a/train.py\n+++ b/train.py\n")
    assert "+loader = DataLoader(ds, num_workers=4, pin_memory=True)" in proc.stdout
    assert (tmp_path / "train.py").read_text() == src
    proc = run_cli("scan", ".", "--fix", cwd=tmp_path)
    assert "Fixed 1 finding in 1 file" in proc.stderr
    proc = run_cli("scan", ".", "--diff", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == ""
    proc = run_cli("scan", ".", "--unsafe-fixes", cwd=tmp_path)
    assert proc.returncode == 2 and "--unsafe-fixes only means something with --fix or --diff" in proc.stderr


def test_text_summary_counts_fixable_findings(tmp_path):
    (tmp_path / "train.py").write_text("from torch.utils.data import DataLoader\nfrom torchvision.datasets import ImageFolder\nds = ImageFolder('/data/train')\nloader = DataLoader(ds)\n" + LOOP)
    proc = run_cli("scan", ".", cwd=tmp_path)
    assert "1 finding fixable with `gpulint scan --fix`; 1 more with `--unsafe-fixes`" in proc.stdout


@pytest.mark.parametrize("args,checked", [
    (("--format", "json"), True), (("--format", "text"), True), (("--format", "markdown"), True),
    (("--format", "json", "--statistics"), True), (("--format", "text", "--quiet"), False),
    (("--format", "sarif"), False), (("--format", "github"), False), (("--format", "gitlab"), False),
    (("--format", "junit"), False),
])
def test_fixes_are_checked_against_the_files_only_for_output_that_shows_them(tmp_path, capsys, monkeypatch, args, checked):
    """Checking a fix builds its edits (a libcst import and parses for Python): only a format that shows
    fixes or their count (json, text with its summary, markdown, --statistics) pays for it."""
    import importlib

    cli_main = importlib.import_module("gpulint.cli.main")  # the package exports main() under the same name

    real, calls = cli_main._fixable, []
    monkeypatch.setattr(cli_main, "_fixable", lambda *a: calls.append(1) or real(*a))
    write_tree(tmp_path, {"train.py": "from torch.utils.data import DataLoader\nfrom torchvision.datasets import ImageFolder\nds = ImageFolder('/data/train')\nloader = DataLoader(ds)\n" + LOOP})
    rc, out, _ = cli(capsys, "scan", tmp_path, "--no-cache", *args)
    assert rc in (0, 1) and out
    assert bool(calls) is checked
