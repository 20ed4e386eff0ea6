"""TensorFlow / Keras read as deeply as PyTorch (gpulint/read/python/frameworks/keras.py): training, devices,
precision, checkpoints and tf.distribute / Horovod facts, and the rules that judge them (AMP001, SPOT001/002),
each with the case that must produce it and the one that must not."""
from __future__ import annotations

import shutil
import textwrap

import pytest

from conftest import FIXTURES

from gpulint.read.parsers import parse_python
from gpulint.read.python.facts import python_facts
from helpers import AT, SEVERITY_AT, cli_findings, codes, rows
from helpers import findings as findings_of

G5 = 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "g5.12xlarge"\n}\n'


def facts(code: str, path: str = "train.py") -> list:
    return python_facts(parse_python(textwrap.dedent(code).lstrip("\n"), path))


def values(out: list, kind: str) -> list:
    return [f.value for f in out if f.kind == kind]


# -- training ---------------------------------------------------------------------------------------------------

FIT = """\
import tensorflow as tf
model = tf.keras.applications.ResNet50(weights=None)
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
model.{call}
"""


@pytest.mark.parametrize("call", ["fit(ds, epochs=90)", "fit_generator(train_iter, epochs=90)",
                                  "train_on_batch(images, labels)"])
def test_keras_training_methods_are_training(call):
    out = facts(FIT.format(call=call))
    assert values(out, "trains") == [{"via": "keras"}]
    # a Keras trainer takes the GPU when TensorFlow sees one, but code that names no device is no evidence of one
    assert values(out, "uses_gpu") == []


def test_a_model_built_by_a_function_of_the_file_and_a_horovod_loaded_model_train():
    out = facts("""
        import horovod.tensorflow.keras as hvd
        from tensorflow import keras
        def build():
            return keras.Sequential([keras.layers.Dense(10)])
        if resume:
            model = hvd.load_model(path)
        else:
            model = build()
        model.fit_generator(batches, epochs=90)
        build().fit(ds)
    """)
    assert values(out, "trains") == [{"via": "keras"}, {"via": "keras"}]


def test_scikit_learn_fit_is_not_gpu_training():
    out = facts("""
        import tensorflow as tf
        from sklearn.linear_model import LogisticRegression
        from xgboost import XGBClassifier
        features = tf.keras.applications.ResNet50(include_top=False).predict(images)
        clf = LogisticRegression(max_iter=1000)
        clf.fit(features, labels)
        XGBClassifier().fit(features, labels)
    """)
    assert values(out, "trains") == [] and values(out, "uses_gpu") == []


def test_fit_in_a_file_without_tensorflow_is_not_keras():
    out = facts("""
        from sklearn.ensemble import RandomForestClassifier
        model = make_model()
        model.fit(x, y)
        model.train_on_batch(x, y)
    """)
    assert values(out, "trains") == []


_FACTORY = """\
import tensorflow as tf
from tensorflow.keras import layers, models


def get_model(architecture="cnn"):
    if architecture == "resnet":
        return tf.keras.applications.ResNet101V2(classes=10, weights=None)
    model = models.Sequential([layers.Conv2D(32, 5, activation="relu"), layers.Flatten(), layers.Dense(10)])
    return model
"""

_FACTORY_TRAIN = """\
import tensorflow as tf
{imports}

strategy = tf.distribute.MirroredStrategy()
with strategy.scope():
    model = {build}
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
model.fit(tf.data.Dataset.load("/data/train").batch(256), epochs=20)
"""

_FACTORY_JOB = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:4\n#SBATCH --time=04:00:00\npython train.py\n"


def test_fit_of_a_model_a_repository_function_builds_is_keras_training():
    files = {"common.py": _FACTORY, "train.py": _FACTORY_TRAIN.format(imports="import common", build="common.get_model()"),
             "job.sh": _FACTORY_JOB}
    assert codes(files, fields=AT) == [("AMP001", "train.py", 8)]


