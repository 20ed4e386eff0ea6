"""Modal apps (gpulint.read.python.modal): a GPU Function's decorator is the job's machine (GPU model and count,
time limit, Volumes, Modal's preemption), and the function or the launcher it starts is the job. Cases that must
fire and must not, end to end through the scan; the fixture repository modal-apps through the CLI."""
from __future__ import annotations

import pytest

from conftest import FIXTURES, run_cli
from helpers import AT, cli_scan, codes, facts_of_kind, line_of, only_workload
from gpulint.read.parsers import parse_python
from gpulint.read.python.facts import python_facts
from gpulint.testing import scan_files

APP = """\
import modal
{imports}
app = modal.App("train")
vol = modal.Volume.from_name("ckpts", create_if_missing=True)


@app.function(gpu={gpu}, timeout={timeout}{extra})
def train():
    import torch
    import torchvision

    dataset = torchvision.datasets.ImageFolder("/data/train")
    loader = torch.utils.data.DataLoader(dataset, batch_size=64, num_workers=8, pin_memory=True)
    model = torchvision.models.resnet50().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
{setup}
    for images, labels in loader:
{step}
        loss = torch.nn.functional.cross_entropy(model(images.cuda()), labels.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
{save}
"""

AUTOCAST = "        ctx = torch.autocast('cuda', dtype=torch.bfloat16)\n        ctx.__enter__()"


def _app(gpu: str = '"A100-80GB"', timeout: str = "12 * 3600", extra: str = "", setup: str = "", step: str = "",
         save: str = "", imports: str = "") -> dict[str, str]:
    return {"modal_train.py": APP.format(gpu=gpu, timeout=timeout, extra=extra, setup=setup or "    pass",
                                         step=step or "        pass", save=save, imports=imports)}


SAVE_ON_VOLUME = '        torch.save(model.state_dict(), "/ckpts/last.pt")'
RESUME = '    model.load_state_dict(torch.load("/ckpts/last.pt"))'


def test_a_gpu_function_is_the_training_workload_s_machine():
    wl = only_workload(scan_files(_app(gpu='"a100-80gb:2"', extra=', volumes={"/ckpts": vol}')))
    c = wl["compute"]
    assert c["source"] == "modal" and c["accelerator"] == {"type": "A100-80GB", "count": 2}
    assert c["gpus_per_node"] == 2 and c["nodes"] == 1 and c["capacity"] == "spot"
    assert c["architecture"] == "Ampere" and c["instance"] is None
    assert any("Modal bills per GPU-second" in u for u in wl["unknown"])
    [launch] = wl["launchers"]
    assert launch["value"]["tool"] == "modal" and launch["value"]["nproc_per_node"] == 1


@pytest.mark.parametrize("gpu, accel", [
    ('["H100", "A100-80GB"]', {"type": "H100", "count": 1}),   # a fallback list: its first choice
    ('"H100!"', {"type": "H100", "count": 1}),                   # no auto-upgrade: the same model
    ('"A10:2"', {"type": "A10G", "count": 2}),                   # Modal's A10 is the catalogue's A10G
    ('modal.gpu.A100(count=4, size="80GB")', {"type": "A100-80GB", "count": 4}),  # the deprecated objects
    ('f"H100:{N}"', {"type": "H100", "count": 8}),
])
def test_gpu_spellings(gpu, accel):
    wl = only_workload(scan_files(_app(gpu=gpu, imports="N = 8")))
    assert wl["compute"]["accelerator"] == accel


def test_a_gpu_chosen_at_run_time_is_gpu_compute_of_unknown_model():
    wl = only_workload(scan_files(_app(gpu='os.environ["GPU"]', imports="import os")))
    assert wl["compute"]["device"] == "gpu" and wl["compute"]["accelerator"] is None


def test_fp32_one_process_on_four_gpus_without_checkpoints():
    files = _app(gpu='"A10G:4"')
    text = files["modal_train.py"]
    loop, decorator = line_of(text, "loss.backward()"), line_of(text, "@app.function")
    assert codes(files, fields=AT, sort=True) == [
        ("AMP001", "modal_train.py", loop), ("AMP005", "modal_train.py", loop), ("MEM004", "modal_train.py", decorator),
        ("SPOT001", "modal_train.py", loop)]
    [f] = [f for f in scan_files(files).findings if f.code == "SPOT001"]
    assert "preemptible capacity" in f.message and "A10G x4" in f.message
    [m] = [f for f in scan_files(files).findings if f.code == "MEM004"]
    assert "on the 4x A10G it requests" in m.message


