"""A job that names its GPU model and no machine (a Slurm ``--gres=gpu:a100:4``, priced per GPU-hour): the GPU's own
properties (architecture, bf16) hold for the rules that need only them, and its GPU count for MEM004; launches a
script starts in the background (a sweep, one run per GPU) are no single process count. End to end through the scan."""
from __future__ import annotations

import pytest

from helpers import AT, codes
from gpulint.testing import scan_files

_DDP_FREE = """\
import torch
model = Net().cuda()
opt = torch.optim.AdamW(model.parameters())
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    loss.backward()
    opt.step()
"""
_FP32 = """\
import torch
model = Net().cuda()
opt = torch.optim.AdamW(model.parameters())
for x, y in loader:
    loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    loss.backward()
    opt.step()
"""
_HEAD = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:{gpu}:4\n#SBATCH --time=12:00:00\n"


def _job(body: str, gpu: str = "a100", code: str = _DDP_FREE) -> dict[str, str]:
    return {"train.py": code, "train.sbatch": _HEAD.format(gpu=gpu) + body}


# -- MEM004 on the GPUs a job requests ------------------------------------------------------------------
def test_one_process_on_four_requested_a100s_is_idle_gpus():
    result = scan_files(_job("python train.py\n"))
    [f] = [f for f in result.findings if f.code == "MEM004"]
    assert (f.loc.path, f.loc.line) == ("train.sbatch", 5)
    assert "4x a100 it requests" in f.message and "3 of 4 GPUs" in f.message
    # priced: three quarters of the four GPUs' hourly rate
    assert f.cost_impact.usd_per_hour and f.cost_impact.usd_per_hour > 0


def test_one_process_per_requested_gpu_is_silent():
    assert codes(_job("torchrun --standalone --nproc_per_node 4 train.py\n"), "MEM004") == []


def test_a_sweep_of_background_runs_one_per_gpu_is_silent():
    body = "".join(f"CUDA_VISIBLE_DEVICES={i} python train.py --lr {lr} &\n" for i, lr in enumerate(("1e-3", "3e-4", "1e-4", "3e-5")))
    assert codes(_job(body + "wait\n"), "MEM004") == []


def test_a_loop_that_starts_a_run_per_gpu_in_the_background_is_silent():
    body = "for i in 0 1 2 3; do\n  CUDA_VISIBLE_DEVICES=$i python train.py --seed $i &\ndone\nwait\n"
    assert codes(_job(body), "MEM004") == []


def test_a_foreground_run_after_a_background_one_is_still_undecided():
    body = "python train.py --warmup &\npython train.py\n"
    assert codes(_job(body), "MEM004") == []


def test_a_request_without_a_gpu_model_stays_silent():
    """--gres=gpu:4 names no model: no rate, no catalogue GPU, and the rule does not guess one."""
    files = {"train.py": _DDP_FREE, "train.sbatch": "#!/bin/bash\n#SBATCH --gres=gpu:4\npython train.py\n"}
    assert codes(files, "MEM004") == []


# -- the GPU's properties ------------------------------------------------------------------------------
@pytest.mark.parametrize("gpu, expected", [("a100", ["AMP005"]), ("h100", ["AMP005"]), ("v100", [])])
def test_tf32_advice_follows_the_requested_gpu_architecture(gpu, expected):
    got = [c for c in codes(_job("torchrun --nproc_per_node 4 train.py\n", gpu=gpu, code=_FP32), "AMP")
           if c != "AMP001"]
    assert got == expected


def test_the_finding_names_the_gpu_model_not_a_missing_machine():
    result = scan_files(_job("torchrun --nproc_per_node 4 train.py\n", code=_FP32))
    [f] = [f for f in result.findings if f.code == "AMP005"]
    assert "A100" in f.message and "None" not in f.message


def test_bf16_on_requested_v100s_is_amp004_and_names_the_request():
    code = _FP32.replace("    loss = torch", "    with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n        loss = torch")
    result = scan_files(_job("torchrun --nproc_per_node 4 train.py\n", gpu="v100", code=code))
    assert [(f.code, f.loc.line) for f in result.findings if f.code.startswith("AMP")] == [("AMP004", 5)]
    [f] = [f for f in result.findings if f.code == "AMP004"]
    assert "the GPUs the job asks for" in f.message and "None" not in f.message


def test_spot_rules_skip_a_run_its_time_limit_keeps_short():
    """SPOT001/002/004 share one predicate: a run stopped within half an hour loses less than a checkpoint costs."""
    modal = (
        "import modal\nimport torch\n\napp = modal.App(\"t\")\n\n\n@app.function(gpu=\"A100\"{timeout})\ndef train():\n"
        "    model = torch.nn.Linear(8, 8).cuda()\n    opt = torch.optim.AdamW(model.parameters())\n"
        "    for x in range(10):\n        model(torch.ones(8).cuda()).sum().backward()\n        opt.step()\n"
        "    torch.save(model.state_dict(), \"/tmp/ckpt.pt\")\n")
    assert codes({"app.py": modal.format(timeout="")}, "SPOT") == []
    assert codes({"app.py": modal.format(timeout=", timeout=6 * 3600")}, "SPOT") == ["SPOT002", "SPOT004"]
