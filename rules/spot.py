"""SPOT: interruption resilience of training on spot / preemptible capacity.

Capacity comes from ``wl.resolution.compute.capacity`` (Terraform AWS/GCP/Azure,
Kubernetes node selectors / tolerations / Karpenter, SkyPilot ``use_spot``,
SageMaker ``use_spot_instances``); save and resume evidence from the
``checkpoint.save`` / ``checkpoint.resume`` facts of the code and its configs.
"""
from __future__ import annotations

import posixpath

from gpulint.rulekit import (
    CPU, CostImpact, Example, Expect, Location, ResolvedCompute, Rule, Severity, Workload, benchmark_of, compute_of,
    compute_related, hookimpl, launch_trains_on_gpu, price_basis, training_fact, trains_on_gpu,
)

# Instance-local or in-memory locations an interruption (a new VM) wipes (training-facts §5.1/§5.2).
EPHEMERAL_PREFIXES = ("/tmp", "/dev/shm", "/local_disk", "/mnt/nvme", "/opt/dlami/nvme", "/mnt/resource")
SAGEMAKER_CKPT_DEFAULT = "/opt/ml/checkpoints"
_EXAMPLE_HOURS = 10


def on_spot(wl: Workload) -> bool:
    c = compute_of(wl)
    return c is not None and c.capacity == "spot"


def trains_a_model_on_spot(wl: Workload) -> bool:
    """GPU training on spot capacity whose state is worth keeping: what SPOT001/002/004 judge (a benchmark
    keeps no state worth a checkpoint; a run its own time limit stops within half an hour loses less to an
    interruption than a checkpoint is worth)."""
    trains = trains_on_gpu(wl) is not None or launch_trains_on_gpu(wl)
    return trains and on_spot(wl) and benchmark_of(wl) is None and not short_run(compute_of(wl))


def lost_work_cost(hw: ResolvedCompute | None, what: str, ctx=None) -> CostImpact:
    """The stated model: an interruption discards every hour since the last durable checkpoint
    (here: since the start). Interruption rates are not known, so no hourly figure is claimed;
    the basis prices the work at risk after a stated number of hours."""
    if hw is None or not hw.usd_per_hour:
        why = (hw.why_no_price if hw is not None else None) or "the instance is not known"
        return CostImpact(None, f"No price attached: {why}. {what}: an interruption discards every hour run so far.", "low")
    per_hour = hw.usd_per_hour
    od = ""
    if ctx is not None and hw.instance is not None:
        p = ctx.catalogue.price(hw.instance, "on-demand")
        if p.usd_per_hour:
            od = f" (on-demand would be ${p.usd_per_hour * (hw.nodes or 1):.2f}/h)"
    basis = (f"{price_basis(hw)} = ${per_hour:.2f}/h{od}; {what}: an interruption discards every hour since "
             f"the start, e.g. {_EXAMPLE_HOURS} h in that is {_EXAMPLE_HOURS} x ${per_hour:.2f} = ${_EXAMPLE_HOURS * per_hour:,.2f} "
             f"of compute to run again; how often interruptions come is not known, so no hourly figure is claimed.")
    return CostImpact(None, basis, "low")


def capacity_words(hw: ResolvedCompute) -> str:
    """How the finding names the capacity: spot, or the platform's preemptible Functions (Modal), with where it is
    stated; and the machine: the instance, else the GPUs the job asks for."""
    accel = hw.accelerator or {}
    machine = hw.instance_name
    if machine is None and accel.get("type"):
        machine = accel["type"] + (f" x{accel['count']}" if isinstance(accel.get("count"), int) else "")
    pre = hw.first("compute.capacity")
    why = (pre.attrs or {}).get("preemptible") if pre is not None else None
    at = f" ({hw.capacity_loc.short()}{': ' + why if why else ''})" if hw.capacity_loc else ""
    return f"{'preemptible' if why else 'spot'} capacity{at} on {machine or 'an unknown instance'}"


def short_run(hw: ResolvedCompute | None) -> bool:
    """A run its own time limit stops within half an hour (a Modal Function's 300 s default timeout): an
    interruption loses at most that, less than a checkpoint is worth."""
    return hw is not None and hw.run_hours is not None and hw.run_hours <= 0.5


def _anchor(wl: Workload) -> Location:
    t = training_fact(wl)
    return t.loc if t is not None else Location(wl.entrypoint)


