"""JAX / Flax / Optax / Orbax (gpulint/read/python/frameworks/jax.py): the training step, its precision, GPU use,
data parallelism and checkpoints; the fixtures jax-flax-fp32 / jax-flax-bf16 through the CLI."""
from __future__ import annotations

import textwrap

from conftest import FIXTURES

from gpulint.read.parsers import parse_python
from gpulint.read.python.facts import python_facts
from helpers import AT, SEVERITY_AT, cli_findings, codes, findings, rows

P4D = 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "p4d.24xlarge"\n}\n'
SPOT_A100 = ('resource "google_compute_instance" "t" {\n  name = "t"\n  machine_type = "a2-highgpu-8g"\n  zone = "us-central1-a"\n'
             '  scheduling {\n    provisioning_model = "SPOT"\n    preemptible = true\n  }\n'
             '  metadata_startup_script = "python train.py"\n}\n')

STEP = """\
import functools
import jax
import jax.numpy as jnp
import optax
import flax.linen as nn
from flax.training import train_state


class Net(nn.Module):
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(4096, dtype=self.dtype)(x)
        return nn.Dense(1000, dtype=self.dtype)(nn.relu(x))


def train_step(state, batch):
    def loss_fn(params):
        return optax.softmax_cross_entropy(state.apply_fn({"params": params}, batch["x"]), batch["y"]).mean()
    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=jax.lax.pmean(grads, "batch")), loss


def main():
    model = Net(MODEL_ARGS)
    params = model.init(jax.random.PRNGKey(0), jnp.ones((1, 1024)))["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adamw(1e-3))
    p_step = jax.pmap(functools.partial(train_step), axis_name="batch")
    for batch in batches():
        state, loss = p_step(state, batch)
    SAVE


if __name__ == "__main__":
    main()
"""


def step(model_args: str = "", save: str = "pass") -> str:
    return STEP.replace("MODEL_ARGS", model_args).replace("SAVE", save)


def facts(code: str, path: str = "train.py") -> list:
    return python_facts(parse_python(textwrap.dedent(code), path))


def kinds(code: str, kind: str) -> list:
    return [f.value for f in facts(code) if f.kind == kind]


# -- training ---------------------------------------------------------------------------------------
def test_a_pmapped_step_trains_at_the_pmap_call_of_the_function_running_the_loop():
    fs = facts(step())
    t = next(f for f in fs if f.kind == "trains")
    assert t.value == {"via": "jax"} and t.loc.line == 29 and t.attrs["function"] == "main"
    assert {"via": "jax", "auto": True} in [f.value for f in fs if f.kind == "uses_gpu"]
    assert {"via": "jax.pmap"} in [f.value for f in fs if f.kind == "ddp"]


def test_a_decorated_step_called_by_name_trains_where_it_is():
    code = """\
    import jax
    import optax
    from flax import nnx

    @nnx.jit
    def train_step(model, optimizer, batch):
        loss, grads = nnx.value_and_grad(lambda m: ((m(batch["x"]) - batch["y"]) ** 2).mean())(model)
        optimizer.update(model, grads)
        return loss

    def fit(model, optimizer, data):
        for batch in data:
            train_step(model, optimizer, batch)
    """
    t = [f for f in facts(code) if f.kind == "trains"]
    assert len(t) == 1 and t[0].attrs["function"] == "train_step" and t[0].loc.line == 8


def test_gradients_without_an_optimizer_or_jit_alone_are_not_training():
    grads_only = "import jax\nimport jax.numpy as jnp\ng = jax.grad(lambda x: jnp.sum(x ** 2))(jnp.ones(3))\n"
    jitted = "import jax\nf = jax.jit(lambda x: x * 2)\nprint(f(3))\n"
    assert not kinds(grads_only, "trains") and not kinds(jitted, "trains")
    assert not kinds(grads_only, "precision") and not kinds(jitted, "uses_gpu")


