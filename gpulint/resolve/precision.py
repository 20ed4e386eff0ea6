"""What precision a workload trains in, decided from all its facts.

Each ``precision`` fact says enabled True / False / unknown, or depends on a
command-line flag of the script; flags are looked up in the workload's
launchers. Launcher flags (``accelerate launch --mixed_precision``,
``--bf16``) count as facts of their own.
"""
from __future__ import annotations

from typing import Any

from gpulint.core.model import Fact

from gpulint.core.facts import flag_names, is_cli
from gpulint.link.workloads import Workload
from gpulint.read.python.frameworks.lightning import precision_value  # a Trainer's own reading of the word
from gpulint.resolve.results import PrecisionView  # the typed result this module fills

_TRUE = ("true", "1", "yes", "y")
_FALSE = ("false", "0", "no", "n")


def flag_value(args: list[str], flag: str) -> Any:
    """Value a launcher passes for a flag: True for a bare boolean flag, the
    word after it or after '=', or None when the flag is absent."""
    names = flag_names(flag)
    for i, a in enumerate(args):
        if not isinstance(a, str) or not a.startswith("-"):
            continue
        body = a.lstrip("-")
        key, eq, val = body.partition("=")
        if key in names:
            if eq:
                return val
            nxt = args[i + 1] if i + 1 < len(args) else None
            if isinstance(nxt, str) and not nxt.startswith("-"):
                return nxt
            return True
    return None


def _truthy(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        if v.lower() in _TRUE:
            return True
        if v.lower() in _FALSE:
            return False
    return None


def resolve_cli(value: Any, wl: Workload) -> Any:
    """A ``{"cli_arg", "default"}`` marker resolved against the launchers;
    None when no launcher is known (the script may be run by hand with flags)."""
    if not is_cli(value):
        return value
    if not wl.launchers:
        return None
    results = set()
    for l in wl.launchers:
        if (l.attrs or {}).get("args_unknown"):
            return None  # the launcher passes arguments gpulint cannot read (a hyperparameters dict changed in place)
        v = flag_value(l.value.get("args") or [], value["cli_arg"])
        if "one_of" in value:
            # a test of the flag's value (``args.precision != "fp32"``): true or false per launcher
            if v is None and (value.get("default_unknown") or l.value.get("args_open")):
                return None
            word = value["default"] if v is None else v
            if not isinstance(word, str):
                return None
            results.add((word in value["one_of"]) != bool(value.get("negate")))
        elif v is None:
            if value.get("default_unknown") or l.value.get("args_open"):
                return None  # not passed, and its default is not a literal or the launch's $ARGS may hold it
            results.add(_hashable(value["default"]))
        elif v is True:
            results.add(True)
        elif value.get("type_bool") and isinstance(v, str):
            results.add(v != "")  # argparse's type=bool: bool("False") is True
        else:
            t = _truthy(v)
            results.add(t if t is not None else v)
    return results.pop() if len(results) == 1 else None


_DTYPE_WORDS = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16", "float32": "fp32",
                "fp32": "fp32", "float": "fp32", "32": "fp32", "16": "fp16"}


def _dtype_word(v: Any) -> Any:
    """A dtype as a launcher or config spells it (``bfloat16``, ``torch.float16``, ``fp32``) in gpulint's words."""
    if not isinstance(v, str):
        return None
    return _DTYPE_WORDS.get(v.lower().removeprefix("torch."), None)


def _hashable(v: Any) -> Any:
    return v if not isinstance(v, (list, dict)) else str(v)


#: mechanisms of the HF Trainer's arguments, whose fp16/bf16 a DeepSpeed "auto" takes
_HF_MECHANISMS = ("hf_args", "hf_cli", "hf_args_file", "packaged_config")