def test_bf16_saved_on_a_volume_and_resumed_is_silent():
    files = _app(extra=', volumes={"/ckpts": vol}', step=AUTOCAST, save=SAVE_ON_VOLUME, setup=RESUME)
    assert codes(files) == []


def test_a_save_to_the_container_s_disk_is_spot004_and_one_on_a_volume_is_not():
    on_disk = _app(extra=', volumes={"/data": vol}', step=AUTOCAST, setup=RESUME,
                   save='        torch.save(model.state_dict(), "/root/out/last.pt")')
    assert codes(on_disk, "SPOT", fields=AT) == [("SPOT004", "modal_train.py", line_of(on_disk["modal_train.py"], "torch.save"))]
    relative = _app(extra=', volumes={"/ckpts": vol}', step=AUTOCAST, setup=RESUME,
                    save='        torch.save(model.state_dict(), "out/last.pt")')
    assert codes(relative, "SPOT") == ["SPOT004"]
    assert codes(_app(extra=', volumes={"/ckpts": vol}', step=AUTOCAST, setup=RESUME, save=SAVE_ON_VOLUME), "SPOT") == []


def test_volumes_gpulint_cannot_read_keep_spot004_silent():
    files = _app(extra=", volumes=VOLUMES", imports="from config import VOLUMES", step=AUTOCAST, setup=RESUME,
                 save='        torch.save(model.state_dict(), "/root/out/last.pt")')
    assert codes(files, "SPOT") == []


def test_a_run_within_modal_s_default_five_minute_timeout_needs_no_checkpoint():
    src = _app(step=AUTOCAST)["modal_train.py"].replace(", timeout=12 * 3600", "")
    assert codes({"modal_train.py": src}, "SPOT") == []
    assert codes(_app(step=AUTOCAST, timeout="600"), "SPOT") == []  # ten minutes: still short
    assert codes(_app(step=AUTOCAST, timeout="3600"), "SPOT") == ["SPOT001"]


def test_a_launcher_the_function_starts_is_the_workload_s_launch_on_its_gpus():
    files = {
        "app.py": 'import subprocess\nimport modal\n\napp = modal.App("x")\n\n\n'
                  '@app.function(gpu="H100:8", timeout=86400)\n'
                  'def run():\n    subprocess.run(["accelerate", "launch", "--num_processes", "4", "train.py"], check=True)\n',
        "train.py": 'import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n\n'
                    'acc = Accelerator(mixed_precision="bf16")\n'
                    'model = torch.nn.Linear(4096, 4096)\nopt = torch.optim.AdamW(model.parameters())\n'
                    'loader = DataLoader(torch.load("/data/x.pt"), batch_size=8, num_workers=4)\n'
                    'model, opt, loader = acc.prepare(model, opt, loader)\n'
                    'for x in loader:\n    acc.backward(model(x).sum())\n    opt.step()\n'
                    '    acc.save_state("/ckpts")\n',
    }
    wl = only_workload(scan_files(files))
    assert wl["entrypoint"] == "train.py" and wl["compute"]["source"] == "modal"
    assert [l["value"]["tool"] for l in wl["launchers"]] == ["accelerate"]
    assert codes(files, "MEM004", fields=AT) == [("MEM004", "app.py", 9)]  # 4 processes on 8 H100s


def test_os_system_and_shell_strings_are_read_as_command_lines():
    files = {"app.py": 'import os\nimport modal\n\napp = modal.App("x")\n\n\n@app.function(gpu="L4", timeout=7200)\n'
                       'def run():\n    os.system("torchrun --nproc_per_node 1 train.py --epochs 3")\n',
             "train.py": "import torch\nmodel = torch.nn.Linear(10, 10).cuda()\n"}
    launches = facts_of_kind(python_facts(parse_python(files["app.py"], "app.py")), "launch")
    assert [(l.value["tool"], l.value["script"], l.value["nproc_per_node"]) for l in launches] == [("torchrun", "train.py", 1)]


