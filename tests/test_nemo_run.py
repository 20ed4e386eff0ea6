"""NeMo 2 recipes and NeMo-Run executors (gpulint.read.python.nemo_run): a recipe a script runs trains in the
recipe's bf16 and checkpoints unless the script says otherwise; an executor is the job's machines and the run call
that pairs them is its launch. Cases that must fire and must not, end to end through the scan; the fixture
repository nemo-run-recipes through the CLI."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from helpers import AT, cli_scan, codes, only_workload
from gpulint.testing import scan_files

RECIPE = """\
import nemo_run as run
from nemo.collections import llm
{imports}

def configure_recipe(nodes: int = {nodes}, gpus_per_node: int = {gpus}):
    recipe = llm.llama3_8b.pretrain_recipe(dir="/checkpoints/l3", name="l3", num_nodes=nodes,
                                           num_gpus_per_node=gpus_per_node)
{overrides}
    return recipe


def executor(nodes: int, devices: int):
    return run.SkypilotExecutor(gpus="{gpu}", gpus_per_node={per_node}, num_nodes=nodes, cloud="aws", use_spot={spot}{extra})


if __name__ == "__main__":
    recipe = configure_recipe()
    run.run(recipe, executor=executor(nodes=recipe.trainer.num_nodes, devices=recipe.trainer.devices))
"""


#: the imports of a NeMo-Run script that runs a recipe
HEAD = "import nemo_run as run\nfrom nemo.collections import llm\n\n"


def _recipe(overrides: str = "", imports: str = "", nodes: int = 1, gpus: int = 8, gpu: str = "A100-80GB",
            per_node: str = "devices", spot: bool = False, extra: str = "") -> dict[str, str]:
    return {"launch/pretrain.py": RECIPE.format(overrides=overrides, imports=imports, nodes=nodes, gpus=gpus, gpu=gpu,
                                                per_node=per_node, spot=spot, extra=extra)}


LOOP = """\
import nemo_run as run
import torch


def train(epochs: int = 30):
    model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters())
    loader = torch.utils.data.DataLoader(torch.load("/data/features.pt"), batch_size=64, num_workers=4)
    for x, y in (b for _ in range(epochs) for b in loader):
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
{save}

if __name__ == "__main__":
    {executor}
    run.run(run.Partial(train), executor=ex)
