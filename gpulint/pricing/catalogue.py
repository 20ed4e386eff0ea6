"""The instance catalogue: cloud GPU instances, their GPUs and dated list prices.

The bundled data is ``gpulint/data/instances.yaml`` (copied from the shared
reference with every entry's ``source``, ``as_of`` and region).  Parsing 146 KB
of YAML costs ~40 ms with libyaml and ~200 ms without, on every scan, so the
package also ships ``instances.json`` generated from it (``python -m
gpulint.pricing.catalogue`` rewrites it; a test checks the two agree) and loads that.

Everything returned is a frozen dataclass; the only module state is the
``lru_cache`` of the parsed bundled file.  Prices are never invented: a figure
the catalogue lacks stays ``None`` and the ``Price.note`` says why.

Prices are dated: an entry's ``as_of`` is the day its on-demand figure was
verified against ``source`` (``YYYY-MM-DD``; a text starting with "undated"
says the source records no date).  A price *overlay* written by ``gpulint
catalogue import`` (see ``gpulint.pricing.overlay``) replaces bundled prices with the
ones of a price list the user downloaded; ``commitment()`` reads the 1-/3-year
commitment prices of the ``commitments`` section.
"""
from __future__ import annotations

import datetime as _dt
import fnmatch
import json
import re
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable, Mapping

__all__ = ["Catalogue", "CatalogueError", "Commitment", "GpuModel", "Instance", "Price", "PriceAge", "SageMakerPrice",
           "HOURS_PER_MONTH", "MAX_AGE_DAYS", "SAGEMAKER_USES", "price_date"]

HOURS_PER_MONTH = 730.0  # the month the providers' own calculators use (GCP, AWS: 730 h)
MAX_AGE_DAYS = 180  # `gpulint catalogue` warns when the prices in use are older than this
TERMS = ("1yr", "3yr")
#: what a SageMaker ml.* instance is billed for -> the ``Component`` of the AmazonSageMaker price list. SageMaker
#: lists one hourly price per instance and component; training and hosting differ, and both differ from EC2.
SAGEMAKER_USES = {"training": "Training", "hosting": "Hosting", "notebook": "Notebook", "processing": "Processing",
                  "transform": "Transform"}

_DATA = "data"
_YAML_NAME = "instances.yaml"
_JSON_NAME = "instances.json"


class CatalogueError(ValueError):
    """A catalogue addition or pricing setting is malformed; the message names the entry."""


@dataclass(frozen=True)
class Instance:
    provider: str
    name: str
    gpu_model: str
    gpu_count: int
    gpu_memory_gib: float
    sagemaker_name: str | None = None
    accelerator_type: str | None = None
    gpu_interconnect: str | None = None
    network_gbps: float | None = None
    rdma: str | None = None
    efa_interfaces: int | None = None
    vcpus: int | None = None
    host_memory_gib: float | None = None
    local_nvme_gib: float | None = None
    bf16_supported: bool | None = None
    fp8_supported: bool | None = None
    on_demand_usd_per_hour: float | None = None
    spot_usd_per_hour_observed: tuple[float, float] | None = None
    region: str | None = None
    as_of: str | None = None
    source: str = ""
    spot_as_of: str | None = None  # spot figures come from other snapshots than on-demand ones
    spot_source: str = ""
    retired: str | None = None
    training_suitable: bool | None = None
    notes: str | None = None

    @property
    def total_gpu_memory_gib(self) -> float:
        return self.gpu_count * self.gpu_memory_gib


@dataclass(frozen=True)
class GpuModel:
    name: str
    architecture: str | None = None
    memory_gib: float | None = None
    fp32_tflops: float | None = None
    tf32_tflops: float | None = None
    fp16_tflops: float | None = None
    bf16_tflops: float | None = None
    memory_bandwidth_gbps: float | None = None
    confidence: str | None = None
    source: str = ""

    @property
    def half_tflops(self) -> float | None:
        """Dense 16-bit tensor peak: bf16, or fp16 where bf16 is absent (V100, T4) - training-facts §9."""
        return self.bf16_tflops if self.bf16_tflops is not None else self.fp16_tflops


