"""The qualified names that several passes match, and how a file's own trainer classes map onto them.

A table used by one pass lives in that pass's module, next to the code that reads it; the ones here are
read by two or more (HF_TRAINERS by the training, device and precision passes, DATALOADER by the loader,
dataset and benchmark passes, ...), so they are kept in one leaf module that imports no pass.
"""
from __future__ import annotations

from gpulint.read.python.index import PyIndex

AUTOCAST = {"torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
            "torch.amp.autocast_mode.autocast"}
HF_ARGS = {"transformers.TrainingArguments", "transformers.Seq2SeqTrainingArguments", "trl.SFTConfig", "trl.DPOConfig",
           "trl.GRPOConfig", "trl.RewardConfig", "trl.ORPOConfig", "trl.KTOConfig", "trl.PPOConfig", "trl.RLOOConfig",
           "trl.CPOConfig", "trl.OnlineDPOConfig", "trl.GKDConfig", "trl.BCOConfig", "trl.PRMConfig", "trl.XPOConfig",
           "trl.NashMDConfig",
           "transformers.training_args.TrainingArguments"}
HF_TRAINERS = {"transformers.Trainer", "transformers.Seq2SeqTrainer", "trl.SFTTrainer", "trl.DPOTrainer", "trl.GRPOTrainer",
               "trl.RewardTrainer", "trl.ORPOTrainer", "trl.KTOTrainer", "trl.PPOTrainer"}
LIGHTNING_TRAINERS = {"lightning.Trainer", "lightning.pytorch.Trainer", "pytorch_lightning.Trainer", "lightning.fabric.Fabric",
                      "lightning.Fabric", "lightning_fabric.Fabric",
                      # the same classes imported from their submodules (``from pytorch_lightning.trainer import Trainer``)
                      "pytorch_lightning.trainer.Trainer", "pytorch_lightning.trainer.trainer.Trainer",
                      "lightning.pytorch.trainer.Trainer", "lightning.pytorch.trainer.trainer.Trainer",
                      "lightning.fabric.fabric.Fabric", "lightning_fabric.fabric.Fabric"}
#: LightningCLI: a Trainer built from a ``--config`` YAML and ``--trainer.*`` flags, fitted by the CLI itself
LIGHTNING_CLI = {"lightning.pytorch.cli.LightningCLI", "pytorch_lightning.cli.LightningCLI",
                 "pytorch_lightning.utilities.cli.LightningCLI", "lightning.pytorch.LightningCLI"}
ACCELERATOR = {"accelerate.Accelerator"}
DATALOADER = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
DS_INIT = {"deepspeed.initialize"}
#: Megatron's training driver: its loop lives in the library; precision is its own --bf16 / --fp16 (fp32 without)
MEGATRON_PRETRAIN = {"megatron.training.pretrain", "megatron.training.training.pretrain"}

#: per-sample decoding of media: the host work DataLoader workers exist for
MEDIA_DECODERS = ("PIL.Image.open", "cv2.imread", "cv2.imdecode", "torchvision.io.read_image", "torchvision.io.decode_image",
                  "torchvision.io.decode_jpeg", "torchvision.io.read_video", "torchaudio.load", "librosa.load", "soundfile.read",
                  "imageio.imread", "imageio.v3.imread", "skimage.io.imread", "decord.VideoReader", "av.open",
                  # TensorFlow's decoders (in a tf.data map) and Keras's image loader (in a Sequence / PyDataset)
                  "tensorflow.io.decode_jpeg", "tensorflow.io.decode_png", "tensorflow.io.decode_image",
                  "tensorflow.io.decode_and_crop_jpeg", "tensorflow.image.decode_jpeg", "tensorflow.image.decode_png",
                  "tensorflow.image.decode_image", "tensorflow.audio.decode_wav", "tensorflow.keras.utils.load_img",
                  "keras.utils.load_img", "tensorflow.keras.preprocessing.image.load_img", "keras.preprocessing.image.load_img")


#: imports that are never modules of the repository (the frameworks gpulint knows)
NOT_LOCAL = ("torch", "transformers", "accelerate", "lightning", "pytorch_lightning", "deepspeed", "tensorflow", "keras",
             "jax", "flax", "optax", "orbax", "equinox", "ray", "numpy", "datasets", "peft", "trl", "sagemaker", "os", "sys", "json", "time", "math",
             "argparse", "logging", "random", "functools", "itertools", "collections", "typing", "pathlib")


#: classmethods that build a framework trainer (``pl.Trainer.from_argparse_args(args)``)
TRAINER_BUILDERS = (".from_argparse_args", ".from_config")


def trainer_classes(ix: PyIndex) -> dict[str, str]:
    """Classes of the file that subclass a framework trainer, directly or through other classes of the file
    (``class LLaVATrainer(Trainer)``): name -> the framework class. They train as the framework's does."""
    known = HF_TRAINERS | LIGHTNING_TRAINERS
    out: dict[str, str] = {}
    for _ in range(4):  # chains of local subclasses
        for name, (_, bases) in ix.classes.items():
            if name in out:
                continue
            base = next((b if b in known else out[b] for b in bases if b in known or b in out), None)
            if base:
                out[name] = base
    return out


def framework_class(qualname: str, local: dict[str, str]) -> str:
    """A trainer's qualified name in the frameworks' words: a local subclass is its framework class, a
    builder classmethod is the class it builds."""
    for suffix in TRAINER_BUILDERS:
        if qualname.endswith(suffix):
            qualname = qualname[: -len(suffix)]
    return local.get(qualname, qualname)