_TRAIN_NO_SAVE = """\
import torch
model = build_model().cuda()
opt = torch.optim.AdamW(model.parameters())
for epoch in range(10):
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        loss.backward()
        opt.step()
        opt.zero_grad()
"""

_SPOT_TF = """\
resource "aws_instance" "trainer" {
  ami           = "ami-0123456789abcdef0"
  instance_type = "g5.12xlarge"

  instance_market_options {
    market_type = "spot"
  }
}
"""

_TRAIN_SAVE = """\
import os
import torch
model = build_model().cuda()
opt = torch.optim.AdamW(model.parameters())
for step, (x, y) in enumerate(loader):
    loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    loss.backward()
    opt.step()
    opt.zero_grad()
    if step % 1000 == 0:
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step}, "ckpt/last.pt")
"""

_TRAIN_SAVE_RESUME = _TRAIN_SAVE.replace(
    "opt = torch.optim.AdamW(model.parameters())\n",
    "opt = torch.optim.AdamW(model.parameters())\n"
    "if os.path.exists(\"ckpt/last.pt\"):\n"
    "    state = torch.load(\"ckpt/last.pt\")\n"
    "    model.load_state_dict(state[\"model\"])\n"
    "    opt.load_state_dict(state[\"optimizer\"])\n")


_MODAL = """\
import modal
import torch

app = modal.App("train")


@app.function(gpu="A100-80GB"{timeout})
def train():
    model = torch.nn.Linear(4096, 4096).cuda()
    opt = torch.optim.AdamW(model.parameters())
    for x in torch.utils.data.DataLoader(torch.load("/data/x.pt"), batch_size=64, num_workers=4):
        model(x.cuda()).sum().backward()
        opt.step()
"""


class SpotWithoutCheckpointing(Rule):
    """Training runs on spot / preemptible capacity and never saves a checkpoint.

    What it does:
        For a workload that trains on a GPU and whose compute is spot or preemptible (Terraform
        ``instance_market_options``/``spot_price``/``provisioning_model = "SPOT"``/``priority = "Spot"``,
        Kubernetes spot node selectors, tolerations and Karpenter ``capacity-type``, SkyPilot
        ``use_spot``, SageMaker ``use_spot_instances=True``, a Modal GPU Function, which Modal may
        preempt and restart on the same input), looks for any save of training state in
        its code and configs: ``torch.save``, ``save_pretrained``/``save_model``, accelerate
        ``save_state``, DeepSpeed ``save_checkpoint``, ``torch.distributed.checkpoint.save``, HF
        Trainer (saves every 500 steps unless ``save_strategy="no"``), Lightning (``ModelCheckpoint``
        or the Trainer's default). Fires when there is none. A benchmark or demo (a file named for it, a
        training step timed with a clock and ``torch.cuda.synchronize``, or a step on random tensors in a
        file that reads no data) keeps no state worth saving, nor does a run its own time limit stops
        within half an hour (a Modal Function's 300 s default timeout).
    Why it costs money:
        Spot capacity is reclaimed with 30 s to 2 min notice, too short to write a large checkpoint.
        Without periodic checkpoints every interruption throws away all the GPU hours since the job
        started, and a long job may never finish.
    How to fix:
        Save model, optimizer, scheduler and step periodically to durable storage, and resume from
        the latest on start (see SPOT002)::

            if step % 1000 == 0:
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                            "step": step}, "/checkpoints/last.pt")   # S3/GCS/FSx-backed

        HF Trainer: ``save_strategy="steps", save_steps=500``; Lightning: ``ModelCheckpoint(save_last=True)``.
    Cost model:
        Lost work per interruption = hours since the start x the hourly price of all nodes at the
        capacity's price. Interruption frequency is not known, so no hourly figure is claimed; the
        basis prices the loss of one interruption after 10 h and names the on-demand price.
    Sources:
        training-facts §5.1 (interruption notices: AWS 2 min, GCP 30 s, Azure 30 s), §5.2 (save APIs).
    """

    code = "SPOT001"
    name = "spot-without-checkpointing"
    severity = Severity.ERROR
    family = "SPOT"
    since = "0.1.0"

    VALID = [
        Example({"train.py": _TRAIN_SAVE_RESUME, "infra/main.tf": _SPOT_TF}, title="saves and resumes"),
        Example({"train.py": _TRAIN_NO_SAVE, "infra/main.tf": _SPOT_TF.replace(
            '  instance_market_options {\n    market_type = "spot"\n  }\n', "")}, title="on-demand capacity"),
        Example({"train.py": """\
from transformers import Trainer, TrainingArguments
args = TrainingArguments(output_dir="/checkpoints/run1", bf16=True)
trainer = Trainer(model=model, args=args, train_dataset=ds)
trainer.train(resume_from_checkpoint=True)
""", "sky.yaml": "resources:\n  accelerators: A10G:1\n  use_spot: true\nrun: python train.py\n"},
            title="HF Trainer saves by default"),
        Example({"train_modal.py": _MODAL.format(timeout="")}, title="a Modal Function within its default 300 s timeout"),
    ]
    INVALID = [
        Example({"train.py": _TRAIN_NO_SAVE, "infra/main.tf": _SPOT_TF},
                expect=[Expect("train.py", 7, ("spot", "g5.12xlarge", "never saves"))],
                title="spot Terraform plus a script that never saves"),
        Example({"train_modal.py": _MODAL.format(timeout=", timeout=12 * 3600")},
                expect=[Expect("train_modal.py", 12, ("preemptible", "Modal", "A100-80GB", "never saves"))],
                title="a twelve-hour Modal GPU Function that never saves"),
    ]

    def check_workload(self, wl: Workload, ctx):
        if not trains_a_model_on_spot(wl):
            return
        if wl.of("checkpoint.save"):
            return
        hw = compute_of(wl)
        yield self.finding(
            _anchor(wl), f"training runs on {capacity_words(hw)} "
                         f"and never saves a checkpoint: each interruption restarts it from zero",
            symbol="spot:no-save", workload=wl.name, related=compute_related(wl),
            cost=lost_work_cost(hw, "no checkpoint is saved", ctx))