def test_fit_of_a_model_from_a_module_not_in_the_repository_is_not_read_as_training():
    # an installed package's factory: it may build a scikit-learn estimator as well as a Keras model
    files = {"train.py": _FACTORY_TRAIN.format(imports="import zoo_models", build="zoo_models.get_model()"),
             "job.sh": _FACTORY_JOB}
    assert codes(files) == []


def test_gradient_tape_loop_trains():
    out = facts("""
        import tensorflow as tf
        model = tf.keras.applications.ResNet50(weights=None)
        opt = tf.keras.optimizers.SGD(0.1)
        for images, labels in ds:
            with tf.GradientTape() as tape:
                loss = loss_fn(labels, model(images, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
    """)
    assert values(out, "trains") == [{"via": "tensorflow"}]


def test_gradients_without_an_optimizer_step_are_not_training():
    out = facts("""
        import tensorflow as tf
        with tf.GradientTape() as tape:
            y = model(x)
        saliency = tape.gradient(y, x)
    """)
    assert values(out, "trains") == []


# -- devices ----------------------------------------------------------------------------------------------------

PINNED = """\
import tensorflow as tf
import horovod.tensorflow.keras as hvd
hvd.init()
gpus = tf.config.list_physical_devices("GPU")
tf.config.set_visible_devices(gpus[hvd.local_rank()], "GPU")
model.fit(ds)
"""


def test_a_gpu_pinned_per_process_is_gpu_use_and_hiding_them_is_cpu():
    # gpus[local_rank] of an empty list fails on a machine without GPUs: the script requires one
    assert values(facts(PINNED), "uses_gpu") == [{"via": "tensorflow.config.set_visible_devices", "probe": False}]
    hidden = facts("""
        import tensorflow as tf
        tf.config.set_visible_devices([], "GPU")
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.fit(ds)
    """)
    assert values(hidden, "uses_gpu") == [] and values(hidden, "cpu_only")


def test_a_pin_that_runs_only_where_gpus_were_found_and_a_session_option_are_probes():
    guarded = PINNED.replace('tf.config.set_visible_devices(', 'if gpus:\n    tf.config.set_visible_devices(')
    assert values(facts(guarded), "uses_gpu") == [{"via": "tensorflow.config.set_visible_devices", "probe": True}]
    listed = PINNED.replace('tf.config.set_visible_devices(', 'if len(tf.config.list_physical_devices("GPU")) > 0:\n'
                                                               '    tf.config.set_visible_devices(')
    assert values(facts(listed), "uses_gpu") == [{"via": "tensorflow.config.set_visible_devices", "probe": True}]
    tf1 = facts("""
        import tensorflow as tf
        config = tf.ConfigProto()
        config.gpu_options.visible_device_list = str(hvd.local_rank())
        model.fit(ds)
    """)
    assert values(tf1, "uses_gpu") == [{"via": "gpu_options.visible_device_list", "probe": True}]


def test_a_printed_gpu_listing_is_no_gpu_use_and_an_asserted_one_requires_a_gpu():
    printed = facts("""
        import tensorflow as tf
        print("GPU is", "available" if tf.config.list_physical_devices("GPU") else "NOT AVAILABLE")
        model.fit(ds)
    """)
    assert values(printed, "uses_gpu") == []
    asserted = facts("""
        import tensorflow as tf
        assert tf.config.list_physical_devices("GPU"), "this job needs a GPU"
        model.fit(ds)
    """)
    assert values(asserted, "uses_gpu") == [{"via": "tensorflow.config.list_physical_devices (asserted)"}]


def test_a_gpu_listing_alone_is_a_probe():
    out = facts("""
        import tensorflow as tf
        for gpu in tf.config.experimental.list_physical_devices("GPU"):
            tf.config.experimental.set_memory_growth(gpu, True)
        model.fit(ds)
    """)
    assert values(out, "uses_gpu") == [{"via": "tensorflow.config.experimental.list_physical_devices", "probe": True}]


