"""The command line as a user, an editor and pre-commit drive it (subprocess)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT, read_all, run_cli

from gpulint import __version__
from helpers import AT, reported, rows
def copy_fixture(name, tmp_path, git=False):
    repo = tmp_path / name
    shutil.copytree(FIXTURES / name, repo)
    if git:
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


# -- editor mode: scan - --stdin-filename -------------------------------------------------
def test_stdin_text_replaces_the_file_on_disk(tmp_path):
    repo = copy_fixture("pytorch-fp32-loop", tmp_path)
    on_disk = (repo / "train.py").read_text()
    edited = on_disk.replace("model = nn.DataParallel(model)", "model = model  # DDP comes next")
    proc = run_cli("scan", "-", "--stdin-filename", "train.py", "--format", "json", cwd=repo, input_text=edited)
    got = rows(reported(proc), AT)
    assert ("NET006", "train.py", 27) not in got  # the unsaved edit wins over the disk
    assert ("AMP001", "train.py", 36) in got
    assert {p for _, p, _ in got} == {"train.py"}  # only the buffer is reported
    assert proc.returncode == 1


def test_stdin_buffer_is_fixed_while_disk_is_not(tmp_path):
    repo = copy_fixture("clean", tmp_path)
    text = (repo / "train.py").read_text()
    proc = run_cli("scan", "-", "--stdin-filename", "train.py", cwd=repo, input_text=text, env={"NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stdout
    broken = text.replace("with torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16):", "if True:")
    proc = run_cli("scan", "-", "--stdin-filename", "train.py", "--format", "json", cwd=repo, input_text=broken)
    assert [c for c, _, _ in rows(reported(proc), AT)] == ["AMP001"]
    assert (repo / "train.py").read_text() == text  # nothing written back


def test_stdin_uses_the_repository_as_context(tmp_path):
    """The launcher on disk passes --bf16: the buffer of train.py is judged with it."""
    repo = copy_fixture("hf-trainer-bf16", tmp_path)
    (repo / "configs" / "train_args.json").unlink()
    (repo / "scripts" / "run_sft.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --output_dir out --bf16 True "
                                                 "--dataloader_num_workers 4\n")
    buf = (repo / "train.py").read_text().replace("parser.parse_json_file(json_file=sys.argv[1])", "parser.parse_args_into_dataclasses()")
    proc = run_cli("scan", "-", "--stdin-filename", str(repo / "train.py"), "--format", "json", input_text=buf)
    assert rows(reported(proc), AT) == [], proc.stdout
    (repo / "scripts" / "run_sft.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --output_dir out "
                                                 "--dataloader_num_workers 4\n")
    proc = run_cli("scan", "-", "--stdin-filename", str(repo / "train.py"), "--format", "json", input_text=buf)
    assert [(c, p) for c, p, _ in rows(reported(proc), AT)] == [("AMP001", "train.py")]


def test_stdin_syntax_error_is_sys001(tmp_path):
    repo = copy_fixture("clean", tmp_path)
    proc = run_cli("scan", "-", "--stdin-filename", "train.py", "--format", "json", cwd=repo, input_text="import torch\ndef f(:\n")
    assert rows(reported(proc), AT) == [("SYS001", "train.py", 2)]


@pytest.mark.parametrize("args, message", [
    (["-"], "--stdin-filename"),
    (["-", "train.py", "--stdin-filename", "train.py"], "cannot be combined"),
])
def test_stdin_usage_errors(tmp_path, args, message):
    proc = run_cli("scan", *args, cwd=tmp_path, input_text="import torch\n")
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_stdin_filename_in_a_folder_not_created_yet(tmp_path):
    """An editor buffer saved nowhere yet (a new folder): checked with the project around it as context."""
    repo = copy_fixture("pytorch-fp32-loop", tmp_path)
    # an edited copy (a byte-identical one is the launched train.py's job, not a workload of its own)
    buf = (repo / "train.py").read_text() + "# a new experiment\n"
    proc = run_cli("scan", "-", "--stdin-filename", "experiments/new/train.py", "--format", "json", cwd=repo, input_text=buf)
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert {f["path"] for f in data["findings"]} == {"experiments/new/train.py"}
    assert "AMP001" in {f["code"] for f in data["findings"]}
    assert not (repo / "experiments").exists()


# -- files one by one (pre-commit) ------------------------------------------------------------
def test_only_the_given_files_are_reported(tmp_path):
    repo = copy_fixture("broken", tmp_path, git=True)
    proc = run_cli("scan", "train.py", "configs/train.yaml", "--format", "json", cwd=repo)
    assert rows(reported(proc), AT) == [("SYS001", "configs/train.yaml", 6), ("AMP001", "train.py", 19)]  # not seg/augment.py
    proc = run_cli("scan", "train.py", "--format", "json", cwd=repo)
    assert rows(reported(proc), AT) == [("AMP001", "train.py", 19)]


def test_file_in_a_subdirectory_keeps_its_repository_path(tmp_path):
    repo = copy_fixture("broken", tmp_path, git=True)
    proc = run_cli("scan", "seg/augment.py", cwd=repo)
    assert proc.stdout.startswith("seg/augment.py:11:16: SYS001")


def test_passing_only_the_launcher_reports_the_findings_it_is_evidence_for(tmp_path):
    # AMP001 sits on the accelerate config and names the launcher that starts the workload as a
    # related location: a commit that touches only the launcher is told about it
    repo = copy_fixture("accelerate-no-mp", tmp_path, git=True)
    proc = run_cli("scan", "scripts/train.sh", "--format", "json", cwd=repo)
    assert proc.returncode == 1
    assert rows(reported(proc), AT) == [("AMP001", "configs/accelerate.yaml", 8)]
    assert any(r["path"] == "scripts/train.sh" for r in json.loads(proc.stdout)["findings"][0]["related"])


def test_only_infrastructure_changed_reports_the_findings_it_holds_evidence_for(tmp_path):
    """pre-commit passes only main.tf, which turns on spot: SPOT001 sits on train.py, whose
    related location is the spot setting, so it is reported; unrelated findings are not."""
    repo = copy_fixture("wl-terraform-aws", tmp_path, git=True)
    everything = json.loads(run_cli("scan", ".", "--format", "json", cwd=repo).stdout)["findings"]
    tf = [p for p in {r["path"] for f in everything for r in f["related"]} if p.endswith(".tf")]
    assert tf, "the fixture's findings name no Terraform"
    proc = run_cli("scan", tf[0], "--format", "json", cwd=repo)
    got = json.loads(proc.stdout)["findings"]
    assert got and all(f["path"] == tf[0] or any(r["path"] == tf[0] for r in f["related"]) for f in got)
    assert {f["fingerprint"] for f in got} == {f["fingerprint"] for f in everything
                                               if f["path"] == tf[0] or any(r["path"] == tf[0] for r in f["related"])}


def test_passing_only_the_launcher_keeps_the_repository_as_context(tmp_path):
    repo = copy_fixture("accelerate-no-mp", tmp_path, git=True)
    proc = run_cli("scan", "scripts/train.sh", "--format", "json", cwd=repo)
    data = json.loads(proc.stdout)
    assert [w["entrypoint"] for w in data["workloads"]] == ["train.py"]


def test_passing_train_py_uses_the_launchers_config_as_context(tmp_path):
    """accelerate launch --config_file says bf16 -> nothing; the same file with
    only train.py passed and the config at "no" -> the workload is judged fp32."""
    repo = copy_fixture("accelerate-no-mp", tmp_path, git=True)
    cfg = repo / "configs" / "accelerate.yaml"
    cfg.write_text(cfg.read_text().replace('mixed_precision: "no"', "mixed_precision: bf16"))
    proc = run_cli("scan", "train.py", "--format", "json", cwd=repo)
    assert rows(reported(proc), AT) == [] and proc.returncode == 0
    assert [w["entrypoint"] for w in json.loads(proc.stdout)["workloads"]] == ["train.py"]


def test_given_files_limit_what_is_reported(tmp_path):
    # design/output.md: files given one by one limit what is *reported* to those files. AMP001 of
    # train.py's workload sits on the accelerate config's `mixed_precision: "no"`, so it is reported
    # when the config is among the given files, and not when only train.py is.
    repo = copy_fixture("accelerate-no-mp", tmp_path, git=True)
    only_code = run_cli("scan", "train.py", "--format", "json", cwd=repo)
    assert rows(reported(only_code), AT) == [] and only_code.returncode == 0
    with_config = run_cli("scan", "train.py", "configs/accelerate.yaml", "--format", "json", cwd=repo)
    assert rows(reported(with_config), AT) == [("AMP001", "configs/accelerate.yaml", 8)]
    assert with_config.returncode == 1


def test_passing_train_py_reports_its_own_findings_with_launcher_context(tmp_path):
    repo = copy_fixture("pytorch-fp32-loop", tmp_path, git=True)
    proc = run_cli("scan", "train.py", "--format", "json", cwd=repo)
    assert rows(reported(proc), AT) == [("NET005", "train.py", 24), ("NET006", "train.py", 27), ("IO001", "train.py", 30),
                              ("IO002", "train.py", 30), ("AMP001", "train.py", 36), ("AMP005", "train.py", 36)]
    assert any("launch.sh" in l["path"] for w in json.loads(proc.stdout)["workloads"] for l in w["launchers"])


# -- output options ---------------------------------------------------------------------------
def test_output_file(tmp_path):
    out = tmp_path / "report.json"
    proc = run_cli("scan", "fixtures/pytorch-fp32-loop", "--format", "json", "--output", out, cwd=ROOT)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert len(json.loads(out.read_text())["findings"]) == 6


def test_quiet_prints_findings_only():
    proc = run_cli("scan", ".", "--quiet", cwd=FIXTURES / "pytorch-fp32-loop")
    lines = proc.stdout.splitlines()
    assert len(lines) == 6 and all(": " in l and "[" in l for l in lines)
    assert "scanned" not in proc.stdout
    clean = run_cli("scan", ".", "--quiet", cwd=FIXTURES / "clean")
    assert clean.stdout == "" and clean.returncode == 0


def test_show_guidance_indents_guidance_and_cost():
    proc = run_cli("scan", ".", "--show-guidance", "--select", "AMP001", cwd=FIXTURES / "pytorch-fp32-loop")
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("train.py:36:13: AMP001")
    body = lines[1:lines.index("")]
    assert all(l.startswith("    ") for l in body)
    text = "\n".join(body)
    assert "torch.autocast" in text
    assert "related: scripts/launch.sh:8" in text
    # the quick-start example is priced: its Slurm job names 8 A100s, priced per GPU-hour with the assumption said
    assert "cost: $7.32/h" in text and "8x A100-SXM4-40GB at $21.96/h on-demand" in text
    assert "the repository names the GPU, not the machine" in " ".join(text.split())
    plain = run_cli("scan", ".", "--select", "AMP001", cwd=FIXTURES / "pytorch-fp32-loop")
    assert "torch.autocast" not in plain.stdout


def _run_on_tty(args, env):
    """Run the CLI with stdout on a pseudo-terminal, as a user's shell would."""
    import pty

    master, slave = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    full_env.update(env)
    proc = subprocess.Popen([sys.executable, "-m", "gpulint", *args], stdout=slave, stderr=subprocess.PIPE,
                            env=full_env, cwd=FIXTURES / "pytorch-fp32-loop")
    os.close(slave)
    out = read_all(master)
    proc.wait(timeout=120)
    os.close(master)
    return out.decode()