class SpotWithoutResume(Rule):
    """Training on spot capacity saves checkpoints but never loads one, so a restart starts over.

    What it does:
        For a workload on spot / preemptible capacity with save evidence (SPOT001's list), looks for
        resume evidence in its code and configs: ``load_state_dict`` of a loaded file,
        ``trainer.train(resume_from_checkpoint=...)``, Lightning ``fit(ckpt_path=...)``, accelerate
        ``load_state``, DeepSpeed ``load_checkpoint``, ``torch.distributed.checkpoint.load``. Fires at
        the first save when there is none.
    Why it costs money:
        The relaunched job (SageMaker managed spot, SkyPilot managed jobs, a Kubernetes restart) runs
        the script from the top: the checkpoints are written and paid for, and the work they hold is
        done again.
    How to fix:
        Load the latest checkpoint on start::

            if os.path.exists("/checkpoints/last.pt"):
                state = torch.load("/checkpoints/last.pt")
                model.load_state_dict(state["model"])
                opt.load_state_dict(state["optimizer"])
                start = state["step"] + 1

        HF Trainer: ``trainer.train(resume_from_checkpoint=True)`` (resumes from the latest in
        ``output_dir``); Lightning: ``trainer.fit(model, ckpt_path="last")``; accelerate:
        ``accelerator.load_state(dir)``.
    Cost model:
        As SPOT001: an interruption discards every hour since the start; priced for one interruption
        after 10 h, no hourly figure.
    Sources:
        training-facts §5.2: "without it a restarted job starts from step 0" (HF Trainer); SageMaker:
        "The training script must itself load the latest checkpoint from that path on start".
    """

    code = "SPOT002"
    name = "spot-without-resume"
    severity = Severity.WARNING
    family = "SPOT"
    since = "0.1.0"

    VALID = [
        Example({"train.py": _TRAIN_SAVE_RESUME, "infra/main.tf": _SPOT_TF}, title="loads the checkpoint it saves"),
        Example({"train.py": _TRAIN_SAVE, "infra/main.tf": _SPOT_TF.replace('"spot"', '"capacity-block"')},
                title="not on spot"),
    ]
    INVALID = [
        Example({"train.py": _TRAIN_SAVE, "infra/main.tf": _SPOT_TF},
                expect=[Expect("train.py", 11, ("torch.save", "never", "spot"))], title="saves but never resumes"),
        Example({"train.py": """\
from transformers import Trainer, TrainingArguments
args = TrainingArguments(output_dir="out", save_steps=200, bf16=True)
trainer = Trainer(model=model, args=args, train_dataset=ds)
trainer.train()
""", "sky.yaml": "resources:\n  accelerators: A10G:1\n  use_spot: true\nrun: python train.py\n"},
            expect=[Expect("train.py", 2, ("hf_trainer", "resume"))], title="HF Trainer without resume_from_checkpoint"),
    ]

    def check_workload(self, wl: Workload, ctx):
        if not trains_a_model_on_spot(wl):
            return
        saves = sorted(wl.of("checkpoint.save"), key=lambda f: f.loc)
        if not saves or wl.of("checkpoint.resume"):
            return
        f = saves[0]
        via = f.value.get("via") if isinstance(f.value, dict) else "save"
        yield self.finding(
            f.loc, f"checkpoints are saved ({via}) on {capacity_words(compute_of(wl))} "
                   f"but never loaded: after an interruption training restarts from step 0 (no resume_from_checkpoint, "
                   f"ckpt_path, load_state or load_state_dict of a saved file)",
            symbol=f"spot:no-resume:{via}", workload=wl.name, related=compute_related(wl),
            cost=lost_work_cost(compute_of(wl), "checkpoints are never loaded", ctx))