# -- precision --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("setup, dtype", [
    ('import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy("mixed_bfloat16")', "bf16"),
    ('import keras\nkeras.mixed_precision.set_global_policy("mixed_float16")', "fp16"),
    ('import tf_keras\ntf_keras.mixed_precision.set_global_policy("mixed_bfloat16")', "bf16"),
    ('from tensorflow.keras import mixed_precision\npolicy = mixed_precision.Policy("mixed_float16")\n'
     'mixed_precision.set_global_policy(policy)', "fp16"),
    ('import tensorflow as tf\ntf.keras.mixed_precision.experimental.set_policy('
     'tf.keras.mixed_precision.experimental.Policy("mixed_bfloat16"))', "bf16"),
    ('import tensorflow as tf\nopt = tf.train.experimental.enable_mixed_precision_graph_rewrite(opt)', "fp16"),
])
def test_keras_policies_turn_mixed_precision_on(setup, dtype):
    out = facts(setup + "\nmodel.fit(ds)\n")
    assert values(out, "precision") == [{"mechanism": "keras", "dtype": dtype, "enabled": True}]


def test_a_float32_policy_is_off_and_a_policy_chosen_at_run_time_undecided():
    off = facts('import keras\nkeras.mixed_precision.set_global_policy("float32")\nmodel.fit(ds)\n')
    assert values(off, "precision") == [{"mechanism": "keras", "dtype": "fp32", "enabled": False}]
    pure = facts('import keras\nkeras.mixed_precision.set_global_policy("bfloat16")\nmodel.fit(ds)\n')
    assert values(pure, "precision") == [{"mechanism": "keras", "dtype": "bf16", "enabled": True}]  # all-bf16, no fp32 master
    chosen = facts('import keras\nkeras.mixed_precision.set_global_policy(make_policy())\nmodel.fit(ds)\n')
    assert values(chosen, "precision") == [{"mechanism": "keras", "dtype": None, "enabled": None}]


def test_loss_scale_optimizer_is_loss_scaling():
    out = facts("""
        import tensorflow as tf
        opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.Adam())
    """)
    assert values(out, "grad_scaler") == [{"enabled": True}]


KERAS_FP32 = """\
import tensorflow as tf
model = tf.keras.applications.EfficientNetB3(weights=None)
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
model.fit(train_ds, epochs=40)
"""


def test_amp001_fires_on_keras_in_fp32_and_not_with_a_policy_object():
    found = codes({"train.py": KERAS_FP32, "infra/main.tf": G5}, "AMP001", fields=SEVERITY_AT)
    assert found == [("AMP001", "warning", "train.py", 4)]
    assert codes({"train.py": KERAS_FP32}, "AMP001") == []  # nothing says GPU: it may well train on a laptop
    policy = ('from tensorflow.keras import mixed_precision\n'
              'mixed_precision.set_global_policy(mixed_precision.Policy("mixed_bfloat16"))\n')
    assert codes({"train.py": policy + KERAS_FP32, "infra/main.tf": G5}, "AMP001") == []


# -- distributed ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("setup, via", [
    ("import tensorflow as tf\nstrategy = tf.distribute.MirroredStrategy()", "MirroredStrategy"),
    ("import tensorflow as tf\nstrategy = tf.distribute.MultiWorkerMirroredStrategy()", "MultiWorkerMirroredStrategy"),
    ("import tensorflow as tf\nstrategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()",
     "MultiWorkerMirroredStrategy"),
    ("import tensorflow as tf\nimport horovod.tensorflow.keras as hvd\nhvd.init()", "horovod"),
    ("import tensorflow as tf\nimport horovod.tensorflow as hvd\nhvd.init()", "horovod"),
])
def test_tensorflow_data_parallel_is_ddp(setup, via):
    assert values(facts(setup + "\nmodel.fit(ds)\n"), "ddp") == [{"via": via}]