def test_colour_on_a_terminal_and_off_with_no_color():
    assert "\x1b[" in _run_on_tty(["scan", "."], {})
    assert "\x1b[" not in _run_on_tty(["scan", "."], {"NO_COLOR": "1"})
    # never into a pipe or a file
    proc = subprocess.run([sys.executable, "-m", "gpulint", "scan", "."], capture_output=True, text=True,
                          cwd=FIXTURES / "pytorch-fp32-loop", env={k: v for k, v in os.environ.items() if k != "NO_COLOR"})
    assert "\x1b[" not in proc.stdout


def test_color_always_never_and_the_environment():
    cwd = FIXTURES / "pytorch-fp32-loop"
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}

    def run(*args, **extra):
        return subprocess.run([sys.executable, "-m", "gpulint", "scan", ".", *args], capture_output=True, text=True,
                              cwd=cwd, env={**env, **extra}).stdout

    assert "\x1b[" in run("--color", "always")
    assert "\x1b[" in run("--color", "always", NO_COLOR="1")  # the option wins over the environment
    assert "\x1b[" not in run()  # auto: not a terminal
    assert "\x1b[" in run(FORCE_COLOR="1")  # as ruff: FORCE_COLOR forces it, even with NO_COLOR
    assert "\x1b[" in run(FORCE_COLOR="1", NO_COLOR="1")
    assert "\x1b[" not in run("--color", "never", FORCE_COLOR="1")
    assert "\x1b[" not in _run_on_tty(["scan", ".", "--color", "never"], {})
    assert "\x1b[" not in run("--color", "always", "--format", "json")  # machine formats never colour