def test_a_script_calling_the_function_that_builds_the_step_is_the_workload():
    # main.py -> train.train_and_evaluate -> make_update_fn returning jax.pmap(update_fn): the vision_transformer shape
    train = """\
import jax
import optax


def make_update_fn(apply_fn, tx):
    def update_fn(params, opt_state, batch):
        loss, g = jax.value_and_grad(lambda p: apply_fn(p, batch))(params)
        updates, opt_state = tx.update(g, opt_state)
        return optax.apply_updates(params, updates), opt_state, loss
    return jax.pmap(update_fn, axis_name="batch")


def train_and_evaluate(config):
    update = make_update_fn(model.apply, optax.adam(1e-4))
    for batch in data(config):
        params, opt_state, loss = update(params, opt_state, batch)
"""
    main = "import jax\nfrom absl import app\nfrom pkg import train\n\n\ndef main(argv):\n    train.train_and_evaluate(None)\n\n\n" \
           "if __name__ == '__main__':\n    app.run(main)\n"
    found = findings({"pkg/__init__.py": "", "pkg/train.py": train, "pkg/main.py": main, "infra/main.tf": P4D}, "AMP001")
    assert [(f.loc.path, f.loc.line) for f in found] == [("pkg/train.py", 10)]
    # without the call, main.py does not train
    assert not findings({"pkg/__init__.py": "", "pkg/train.py": train, "infra/main.tf": P4D,
                         "pkg/main.py": main.replace("train.train_and_evaluate(None)", "print(train)")}, "AMP001")


# -- precision ---------------------------------------------------------------------------------------
def test_a_jax_trainer_that_sets_no_dtype_is_fp32_by_default():
    assert {"mechanism": "jax", "dtype": "fp32", "enabled": False, "default": True} in kinds(step(), "precision")


def test_a_16_bit_module_dtype_turns_it_on_and_float32_does_not():
    assert {"mechanism": "jax", "dtype": "bf16", "enabled": True} in kinds(step("dtype=jnp.bfloat16"), "precision")
    assert {"mechanism": "jax", "dtype": "fp16", "enabled": True} in kinds(step('dtype="float16"'), "precision")
    fp32 = kinds(step("dtype=jnp.float32, param_dtype=jnp.float32"), "precision")
    assert fp32 == [{"mechanism": "jax", "dtype": "fp32", "enabled": False, "default": True}]


def test_a_dtype_decided_at_run_time_is_unknown_and_self_dtype_decides_nothing():
    chosen = kinds(step("dtype=jnp.bfloat16 if config.half else jnp.float32"), "precision")
    assert chosen == [{"mechanism": "jax", "dtype": None, "enabled": None}]
    assert kinds(step("**config.model"), "precision") == \
        [{"mechanism": "jax", "dtype": None, "enabled": None}]
    # the module's own ``dtype=self.dtype`` (STEP's layers) makes no fact of its own
    assert len(kinds(step(), "precision")) == 1


def test_a_module_field_defaulting_to_bf16_a_cast_and_a_jmp_policy_are_on():
    field = step().replace("dtype: jnp.dtype = jnp.float32", "dtype: jnp.dtype = jnp.bfloat16")
    assert {"mechanism": "jax", "dtype": "bf16", "enabled": True} in kinds(field, "precision")
    cast = step().replace('batch["x"]), batch["y"]', 'batch["x"].astype(jnp.bfloat16)), batch["y"]')
    assert {"mechanism": "jax", "dtype": "bf16", "enabled": True} in kinds(cast, "precision")
    jmp_on = "import jmp\n" + step(save="policy = jmp.get_policy('params=float32,compute=bfloat16,output=float32')")
    assert {"mechanism": "jmp", "dtype": "bf16", "enabled": True} in kinds(jmp_on, "precision")
    jmp_off = jmp_on.replace("compute=bfloat16", "compute=float32")
    assert {"mechanism": "jmp", "dtype": "fp32", "enabled": False} in kinds(jmp_off, "precision")


def test_array_dtypes_are_not_the_models():
    code = step().replace('jnp.ones((1, 1024))', 'jnp.ones((1, 1024), dtype=jnp.bfloat16)')
    assert kinds(code, "precision") == [{"mechanism": "jax", "dtype": "fp32", "enabled": False, "default": True}]


def test_matmul_precision_is_a_tf32_switch():
    on = "import jax\njax.config.update('jax_default_matmul_precision', 'tensorfloat32')\n"
    off = "import jax\njax.config.update('jax_default_matmul_precision', 'highest')\n"
    assert kinds(on, "tf32") == [{"enabled": True, "via": "jax_default_matmul_precision", "what": "matmul"}]
    assert kinds(off, "tf32")[0]["enabled"] is False


