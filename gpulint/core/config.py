"""Finding, reading and validating the user's configuration.

Looked up upward from the scanned path: ``pyproject.toml`` with a
``[tool.gpulint]`` table, ``.gpulint.toml`` or ``.gpulint.yaml`` (the first
directory that has one wins; within a directory, the dedicated files win over
pyproject.toml). Every problem names the file, the key and what is wrong.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING


from gpulint.core.model import Severity

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.run.plugins import PluginHost

CONFIG_FILES = (".gpulint.toml", ".gpulint.yaml", ".gpulint.yml", "pyproject.toml")


class ConfigError(Exception):
    """A configuration the scan cannot run with (exit code 2)."""


class UsageError(Exception):
    """A command line the scan cannot run with (exit code 2)."""


def _toml():
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib


@dataclass
class Config:
    path: Path | None = None  # the file it came from
    root: Path | None = None  # directory globs are relative to
    select: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    fail_on: Severity = Severity.WARNING
    exclude: list[str] = field(default_factory=list)
    #: test and vendored code are context, never workloads or reported (gpulint.link.scope), unless included
    include_tests: bool = False
    include_vendored: bool = False
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    severity: dict[str, Severity] = field(default_factory=dict)
    rule_options: dict[str, dict] = field(default_factory=dict)
    baseline: str | None = None
    max_file_size_kb: int = 2048
    max_nesting: int = 200  # budgets of one file's parse (gpulint.core.limits)
    max_nodes: int = 100_000
    file_timeout: float = 20.0
    pricing: dict = field(default_factory=dict)
    instances: list[dict] = field(default_factory=list)
    models: dict[str, float] = field(default_factory=dict)
    workloads: list[dict] = field(default_factory=list)
    raw: dict = field(default_factory=dict)
    price_overlay: dict | None = None  # `gpulint catalogue import` output, read by load_config (gpulint.pricing.overlay)

    def describe(self) -> str:
        return str(self.path) if self.path else "defaults"


@lru_cache(maxsize=1)
def config_schema() -> dict:
    return json.loads(resources.files("gpulint").joinpath("schemas/config.schema.json").read_text(encoding="utf-8"))


def find_config(start: Path) -> Path | None:
    start = start.resolve()
    here = start if start.is_dir() else start.parent
    for d in (here, *here.parents):
        for name in CONFIG_FILES:
            candidate = d / name
            if candidate.is_file():
                if name == "pyproject.toml" and not _has_tool_table(candidate):
                    continue
                return candidate
    return None


def _has_tool_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if "gpulint" not in text:
        return False
    try:
        return "gpulint" in _toml().loads(text).get("tool", {})
    except Exception:
        return True  # let load_config report the syntax error


def read_table(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc}") from None
    if path.suffix in (".yaml", ".yml"):
        from gpulint.read.yamlnodes import YamlError, load_documents

        try:  # the scan's own bounded loader: an alias bomb or deep nesting is an error message, not a hang
            docs = load_documents(text)
        except YamlError as exc:
            raise ConfigError(f"{path}:{exc.line}: invalid YAML: {exc}") from None
        if len(docs) > 1:
            raise ConfigError(f"{path}: a configuration is one YAML document, not {len(docs)}")
        data = docs[0].data if docs else {}
        data = data or {}
        if isinstance(data, dict) and "gpulint" in data and len(data) == 1:
            data = data["gpulint"]
    else:
        try:
            data = _toml().loads(text)
        except RecursionError:
            raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
        except Exception as exc:
            raise ConfigError(f"{path}: invalid TOML: {_short(str(exc))}") from None
        if path.name == "pyproject.toml":
            data = data.get("tool", {}).get("gpulint", {})
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the configuration must be a table/mapping, not {type(data).__name__}")
    return data


def validate(data: dict, where: str, rule_options: dict[str, dict] | None = None) -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(config_schema())
    try:
        errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
        if errors:
            raise ConfigError("\n".join(_explain(where, e) for e in errors[:10]))
        for code, opts in (data.get("rules") or {}).items():
            schema = (rule_options or {}).get(code)
            if schema is None:
                continue  # unknown codes are reported by the caller, which knows the rules
            for e in jsonschema.Draft202012Validator(schema).iter_errors(opts):
                raise ConfigError(_explain(where, e, prefix=["rules", code]))
    except RecursionError:
        raise ConfigError(f"{where}: the configuration is nested too deeply to be a gpulint configuration") from None


def _explain(where: str, err, prefix: list | None = None) -> str:
    path = [*(prefix or []), *map(str, err.absolute_path)]
    if err.validator == "additionalProperties":
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        key = ".".join(path + extra[:1])
        return f"{where}: unknown key '{key}'" + (f" (known keys: {', '.join(sorted(err.schema.get('properties', {})))})" if not path else "")
    key = _short(".".join(path), 80) or "(top level)"
    message, value = err.message, repr(err.instance)
    if message.startswith(value) and len(value) > 80:  # jsonschema starts with the whole value
        message = _short(value, 80) + message[len(value):]
    message = _short(message, 300)
    if err.validator == "pattern":
        message = f"{_short(repr(err.instance))} is not a rule code or family prefix (like AMP001 or AMP)"
    elif err.validator == "enum":
        message = f"{_short(repr(err.instance))} is not one of {', '.join(map(repr, err.validator_value))}"
    return f"{where}: key '{key}': {message}"


def _short(text: str, limit: int = 200) -> str:
    """A message that quotes a value quotes its start: a hostile config must not print megabytes."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