def test_output_format_is_an_alias_of_format():
    cwd = FIXTURES / "pytorch-fp32-loop"
    a = run_cli("scan", ".", "--output-format", "json", cwd=cwd)
    b = run_cli("scan", ".", "--format", "json", cwd=cwd)
    assert a.stdout == b.stdout and json.loads(a.stdout)["findings"]


def test_extend_select_adds_to_the_selection():
    cwd = FIXTURES / "pytorch-fp32-loop"
    only_io = {c for c, _, _ in rows(reported(run_cli("scan", ".", "--select", "IO", "--format", "json", cwd=cwd)), AT)}
    assert only_io == {"IO001", "IO002"}
    more = {c for c, _, _ in rows(reported(run_cli("scan", ".", "--select", "IO", "--extend-select", "AMP001", "--format", "json", cwd=cwd)), AT)}
    assert more == {"IO001", "IO002", "AMP001"}
    bad = run_cli("scan", ".", "--extend-select", "NOPE9", cwd=cwd)
    assert bad.returncode == 2 and "--extend-select: unknown rule code or prefix 'NOPE9'" in bad.stderr


@pytest.mark.parametrize("argv,usage", [
    (["scan", "--bogus", "."], "usage: gpulint scan"),
    (["rules", "--nope"], "usage: gpulint rules"),
    (["workloads", ".", "--fix"], "usage: gpulint workloads"),
])
def test_unknown_option_is_answered_with_the_subcommands_usage(argv, usage):
    proc = run_cli(*argv, cwd=FIXTURES / "pytorch-fp32-loop")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(usage) and "unrecognized arguments: " + argv[1 if argv[1].startswith("-") else 2] in proc.stderr