#: a spot job limited to this run time repeats at most this much when it is interrupted
SHORT_JOB_SECONDS = 3600


class ManagedSpotWithoutCheckpointSync(Rule):
    """A SageMaker managed spot training job lacks checkpoint_s3_uri or max_wait.

    What it does:
        Finds SageMaker estimators with ``use_spot_instances=True`` that do not set
        ``checkpoint_s3_uri`` (files under ``checkpoint_local_path``, default ``/opt/ml/checkpoints``,
        are then not synced to S3 and do not survive an interruption), or that do not set
        ``max_wait``, or set it below ``max_run``. A missing or short ``max_wait`` is an error (the job
        is rejected); a missing ``checkpoint_s3_uri`` a warning (work is lost), info when ``max_run`` is
        at most an hour. An estimator built from ``**kwargs`` is left alone, and
        so is one on known CPU instances (``ml.c5``, ``ml.m5`` ...): like the other SPOT rules, this one
        is about GPU hours.
    Why it costs money:
        Without the checkpoint sync SageMaker restarts an interrupted job on a fresh instance with an
        empty checkpoint folder, so the whole run is repeated; managed spot training needs
        ``max_wait >= max_run`` to run at all.
    How to fix:
        ::

            PyTorch(entry_point="train.py", instance_type="ml.p4d.24xlarge",
                    use_spot_instances=True, max_run=24 * 3600, max_wait=36 * 3600,
                    checkpoint_s3_uri="s3://my-bucket/ckpt/run1",
                    checkpoint_local_path="/opt/ml/checkpoints")

        and have the script save to and resume from ``/opt/ml/checkpoints``.
    Cost model:
        As SPOT001 for a missing ``checkpoint_s3_uri``: every interruption repeats all hours since the
        start (priced after 10 h; no hourly figure). A missing or too small ``max_wait`` costs nothing
        but a failed submission.
    Sources:
        training-facts §5.2 (SageMaker API CheckpointConfig: files under LocalPath are synced to S3Uri;
        StoppingCondition.MaxWaitTimeInSeconds must be >= MaxRuntimeInSeconds).
    """

    code = "SPOT003"
    name = "managed-spot-without-checkpoint-sync"
    #: error for what stops the job (max_wait); a missing checkpoint sync is lost work: a warning, info for
    #: jobs whose max_run is at most SHORT_JOB_SECONDS
    severity = Severity.ERROR
    family = "SPOT"
    since = "0.1.0"

    VALID = [
        Example({"launch.py": """\
from sagemaker.pytorch import PyTorch
est = PyTorch(
    entry_point="train.py",
    instance_type="ml.g5.12xlarge",
    use_spot_instances=True,
    max_run=86400,
    max_wait=129600,
    checkpoint_s3_uri="s3://my-bucket/ckpt/run1",
)
est.fit()
"""}),
        Example({"launch.py": """\
from sagemaker.pytorch import PyTorch
est = PyTorch(entry_point="train.py", instance_type="ml.g5.12xlarge", max_run=86400)
est.fit()
"""}, title="on-demand training needs neither"),
        Example({"launch.py": """\
from sagemaker.estimator import Estimator
est = Estimator(
    image_uri=image,
    instance_type="ml.m5.xlarge",
    use_spot_instances=True,
    max_run=1800,
    max_wait=3600,
)
est.fit()
"""}, title="spot on a CPU instance: no GPU hours at stake"),
    ]
    INVALID = [
        Example({"launch.py": """\
from sagemaker.pytorch import PyTorch
est = PyTorch(
    entry_point="train.py",
    instance_type="ml.g5.12xlarge",
    use_spot_instances=True,
    max_run=86400,
    max_wait=129600,
)
est.fit()
"""}, expect=[Expect("launch.py", 5, ("checkpoint_s3_uri", "ml.g5.12xlarge"))],
            title="SageMaker spot estimator without checkpoint_s3_uri"),
        Example({"launch.py": """\
from sagemaker.pytorch import PyTorch
est = PyTorch(
    entry_point="train.py",
    instance_type="ml.g5.12xlarge",
    use_spot_instances=True,
    checkpoint_s3_uri="s3://my-bucket/ckpt/run1",
)
"""}, expect=[Expect("launch.py", 5, ("max_wait",))], title="no max_wait"),
    ]

    def check_repo(self, workloads, ctx):
        by_compute = {wl.compute.id: wl for wl in workloads if wl.compute is not None}
        for compute in sorted(ctx.computes.values(), key=lambda c: c.id):
            ck = compute.first("compute.checkpoint")
            cap = compute.capacity_loc if compute.capacity == "spot" else None
            if ck is None or cap is None or not isinstance(ck.value, dict) or ck.value.get("star_kwargs"):
                continue
            wl = by_compute.get(compute.id)
            hw = compute_of(wl) if wl is not None else compute
            if compute.device == CPU or (hw is not None and hw.device == CPU):
                continue  # CPU spot jobs: no GPU hours at stake, as SPOT001/002/004 (trains_on_gpu) agree
            it = compute.first("compute.instance_type")
            inst = it.value if it is not None and isinstance(it.value, str) else "the estimator"
            v = ck.value
            name = wl.name if wl is not None else None
            mw, mr = v.get("max_wait"), v.get("max_run")
            if not v.get("s3_uri_set"):
                # lost work, not a broken job: a warning; at most an hour lost per interruption is advice
                short = isinstance(mr, int) and not isinstance(mr, bool) and 0 < mr <= SHORT_JOB_SECONDS
                yield self.finding(
                    cap, f"SageMaker managed spot training on {inst} without checkpoint_s3_uri: checkpoints are not "
                             f"synced to S3, so an interrupted job restarts from zero"
                             + (f" (max_run={mr} s: at most that is repeated)" if short else ""),
                    symbol=f"{compute.target}:checkpoint_s3_uri", workload=name,
                    severity=Severity.INFO if short else Severity.WARNING,
                    cost=lost_work_cost(hw, "checkpoints are not synced to S3", ctx))
            if not v.get("max_wait_set"):
                yield self.finding(
                    cap, f"SageMaker managed spot training on {inst} without max_wait: managed spot needs "
                             f"max_wait (>= max_run), the time to wait for spot capacity plus run time",
                    symbol=f"{compute.target}:max_wait", workload=name,
                    cost=CostImpact(None, "No GPU spend attributed: the job is rejected or stops at the default limits.", "high"))
            elif isinstance(mw, int) and isinstance(mr, int) and not isinstance(mw, bool) and mw < mr:
                yield self.finding(
                    next((f.loc for f in [ck] if f.key == "max_wait"), cap),
                    f"max_wait={mw} is below max_run={mr}: SageMaker requires max_wait >= max_run for managed spot training",
                    symbol=f"{compute.target}:max_wait<max_run", workload=name,
                    cost=CostImpact(None, "No GPU spend attributed: the submission is rejected.", "high"))