"""


def _loop(executor: str, save: str = "") -> dict[str, str]:
    return {"train.py": LOOP.format(executor=executor, save=save)}


# ---------------------------------------------------------------- recipes

def test_a_recipe_run_on_an_executor_is_a_bf16_training_workload_that_checkpoints_on_the_executor_s_machines():
    wl = only_workload(scan_files(_recipe(nodes=2)))
    assert wl["role"] == "training"
    assert wl["compute"]["instance"] == "p4de.24xlarge" and wl["compute"]["nodes"] == 2
    assert wl["resolved"]["precision"]["mixed"] is True and wl["resolved"]["precision"]["dtypes"] == ["bf16"]
    [launch] = wl["launchers"]
    assert launch["value"]["tool"] == "nemo_run" and launch["value"]["nproc_per_node"] == 8
    # the memory checks do not run on a recipe's model, and `gpulint workloads` says so
    assert any(u.startswith("model size: nemo.collections.llm.llama3_8b.pretrain_recipe") for u in wl["unknown"])


def test_a_recipe_on_spot_saves_and_resumes_so_no_spot001_or_spot002():
    files = _recipe(spot=True, extra=', file_mounts={"/checkpoints": {"name": "ckpts", "mode": "MOUNT"}}')
    assert codes(files, "SPOT") == []


def test_on_spot_a_recipe_whose_checkpoint_folder_is_the_node_s_disk_is_spot004():
    assert codes(_recipe(spot=True), "SPOT", fields=AT) == [("SPOT004", "launch/pretrain.py", 6)]


def test_file_mounts_gpulint_cannot_read_keep_spot004_silent():
    files = _recipe(spot=True, extra=", file_mounts=MOUNTS")
    assert codes(files, "SPOT") == []


def test_a_recipe_whose_checkpointing_is_switched_off_on_spot_is_spot001():
    files = _recipe(spot=True, overrides="    recipe.log.ckpt = None\n")
    assert codes(files, "SPOT", fields=AT) == [("SPOT001", "launch/pretrain.py", 6)]


@pytest.mark.parametrize("override,imports,dtypes,mixed", [
    ("    recipe.trainer.plugins = fp16_mixed()\n",
     "from nemo.collections.llm.recipes.precision.mixed_precision import fp16_mixed", ["fp16"], True),
    ('    recipe.trainer.plugins = run.Config(nl.MegatronMixedPrecision, precision="32")\n',
     "from nemo import lightning as nl", [], False),
    ("    recipe.trainer.plugins = make_plugins()\n", "from mylib import make_plugins", [], None),
])
def test_an_assignment_to_the_trainer_s_plugins_decides_the_precision(override, imports, dtypes, mixed):
    wl = only_workload(scan_files(_recipe(overrides=override, imports=imports)))
    got = wl["resolved"]["precision"]
    assert got["mixed"] is mixed and [d for d in got["dtypes"] if d != "fp32"] == dtypes


def test_fp32_set_on_a_recipe_is_amp001_at_the_assignment():
    files = _recipe(overrides='    recipe.trainer.plugins = run.Config(nl.MegatronMixedPrecision, precision="32")\n',
                    imports="from nemo import lightning as nl")
    assert codes(files, "AMP001", fields=AT) == [("AMP001", "launch/pretrain.py", 8)]


def test_a_plugin_gpulint_cannot_read_leaves_precision_undecided_and_amp_silent():
    files = _recipe(overrides="    recipe.trainer.plugins = make_plugins()\n", imports="from mylib import make_plugins")
    assert codes(files, "AMP") == []


def test_fp16_on_an_a100_recipe_is_amp003():
    files = _recipe(overrides="    recipe.trainer.plugins = fp16_mixed()\n",
                    imports="from nemo.collections.llm.recipes.precision.mixed_precision import fp16_mixed")
    assert codes(files, "AMP", fields=AT) == [("AMP003", "launch/pretrain.py", 8)]


def test_the_recipe_s_bf16_on_a_t4_is_amp004():
    assert codes(_recipe(gpu="T4", per_node="4"), "AMP004", fields=AT) == [("AMP004", "launch/pretrain.py", 6)]


def test_a_recipe_using_fewer_gpus_than_its_executor_holds_leaves_them_idle():
    """The gres-vs-devices mistake: the executor rents 8 GPUs a node, the recipe's trainer starts 2 processes."""
    files = _recipe(gpus=2, per_node="8")
    [f] = [f for f in scan_files(files).findings if f.code == "MEM004"]
    assert (f.loc.path, f.loc.line) == ("launch/pretrain.py", 18)
    assert "6 of 8 GPUs are billed and idle" in f.message


def test_a_recipe_that_is_only_built_and_never_run_is_no_workload():
    files = {"recipes/llama.py": "from nemo.collections import llm\n\n\ndef recipe():\n"
                                 "    return llm.llama3_8b.pretrain_recipe(name='x')\n"}
    assert scan_files(files).workloads == []


# ---------------------------------------------------------------- executors

def test_a_plain_function_sent_to_a_spot_gpu_without_a_checkpoint_is_spot001_and_its_fp32_loop_amp001():
    files = _loop('ex = run.SkypilotExecutor(gpus="L4", cloud="gcp", use_spot=True)')
    assert codes(files, ("SPOT", "AMP001"), fields=AT, sort=True) == [("AMP001", "train.py", 12), ("SPOT001", "train.py", 12)]
    wl = only_workload(scan_files(files))
    assert wl["compute"]["instance"] == "g2-standard-4" and wl["compute"]["capacity"] == "spot"


def test_the_same_function_that_saves_and_resumes_is_silent_on_spot():
    save = ("    torch.save(model.state_dict(), '/ckpt/last.pt')\n\n\ndef resume(model):\n"
            "    model.load_state_dict(torch.load('/ckpt/last.pt'))\n")
    files = _loop('ex = run.SkypilotExecutor(gpus="L4", cloud="gcp", use_spot=True, file_mounts={"/ckpt": "gs://b/ck"})', save)
    assert [c for c in codes(files, "SPOT") if c != "SPOT004"] == []