# -- other commands ---------------------------------------------------------------------------
def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"gpulint {__version__}"


def test_rules_table():
    proc = run_cli("rules", cwd=ROOT)
    assert proc.returncode == 0
    rows = {l.split()[0]: l for l in proc.stdout.splitlines() if l.strip()}
    assert {"AMP001", "AMP002", "IO001", "IO002", "NET005", "NET006", "SYS001", "SYS002", "SYS004"} <= set(rows)
    assert rows["AMP001"].split()[1:4] == ["on", "warning", "missing-mixed-precision"]
    assert rows["IO002"].split()[1:3] == ["on", "info"]


def test_rules_json_and_enabled_follows_select():
    proc = run_cli("rules", "--format", "json", "--select", "AMP", cwd=ROOT)
    rows = {r["code"]: r for r in json.loads(proc.stdout)}
    assert rows["AMP001"]["enabled"] and rows["AMP002"]["enabled"]
    assert not rows["IO001"]["enabled"]
    assert rows["SYS001"]["enabled"]  # parse errors are always reported
    assert rows["AMP001"] | {"enabled": True} == {
        "code": "AMP001", "name": "missing-mixed-precision", "severity": "warning", "family": "AMP", "since": "0.1.0",
        "enabled": True, "summary": rows["AMP001"]["summary"], "plugin": "amp"}