def load_config(explicit: Path | None, start: Path, require_overlay: bool = True) -> Config:
    """The configuration for ``start`` (or the ``explicit`` file) with its price overlay attached.
    ``require_overlay`` False lets a configured overlay path be missing (``gpulint catalogue import`` creates it)."""
    path = explicit if explicit is not None else find_config(start)
    if path is None:
        return attach_overlay(Config(root=start.resolve() if start.is_dir() else start.resolve().parent))
    if not path.is_file():
        raise ConfigError(f"{path}: configuration file not found")
    data = read_table(path)
    where = str(path) + (" [tool.gpulint]" if path.name == "pyproject.toml" else "")
    validate(data, where)
    cfg = from_dict(data, path)
    _check_instances(cfg.instances, where)
    return attach_overlay(cfg, require_overlay)


#: keys of a catalogue addition table (`gpulint.pricing.catalogue`); an `instances` entry without any is one instance
_ADDITION_KEYS = ("instances", "gpu_models", "models", "commitments")


def _catalogue_additions(entries: list, path: Path | None = None) -> list:
    """``[[tool.gpulint.instances]]`` entries as catalogue additions: an entry that is itself an instance
    (provider, name, gpu_model, ...) is an addition of that one instance; a table of ``instances``/``gpu_models``/...
    lists is an addition as it stands. An instance that names no ``source`` is the user's own rate, and its price
    note says so (it has no catalogue region or date)."""
    origin = _user_rate_source(path)
    out = []
    for e in entries:
        if isinstance(e, dict) and not any(k in e for k in _ADDITION_KEYS):
            out.append({"instances": [_with_source(e, origin)]})
        elif isinstance(e, dict) and isinstance(e.get("instances"), list):
            out.append({**e, "instances": [_with_source(i, origin) for i in e["instances"]]})
        else:
            out.append(e)
    return out


def _user_rate_source(path: Path | None) -> str:
    """"your rate from pyproject.toml [[tool.gpulint.instances]]", in the spelling of the file it came from."""
    if path is None:
        return "your rate from the configuration's instances"
    table = ("[[tool.gpulint.instances]]" if path.name == "pyproject.toml"
             else "instances:" if path.suffix in (".yaml", ".yml") else "[[instances]]")
    return f"your rate from {path.name} {table}"


def _with_source(entry: object, origin: str) -> object:
    if isinstance(entry, dict) and not entry.get("source"):
        return {**entry, "source": origin}
    return entry


@lru_cache(maxsize=1)
def _catalogue_schema() -> dict:
    return json.loads(resources.files("gpulint").joinpath("schemas/catalogue.schema.json").read_text(encoding="utf-8"))


def _check_instances(additions: list, where: str) -> None:
    """A bad catalogue entry stops the scan as any bad key does (exit 2), naming the file, the entry and the field
    (validated against the catalogue's own schema, gpulint/schemas/catalogue.schema.json)."""
    if not additions:
        return
    import jsonschema

    validator = jsonschema.Draft202012Validator(_catalogue_schema())
    for i, addition in enumerate(additions):
        if not isinstance(addition, dict):
            raise ConfigError(f"{where}: key 'instances[{i}]': expected a table, got {type(addition).__name__}")
        errors = sorted(validator.iter_errors(addition), key=lambda e: list(e.absolute_path))
        if errors:
            path = list(errors[0].absolute_path)
            field = ".".join(str(p) for p in (path[2:] if path[:1] == ["instances"] else path))
            raise ConfigError(f"{where}: key 'instances[{i}]'" + (f", field {field}" if field else "")
                              + f": {_short(errors[0].message)}")


def attach_overlay(cfg: Config, require: bool = True) -> Config:
    """Read the project's price overlay (``.gpulint-prices.json`` next to the configuration, or
    ``[tool.gpulint.pricing] overlay``) into ``cfg.price_overlay``; a configured path other than the default must exist."""
    from gpulint.pricing.overlay import OverlayError, overlay_path, read_overlay

    path = overlay_path(cfg.root, cfg.pricing)
    if not path.is_file():
        # Naming the default path (as the README's example does) is the same as leaving it unset.
        default = overlay_path(cfg.root, None)
        if cfg.pricing.get("overlay") and require and path.resolve() != default.resolve():
            raise ConfigError(f"{cfg.describe()}: key 'pricing.overlay': {path} does not exist "
                              "(write it with `gpulint catalogue import FILE`)")
        return cfg
    try:
        cfg.price_overlay = read_overlay(path)
    except OverlayError as exc:
        raise ConfigError(f"{exc} (re-create it with `gpulint catalogue import FILE`, or delete it)") from None
    return cfg


