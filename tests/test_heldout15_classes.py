"""Classes of false positives (and misses) found by the fourteenth and later held-out rounds (judged
in tests/realworld/labels.yaml), each reproduced in a few lines written for the purpose."""
import pytest

from gpulint.testing import scan_files


def codes(files: dict, prefix: str = "") -> list[tuple[str, str, str, int]]:
    return [(f.code, f.severity.value, f.loc.path, f.loc.line) for f in scan_files(files).findings
            if f.code.startswith(prefix)]


# -- a byte-identical copy of a launched script is that job, not a workload of its own -------------------
FP32_TRAIN = """\
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf").cuda()
opt = torch.optim.AdamW(model.parameters())
for batch in loader:
    model(**batch).loss.backward()
    opt.step()
"""
JOB = "#!/bin/bash\n#SBATCH --gres=gpu:8\npython job/train.py\n"


def test_a_stray_identical_copy_of_a_launched_script_is_no_workload():
    r = scan_files({"job/train.py": FP32_TRAIN, "old/train.py": FP32_TRAIN, "job/run.sbatch": JOB})
    assert sorted(w["entrypoint"] for w in r.workloads) == ["job/train.py"]
    (wl,) = r.workloads
    assert any(reason.startswith("copy: old/train.py is a byte-identical copy of job/train.py") for reason in wl["links"])
    assert {f.loc.path for f in r.findings if f.code == "AMP001"} == {"job/train.py"}


@pytest.mark.parametrize("files", [
    # the copy differs by one line: a variant of its own, which may run elsewhere
    {"job/train.py": FP32_TRAIN, "old/train.py": FP32_TRAIN + "print('done')\n", "job/run.sbatch": JOB},
    # neither copy is launched: nothing says which one is the job, both are reported
    {"a/train.py": FP32_TRAIN, "b/train.py": FP32_TRAIN},
])
def test_copies_that_differ_or_that_nothing_launches_stay_workloads(files):
    r = scan_files(files)
    assert len(r.workloads) == 2
    assert len({f.loc.path for f in r.findings if f.code == "AMP001"}) == 2


def test_an_identical_script_of_another_name_is_a_workload_of_its_own():
    r = scan_files({"job/train.py": FP32_TRAIN, "job/train_copy.py": FP32_TRAIN, "job/run.sbatch": JOB})
    assert sorted(w["entrypoint"] for w in r.workloads) == ["job/train.py", "job/train_copy.py"]