def test_rules_reflects_config(tmp_path):
    (tmp_path / ".gpulint.toml").write_text('ignore = ["IO"]\n[severity]\nAMP001 = "error"\n')
    rows = {r["code"]: r for r in json.loads(run_cli("rules", "--format", "json", cwd=tmp_path).stdout)}
    assert rows["AMP001"]["severity"] == "error"
    assert not rows["IO001"]["enabled"] and not rows["IO002"]["enabled"]


def test_explain_text_and_markdown():
    text = run_cli("explain", "AMP001")
    assert text.returncode == 0
    out = text.stdout
    for part in ("AMP001 missing-mixed-precision", "Why it costs money", "How to fix", "Cost model", "torch.autocast"):
        assert part in out
    assert "accelerate_config.yaml" in out  # the examples are rendered
    md = run_cli("explain", "amp001", "--format", "markdown")
    assert md.returncode == 0
    assert md.stdout.startswith("# AMP001 missing-mixed-precision")
    assert "```python" in md.stdout and "```yaml" in md.stdout


def test_explain_unknown_code():
    proc = run_cli("explain", "NOPE")
    assert proc.returncode == 2
    assert "no rule NOPE" in proc.stderr and "gpulint rules" in proc.stderr
    proc = run_cli("explain", "AMP999")
    assert proc.returncode == 2
    assert "AMP001" in proc.stderr  # suggests the family's rules


def test_plugins_lists_builtin_packs():
    proc = run_cli("plugins")
    assert proc.returncode == 0
    rows = {l.split()[0]: l for l in proc.stdout.splitlines() if l and not l.startswith(" ")}
    assert {"amp", "io", "net", "sys", "kinds", "formats"} <= set(rows)
    assert "loaded" in rows["amp"] and "AMP001" in rows["amp"]
    data = json.loads(run_cli("plugins", "--format", "json").stdout)
    assert all(p["ok"] for p in data if p["name"] in ("amp", "io", "net", "sys"))


def test_workloads_text_and_json():
    proc = run_cli("workloads", "fixtures/accelerate-no-mp", cwd=ROOT)
    assert proc.returncode == 0
    out = proc.stdout
    assert "workload train.py" in out
    assert "launcher: accelerate at scripts/train.sh:3" in out
    assert "config: configs/accelerate.yaml" in out
    assert "configs/accelerate.yaml:8" in out  # every fact with the file:line it came from
    data = json.loads(run_cli("workloads", "fixtures/accelerate-no-mp", "--format", "json", cwd=ROOT).stdout)
    (wl,) = data["workloads"]
    assert wl["entrypoint"] == "train.py"
    assert wl["configs"] == ["configs/accelerate.yaml"]
    assert sorted(wl["code_files"]) == ["textcls/data.py", "train.py"]


def test_workloads_text_shows_values_in_words_not_python_reprs(tmp_path):
    """Issue 50: `gpulint workloads` printed `model: {'name': ..., 'params': ...}` and `model.layers: {'name': ...}`."""
    out = run_cli("workloads", "fixtures/pytorch-fp32-loop", cwd=ROOT).stdout
    assert "{'" not in out and "':" not in out and "None" not in out, out
    assert "  model: name=torchvision/resnet50, params=25.6M, evidence=" in out
    assert "    model.layers: name=torchvision.models.resnet50  (imgcls/model.py:6)" in out
    assert "    compute.accelerator: type=a100, count=8  (scripts/launch.sh:4)" in out
    assert "  checkpoint: saves=[torch.save at train.py:38], resumes=none" in out
    (tmp_path / "pyproject.toml").write_text('[tool.gpulint.models]\n"my-org/chat-large" = 13e9\n')
    (tmp_path / "train.py").write_text(
        "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
        'model = AutoModelForCausalLM.from_pretrained("my-org/chat-large")\n'
        'Trainer(model=model, args=TrainingArguments(output_dir="out")).train()\n')
    assert "  model: name=my-org/chat-large, params=13B," in run_cli("workloads", tmp_path).stdout


@pytest.mark.parametrize("n, words", [(13e9, "13B"), (25_557_032, "25.6M"), (6.7e9, "6.7B"), (1.2e12, "1.2T"),
                                      (150_000, "150K"), (900, "900")])