def test_a_local_executor_names_no_machine():
    wl = only_workload(scan_files(_loop('ex = run.LocalExecutor(ntasks_per_node=1)')))
    assert wl["compute"] is None and not wl["launchers"]


def test_a_skypilot_executor_on_kubernetes_is_not_priced_as_a_cloud_machine():
    wl = only_workload(scan_files(_loop('ex = run.SkypilotExecutor(gpus="H100", gpus_per_node=8, cloud="kubernetes")')))
    assert wl["compute"]["instance"] is None


@pytest.mark.parametrize("kwargs,gpn,nodes", [
    ('partition="gpu", nodes=2, gpus_per_node=8, ntasks_per_node=8', 8, 2),
    ('partition="gpu", nodes=4, gres="gpu:h100:8", ntasks_per_node=8', 8, 4),
    ('partition="gpu", ntasks_per_node=1', None, 1),
])
def test_a_slurm_executor_is_a_slurm_allocation(kwargs, gpn, nodes):
    wl = only_workload(scan_files(_loop(f"ex = run.SlurmExecutor(account='a', {kwargs})")))
    c = wl["compute"]
    assert c["source"] == "slurm" and c["gpus_per_node"] == gpn and c["nodes"] == nodes


def test_a_choice_between_a_local_and_a_cluster_executor_launches_on_the_cluster_only():
    text = LOOP.format(save="", executor="ex = run.SlurmExecutor(account='a', nodes=1, gpus_per_node=8) if CLUSTER "
                                         "else run.LocalExecutor()")
    wl = only_workload(scan_files({"train.py": text}))
    assert wl["compute"]["source"] == "slurm" and len(wl["launchers"]) == 1


def test_env_vars_of_an_executor_are_the_job_s_environment():
    files = _recipe(extra=', env_vars={"NCCL_P2P_DISABLE": "1"}')
    assert ("NET002", "launch/pretrain.py", 13) in codes(files, "NET", fields=AT)


def test_run_script_launches_that_script_on_the_executor():
    files = {"train.py": LOOP.format(save="", executor="pass").split("\nif __name__")[0] + "\n",
             "submit.py": "import nemo_run as run\n\nex = run.SkypilotExecutor(gpus='L4', cloud='gcp', use_spot=True)\n"
                          "run.run(run.Script(path='train.py'), executor=ex)\n"}
    wl = only_workload(scan_files(files))
    assert wl["entrypoint"] == "train.py" and wl["compute"]["capacity"] == "spot"


# ---------------------------------------------------------------- the fixture repository, through the CLI

def test_nemo_run_fixture_repository_end_to_end():
    status, rows, report = cli_scan(FIXTURES / "nemo-run-recipes")
    assert status == 1  # SPOT001 is an error
    # the Slurm job names A100s (no machine): fp16_mixed there is AMP003, the GPU known from its request
    assert rows == [("AMP001", "launch/train_resnet_spot.py", 16), ("AMP003", "launch/finetune_slurm.py", 22),
                    ("AMP005", "launch/train_resnet_spot.py", 16),
                    ("NET002", "launch/pretrain_skypilot.py", 26), ("SPOT001", "launch/train_resnet_spot.py", 16)]
    by_name = {w["name"]: w for w in report["workloads"]}
    assert sorted(by_name) == ["launch/finetune_slurm.py", "launch/pretrain_skypilot.py", "launch/smoke_local.py",
                               "launch/train_resnet_spot.py"]
    machines = {n: (w["compute"] or {}).get("instance") for n, w in by_name.items()}
    assert machines == {"launch/finetune_slurm.py": None, "launch/pretrain_skypilot.py": "p4de.24xlarge",
                        "launch/smoke_local.py": None, "launch/train_resnet_spot.py": "g2-standard-4"}
    slurm = by_name["launch/finetune_slurm.py"]["compute"]
    assert slurm["source"] == "slurm" and slurm["gpus_per_node"] == 8
    assert by_name["launch/finetune_slurm.py"]["resolved"]["precision"]["dtypes"] == ["fp16"]