def test_a_cpu_function_and_a_file_that_does_not_import_modal_are_no_compute():
    cpu = {"prep.py": 'import modal\napp = modal.App("p")\n\n\n@app.function(cpu=8, timeout=3600)\ndef prep():\n'
                      '    import torch\n    torch.save({}, "/tmp/x.pt")\n'}
    assert not [f for f in python_facts(parse_python(cpu["prep.py"], "prep.py")) if f.kind.startswith("compute.")]
    lookalike = {"jobs.py": 'class App:\n    def function(self, **kw):\n        return lambda f: f\n\n\napp = App()\n\n\n'
                            '@app.function(gpu="H100:8")\ndef train():\n    import torch\n    torch.nn.Linear(1, 1).cuda()\n'}
    assert not [f for f in python_facts(parse_python(lookalike["jobs.py"], "jobs.py")) if f.kind.startswith("compute.")]


def test_the_fixture_repository_through_the_cli():
    status, rows, report = cli_scan(FIXTURES / "modal-apps")
    assert status == 1
    assert rows == [("AMP001", "classifier/modal_train.py", 26), ("AMP005", "classifier/modal_train.py", 26),
                    ("MEM004", "classifier/modal_train.py", 9), ("SPOT002", "classifier/modal_train.py", 28),
                    ("SPOT004", "classifier/modal_train.py", 28)]
    by_name = {w["name"]: w for w in report["workloads"]}
    assert sorted(by_name) == ["classifier/modal_train.py", "finetune/train.py", "sweep/modal_sweep.py"]
    assert {n: (w["compute"]["accelerator"]["type"], w["compute"]["gpus_per_node"]) for n, w in by_name.items()} == {
        "classifier/modal_train.py": ("A10G", 4), "finetune/train.py": ("H100", 8), "sweep/modal_sweep.py": ("A100", 1)}
    proc = run_cli("workloads", FIXTURES / "modal-apps")
    assert "Modal bills per GPU-second" in proc.stdout and "launcher: torchrun at finetune/modal_app.py:18" in proc.stdout


_PRICED = """\
[[tool.gpulint.instances]]
provider = "modal"
name = "modal-a10g-x4"
gpu_model = "A10G-24GB"
gpu_count = {count}
gpu_memory_gib = 24
on_demand_usd_per_hour = 4.4

[[tool.gpulint.workloads]]
entrypoint = "modal_train.py"
instance = "modal-a10g-x4"
"""


def test_an_instance_of_the_project_s_own_prices_a_modal_workload(tmp_path):
    for name, text in _app(gpu='"A10G:4"').items():
        (tmp_path / name).write_text(text)
    (tmp_path / "pyproject.toml").write_text(_PRICED.format(count=4))
    status, rows, report = cli_scan(tmp_path)
    [wl] = report["workloads"]
    assert wl["compute"]["instance"] == "modal-a10g-x4" and wl["compute"]["usd_per_hour"] == 4.4
    # Modal's one list price is what a preemptible Function pays: priced on-demand, not at a spot rate it has none of
    [mem] = [f for f in report["findings"] if f["code"] == "MEM004"]
    assert mem["cost_impact"]["usd_per_hour"] == 3.3  # 3 of 4 GPUs idle


def test_a_bad_instance_entry_stops_the_scan_naming_the_file_the_entry_and_the_field(tmp_path):
    for name, text in _app(gpu='"A10G:4"').items():
        (tmp_path / name).write_text(text)
    (tmp_path / "pyproject.toml").write_text(_PRICED.format(count='"four"'))
    proc = run_cli("scan", tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert "pyproject.toml" in proc.stderr and "instances[0]" in proc.stderr and "gpu_count" in proc.stderr


def test_speechbrain_s_checkpointer_is_a_save_and_a_resume():
    # a SpeechBrain Brain saves through Checkpointer.save_and_keep_only and resumes with recover_if_possible: no SPOT
    files = _app(step=AUTOCAST, extra=', volumes={"/ckpts": vol}',
                 setup='    ckpt = sb.utils.checkpoints.Checkpointer("/ckpts", recoverables={"model": model})\n'
                       '    ckpt.recover_if_possible()',
                 save='        ckpt.save_and_keep_only(meta={"loss": loss.item()}, num_to_keep=2)',
                 imports="import speechbrain as sb")
    assert codes(files, "SPOT") == []
    no_resume = _app(step=AUTOCAST, extra=', volumes={"/ckpts": vol}', imports="import speechbrain as sb",
                     setup='    ckpt = sb.utils.checkpoints.Checkpointer("/ckpts", recoverables={"model": model})',
                     save='        ckpt.save_and_keep_only(num_to_keep=2)')
    assert codes(no_resume, "SPOT") == ["SPOT002"]