@dataclass(frozen=True)
class Price:
    usd_per_hour: float | None
    capacity: str  # "on-demand" | "spot"
    region: str | None
    as_of: str | None
    source: str
    note: str = ""


@dataclass(frozen=True)
class SageMakerPrice:
    """SageMaker's own on-demand list price of an ``ml.*`` instance for one use (``SAGEMAKER_USES``)."""
    instance: str  # "ml.p4d.24xlarge"
    use: str  # "training" | "hosting" | "notebook" | "processing" | "transform"
    usd_per_hour: float
    region: str
    as_of: str
    source: str


@dataclass(frozen=True)
class Commitment:
    """What a 1- or 3-year commitment (Savings Plan, reserved instance, committed-use discount) costs.

    ``up_to`` False: ``usd_per_hour`` is this instance's committed hourly price in ``region`` and
    ``discount_pct`` its saving against the on-demand price of the same source. ``up_to`` True: the
    provider's stated maximum discount ("up to 72%") for the provider or family - not this instance's
    rate, so ``usd_per_hour`` is None and a rule must say "up to"."""
    term: str  # "1yr" | "3yr" | "any" (the source does not split by term)
    discount_pct: float
    usd_per_hour: float | None
    up_to: bool
    plan: str
    region: str | None
    as_of: str | None
    source: str
    note: str = ""


@dataclass(frozen=True)
class PriceAge:
    """How old the on-demand prices of one provider are (``gpulint catalogue``'s staleness check)."""
    provider: str
    oldest: _dt.date | None  # None: no entry of this provider carries a date
    dated: int
    undated: int

    def days(self, today: _dt.date) -> int | None:
        return (today - self.oldest).days if self.oldest else None


_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?!\d)")


def price_date(as_of: str | None) -> _dt.date | None:
    """The date an ``as_of`` text starts with (``2026-07-20``), or None for undated/unknown."""
    m = _DATE.match(as_of or "")
    if not m:
        return None
    try:
        return _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


# --------------------------------------------------------------------------- loading

def _data_text(name: str) -> str | None:
    try:
        return resources.files("gpulint").joinpath(_DATA, name).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return None


def parse_data_yaml(text: str) -> Any:
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _Loader(base):  # type: ignore[misc, valid-type]
        """Safe loader that keeps dates as strings, so the data stays JSON-compatible."""

    _Loader.yaml_implicit_resolvers = {
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
        for k, v in base.yaml_implicit_resolvers.copy().items()
    }
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


def load_bundled_yaml() -> dict:
    """Parse the YAML source of the bundled catalogue (used to generate and test the JSON copy)."""
    text = _data_text(_YAML_NAME)
    if text is None:
        raise CatalogueError(f"bundled catalogue {_YAML_NAME} is missing from the package")
    return parse_data_yaml(text)


@lru_cache(maxsize=1)
def _bundled() -> dict:
    text = _data_text(_JSON_NAME)
    if text is not None:
        return json.loads(text)
    return load_bundled_yaml()  # the JSON copy is an optimisation; the YAML is the source


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(resources.files("gpulint").joinpath("schemas", "catalogue.schema.json").read_text("utf-8"))


def _validate_addition(index: int, addition: Any) -> None:
    import jsonschema

    if not isinstance(addition, Mapping):
        raise CatalogueError(f"catalogue addition {index}: expected a table with `instances`/`gpu_models`/`models`/`commitments`, "
                             f"got {type(addition).__name__}")
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(dict(addition)), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    err = errors[0]
    path = list(err.absolute_path)
    where = f"catalogue addition {index}"
    if len(path) >= 2 and path[0] in ("instances", "gpu_models", "models", "commitments") and isinstance(path[1], int):
        entry = addition.get(path[0])[path[1]]
        label = entry.get("name") or entry.get("id") if isinstance(entry, Mapping) else None
        where += f", {path[0]}[{path[1]}]" + (f" ({label!r})" if label else "")
        rest = path[2:]
    else:
        rest = path
    if rest:
        where += ", field " + ".".join(str(p) for p in rest)
    raise CatalogueError(f"{where}: {err.message}")