def precision_view(wl: Workload) -> PrecisionView:
    view = PrecisionView()
    configured = _lightning_configs(wl)
    for f in wl.of("precision"):
        v = f.value
        if v.get("local"):
            continue  # an fp32 island inside a function (``with autocast(enabled=False):``), not the run's setting
        mech = v.get("mechanism")
        enabled = v.get("enabled")
        dtype = v.get("dtype")
        if mech == "accelerate" and v.get("from_launcher"):
            enabled, dtype = _accelerate_from_launchers(wl)
            if enabled is None:
                # no flag: the linked accelerate config decides; with no config the
                # machine's own default config may (unknown)
                if any(x.value.get("mechanism") == "accelerate_config" for x in wl.of("precision")):
                    continue
        elif mech == "deepspeed" and v.get("auto"):
            if any(x.value.get("mechanism") in _HF_MECHANISMS for x in wl.of("precision")):
                continue  # "auto" takes the HF arguments' fp16/bf16: they decide
            # outside the HF integration "auto" is no off switch (DeepSpeed reads the string as set): unknown
        elif mech == "deepspeed" and v.get("from_config"):
            if any(x.value.get("mechanism") == "deepspeed" and x is not f and not x.value.get("from_config") for x in wl.of("precision")):
                continue  # the linked config file decides
        elif mech == "megatron_cli":
            if any(flag_value(l.value.get("args") or [], v["replaced_by"]) is not None for l in wl.launchers):
                enabled = None  # the arguments come from a YAML file instead of the command line
            else:
                enabled, dtype = _hf_flags(enabled, wl)
        elif mech in ("hf_args", "hf_cli") and isinstance(enabled, dict):
            if any(x.value.get("mechanism") == "hf_args_file" for x in wl.of("precision")):
                continue  # a JSON/YAML argument file decides instead of flags
            enabled, dtype = _hf_flags(enabled, wl)
        elif mech == "lightning" and v.get("from_config") and configured:
            continue  # ``Trainer(**cfg.trainer)``: the linked config's trainer.precision decides
        elif mech == "lightning_config":
            enabled, dtype, by = configured.get(id(f), (None, None, None))
            if enabled is _SKIP:
                continue
            if by is not None:  # a launch line's override decides: it is the evidence, once
                if any(x is by for x, _ in view.on) or any(x is by for x in view.off):
                    continue
                f = by
        elif mech == "lightning" and v.get("fabric") and not wl.launchers:
            enabled = None  # Fabric() with nothing in the repository that starts it: ``fabric run --precision`` may set it
        elif enabled == "by_dtype":
            # the dtype a flag names decides it: --dtype bfloat16 is on, --dtype float32 off
            chosen = _dtype_word(resolve_cli(dtype, wl) if is_cli(dtype) else dtype)
            enabled = True if chosen in ("bf16", "fp16", "fp8") else False if chosen == "fp32" else None
            dtype = chosen if enabled else None
        elif is_cli(enabled):
            enabled = _truthy(resolve_cli(enabled, wl)) if resolve_cli(enabled, wl) is not None else None
        from_default = bool(v.get("default")) or mech in ("hf_cli", "megatron_cli") or is_cli(v.get("enabled"))
        if isinstance(dtype, dict) or is_cli(dtype):
            dtype = resolve_cli(dtype, wl) if is_cli(dtype) else None
        if enabled is True:
            view.on.append((f, dtype))
        elif enabled is False:
            (view.default_off if from_default else view.off).append(f)
        else:
            view.unknown.append(f)
    for l in wl.launchers:
        mp = l.value.get("mixed_precision")
        if isinstance(mp, str):
            if mp.lower() in ("no", "fp32"):
                view.off.append(l)
            else:
                view.on.append((l, mp.lower()))
        elif (l.attrs or {}).get("precision_undecided"):
            view.unknown.append(l)  # the launcher sets it from a value read at run time
    return view


def hydra_override(args: list, key: str) -> Any:
    """The value a launch line sets for a config key: Hydra's ``trainer.precision=bf16-mixed`` (``+``/``++``
    prefixed too) or LightningCLI's ``--trainer.precision bf16-mixed``; None when it sets none."""
    for i, a in enumerate(args):
        if not isinstance(a, str):
            continue
        k, eq, val = a.lstrip("+").partition("=")
        if eq and k == key and not a.startswith("-"):
            return val
    v = flag_value(args, "--" + key)
    return v if isinstance(v, str) else None


_SKIP = object()  # a trainer section's default precision that decides nothing here


def _lightning_configs(wl: Workload) -> dict[int, tuple[Any, Any, Fact | None]]:
    """(enabled, dtype, the launcher that decides it) of each trainer.precision a linked config sets, after the
    launchers' overrides: a launch line that sets the key wins over every file; launchers that set different values,
    configs composed together that disagree, or a launch whose arguments may hold an override (``$@``) leave it
    undecided."""
    facts = [f for f in wl.of("precision") if f.value.get("mechanism") == "lightning_config"]
    built = any(f.value.get("mechanism") == "lightning" and f.value.get("from_config") for f in wl.of("precision"))
    set_ = [f for f in facts if not f.value.get("default")]
    # a trainer section without precision is Lightning's default only for a Trainer built from it, and only where
    # no other composed file sets the key
    silent = {id(f): (_SKIP, None, None) for f in facts if f.value.get("default") and (set_ or not built)}
    facts = [f for f in facts if id(f) not in silent]
    if not facts:
        return silent
    overrides: dict[Any, Fact] = {}
    for l in wl.launchers:
        over = hydra_override(l.value.get("args") or [], facts[0].key or "trainer.precision")
        if over is None and (l.value.get("args_open") or (l.attrs or {}).get("args_unknown")):
            return {**silent, **{id(f): (None, None, None) for f in facts}}
        overrides.setdefault(over, l)
    read = lambda word: (precision_value(word)["enabled"], precision_value(word)["dtype"])  # noqa: E731
    if overrides and None not in overrides:
        decided = {read(o) for o in overrides}
        by = next(iter(overrides.values()))
    else:
        decided = {(f.value.get("enabled"), f.value.get("dtype")) for f in facts} | {read(o) for o in overrides if o is not None}
        by = None
    one = (*decided.pop(), by) if len(decided) == 1 else (None, None, None)
    return {**silent, **{id(f): one for f in facts}}


def _accelerate_from_launchers(wl: Workload) -> tuple[Any, Any]:
    for l in wl.launchers:
        mp = l.value.get("mixed_precision")
        if isinstance(mp, str):
            return mp.lower() not in ("no", "fp32"), mp.lower()
    return None, None


def _hf_flags(enabled: dict, wl: Workload) -> tuple[Any, Any]:
    """HF arguments decided by --bf16/--fp16 flags (or a JSON argument file)."""
    values = {}
    for name in ("bf16", "fp16"):
        v = enabled.get(name)
        values[name] = _truthy(resolve_cli(v, wl)) if is_cli(v) else _truthy(v) if v is not None else False
    if values["bf16"] or values["fp16"]:
        return True, "bf16" if values["bf16"] else "fp16"
    if values["bf16"] is False and values["fp16"] is False:
        return False, "fp32"
    return None, None
