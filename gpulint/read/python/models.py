"""What model is trained or served: the ``model.name``, ``model.config``, ``model.layers``, ``grad_checkpointing``,
``peft``, ``quantized_load`` and ``optimizer`` facts.

The model's name or size (from_pretrained, timm, torchvision, a config), its layers counted from the code
(layer_sizes.py), and what changes its memory (activation checkpointing, LoRA, a quantized load, the
optimizer). These feed the memory-fit estimates, a subject apart from precision and devices.
"""
from __future__ import annotations

from gpulint.read.python.common import Facts, norm, qualified, read_again
from gpulint.read.python.index import Call
from gpulint.read.python.layer_sizes import count_models


def models(f: Facts) -> None:
    for c in f.ix.calls:
        if c.attr == "from_pretrained":
            name = f.val(c, "pretrained_model_name_or_path", 0)
            flag, open_default = None, False
            if isinstance(name, dict) and "cli_arg" in name and isinstance(name.get("default"), str):
                # from_pretrained(args.model_name) with a default: that model unless a launcher passes another
                name, flag = name["default"], name["cli_arg"]
            elif isinstance(name, dict) and "cli_arg" in name and (name.get("default_unknown") or name.get("default") is None):
                # a required flag (default None, or an expression): the model only a launcher names
                name, flag, open_default = "", name["cli_arg"], True
            if isinstance(name, str):
                kind = "model.name"
                q = c.qualname or ""
                if "Tokenizer" in q or "Processor" in q or "Config" in q.split(".")[-2:-1][0:1] or "tokenizer" in c.receiver.lower():
                    continue
                f.add(kind, name, c.node, "from_pretrained",
                      load_in_4bit=norm(f.val(c, "load_in_4bit")) is True, load_in_8bit=norm(f.val(c, "load_in_8bit")) is True,
                      quantization_config=f.present(c, "quantization_config"), **({"cli_arg": flag} if flag else {}),
                      **({"default_unknown": True} if open_default else {}),
                      **({"device_map": _device_map(f, c)} if f.present(c, "device_map") else {}))
        elif c.attr == "from_name" and c.receiver[:1].isupper() and "Tokenizer" not in c.receiver:
            # ``LLaMAConfig.from_name("7B")``, ``Config.from_name("pythia-160m")``: a model named by its size or id
            name = f.val(c, "name", 0)
            if isinstance(name, str):
                f.add("model.name", name, c.node, "from_name")
        elif (c.qualname or "").startswith("torchvision.models.") and c.qualname.count(".") == 2 and c.attr[:1].islower():
            f.add("model.name", f"torchvision/{c.attr}", c.node, c.qualname)  # resnet50(), vit_b_16() ...
        elif c.qualname == "timm.create_model":
            name = f.val(c, "model_name", 0)
            if isinstance(name, str):
                f.add("model.name", name if "/" in name else f"timm/{name}", c.node, c.qualname)
        elif c.attr in ("gradient_checkpointing_enable",) and c.receiver:
            f.add("grad_checkpointing", {"enabled": True, "via": "gradient_checkpointing_enable"}, c.node, "gradient_checkpointing_enable")
    for c in f.ix.calls_to("torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential",
                           "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.apply_activation_checkpointing"):
        f.add("grad_checkpointing", {"enabled": True, "via": c.qualname}, c.node, c.qualname)
    for c in f.ix.calls:
        q = c.qualname or ""
        if q.startswith("transformers.") and q.endswith("Config") and "()" not in q and not q.endswith(("BitsAndBytesConfig", "GenerationConfig")):
            dims = {}
            for name, node in c.keywords():
                v = f.ev.value(node, c.scope)
                if isinstance(v, (int, float, str, bool)):
                    dims[name] = v
            if any(k in dims for k in ("hidden_size", "n_embd", "d_model")):
                dims.setdefault("model_type", q.split(".")[-1][: -len("Config")].lower())
                f.add("model.config", dims, c.node, q)
    for node, name, params, lookups in count_models(f.ix, lambda n: qualified(f, n), f.ev.value):
        f.add("model.layers", {"name": name, "params": params, **({"embedding_params": lookups} if lookups else {})}, node, name)
    for c in f.ix.calls_to("peft.get_peft_model", "peft.LoraConfig", "peft.prepare_model_for_kbit_training"):
        f.add("peft", {"method": "lora", "via": c.qualname}, c.node, c.qualname)
    for c in f.ix.calls_to("transformers.BitsAndBytesConfig"):
        if c.assigned_to and not read_again(f, c.assigned_to):
            continue  # a config no load is given
        bits = 4 if f.val(c, "load_in_4bit") is True else 8 if f.val(c, "load_in_8bit") is True else None
        f.add("quantized_load", {"bits": bits}, c.node, c.qualname)
    for c in f.ix.calls:
        q = c.qualname or ""
        if "()" in q:
            continue  # a method of an optimizer object, not its construction
        if q.startswith("torch.optim.") or q.startswith("bitsandbytes.optim.") or q in ("transformers.AdamW", "transformers.Adafactor"):
            name = q.split(".")[-1].lower()
            if name in ("lr_scheduler", "zero_redundancy_optimizer") or "scheduler" in q or "lr_scheduler" in q:
                continue
            if q.startswith("bitsandbytes."):
                name = "adam8bit" if "8bit" in name else name
            f.add("optimizer", {"name": name, "qualname": q}, c.node, q)


def _device_map(f: Facts, c: Call) -> str:
    """A from_pretrained load's ``device_map``: the literal ("auto", "cuda:0") or "?" when it is not one."""
    v = f.val(c, "device_map")
    return v if isinstance(v, str) else "?"
