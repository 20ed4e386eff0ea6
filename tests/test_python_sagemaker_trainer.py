"""SageMaker Python SDK ModelTrainer (sagemaker.modules / SDK 3 sagemaker.train): the
same compute facts as an estimator, and a launch of its entry script or command."""
from __future__ import annotations

import textwrap

import pytest

from gpulint.read.parsers import parse_python
from gpulint.read.python.facts import python_facts


def facts(code, path="launch.py"):
    return [f for f in python_facts(parse_python(textwrap.dedent(code).lstrip("\n"), path)) if f.target]


def by_kind(out, target=None):
    got = {}
    for f in out:
        if target is None or f.target == target:
            got.setdefault(f.kind, []).append(f)
    return got


V3 = """
    from sagemaker.train import ModelTrainer
    from sagemaker.train.configs import CheckpointConfig, Compute, SourceCode, StoppingCondition
    from sagemaker.train.distributed import Torchrun

    compute = Compute(instance_type="ml.p4d.24xlarge", instance_count=2, enable_managed_spot_training=True)
    trainer = ModelTrainer(
        training_image="763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5-gpu",
        source_code=SourceCode(source_dir="src", entry_script="train.py"),
        compute=compute,
        distributed=Torchrun(process_count_per_node=8),
        stopping_condition=StoppingCondition(max_runtime_in_seconds=36000, max_wait_time_in_seconds=72000),
        checkpoint_config=CheckpointConfig(s3_uri="s3://my-bucket/ckpt", local_path="/opt/ml/checkpoints"),
        hyperparameters={"epochs": 3, "bf16": True},
        environment={"NCCL_DEBUG": "INFO"},
    )
    trainer.train()
    """


def test_model_trainer_compute_facts():
    got = by_kind(facts(V3), "ModelTrainer@trainer")
    [t] = got["compute.target"]
    assert t.value == {"source": "sagemaker", "provider": "aws", "resource": "ModelTrainer@trainer", "role": "training"}
    assert [f.value for f in got["compute.instance_type"]] == ["ml.p4d.24xlarge"]
    assert got["compute.instance_type"][0].loc.line == 5  # where Compute(...) says it
    assert [f.value for f in got["compute.node_count"]] == [2]
    assert [f.value for f in got["compute.capacity"]] == ["spot"]
    [ck] = got["compute.checkpoint"]
    assert ck.value == {"s3_uri": "s3://my-bucket/ckpt", "local_path": "/opt/ml/checkpoints", "max_wait": 72000,
                        "max_run": 36000, "s3_uri_set": True, "max_wait_set": True, "star_kwargs": False}
    assert [f.value for f in got["env"]] == [{"name": "NCCL_DEBUG", "value": "INFO"}]


def test_model_trainer_launch_of_the_entry_script():
    [launch] = by_kind(facts(V3))["launch"]
    assert launch.value["tool"] == "sagemaker" and launch.value["script"] == "src/train.py"
    assert launch.value["nnodes"] == 2 and launch.value["nproc_per_node"] == 8
    assert launch.value["args"] == ["--epochs", "3", "--bf16", "true"]
    assert launch.value["distributed"] == "torchrun" and launch.loc.line == 8


def test_sdk_2_modules_namespace_and_command():
    got = by_kind(facts("""
        from sagemaker.modules.train import ModelTrainer
        from sagemaker.modules.configs import Compute, SourceCode

        trainer = ModelTrainer(
            training_image="img",
            source_code=SourceCode(source_dir="code", command="torchrun --nproc_per_node 4 finetune.py --lr 1e-4"),
            compute=Compute(instance_type="ml.g5.12xlarge"),
        )
        """))
    assert [f.value for f in got["compute.instance_type"]] == ["ml.g5.12xlarge"]
    assert [f.value for f in got["compute.node_count"]] == [1]
    assert [f.value for f in got["compute.capacity"]] == ["on-demand"]
    [launch] = got["launch"]
    assert launch.value["tool"] == "torchrun" and launch.value["script"] == "code/finetune.py"
    assert launch.value["nproc_per_node"] == 4 and launch.value["nnodes"] == 1
    assert launch.attrs["via"] == "SourceCode.command"