class CheckpointOnEphemeralStorage(Rule):
    """On spot capacity, checkpoints are written only to storage an interruption destroys.

    What it does:
        For a workload on spot capacity whose every checkpoint save names a literal directory, fires
        when none of them is durable:

        * anywhere: ``/tmp``, ``/dev/shm``, ``/local_disk*``, ``/mnt/nvme*``, ``/opt/dlami/nvme``
          (instance-store NVMe) and ``/mnt/resource`` (the Azure temporary disk);
        * SageMaker: a path outside ``checkpoint_local_path`` (default ``/opt/ml/checkpoints``), the only
          folder synced to ``checkpoint_s3_uri``;
        * SkyPilot: a path (relative paths live in ``~/sky_workdir``) under no bucket ``file_mounts``
          entry mounted with ``MOUNT``/``MOUNT_CACHED``.

        A directory computed at run time, from an environment variable or a flag keeps it silent, as does a
        run its own time limit stops within half an hour (a Modal Function's 300 s default). For a job
        whose code is not in the repository (an image's script started by torchrun on spot capacity), the
        folder its launch line passes to a checkpoint flag (``--save-dir``, ``--checkpoint-dir``,
        ``--output_dir`` ...) is that job's checkpoint folder.
    Why it costs money:
        An interrupted spot job comes back on a new machine: instance-local disks start empty, so the
        checkpoints are gone with the machine and all the work since the start is repeated.
    How to fix:
        Write checkpoints to durable storage: an S3/GCS/Blob-backed mount, FSx/EFS/Filestore, or the
        SageMaker checkpoint folder synced to S3::

            file_mounts:
              /checkpoints:
                name: my-ckpt-bucket
                mode: MOUNT
            ...
            TrainingArguments(output_dir="/checkpoints/run1", save_steps=500)
    Cost model:
        As SPOT001: every interruption repeats all hours since the start (priced after 10 h; no
        hourly figure).
    Sources:
        training-facts §5.1 ("periodic checkpoints to durable storage (S3/GCS/Blob/FSx, not
        instance-local NVMe) are required"), §5.2 (SageMaker CheckpointConfig.LocalPath synced to S3;
        SkyPilot bucket file_mounts).
    """

    code = "SPOT004"
    name = "checkpoint-on-ephemeral-storage"
    severity = Severity.WARNING
    family = "SPOT"
    since = "0.1.0"
    #: also a job whose code is not in the repository: the folder its launch line passes (--save-dir /tmp/ckpt) is
    #: where its checkpoints go, whatever the code does with it
    reads_code = False

    _HF = """\
from transformers import Trainer, TrainingArguments
args = TrainingArguments(output_dir="{dir}", save_steps=500, bf16=True)
trainer = Trainer(model=model, args=args, train_dataset=ds)
trainer.train(resume_from_checkpoint=True)
"""
    _SKY = """\
resources:
  accelerators: A10G:1
  use_spot: true
file_mounts:
  /checkpoints:
    name: my-ckpt-bucket
    mode: MOUNT
run: python train.py
"""
    _MODAL_SAVE = _MODAL + """\
        torch.save({{"model": model.state_dict()}}, "/tmp/ckpt/last.pt")
"""
    VALID = [
        Example({"train.py": _HF.format(dir="/checkpoints/run1"), "sky.yaml": _SKY}, title="bucket-mounted checkpoint dir"),
        Example({"train_modal.py": _MODAL_SAVE.format(timeout="")},
                title="Modal container disk, but the run stops within its 300 s default timeout"),
        Example({"train.py": _HF.format(dir="/opt/ml/checkpoints"), "launch.py": """\
from sagemaker.huggingface import HuggingFace
est = HuggingFace(entry_point="train.py", instance_type="ml.g5.2xlarge", use_spot_instances=True,
                  max_run=3600, max_wait=7200, checkpoint_s3_uri="s3://b/ckpt")
"""}, title="SageMaker's synced checkpoint folder"),
    ]
    INVALID = [
        Example({"train.py": _HF.format(dir="/tmp/run1"), "sky.yaml": _SKY},
                expect=[Expect("train.py", 2, ("/tmp/run1", "spot"))], title="checkpoints in /tmp on spot"),
        Example({"train.py": _HF.format(dir="outputs"), "sky.yaml": _SKY.replace("/checkpoints:", "/data:")},
                expect=[Expect("train.py", 2, ("outputs", "file_mounts"))], title="SkyPilot: workdir path, no bucket mount"),
        Example({"train.py": _HF.format(dir="/opt/ml/model"), "launch.py": """\
from sagemaker.huggingface import HuggingFace
est = HuggingFace(entry_point="train.py", instance_type="ml.g5.2xlarge", use_spot_instances=True,
                  max_run=3600, max_wait=7200, checkpoint_s3_uri="s3://b/ckpt")
"""}, expect=[Expect("train.py", 2, ("/opt/ml/model", "/opt/ml/checkpoints"))],
            title="SageMaker: outside the synced folder"),
        Example({"train_modal.py": _MODAL_SAVE.format(timeout=", timeout=12 * 3600")},
                expect=[Expect("train_modal.py", 14, ("/tmp/ckpt", "preemptible"))],
                title="a twelve-hour Modal Function checkpointing to its container disk"),
    ]

    def check_workload(self, wl: Workload, ctx):
        if not trains_a_model_on_spot(wl):
            return
        saves = sorted(wl.of("checkpoint.save"), key=lambda f: f.loc)
        explicit_lightning = any(f.value.get("via") == "lightning" and not f.value.get("default") for f in saves)
        # a ModelCheckpoint callback replaces the Trainer's default checkpointing (and its folder)
        saves = [f for f in saves if not (explicit_lightning and f.value.get("via") == "lightning" and f.value.get("default"))]
        if not saves:
            return
        dirs = [f.value.get("dir") if isinstance(f.value, dict) else None for f in saves]
        if any(not isinstance(d, str) or not d or "$" in d or "{" in d for d in dirs):
            return  # a save whose place is not a literal may well be durable
        hw = compute_of(wl)
        verdicts = [_ephemeral(d, hw.source, hw) for d in dirs]
        if any(v is None for v in verdicts):
            return
        f, why = saves[0], verdicts[0]
        where = f"{f.key} {dirs[0]!r} on the launch line" if f.value.get("via") == "launch_flag" else repr(dirs[0])
        yield self.finding(
            f.loc, f"on {capacity_words(hw).split(' (')[0]}, checkpoints go only to {where}, {why}: an interruption loses them",
            symbol=f"spot:ephemeral:{dirs[0]}", workload=wl.name, related=compute_related(wl),
            cost=lost_work_cost(compute_of(wl), "checkpoints are lost with the instance", ctx))