def from_dict(data: dict, path: Path | None) -> Config:
    return Config(
        path=path,
        root=path.parent.resolve() if path else None,
        select=list(data.get("select", [])),
        extend_select=list(data.get("extend-select", [])),
        ignore=list(data.get("ignore", [])),
        fail_on=Severity(data.get("fail-on", "warning")),
        exclude=list(data.get("exclude", [])) + list(data.get("extend-exclude", [])),
        include_tests=bool(data.get("include-tests", False)),
        include_vendored=bool(data.get("include-vendored", False)),
        per_file_ignores={k: list(v) for k, v in (data.get("per-file-ignores") or {}).items()},
        severity={k: Severity(v) for k, v in (data.get("severity") or {}).items()},
        rule_options=dict(data.get("rules") or {}),
        baseline=data.get("baseline"),
        max_file_size_kb=int(data.get("max-file-size-kb", 2048)),
        max_nesting=int(data.get("max-nesting", 200)),
        max_nodes=int(data.get("max-nodes", 100_000)),
        file_timeout=float(data.get("file-timeout", 20.0)),
        pricing=dict(data.get("pricing") or {}),
        instances=_catalogue_additions(list(data.get("instances") or []), path),
        models=dict(data.get("models") or {}),
        workloads=list(data.get("workloads") or []),
        raw=data,
    )


def matches(code: str, patterns: list[str]) -> int:
    """Length of the longest pattern (code or family prefix) that selects `code`; 0 = none.
    The more specific pattern wins between select and ignore, as in ruff."""
    best = 0
    for p in patterns:
        if p == "ALL":
            best = max(best, 1)
        elif code.startswith(p):
            best = max(best, len(p) + 1)
    return best


def is_enabled(code: str, default_enabled: bool, cfg: Config, cli_select: list[str] | None, cli_ignore: list[str] | None) -> bool:
    select = cli_select if cli_select else (cfg.select or [])
    extend = cfg.extend_select
    ignore = list(cfg.ignore) + list(cli_ignore or [])
    if code.startswith("SYS") and code in ("SYS001", "SYS002") and not matches(code, ignore):
        return True
    s = matches(code, select) if select else (1 if default_enabled else 0)
    s = max(s, matches(code, extend))
    if s == 0:
        return False
    i = matches(code, ignore)
    return i == 0 or s > i  # the more specific pattern wins; a tie goes to ignore


def read_config(start: Path, host: "PluginHost", config: Path | None = None, select: list[str] | None = None,
                ignore: list[str] | None = None) -> Config:
    """The configuration as every command (and the language server) reads it:
    found upward from `start` unless `config` names a file, validated against
    the schema and the loaded rules. Raises ConfigError / UsageError."""
    cfg = load_config(config, start)
    rules = host.registry.rules
    if cfg.raw:
        where = str(cfg.path) + (" [tool.gpulint]" if cfg.path and cfg.path.name == "pyproject.toml" else "")
        validate(cfg.raw, where, host.registry.rule_options)
        for code in cfg.rule_options:
            if code not in rules:
                raise ConfigError(f"{where}: key 'rules.{code}': no such rule (see `gpulint rules`)")
        for code in cfg.severity:
            if code not in rules:
                raise ConfigError(f"{where}: key 'severity.{code}': no such rule (see `gpulint rules`)")
    where = str(cfg.path) + (" [tool.gpulint]" if cfg.path and cfg.path.name == "pyproject.toml" else "")
    for key in ("select", "extend-select", "ignore"):
        for code in cfg.raw.get(key, []) if cfg.raw else []:
            if code != "ALL" and not any(r.startswith(code) for r in rules):
                raise ConfigError(f"{where}: key '{key}': unknown rule code or prefix '{code}' (see `gpulint rules`)")
    for glob, codes in (cfg.per_file_ignores or {}).items():
        for code in codes:
            if code != "ALL" and not any(r.startswith(code) for r in rules):
                raise ConfigError(f"{where}: key 'per-file-ignores.{glob}': unknown rule code or prefix '{code}'")
    for opt, codes in (("select", select), ("ignore", ignore)):
        for code in codes or []:
            if code != "ALL" and not any(r.startswith(code) for r in rules):
                raise UsageError(f"--{opt}: unknown rule code or prefix '{code}' (see `gpulint rules`)")
    return cfg
