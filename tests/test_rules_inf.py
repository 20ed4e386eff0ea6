"""INF rules (serving): must-fire and must-not cases on small repositories, most reproducing a class of
finding judged on a real repository (tests/realworld/labels.yaml).
"""
from __future__ import annotations

import pytest

from gpulint.testing import scan_files
from helpers import SEVERITY_AT, codes, findings
from samples import DEPLOY, GPU_JOB, NB_JOB, SERVER


# -- INF001 warns only where an instance type is named: a GPU count (a Determined slot) names no GPU -------
SERVE = """\
import torch
from transformers import AutoModel

model = AutoModel.from_pretrained("bert-large-uncased").cuda().eval()
with torch.no_grad():
    for batch in loader:
        out = model(**batch)
"""


# -- a batch job that writes a model (an adapter merge, an export) is no fp32 serving -------------------------
MERGE = """\
import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM

base = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf").cuda()
model = PeftModel.from_pretrained(base, "/opt/ml/input/data/adapter")
with torch.no_grad():
    model = model.merge_and_unload()
{tail}
"""


EST = NB_JOB.replace("compile.py", "merge.py").format(kind="ml.g5.12xlarge")


# -- INF001 ----------------------------------------------------------------------------------------------


def test_a_front_end_that_forwards_requests_serves_no_model_itself():
    pod = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: api\nspec:\n  containers:\n  - name: api\n    image: example/api:1\n"
           "    command: [python, serve.py]\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
           "  nodeSelector:\n    node.kubernetes.io/instance-type: g5.xlarge\n")
    forward = ("import torch\nimport requests\nfrom fastapi import FastAPI\napp = FastAPI()\ntorch.zeros(1).to('cuda')\n\n\n"
               "@app.post('/generate')\ndef generate(req: dict):\n    return requests.post('http://vllm:8000/v1/completions', json=req).json()\n")
    assert codes({"serve.py": forward, "k8s/pod.yaml": pod}, "INF001", sort=True) == []
    loads = forward.replace("torch.zeros(1).to('cuda')", "model = torch.jit.load('model.pt').to('cuda').eval()")
    assert codes({"serve.py": loads, "k8s/pod.yaml": pod}, "INF001", sort=True) == ["INF001"]


@pytest.mark.parametrize("kw, fires", [(", trust_remote_code=True", False), ("", True)])
def test_a_model_whose_own_code_picks_its_dtype_is_not_served_in_fp32_for_sure(kw, fires):
    files = {"api_server.py": SERVER.replace("{kw}", kw), "k8s/deploy.yaml": DEPLOY}
    assert bool(findings(files, "INF001")) is fires


def test_trust_remote_code_on_a_model_transformers_implements_changes_nothing():
    src = SERVER.replace("THUDM/chatglm3-6b", "meta-llama/Llama-3.1-8B-Instruct").replace("{kw}", ", trust_remote_code=True")
    assert [f.code for f in findings({"api_server.py": src, "k8s/deploy.yaml": DEPLOY}, "INF001")] == ["INF001"]


@pytest.mark.parametrize("tensor_type, fires", [("torch.cuda.HalfTensor", False), ("torch.cuda.FloatTensor", True)])
def test_a_16_bit_default_tensor_type_is_a_16_bit_model(tensor_type, fires):
    code = (f"import torch\ntorch.set_default_tensor_type({tensor_type})\n"
            "from transformers import AutoModelForCausalLM\n"
            "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf').cuda()\nmodel.eval()\n"
            "with torch.no_grad():\n    out = model.generate(**batch)\n")
    job = GPU_JOB.replace("python train.py", "python serve.py")
    assert bool(findings({"serve.py": code, "job.sbatch": job}, "INF001")) is fires


@pytest.mark.parametrize("compute, severity", [
    ({"job.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: embed\nspec:\n  containers:\n  - name: c\n    image: x\n"
                  "    command: [python, embed.py]\n    resources:\n      limits:\n        nvidia.com/gpu: 2\n"}, "info"),
    ({"job.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: embed\nspec:\n  nodeSelector:\n"
                  "    node.kubernetes.io/instance-type: g5.2xlarge\n  containers:\n  - name: c\n    image: x\n"
                  "    command: [python, embed.py]\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"}, "warning"),
])
def test_fp32_inference_warns_only_on_a_named_instance(compute, severity):
    r = scan_files({"embed.py": SERVE, **compute})
    (f,) = [f for f in r.findings if f.code == "INF001"]
    assert f.severity.value == severity
    if severity == "info":
        assert "nothing names the GPU instance" in f.cost_impact.basis


def test_inf001_is_silent_for_a_batch_job_that_writes_the_model():
    files = {"src/merge.py": MERGE.format(tail='model.save_pretrained("/opt/ml/model")'), "run.py": EST}
    assert [c for c in codes(files, fields=SEVERITY_AT) if c[0] == "INF001"] == []


def test_inf001_says_runs_for_a_batch_job_that_only_generates():
    files = {"src/merge.py": MERGE.format(tail='print(model.generate(**batch))'), "run.py": EST}
    (inf,) = [f for f in scan_files(files).findings if f.code == "INF001"]
    assert "the model runs in fp32" in inf.message


def test_inf001_needs_more_than_a_gpu_probe():
    handler = ("import torch\nfrom fastapi import FastAPI\napp = FastAPI()\n"
               "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
               "model = torch.jit.load('m.pt').to(device).eval()\n\n\n@app.post('/predict')\ndef predict(x):\n"
               "    return model(x)\n")
    assert [f for f in scan_files({"serve.py": handler}).findings if f.code == "INF001"] == []
    on_cuda = handler.replace("torch.device('cuda' if torch.cuda.is_available() else 'cpu')", "torch.device('cuda')")
    (f,) = [f for f in scan_files({"serve.py": on_cuda}).findings if f.code == "INF001"]
    assert f.severity.value == "info"  # an unknown model on an unknown GPU: advice, no figure