def test_one_device_strategy_is_not_data_parallel():
    out = facts('import tensorflow as tf\nstrategy = tf.distribute.OneDeviceStrategy("/gpu:0")\nmodel.fit(ds)\n')
    assert values(out, "ddp") == []


# -- checkpoints ------------------------------------------------------------------------------------------------

def test_keras_and_tensorflow_checkpoints_are_saves_and_resumes():
    out = facts("""
        import tensorflow as tf
        model = tf.keras.applications.ResNet50(weights=None)
        model.compile(optimizer="adam", loss="mse")
        every_epoch = tf.keras.callbacks.ModelCheckpoint("/ckpt/run1/epoch-{epoch:02d}.h5")
        backup = tf.keras.callbacks.BackupAndRestore(backup_dir="/ckpt/backup")
        ckpt = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
        manager = tf.train.CheckpointManager(ckpt, "/ckpt/tf", max_to_keep=3)
        ckpt.restore(manager.latest_checkpoint)
        model.fit(ds, callbacks=[every_epoch, backup])
        manager.save()
        model.save_weights("/ckpt/final.weights.h5")
    """)
    assert values(out, "checkpoint.save") == [
        {"via": "keras.ModelCheckpoint", "dir": "/ckpt/run1"},
        {"via": "keras.BackupAndRestore", "dir": "/ckpt/backup"},
        {"via": "tf.train.Checkpoint", "dir": None},
        {"via": "keras.save", "dir": "/ckpt", "weights_only": True},
    ]
    assert values(out, "checkpoint.resume") == [{"via": "keras.BackupAndRestore"}, {"via": "tf.train.Checkpoint"}]


def test_load_weights_and_load_model_are_resumes():
    out = facts("""
        from tensorflow import keras
        model = build()
        model.compile(optimizer="adam", loss="mse")
        model.load_weights(latest)
        other = keras.models.load_model("/ckpt/last.keras")
        model.fit(ds)
    """)
    assert values(out, "checkpoint.resume") == [{"via": "keras.load_weights"}, {"via": "keras.load_model"}]


def test_saves_of_objects_that_are_not_models_are_not_checkpoints():
    out = facts("""
        import tensorflow as tf
        from PIL import Image
        model = tf.keras.applications.ResNet50(weights=None)
        model.compile(optimizer="adam", loss="mse")
        Image.open("sample.png").save("/tmp/preview.png")
        fig.save("loss.png")
        tf.keras.utils.array_to_img(images[0]).save("/tmp/first.png")
        model.fit(ds)
    """)
    assert values(out, "checkpoint.save") == []


# -- SPOT001/002: a SageMaker managed spot TensorFlow job ---------------------------------------------------------

SPOT = "SPOT001,SPOT002,SPOT003,SPOT004"


def test_sagemaker_spot_keras_job_with_model_checkpoint_is_clean():
    # it checkpoints into /opt/ml/checkpoints (synced to checkpoint_s3_uri) and resumes with load_weights
    assert cli_findings(FIXTURES / "spot-sagemaker-keras", "AMP,SPOT,IO,NET,MEM") == []


def _copy(tmp_path, replace: tuple[str, str]):
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "spot-sagemaker-keras", repo)
    script = repo / "src" / "train.py"
    text = script.read_text(encoding="utf-8")
    assert replace[0] in text
    script.write_text(text.replace(*replace), encoding="utf-8")
    return repo


def test_the_same_job_saving_nothing_is_spot001(tmp_path):
    repo = _copy(tmp_path, ("callbacks=[save_each_epoch]", "callbacks=[]"))
    script = repo / "src" / "train.py"
    script.write_text(script.read_text(encoding="utf-8").replace("    model.save(", "    print("), encoding="utf-8")
    found = cli_findings(repo, SPOT)
    assert rows(found, ("code", "severity", "path")) == [("SPOT001", "error", "src/train.py")]