def test_a_recipe_made_through_functools_partial_is_read_with_the_partial_s_arguments():
    text = ("import functools\nimport nemo_run as run\nfrom nemo.collections import llm\n\n"
            "ex = run.SkypilotExecutor(gpus='A100-80GB', gpus_per_node=8, num_nodes=2, cloud='aws')\n"
            "recipe = functools.partial(llm.llama31_8b.pretrain_recipe, num_nodes=2, num_gpus_per_node=4)(name='p', dir='/ck')\n"
            "run.run(recipe, executor=ex)\n")
    wl = only_workload(scan_files({"pretrain.py": text}))
    assert wl["role"] == "training" and wl["resolved"]["precision"]["dtypes"] == ["bf16"]
    assert wl["launchers"][0]["value"]["nproc_per_node"] == 4
    assert codes({"pretrain.py": text}, "MEM004") == ["MEM004"]  # 4 processes on 8-GPU nodes


def test_an_experiment_s_own_executor_runs_the_tasks_added_without_one():
    text = (HEAD +
            "if __name__ == '__main__':\n"
            "    recipe = llm.llama3_8b.pretrain_recipe(name='p', num_gpus_per_node=8)\n"
            "    ex = run.SkypilotExecutor(gpus='H100', gpus_per_node=8, cloud='aws', use_spot=True)\n"
            "    with run.Experiment('p', executor=ex) as exp:\n"
            "        exp.add(recipe)\n"
            "        exp.run()\n")
    wl = only_workload(scan_files({"pretrain.py": text}))
    assert wl["compute"]["gpu_model"].startswith("H100") and wl["compute"]["capacity"] == "spot"


def test_a_gpu_type_chosen_at_run_time_is_gpu_compute_left_unpriced_not_a_cpu_node():
    files = _recipe(gpu="{GPU}").copy()
    files["launch/pretrain.py"] = files["launch/pretrain.py"].replace('gpus="{GPU}"', "gpus=GPU_TYPE")
    c = only_workload(scan_files(files))["compute"]
    assert c["device"] == "gpu" and c["instance"] is None and c.get("usd_per_hour") is None


def test_a_recipe_handed_to_a_helper_gpulint_cannot_read_has_an_undecided_precision_and_switched_off_checkpoints_stay_off():
    text = ("import nemo_run as run\nfrom nemo.collections import llm\nfrom scripts.performance.helpers import set_perf\n\n"
            "def recipe():\n    r = llm.llama31_70b.pretrain_recipe(performance_mode=True)\n"
            "    r = set_perf(r, compute_dtype='fp8')\n    r.trainer.enable_checkpointing = False\n    return r\n\n"
            "if __name__ == '__main__':\n    run.cli.main(llm.pretrain, default_factory=recipe)\n")
    wl = only_workload(scan_files({"pretrain.py": text}))
    assert wl["resolved"]["precision"]["mixed"] is None
    assert any("handed to set_perf" in u for u in wl["unknown"])
    assert wl["resolved"]["checkpoint"]["saves"] == []


def test_a_recipe_called_on_a_model_module_bound_to_a_name_is_a_recipe():
    text = (HEAD +
            "if __name__ == '__main__':\n"
            "    model = llm.llama31_70b if BIG else llm.llama31_8b\n"
            "    recipe = model.pretrain_recipe(name='p', num_nodes=1, num_gpus_per_node=8)\n"
            "    run.run(recipe, executor=run.SlurmExecutor(account='a', nodes=1, gpus_per_node=8))\n")
    wl = only_workload(scan_files({"pretrain.py": text}))
    assert wl["role"] == "training" and wl["compute"]["source"] == "slurm"
    assert wl["facts"][0]["key"] == "nemo.collections.llm.llama31_70b.pretrain_recipe"


def test_a_method_named_like_a_recipe_on_another_object_is_not_one():
    text = ("import nemo_run as run\nfrom mylib import zoo\n\n"
            "if __name__ == '__main__':\n    model = zoo.llama\n    recipe = model.pretrain_recipe(name='p')\n"
            "    run.run(recipe, executor=run.LocalExecutor())\n")
    assert scan_files({"pretrain.py": text}).workloads == []