def test_parameter_counts_in_words(n, words):
    from gpulint.report.workloads_text import param_count

    assert param_count(n) == words


def test_workloads_missing_path():
    proc = run_cli("workloads", "no/such/dir", cwd=ROOT)
    assert proc.returncode == 2 and "no such file or directory" in proc.stderr


def test_help_mentions_commands():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for cmd in ("scan", "rules", "explain", "workloads", "plugins"):
        assert cmd in proc.stdout


def test_closed_pipe_is_not_an_internal_error():
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader (head, less) is already gone: every write fails with EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "gpulint", "rules", "--format", "json"], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT)
    finally:
        os.close(write_end)
    assert "internal error" not in proc.stderr


TOY_TRAIN = """\
import torch
from torch import nn
from torchvision import datasets, transforms

device = torch.device("cuda")
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
data = datasets.MNIST("data", train=True, download=True, transform=transforms.ToTensor())
loader = torch.utils.data.DataLoader(data, batch_size=64, num_workers=2, pin_memory=True)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in loader:
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
    loss.backward()
    opt.step()
"""


def test_workloads_report_says_why_a_workload_is_tutorial_sized(tmp_path):
    """The tutorial-size decision is the host's, stated once in `gpulint workloads` (text and JSON): it is why an
    MNIST script on no named GPU instance gets no AMP001 while the ImageNet ResNet-50 beside it does."""
    (tmp_path / "train.py").write_text(TOY_TRAIN)
    (tmp_path / "big.py").write_text(TOY_TRAIN.replace("datasets.MNIST(", "datasets.ImageNet(").replace(
        "nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))",
        "__import__('torchvision').models.resnet50()"))
    text = run_cli("workloads", str(tmp_path), cwd=ROOT).stdout
    block = text.split("workload train.py", 1)[1].split("\nworkload ", 1)[0]
    assert "tutorial_sized: MNIST" in block
    data = json.loads(run_cli("workloads", str(tmp_path), "--format", "json", cwd=ROOT).stdout)
    by = {w["entrypoint"]: w["resolved"] for w in data["workloads"]}
    assert by["train.py"]["tutorial_sized"] == "MNIST"
    assert "tutorial_sized" not in by["big.py"]
    scan = json.loads(run_cli("scan", str(tmp_path), "--format", "json", "--select", "AMP001", cwd=ROOT).stdout)
    amp = {f["path"]: f for f in scan["findings"]}
    assert set(amp) == {"big.py"}


_HASH_SENSITIVE = """\
import torch

def setup(cfg):
    if cfg.tf32:
        torch.set_float32_matmul_precision("high")
        torch.backends.fp32_precision = "tf32"
        torch.backends.cuda.matmul.fp32_precision = "tf32"
        torch.backends.cudnn.conv.fp32_precision = "tf32"

setup(load())
model = torch.nn.Linear(8, 8).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
"""


def test_the_report_is_the_same_bytes_whatever_pythons_hash_seed(tmp_path):
    """Facts read by iterating a set of names came out in a different order per process (string hashes are salted
    per process), so a cold and a warm scan of one repository could differ: every ordering is stable."""
    (tmp_path / "train.py").write_text(_HASH_SENSITIVE)
    outs = set()
    for seed in ("0", "1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-m", "gpulint", "scan", str(tmp_path), "--format", "json", "--no-cache",
                               "--exit-zero"], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        outs.add(json.dumps(report["workloads"]))
    assert len(outs) == 1


@pytest.mark.parametrize("fixture", ["wl-k8s-efa", "cfg-nemo-asr", "jax-flax-bf16", "spot-sagemaker-keras",
                                     "ray-train-spot-checkpoints", "wl-terraform-aws"])
def test_fixture_reports_do_not_depend_on_the_hash_seed(fixture):
    outs = set()
    for seed in ("1", "2", "3"):
        proc = subprocess.run([sys.executable, "-m", "gpulint", "scan", str(FIXTURES / fixture), "--format", "json",
                               "--no-cache", "--exit-zero"], capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed})
        assert proc.returncode == 0, proc.stderr
        outs.add(proc.stdout)
    assert len(outs) == 1