def test_flax_dynamic_scale_is_loss_scaling():
    code = step("dtype=jnp.float16", save="ds = dynamic_scale.DynamicScale()").replace(
        "from flax.training import train_state", "from flax.training import train_state, dynamic_scale")
    assert kinds(code, "grad_scaler") == [{"enabled": True}]


# -- AMP001 ------------------------------------------------------------------------------------------
def test_amp001_fires_on_the_fp32_fixture_with_jax_guidance():
    found = cli_findings(FIXTURES / "jax-flax-fp32", "AMP001,AMP005")
    assert rows(found, SEVERITY_AT) == [("AMP001", "warning", "train.py", 40)]
    f = found[0]
    assert "JAX training step" in f["message"] and "p4d.24xlarge" in f["message"]
    assert "dtype=jnp.bfloat16" in f["guidance"] and "param_dtype=jnp.float32" in f["guidance"]
    assert "autocast" not in f["guidance"]


def test_amp001_is_silent_on_bf16_and_on_a_dtype_it_cannot_read():
    assert not cli_findings(FIXTURES / "jax-flax-bf16", "AMP001,AMP005")
    undecided = step("dtype=jnp.bfloat16 if config.half else jnp.float32")
    assert not codes({"train.py": undecided, "infra/main.tf": P4D}, "AMP")
    assert codes({"train.py": step(), "infra/main.tf": P4D}, "AMP") == ["AMP001"]


def test_fp16_guidance_on_a_gpu_without_bf16_scales_the_loss():
    v100 = P4D.replace("p4d.24xlarge", "p3.16xlarge")
    found = findings({"train.py": step(), "infra/main.tf": v100}, "AMP001")
    assert len(found) == 1 and "DynamicScale" in found[0].guidance and "float16" in found[0].guidance


# -- checkpoints and spot ---------------------------------------------------------------------------------
def test_flax_and_orbax_saves_and_restores():
    flax_save = step(save='checkpoints.save_checkpoint("/ckpt", state, step=1)').replace(
        "from flax.training import train_state", "from flax.training import checkpoints, train_state")
    assert kinds(flax_save, "checkpoint.save") == [{"via": "flax", "dir": "/ckpt"}]
    orbax = "import orbax.checkpoint as ocp\n" + step(save="""mngr = ocp.CheckpointManager("gs://b/run")
    state = mngr.restore(mngr.latest_step(), args=ocp.args.StandardRestore(state))
    mngr.save(1, args=ocp.args.StandardSave(state))""")
    assert kinds(orbax, "checkpoint.save") == [{"via": "orbax", "dir": "gs://b/run"}]
    assert kinds(orbax, "checkpoint.resume") == [{"via": "orbax"}]
    kept = "import orbax.checkpoint as ocp\n" + step(save="self.ckpt_manager.save(1, state)")
    assert kinds(kept, "checkpoint.save") == [{"via": "orbax", "dir": None}]
    # a save of something else in a JAX file is not a checkpoint
    assert not kinds(step(save="np.save('preds.npy', preds)"), "checkpoint.save")


def test_spot001_is_silent_for_a_jax_job_that_checkpoints_and_fires_for_one_that_does_not():
    assert not cli_findings(FIXTURES / "jax-flax-bf16", "SPOT001,SPOT002")
    assert codes({"train.py": step("dtype=jnp.bfloat16"), "infra/main.tf": SPOT_A100}, "SPOT") == ["SPOT001"]
    resumes = "import orbax.checkpoint as ocp\n" + step("dtype=jnp.bfloat16", save="""mngr = ocp.CheckpointManager("gs://b/run")
    mngr.restore(mngr.latest_step())
    mngr.save(1, args=ocp.args.StandardSave(state))""")
    assert not codes({"train.py": resumes, "infra/main.tf": SPOT_A100}, "SPOT")


# -- several hosts ------------------------------------------------------------------------------------
def test_jax_distributed_initialize_is_one_process_per_host():
    assert {"via": "jax.distributed"} in kinds("import jax\njax.distributed.initialize()\n" + step(), "ddp")
    assert {"via": "jax.distributed"} not in kinds(step(), "ddp")


def test_the_fixtures_rows():
    assert rows(cli_findings(FIXTURES / "jax-flax-fp32", "AMP,SPOT,MEM,NET,IO"), AT) == [("AMP001", "train.py", 40)]