def _under(path: str, root: str) -> bool:
    path, root = posixpath.normpath(path), posixpath.normpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


def _ephemeral(d: str, source: str | None, compute: ResolvedCompute | None) -> str | None:
    """Why ``d`` is wiped by an interruption, or None when it may be durable."""
    for p in EPHEMERAL_PREFIXES:
        if d == p or d.startswith(p.rstrip("/") + "/") or (p in ("/local_disk", "/mnt/nvme") and d.startswith(p)):
            return "instance-local storage"
    if compute is None:
        return None
    if source == "sagemaker":
        ck = compute.first("compute.checkpoint")
        local = (ck.value or {}).get("local_path") if ck is not None and isinstance(ck.value, dict) else None
        if ck is None or not (ck.value or {}).get("s3_uri_set"):
            return None  # SPOT003's finding
        root = local if isinstance(local, str) else SAGEMAKER_CKPT_DEFAULT
        if not d.startswith("/"):
            return f"a container path outside {root}, the folder SageMaker syncs to checkpoint_s3_uri"
        return None if _under(d, root) else f"outside {root}, the folder SageMaker syncs to checkpoint_s3_uri"
    if source == "skypilot":
        mounts = [f.value for f in compute.facts if f.kind == "storage.mount" and isinstance(f.value, dict)]
        full = d if d.startswith(("/", "~")) else "~/sky_workdir/" + d
        for m in mounts:
            path = m.get("path")
            if not isinstance(path, str):
                return None
            if _under(full, path):
                return None if str(m.get("mode", "")).upper() in ("MOUNT", "MOUNT_CACHED") else \
                    "under a COPY file_mount that is not written back to the bucket"
        return "the SkyPilot node's own disk, under no bucket file_mounts entry"
    if source == "modal":
        mounts = [f.value for f in compute.facts if f.kind == "storage.mount" and isinstance(f.value, dict)]
        if any(not isinstance(m.get("path"), str) for m in mounts):
            return None  # a volume whose path is not known here may hold it
        if not d.startswith("/"):
            # the image's working directory is the container's disk (the reader says "unknown" for an image that
            # sets its workdir)
            return "a path relative to the Modal container's working directory, under no volumes= mount"
        if any(_under(d, m["path"]) for m in mounts):
            return None
        return "the Modal container's own disk, under no volumes= mount"
    return None


@hookimpl
def gpulint_rules():
    return [SpotWithoutCheckpointing, SpotWithoutResume, ManagedSpotWithoutCheckpointSync, CheckpointOnEphemeralStorage]