def _source_summary(src: Any, preferred: tuple[str, ...]) -> str:
    if isinstance(src, str):
        return src
    if isinstance(src, Mapping) and src:
        for key in preferred:
            if isinstance(src.get(key), str):
                return src[key]
        return "; ".join(f"{k}: {v}" for k, v in src.items())
    return ""


_INSTANCE_FIELDS = {f.name for f in fields(Instance)}


def _instance(entry: Mapping, defaults: Mapping) -> Instance:
    d = {k: v for k, v in entry.items() if k in _INSTANCE_FIELDS}
    prov_defaults = defaults.get(entry["provider"], {}) if isinstance(defaults, Mapping) else {}
    d.setdefault("region", prov_defaults.get("region"))
    d.setdefault("as_of", prov_defaults.get("as_of"))
    d.setdefault("spot_as_of", prov_defaults.get("spot_as_of"))
    src = entry.get("source")
    d["source"] = _source_summary(src, ("price", "price_specs")) or "catalogue addition (no source given)"
    spot_src = src.get("spot") if isinstance(src, Mapping) else None
    if not spot_src and isinstance(src, Mapping) and "price_specs" in src and "spot_as_of" in entry:
        spot_src = src["price_specs"]  # an entry that dates its own spot figure names the snapshot it came from
    d["spot_source"] = spot_src or prov_defaults.get("spot_source") or d["source"]
    spot = d.get("spot_usd_per_hour_observed")
    d["spot_usd_per_hour_observed"] = tuple(spot) if spot else None
    return Instance(**d)


def _gpu_model(entry: Mapping) -> GpuModel:
    return GpuModel(
        name=entry["name"],
        architecture=entry.get("architecture"),
        memory_gib=entry.get("memory_gib"),
        fp32_tflops=entry.get("fp32_tflops"),
        tf32_tflops=entry.get("tf32_tensor_tflops_dense"),
        fp16_tflops=entry.get("fp16_tensor_tflops_dense"),
        bf16_tflops=entry.get("bf16_tensor_tflops_dense"),
        memory_bandwidth_gbps=entry.get("memory_bandwidth_gbps"),
        confidence=entry.get("confidence"),
        source=_source_summary(entry.get("source"), ("flops",)),
    )


_PRICING_KEYS = ("region", "discount_pct", "prices", "hours-per-month", "commitments", "max-age-days", "overlay")


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _check_pricing(pricing: Mapping | None) -> dict:
    """Validate ``[tool.gpulint.pricing]`` (the config schema checks it too; this guards plugins and tests)."""
    if pricing is None:
        pricing = {}
    if not isinstance(pricing, Mapping):
        raise CatalogueError(f"pricing: expected a table, got {type(pricing).__name__}")
    unknown = set(pricing) - set(_PRICING_KEYS)
    if unknown:
        raise CatalogueError(f"pricing: unknown key(s) {', '.join(sorted(map(str, unknown)))} (expected {', '.join(_PRICING_KEYS)})")
    region = pricing.get("region")
    if region is not None and not isinstance(region, str) and not (
        isinstance(region, Mapping) and all(isinstance(v, str) for v in region.values())
    ):
        raise CatalogueError("pricing.region: expected a region name or a table {provider: region}")
    discount = pricing.get("discount_pct")
    if discount is not None and (not _number(discount) or not 0 <= discount < 100):
        raise CatalogueError(f"pricing.discount_pct: expected a number from 0 to below 100, got {discount!r}")
    prices = pricing.get("prices") or {}
    if not isinstance(prices, Mapping):
        raise CatalogueError("pricing.prices: expected a table {instance name: USD per hour}")
    for name, usd in prices.items():
        if not _number(usd) or usd < 0:
            raise CatalogueError(f"pricing.prices[{name!r}]: expected a non-negative number of USD per hour, got {usd!r}")
    hours = pricing.get("hours-per-month", HOURS_PER_MONTH)
    if not _number(hours) or not 0 < hours <= 744:
        raise CatalogueError(f"pricing.hours-per-month: expected a number of hours above 0 and at most 744 (31 x 24), got {hours!r}")
    held = pricing.get("commitments") or []
    if not isinstance(held, (list, tuple)) or not all(isinstance(h, str) and h.strip() for h in held):
        raise CatalogueError("pricing.commitments: expected a list of instance names or globs you already hold commitments for "
                             "(\"p4d.24xlarge\", \"g5.*\", \"gcp:a3-*\")")
    age = pricing.get("max-age-days", MAX_AGE_DAYS)
    if not isinstance(age, int) or isinstance(age, bool) or age < 1:
        raise CatalogueError(f"pricing.max-age-days: expected a whole number of days of at least 1, got {age!r}")
    overlay = pricing.get("overlay")
    if overlay is not None and (not isinstance(overlay, str) or not overlay.strip()):
        raise CatalogueError("pricing.overlay: expected the path of a price overlay file")
    return {"region": region, "discount_pct": discount, "prices": dict(prices), "hours_per_month": float(hours),
            "commitments": [h.strip() for h in held], "max_age_days": age, "overlay": overlay}