def test_no_compute_is_the_documented_default_cpu_instance():
    got = by_kind(facts("""
        from sagemaker.train import ModelTrainer
        from sagemaker.train.configs import SourceCode
        t = ModelTrainer(training_image="img", source_code=SourceCode(entry_script="train.py"))
        """))
    [it] = got["compute.instance_type"]
    assert it.value == "ml.m5.xlarge" and it.attrs == {"default": True}
    [ck] = got["compute.checkpoint"]
    assert ck.value["s3_uri_set"] is False and ck.value["max_wait_set"] is False


def test_spot_without_checkpoint_config_and_local_mode():
    got = by_kind(facts("""
        from sagemaker.train import ModelTrainer
        from sagemaker.train.model_trainer import Mode
        from sagemaker.train.configs import Compute
        spot = ModelTrainer(training_image="i", compute=Compute(instance_type="ml.g5.2xlarge",
                                                               enable_managed_spot_training=True))
        local = ModelTrainer(training_image="i", training_mode=Mode.LOCAL_CONTAINER)
        """))
    caps = {f.target: f.value for f in got["compute.capacity"]}
    assert caps["ModelTrainer@spot"] == "spot"
    ck = {f.target: f.value for f in got["compute.checkpoint"]}
    assert ck["ModelTrainer@spot"]["s3_uri_set"] is False
    its = {f.target: f.value for f in got["compute.instance_type"]}
    assert its["ModelTrainer@local"] == "local"


@pytest.mark.parametrize("code", [
    # a class named ModelTrainer that is not SageMaker's
    "from mylib import ModelTrainer\nt = ModelTrainer(compute='gpu')\n",
    # compute given by a variable not decided here
    "from sagemaker.train import ModelTrainer\nimport sagemaker\ndef f(c):\n    return ModelTrainer(compute=c)\n",
])
def test_not_a_decided_model_trainer(code):
    got = by_kind(facts(code))
    assert [f.value for f in got.get("compute.instance_type", [])] in ([], [None])


def test_star_kwargs_make_values_unknown():
    got = by_kind(facts("""
        from sagemaker.train import ModelTrainer
        from sagemaker.train.configs import Compute
        kw = dict(role="r")
        t = ModelTrainer(compute=Compute(**kw), **kw)
        """))
    assert [f.value for f in got["compute.capacity"]] == [None]
    assert got["compute.checkpoint"][0].value["star_kwargs"] is True


def test_notebook_style_reassignments_use_the_latest_before_each_trainer():
    out = facts("""
        from sagemaker.modules.train import ModelTrainer
        from sagemaker.modules.configs import Compute, SourceCode
        source_code = SourceCode(command="echo hi")
        trainer = ModelTrainer(training_image="i", source_code=source_code)
        source_code = SourceCode(source_dir="scripts", entry_script="train.py")
        compute = Compute(instance_type="ml.p4d.24xlarge", instance_count=1)
        trainer = ModelTrainer(training_image="i", source_code=source_code, compute=compute)
        """)
    got = by_kind(out)
    assert [f.target for f in got["compute.target"]] == ["ModelTrainer@trainer", "ModelTrainer@trainer#2"]
    its = {f.target: f.value for f in got["compute.instance_type"]}
    assert its == {"ModelTrainer@trainer": "ml.m5.xlarge", "ModelTrainer@trainer#2": "ml.p4d.24xlarge"}
    [launch] = [f for f in got["launch"] if f.target == "ModelTrainer@trainer#2"]
    assert launch.value["script"] == "scripts/train.py"
    assert not [f for f in got["launch"] if f.target == "ModelTrainer@trainer"]  # `echo hi` launches nothing