def test_a_factory_that_builds_a_cluster_or_a_local_executor_launches_on_the_cluster_one():
    text = (HEAD +
            "def executor(args):\n    if args.cluster:\n"
            "        ex = run.SlurmExecutor(account='a', nodes=2, gpus_per_node=8, ntasks_per_node=8)\n"
            "    else:\n        ex = run.LocalExecutor(ntasks_per_node=8, launcher='torchrun')\n    return ex\n\n"
            "def main(args):\n    recipe = llm.llama3_8b.pretrain_recipe(name='p', num_nodes=2, num_gpus_per_node=8)\n"
            "    with run.Experiment('p') as exp:\n        exp.add(recipe, executor=executor(args))\n        exp.run()\n")
    wl = only_workload(scan_files({"pretrain.py": text}))
    assert wl["compute"]["source"] == "slurm" and wl["compute"]["nodes"] == 2


def test_an_executor_sized_by_flags_takes_their_defaults():
    text = ("import argparse\nimport nemo_run as run\nfrom nemo.collections import llm\n\n"
            "p = argparse.ArgumentParser()\np.add_argument('-N', '--num_nodes', type=int, default=2)\n"
            "p.add_argument('-G', '--num_gpus', type=int, default=8)\np.add_argument('--gpu', default='H100')\n"
            "args = p.parse_args()\n"
            "recipe = llm.llama3_8b.pretrain_recipe(name='p', num_nodes=args.num_nodes, num_gpus_per_node=args.num_gpus)\n"
            "ex = run.SkypilotExecutor(gpus=args.gpu, gpus_per_node=args.num_gpus, num_nodes=args.num_nodes, cloud='aws')\n"
            "run.run(recipe, executor=ex)\n")
    c = only_workload(scan_files({"pretrain.py": text}))["compute"]
    assert c["gpu_model"].startswith("H100") and c["nodes"] == 2 and c["gpus_per_node"] == 8


def test_flags_parsed_from_a_parser_a_function_builds_are_read_as_flags():
    from gpulint.read.python.index import Evaluator, build_index
    import ast
    text = ("import argparse\n\ndef get_parser():\n    p = argparse.ArgumentParser()\n"
            "    p.add_argument('--gpu-devices', type=int, default=8)\n    return p\n\n"
            "args = get_parser().parse_args()\nn = args.gpu_devices\n")
    tree = ast.parse(text)
    ix = build_index(tree, text)
    value = Evaluator(ix).value(tree.body[-1].value, "")
    assert value["cli_arg"] == "--gpu-devices" and value["default"] == 8


TASK = HEAD + """\
from nemo import lightning as nl
from nemo.collections.llm.api import finetune
from nemo.collections.llm.recipes.log.default import default_resume

PRECISION = run.Config(nl.MegatronMixedPrecision, precision="32-true")

def task():
    return run.Partial(
        finetune,
        model=run.Config(llm.LlamaModel, config=run.Config(llm.Llama3Config8B)),
        trainer=run.Config(nl.Trainer, devices=8, accelerator="gpu", strategy="ddp"{trainer}),
        {resume}
    )


if __name__ == "__main__":
    ex = run.SkypilotExecutor(gpus="A100-80GB", gpus_per_node=8, cloud="aws", use_spot=True,
                              file_mounts={{"/ck": {{"name": "b", "mode": "MOUNT"}}}})
    run.run(task(), executor=ex)
"""


@pytest.mark.parametrize("trainer,resume,want", [
    ("", "resume=default_resume(),", []),  # no precision gpulint reads: undecided; Lightning saves, AutoResume resumes
    (', plugins=run.Config(nl.MegatronMixedPrecision, precision="32")', "resume=default_resume(),", [("AMP001", 14)]),  # at the plugin that sets fp32
    (', plugins=nl.MegatronMixedPrecision(precision="bf16-mixed")', "", [("SPOT002", 11)]),  # Lightning saves, nothing resumes
    (', plugins=nl.MegatronMixedPrecision(precision="bf16-mixed"), enable_checkpointing=False', "", [("SPOT001", 11)]),
    (", plugins=PRECISION", "resume=default_resume(),", [("AMP001", 14)]),  # the plugin bound to a name
])
def test_a_hand_built_nemo2_task_is_read_from_its_trainer_config_and_resume(trainer, resume, want):
    files = {"finetune.py": TASK.format(trainer=trainer, resume=resume)}
    got = [(c, line) for c, _, line in codes(files, ("AMP001", "SPOT"), fields=AT)]
    assert got == want
    assert only_workload(scan_files(files))["role"] == "training"