def _commitment(raw: Mapping) -> dict:
    c = Commitment(
        term=raw["term"], discount_pct=float(raw["discount_pct"]), usd_per_hour=raw.get("usd_per_hour"),
        up_to=bool(raw.get("up_to")), plan=raw["plan"], region=raw.get("region"), as_of=raw.get("as_of"),
        source=raw["source"], note=raw.get("note", ""))
    return {"provider": raw["provider"], "instance": raw.get("instance"), "family": raw.get("family"), "commitment": c}


# --------------------------------------------------------------------------- accelerator names

# SkyPilot / Kubernetes / GCP accelerator spellings -> catalogue gpu_model values. Bare "A100" is the
# 40 GB part and "V100" the 16 GB part, as in SkyPilot; the 80/32 GB parts need the suffix.
_ACCEL_ALIASES: dict[str, tuple[str, ...]] = {
    "A100": ("A100-SXM4-40GB",),
    "A100-40GB": ("A100-SXM4-40GB",),
    "A100-80GB": ("A100-SXM4-80GB", "A100-PCIE-80GB"),
    "H100": ("H100-SXM5-80GB",),
    "H100-80GB": ("H100-SXM5-80GB",),
    "H100-80GB-HBM3": ("H100-SXM5-80GB",),  # the SXM part's device name (nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3)
    "H100-MEGA": ("H100-SXM5-80GB",),
    "H100-MEGA-80GB": ("H100-SXM5-80GB",),
    "H100-NVL": ("H100-NVL-94GB",),
    "H200": ("H200-SXM-141GB", "H200-141GB"),
    "H200-141GB": ("H200-SXM-141GB", "H200-141GB"),
    "B200": ("B200-180GB",),
    "V100": ("V100-SXM2-16GB", "V100-16GB"),
    "V100-16GB": ("V100-SXM2-16GB", "V100-16GB"),
    "V100-32GB": ("V100-SXM2-32GB",),
    "T4": ("T4-16GB",),
    "L4": ("L4-24GB",),
    "A10G": ("A10G-24GB",),
    "L40S": ("L40S-48GB",),
    "TRAINIUM": ("Trainium1",),
    "TRAINIUM1": ("Trainium1",),
    "INFERENTIA2": ("Inferentia2",),
}

_GCP_ACCEL = re.compile(r"^(?:nvidia[-_])?(?:tesla[-_])?", re.I)
_SKY = re.compile(r"^\s*([A-Za-z0-9_.-]+?)\s*(?::\s*(\d+))?\s*$")


def _accel_key(text: str) -> str:
    return _GCP_ACCEL.sub("", text.strip()).replace("_", "-").upper()


# --------------------------------------------------------------------------- the catalogue