def test_the_same_job_never_loading_its_checkpoint_is_spot002(tmp_path):
    repo = _copy(tmp_path, ("        model.load_weights(resume_from)\n", ""))
    found = cli_findings(repo, SPOT)
    assert rows(found, AT) == [("SPOT002", "src/train.py", 58)]
    assert "keras.ModelCheckpoint" in found[0]["message"]


def test_a_keras_benchmark_is_judged_as_a_pytorch_one():
    named = codes({"keras_synthetic_benchmark.py": KERAS_FP32, "infra/main.tf": G5}, "AMP001", fields=SEVERITY_AT)
    assert named == [("AMP001", "info", "keras_synthetic_benchmark.py", 4)]
    random_inputs = KERAS_FP32.replace("model.fit(train_ds", "images = tf.random.uniform([64, 300, 300, 3])\nmodel.fit(images")
    out = facts(random_inputs)
    assert [v["via"] for v in values(out, "benchmark")] == ["synthetic inputs (tensorflow.random.uniform)"]


# -- IO: tf.data maps that decode media ---------------------------------------------------------------------------

PIPELINE = """\
import tensorflow as tf


def decode(record):
    parsed = tf.io.parse_single_example(record, FEATURES)
    image = tf.image.resize(tf.io.decode_jpeg(parsed["image"], channels=3), (224, 224))
    return image, parsed["label"]


train_ds = tf.data.TFRecordDataset(tf.io.gfile.glob("gs://acme-data/train-*.tfrecord"))
train_ds = train_ds.map(decode{parallel}).batch(256).prefetch(8)
model = tf.keras.applications.ResNet50(weights=None)
model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
model.fit(train_ds, epochs=90)
"""


@pytest.mark.parametrize("parallel, workers", [("", 0), (", num_parallel_calls=tf.data.AUTOTUNE", None),
                                               (", num_parallel_calls=16", 16)])
def test_a_decoding_map_is_a_loader_with_its_parallelism(parallel, workers):
    (loader,) = [f for f in facts(PIPELINE.format(parallel=parallel)) if f.kind == "dataloader"]
    assert loader.value["via"] == "tf.data" and loader.value["num_workers"] == workers
    assert loader.loc.line == 11


def test_io001_fires_on_a_sequential_decoding_map_and_not_on_an_autotuned_one():
    found = codes({"train.py": PIPELINE.format(parallel=""), "infra/main.tf": G5}, "IO", fields=AT)
    assert found == [("IO001", "train.py", 11)]
    (f,) = findings_of({"train.py": PIPELINE.format(parallel=""), "infra/main.tf": G5}, "IO001")
    assert "num_parallel_calls is not set" in f.message and f.fix is None  # AUTOTUNE is an expression: no literal fix
    tuned = PIPELINE.format(parallel=", num_parallel_calls=tf.data.AUTOTUNE")
    assert codes({"train.py": tuned, "infra/main.tf": G5}, "IO") == []


def test_a_map_that_decodes_nothing_and_an_evaluation_map_are_not_judged():
    cheap = PIPELINE.format(parallel="").replace('tf.io.decode_jpeg(parsed["image"], channels=3)', 'parsed["pixels"]')
    assert [f for f in facts(cheap) if f.kind == "dataloader"] == []
    val = PIPELINE.format(parallel="").replace("train_ds", "val_ds")
    assert codes({"train.py": val, "infra/main.tf": G5}, "IO") == []


def test_the_sagemaker_fixture_without_parallel_decoding_is_io001(tmp_path):
    repo = _copy(tmp_path, ("ds = ds.map(decode_example, num_parallel_calls=tf.data.AUTOTUNE)", "ds = ds.map(decode_example)"))
    found = cli_findings(repo, "IO")
    assert rows(found, AT) == [("IO001", "src/train.py", 27)]