class Catalogue:
    """Read-only view of the bundled catalogue plus validated additions and pricing settings."""

    def __init__(self, instances: Iterable[Instance], gpu_models: Mapping[str, GpuModel],
                 pricing: Mapping | None = None, models: Iterable[Mapping] = (), commitments: Iterable[Mapping] = (),
                 overlay_source: str | None = None, sagemaker: Iterable[Mapping] = ()):
        self._instances: tuple[Instance, ...] = tuple(instances)
        # (ml.* name, use) -> SageMakerPrice; later rows (overlay after bundled) win
        self._sagemaker: dict[tuple[str, str], SageMakerPrice] = {}
        for raw in sagemaker:
            row = SageMakerPrice(raw["instance"].strip().lower(), raw["use"], float(raw["usd_per_hour"]), raw["region"],
                                 raw["as_of"], raw["source"])
            self._sagemaker[(row.instance, row.use)] = row
        self._gpus = dict(gpu_models)  # catalogue gpu_model value -> GpuModel
        self._pricing = _check_pricing(pricing)
        self.models: tuple[Mapping, ...] = tuple(models)  # known-model additions for gpulint.resolve.modelsize
        # later rows win: bundled first, then overlay rows, then additions
        self._commitments: tuple[dict, ...] = tuple(reversed(tuple(commitments)))
        self.overlay_source = overlay_source  # where an applied price overlay came from, for reports
        self._exact: dict[tuple[str, str], Instance] = {}
        self._folded: dict[tuple[str, str], Instance] = {}
        for inst in self._instances:
            self._exact[(inst.provider, inst.name)] = inst
            self._folded[(inst.provider, _fold(inst.provider, inst.name))] = inst

    @classmethod
    def load(cls, additions: Iterable[Mapping] = (), pricing: Mapping | None = None,
             overlay: Mapping | None = None) -> "Catalogue":
        """The bundled catalogue, then a price overlay (``gpulint.pricing.overlay.read_overlay``: its prices replace
        the bundled ones of the instances it names), then each addition in order (same provider+name
        replaces an entry)."""
        data = _bundled()
        defaults = data.get("defaults", {})
        entries: dict[tuple[str, str], Instance] = {}
        gpus: dict[str, GpuModel] = {}
        models: list[Mapping] = []
        commitments: list[dict] = [_commitment(raw) for raw in data.get("commitments", ())]
        for raw in data["gpu_models"]:
            model = _gpu_model(raw)
            for value in raw.get("catalog_gpu_model_values") or [raw["name"]]:
                gpus[value] = model
        for raw in data["instances"]:
            inst = _instance(raw, defaults)
            entries[(inst.provider, inst.name)] = inst
        sagemaker: list[Mapping] = list(data.get("sagemaker_prices") or ())
        if overlay:
            _apply_overlay(entries, commitments, overlay)
            sagemaker.extend(overlay.get("sagemaker", ()))
        for i, addition in enumerate(additions or ()):
            _validate_addition(i, addition)
            for raw in addition.get("gpu_models", ()):
                model = _gpu_model(raw)
                for value in raw.get("catalog_gpu_model_values") or [raw["name"]]:
                    gpus[value] = model
            for raw in addition.get("instances", ()):
                inst = _instance(raw, {})  # no bundled region/date is claimed for a user's entry
                entries[(inst.provider, inst.name)] = inst
            models.extend(addition.get("models", ()))
            commitments.extend(_commitment(raw) for raw in addition.get("commitments", ()))
        return cls(entries.values(), gpus, pricing, models, commitments,
                   overlay_source=(overlay or {}).get("path") if overlay else None, sagemaker=sagemaker)

    # -- lookup ------------------------------------------------------------------

    def instances(self) -> tuple[Instance, ...]:
        return self._instances

    def resolve(self, name: Any, provider: str | None = None, accelerator: Mapping | None = None) -> Instance | None:
        """The catalogue entry for an instance type as written in infra or SDK code, or None.

        Exact names first; then SageMaker ``ml.`` names to their EC2 twin; Azure sizes
        case-insensitively with or without ``Standard_``; GCP ``a2-``/``a3-``/``g2-`` types
        directly and ``n1-*`` machine types only together with ``accelerator``
        (``{"type": "nvidia-tesla-v100", "count": 4}``) as the ``n1+<type>x<count>`` entry.
        """
        if not isinstance(name, str) or not name.strip():
            return None
        name = name.strip()
        providers = (provider,) if provider else ("aws", "gcp", "azure") + tuple(
            sorted({i.provider for i in self._instances} - {"aws", "gcp", "azure"}))
        for prov in providers:
            hit = self._exact.get((prov, name)) or self._folded.get((prov, _fold(prov, name)))
            if hit:
                return hit
        low = name.lower()
        if low.startswith("ml.") and (provider in (None, "aws")):
            twin = self._folded.get(("aws", low[3:]))
            if twin:
                return twin
        if low.startswith("n1-") and provider in (None, "gcp"):
            return self._gcp_n1(accelerator)
        return None

    def _gcp_n1(self, accelerator: Mapping | None) -> Instance | None:
        if not isinstance(accelerator, Mapping):
            return None
        kind, count = accelerator.get("type"), accelerator.get("count")
        if not isinstance(kind, str) or isinstance(count, bool) or not isinstance(count, int):
            return None  # an n1 VM's GPUs cannot be decided without both
        kind = kind.strip().lower().replace("_", "-")
        if not kind.startswith("nvidia-"):
            kind = "nvidia-tesla-" + kind  # "v100" -> the GCP accelerator name
        return self._exact.get(("gcp", f"n1+{kind}x{count}"))

    def gpu(self, instance: Instance | None) -> GpuModel | None:
        return self._gpus.get(instance.gpu_model) if instance is not None else None

    def by_accelerator(self, type: str, count: int | None = None, provider: str | None = None) -> list[Instance]:
        """Instances with the named accelerator (SkyPilot ``A100:8``, ``A100-80GB``, ``H100``, GCP
        ``nvidia-tesla-v100``, or a catalogue gpu_model name), in catalogue order."""
        if not isinstance(type, str):
            return []
        m = _SKY.match(type)
        if not m:
            return []
        if count is None and m.group(2):
            count = int(m.group(2))
        key = _accel_key(m.group(1))
        wanted = {v.upper() for v in _ACCEL_ALIASES.get(key, ())}
        if not wanted:  # a full model name such as "A100-SXM4-80GB" or "NVIDIA-H100-SXM5-80GB"
            wanted = {g.upper() for g in self._gpus if g.upper() == key}
        return [
            i for i in self._instances
            if i.gpu_model.upper() in wanted
            and (count is None or i.gpu_count == count)
            and (provider is None or i.provider == provider)
        ]

    # -- prices ------------------------------------------------------------------

    def price(self, instance: Instance, capacity: str = "on-demand") -> Price:
        """The hourly price of ``instance`` under the pricing settings; ``usd_per_hour`` None when unknown."""
        if capacity not in ("on-demand", "spot"):
            raise CatalogueError(f"price capacity must be 'on-demand' or 'spot', got {capacity!r}")
        notes: list[str] = []
        region = instance.region
        wanted = self._pricing.get("region")
        if isinstance(wanted, Mapping):
            wanted = wanted.get(instance.provider)
        if wanted:
            if region and _same_region(wanted, region):
                region = wanted
            else:
                notes.append(f"catalogue price for {region or 'an unrecorded region'}; the configured region "
                             f"{wanted} is not in the catalogue and its price may differ")
        source = instance.source
        if capacity == "spot":
            source = instance.spot_source or instance.source
            spot = instance.spot_usd_per_hour_observed
            if spot is None:
                usd = None
                notes.insert(0, "no spot price observed in the catalogue")
            elif instance.provider == "gcp" and instance.name.startswith("n1+"):
                usd = None  # the GCP N1 spot figure covers the GPUs only, not the VM
                notes.insert(0, f"observed spot figure {list(spot)} covers only the attached GPUs; the n1 VM part is not recorded")
            else:
                lo, hi = spot
                usd = round((lo + hi) / 2, 6)
                notes.insert(0, f"spot: midpoint of observed range [{lo}, {hi}]; spot prices move constantly")
            return Price(usd, capacity, region, instance.spot_as_of or instance.as_of, source, "; ".join(notes))
        override = self._pricing.get("prices", {}).get(instance.name)
        if override is not None:
            # The user's own figure: no catalogue region/date applies and no discount is stacked on it.
            return Price(float(override), capacity, wanted or region, "configuration", "[tool.gpulint] pricing.prices", "from config")
        usd = instance.on_demand_usd_per_hour
        if usd is None:
            if instance.provider == "gcp" and instance.name.startswith("n1+"):
                notes.insert(0, "GCP N1 price = the chosen n1 machine type + GPUs; the machine part is not in the catalogue")
            else:
                notes.insert(0, "no on-demand list price in the catalogue")
        else:
            discount = self._pricing.get("discount_pct")
            if discount:
                usd = round(usd * (1 - discount / 100), 6)
                notes.insert(0, f"negotiated discount {discount:g}% from config")
        return Price(usd, capacity, region, instance.as_of, source, "; ".join(notes))

    def sagemaker_price(self, name: str, use: str) -> Price | None:
        """SageMaker's own on-demand price of the ``ml.*`` instance ``name`` for ``use`` (a key of SAGEMAKER_USES),
        under the pricing settings, or None when neither the bundled table, an imported AmazonSageMaker price list
        nor ``[tool.gpulint.pricing] prices`` (keyed by the ml.* name) has one."""
        low = name.strip().lower() if isinstance(name, str) else ""
        override = next((usd for key, usd in self._pricing.get("prices", {}).items() if key.strip().lower() == low), None)
        if override is not None:
            return Price(float(override), "on-demand", None, "configuration", "[tool.gpulint] pricing.prices", "from config")
        row = self._sagemaker.get((low, use))
        if row is None:
            return None
        notes = [f"SageMaker {SAGEMAKER_USES.get(use, use)} list price (not the EC2 price of the same hardware)"]
        usd = row.usd_per_hour
        wanted = self._pricing.get("region")
        if isinstance(wanted, Mapping):
            wanted = wanted.get("aws")
        if wanted and not _same_region(wanted, row.region):
            notes.append(f"price for {row.region}; the configured region {wanted} is not in the table and its price may differ")
        discount = self._pricing.get("discount_pct")
        if discount:
            usd = round(usd * (1 - discount / 100), 6)
            notes.insert(0, f"negotiated discount {discount:g}% from config")
        return Price(usd, "on-demand", row.region, row.as_of, row.source, "; ".join(notes))

    def sagemaker_prices(self) -> tuple[SageMakerPrice, ...]:
        """Every SageMaker price in use (bundled, then imported), by instance and use."""
        return tuple(v for _, v in sorted(self._sagemaker.items()))

    def usd_per_pflop_hour(self, instance: Instance) -> float | None:
        """Price per hour over aggregate dense 16-bit tensor peak in PFLOPS (training-facts §9); lower is
        cheaper per unit of peak work. Uses this catalogue's pricing settings; None when either is unknown."""
        gpu = self.gpu(instance)
        usd = self.price(instance).usd_per_hour
        if gpu is None or gpu.half_tflops is None or not usd:
            return None
        return usd / (instance.gpu_count * gpu.half_tflops / 1000)

    # -- months, commitments, age ------------------------------------------------

    @property
    def hours_per_month(self) -> float:
        """Hours an always-on instance runs in a month: ``[tool.gpulint.pricing] hours-per-month``, default 730."""
        return self._pricing["hours_per_month"]

    def monthly(self, usd_per_hour: float | None) -> float | None:
        """``usd_per_hour`` over a month of ``hours_per_month`` hours, rounded to cents; None stays None."""
        return None if usd_per_hour is None else round(usd_per_hour * self.hours_per_month, 2)

    @property
    def max_age_days(self) -> int:
        """Age beyond which ``gpulint catalogue`` warns that prices are stale (``max-age-days``, default 180)."""
        return self._pricing["max_age_days"]

    def commitment(self, instance: Instance, term: str) -> Commitment | None:
        """The 1- or 3-year commitment price of ``instance`` (``term`` "1yr" or "3yr"), or None when the catalogue has none.

        The most specific row wins: this instance (exact committed price, ``up_to`` False), then an instance
        family glob, then the provider (both usually a provider's stated maximum, ``up_to`` True). Rows of
        term "any" answer both terms. Overlay and addition rows win over bundled ones of the same rank."""
        if term not in TERMS:
            raise CatalogueError(f"commitment term must be one of {', '.join(TERMS)}, got {term!r}")
        best: tuple[int, Commitment] | None = None
        for row in self._commitments:
            c = row["commitment"]
            if row["provider"] != instance.provider or c.term not in (term, "any"):
                continue
            if row["instance"] is not None:
                if _fold(instance.provider, row["instance"]) != _fold(instance.provider, instance.name):
                    continue
                rank = 3
            elif row["family"] is not None:
                if not fnmatch.fnmatchcase(instance.name.lower(), row["family"].lower()):
                    continue
                rank = 2
            else:
                rank = 1
            rank = rank * 2 + (c.term == term)  # a term-specific row beats an "any" row of the same scope
            if best is None or rank > best[0]:
                best = (rank, c)
        return best[1] if best else None

    def committed(self, instance: Instance) -> str | None:
        """The ``[tool.gpulint.pricing] commitments`` pattern that says the user already holds a commitment
        covering ``instance`` ("p4d.24xlarge", "g5.*", "aws:*"), or None."""
        for pattern in self._pricing["commitments"]:
            prov, sep, glob = pattern.partition(":")
            if not sep:
                prov, glob = "", pattern
            if prov and prov.lower() != instance.provider:
                continue
            if fnmatch.fnmatchcase(_fold(instance.provider, instance.name), _fold(instance.provider, glob)):
                return pattern
        return None

    def price_ages(self) -> list[PriceAge]:
        """Per provider, the oldest date among the on-demand prices in use (bundled or overlay)."""
        out: dict[str, list] = {}
        for inst in self._instances:
            if inst.on_demand_usd_per_hour is None:
                continue
            slot = out.setdefault(inst.provider, [None, 0, 0])
            d = price_date(inst.as_of)
            if d is None:
                slot[2] += 1
            else:
                slot[1] += 1
                slot[0] = d if slot[0] is None or d < slot[0] else slot[0]
        return [PriceAge(p, v[0], v[1], v[2]) for p, v in sorted(out.items())]


def _apply_overlay(entries: dict[tuple[str, str], Instance], commitments: list[dict], overlay: Mapping) -> None:
    """Replace bundled prices by an overlay's (validated by gpulint.pricing.overlay); rows for unknown instances are kept out."""
    folded = {(p, _fold(p, n)): key for (p, n), key in ((k, k) for k in entries)}
    for row in overlay.get("prices", ()):
        key = folded.get((row["provider"], _fold(row["provider"], row["instance"])))
        if key is None:
            continue
        inst = entries[key]
        changes: dict[str, Any] = {"on_demand_usd_per_hour": row.get("on_demand_usd_per_hour"),
                                   "region": row.get("region") or inst.region, "as_of": row["as_of"], "source": row["source"]}
        if "spot_usd_per_hour_observed" in row:
            spot = row["spot_usd_per_hour_observed"]
            changes.update(spot_usd_per_hour_observed=tuple(spot) if spot else None, spot_as_of=row["as_of"],
                           spot_source=row["source"])
        elif not _same_region(changes["region"], inst.region or ""):
            # the list has no spot prices and the bundled observation is for another region: drop it
            changes.update(spot_usd_per_hour_observed=None, spot_as_of=None)
        # else: the list has no spot prices; the bundled observation of the same region stays, with its own date
        entries[key] = replace(inst, **changes)
    for row in overlay.get("commitments", ()):
        commitments.append(_commitment(row))


def _fold(provider: str, name: str) -> str:
    low = name.strip().lower()
    if provider == "azure" and low.startswith("standard_"):
        low = low[len("standard_"):]
    return low


def _same_region(configured: str, catalogue_region: str) -> bool:
    # catalogue regions may carry a remark: "us-east-1 (spot: us-east-2)", "us-central1 (A3: us-east4)"
    return catalogue_region.split(" (")[0].strip().lower() == configured.strip().lower()


def write_json_copy() -> str:
    """Regenerate ``instances.json`` from ``instances.yaml`` (run ``python -m gpulint.pricing.catalogue``)."""
    path = resources.files("gpulint").joinpath(_DATA, _JSON_NAME)
    text = json.dumps(load_bundled_yaml(), ensure_ascii=False, separators=(",", ":"), sort_keys=False) + "\n"
    with open(str(path), "w", encoding="utf-8") as fh:
        fh.write(text)
    return str(path)


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    print(f"wrote {write_json_copy()}")
