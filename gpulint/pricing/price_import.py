"""Importers for price lists a user downloaded: ``gpulint catalogue import FILE``.

Two families of files are read, both as CSV with the standard library:

* a SkyPilot catalogue ``vms.csv`` (github:skypilot-org/skypilot-catalog
  ``catalogs/v*/{aws,gcp,azure}/vms.csv``). Columns by header name:
  ``InstanceType, Price, SpotPrice, Region`` and, where the cloud has them,
  ``AvailabilityZone, AcceleratorName, AcceleratorCount``. AWS and Azure rows price
  a whole instance per zone; GCP rows price a VM, and separate rows with an empty
  ``InstanceType`` price the attached accelerators, so a GCP machine type is its VM
  row plus its GPU row (the bundled Local SSD is not in the file).
* an AWS price-list CSV from the Price List bulk API
  (``https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/<region>/index.csv``),
  five metadata lines (``FormatVersion``, ``Disclaimer``, ``Publication Date``,
  ``Version``, ``OfferCode``) and a header row. ``OfferCode`` AmazonEC2: on-demand rows
  are selected as aws/karpenter-provider-aws selects them (Linux, Shared tenancy, no
  pre-installed software, CapacityStatus Used, MarketOption OnDemand) and standard
  Reserved Instance rows give 1-/3-year commitment prices. ``OfferCode``
  AmazonComputeSavingsPlan (``.../savingsPlan/v1.0/aws/AWSComputeSavingsPlan/current/<region>/index.csv``):
  EC2 Instance Savings Plans rates become commitment prices. ``OfferCode`` AmazonSageMaker
  (``.../offers/v1.0/aws/AmazonSageMaker/current/<region>/index.csv``): the on-demand hourly rows of product
  family "ML Instance" become SageMaker's own prices of each ``ml.*`` instance per component (Training, Hosting,
  Notebook, Processing, Transform); SageMaker lists these above the EC2 price of the same hardware.

Only instances the catalogue knows are imported (their GPU facts come from it).
Nothing here touches the network.
"""
from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from gpulint.pricing.catalogue import SAGEMAKER_USES, Catalogue, Instance, price_date

__all__ = ["FORMATS", "ImportResult", "PriceImportError", "import_price_file"]

FORMATS = ("auto", "skypilot", "aws")
_HOURS = {"1yr": 8760.0, "3yr": 26280.0}


class PriceImportError(ValueError):
    """The file cannot be imported; the message says why and what to pass instead."""


@dataclass
class ImportResult:
    format: str  # "skypilot-vms" | "aws-price-list" | "aws-savings-plans" | "aws-sagemaker-price-list"
    provider: str
    region: str | None
    as_of: str  # YYYY-MM-DD
    as_of_basis: str
    sha256: str
    prices: list[dict] = field(default_factory=list)
    commitments: list[dict] = field(default_factory=list)
    sagemaker: list[dict] = field(default_factory=list)  # SageMaker's own prices: {instance: "ml.*", use, usd_per_hour, ...}
    skipped: list[str] = field(default_factory=list)  # one line per reason, with counts
    missing: list[str] = field(default_factory=list)  # catalogue instances of the provider the file does not price

    def record(self, file: str, imported: _dt.date) -> dict:
        """The overlay's ``imports`` entry for this import."""
        return {"file": file, "imported": imported.isoformat(), "format": self.format, "provider": self.provider, "region": self.region, "as_of": self.as_of,
                "as_of_basis": self.as_of_basis, "sha256": self.sha256, "prices": len(self.prices),
                "commitments": len(self.commitments), **({"sagemaker": len(self.sagemaker)} if self.sagemaker else {})}


# --------------------------------------------------------------------------- entry point

def import_price_file(path: Path, catalogue: Catalogue, *, fmt: str = "auto", provider: str | None = None,
                      region: str | None = None, as_of: str | None = None, regions: dict | None = None) -> ImportResult:
    """Read ``path`` and return the overlay rows it yields. ``region`` picks the region to import
    (default: ``regions[provider]`` from the pricing config, else the only region in the file, else the
    catalogue's region); ``as_of`` (YYYY-MM-DD) overrides the date taken from the file."""
    path = Path(path)
    if fmt not in FORMATS:
        raise PriceImportError(f"unknown source format {fmt!r} (known: {', '.join(FORMATS)})")
    if as_of is not None and (price_date(as_of) is None or price_date(as_of).isoformat() != as_of):
        raise PriceImportError(f"--as-of {as_of!r}: expected a date YYYY-MM-DD")
    if not path.is_file():
        raise PriceImportError(f"{path}: no such file")
    try:
        digest = _sha256(path)
        with open(path, encoding="utf-8-sig", newline="") as fh:
            first = fh.read(64).lstrip().replace('"', "")
            fh.seek(0)
            is_aws_list = first.startswith("FormatVersion,")
            if fmt == "aws" and not is_aws_list:
                raise PriceImportError(f"{path}: not an AWS price-list CSV (it should start with a FormatVersion line)")
            if fmt == "skypilot" and is_aws_list:
                raise PriceImportError(f"{path}: this is an AWS price-list CSV, not a SkyPilot vms.csv (use --source-format aws)")
            if is_aws_list:
                result = _aws_price_list(path, fh, catalogue, region, regions or {}, as_of, digest)
            else:
                result = _skypilot(path, fh, catalogue, provider, region, regions or {}, as_of, digest)
    except UnicodeDecodeError:
        raise PriceImportError(f"{path}: not UTF-8 text; expected a CSV price list") from None
    except csv.Error as exc:
        raise PriceImportError(f"{path}: not readable as CSV: {exc}") from None
    except OSError as exc:
        raise PriceImportError(f"{path}: cannot read: {exc}") from None
    known = {r["instance"] for r in result.prices} | {r["instance"] for r in result.commitments}
    if result.sagemaker:
        known = {r["instance"] for r in result.sagemaker}
        result.missing = sorted(i.sagemaker_name for i in catalogue.instances()
                                if i.provider == "aws" and i.sagemaker_name and i.sagemaker_name not in known)
    else:
        result.missing = sorted(i.name for i in catalogue.instances() if i.provider == result.provider and i.name not in known)
    return result


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _file_date(path: Path, as_of: str | None) -> tuple[str, str]:
    if as_of:
        return as_of, "--as-of"
    mtime = _dt.datetime.fromtimestamp(path.stat().st_mtime, tz=_dt.timezone.utc).date()
    return mtime.isoformat(), "the file's modification time (a SkyPilot vms.csv records no date; pass --as-of to set it)"


def _float(text: str | None) -> float | None:
    try:
        v = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return v if v is not None and not math.isnan(v) and v >= 0 else None  # NaN and negatives are not prices


def _counted(reasons: dict[str, int]) -> list[str]:
    return [f"{n} row(s): {why}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])]


def _pick_region(provider: str, explicit: str | None, regions: dict, in_file: set[str], catalogue: Catalogue) -> str:
    """--region, else the configured region (``{provider: region}``, or ``{"*": region}`` for one name for all
    providers, used only when the file has it), else the file's only region, else the catalogue's."""
    if explicit:
        return explicit
    configured = regions.get(provider) or regions.get("*")
    if isinstance(configured, str) and configured and (configured in in_file or (regions.get(provider) and not in_file)):
        return configured
    if len(in_file) == 1:
        return next(iter(in_file))
    defaults = {i.region.split(" (")[0] for i in catalogue.instances() if i.provider == provider and i.region}
    if len(defaults) == 1:
        return next(iter(defaults))
    return min(defaults) if defaults else min(in_file)


# --------------------------------------------------------------------------- SkyPilot vms.csv

# catalogue GCP machine series -> SkyPilot accelerator name of its attached GPUs
_GCP_ACCEL = (("a2-ultragpu-", "A100-80GB"), ("a2-highgpu-", "A100"), ("a2-megagpu-", "A100"), ("a3-highgpu-", "H100"),
              ("a3-megagpu-", "H100-MEGA"), ("a3-ultragpu-", "H200"), ("g2-standard-", "L4"))


def _skypilot(path: Path, fh: TextIO, catalogue: Catalogue, provider: str | None, region: str | None, regions: dict,
              as_of: str | None, digest: str) -> ImportResult:
    reader = csv.DictReader(fh)
    cols = set(reader.fieldnames or ())
    need = {"InstanceType", "Price", "SpotPrice", "Region"}
    if not need <= cols:
        raise PriceImportError(f"{path}: not a SkyPilot vms.csv: missing column(s) {', '.join(sorted(need - cols))} "
                           "(expected the header of catalogs/v*/<cloud>/vms.csv)")
    rows = list(reader)
    provider = provider or _guess_provider(path, rows, catalogue)
    by_name = {i.name.lower(): i for i in catalogue.instances() if i.provider == provider}
    date, basis = _file_date(path, as_of)
    in_file = {r["Region"] for r in rows if r.get("Region") and r.get("InstanceType", "").lower() in by_name}
    target = _pick_region(provider, region, regions, in_file, catalogue)
    result = ImportResult("skypilot-vms", provider, target, date, basis, digest)
    skipped: dict[str, int] = defaultdict(int)
    src = f"SkyPilot vms.csv {path.name} (sha256 {digest[:12]}), {target}, imported by gpulint catalogue import"
    if provider == "gcp":
        _skypilot_gcp(rows, by_name, target, date, src, result, skipped)
    else:
        per: dict[str, list[dict]] = defaultdict(list)
        for r in rows:
            name = (r.get("InstanceType") or "").strip()
            if name.lower() not in by_name:
                continue
            if r.get("Region") != target:
                skipped[f"other regions than {target}"] += 1
                continue
            per[by_name[name.lower()].name].append(r)
        for name, group in sorted(per.items()):
            od = [v for v in (_float(r.get("Price")) for r in group) if v]
            spot = [v for v in (_float(r.get("SpotPrice")) for r in group) if v]
            if not od and not spot:
                skipped["no price in the row"] += len(group)
                continue
            if od and max(od) - min(od) > 1e-6:
                skipped[f"{name}: zones disagree on the on-demand price ({min(od)}-{max(od)}); the highest is used"] += 1
            result.prices.append(_price_row(provider, name, target, max(od) if od else None,
                                            (min(spot), max(spot)) if spot else None, date, src))
    result.skipped = _counted(skipped)
    if not result.prices:
        raise PriceImportError(f"{path}: no {provider} instance of the catalogue is priced in region {target}"
                           + (f" (the file prices them in {', '.join(sorted(in_file)[:6])}; pass --region)" if in_file else "")
                           + (f"; skipped: {'; '.join(result.skipped)}" if result.skipped else ""))
    return result


def _skypilot_gcp(rows: list[dict], by_name: dict[str, Instance], target: str, date: str, src: str,
                  result: ImportResult, skipped: dict[str, int]) -> None:
    vm: dict[str, list[dict]] = defaultdict(list)
    accel: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for r in rows:
        if r.get("Region") != target:
            continue
        name = (r.get("InstanceType") or "").strip().lower()
        if name:
            if name in by_name:
                vm[name].append(r)
        elif r.get("AcceleratorName"):
            try:
                count = int(float(r.get("AcceleratorCount") or 0))
            except ValueError:
                continue
            accel[(r["AcceleratorName"].strip(), count)].append(r)
    for name, group in sorted(vm.items()):
        inst = by_name[name]
        gpu_name = next((g for prefix, g in _GCP_ACCEL if inst.name.startswith(prefix)), None)
        if gpu_name is None:
            skipped[f"{inst.name}: no accelerator mapping"] += 1
            continue
        vm_od = max((v for v in (_float(r.get("Price")) for r in group) if v), default=None)
        vm_spot = [v for v in (_float(r.get("SpotPrice")) for r in group) if v]
        gpu_rows = accel.get((gpu_name, inst.gpu_count), [])
        g_od = max((v for v in (_float(r.get("Price")) for r in gpu_rows) if v), default=None)
        g_spot = [v for v in (_float(r.get("SpotPrice")) for r in gpu_rows) if v]
        if vm_od is None or g_od is None:
            skipped[f"{inst.name}: VM or {gpu_name} x{inst.gpu_count} row missing in {target}"] += 1
            continue
        if g_spot and g_od < max(g_spot):
            # an on-demand figure below the spot price of the same GPUs is not a list price (the catalogue's A3 note)
            skipped[f"{inst.name}: {gpu_name} x{inst.gpu_count} on-demand {g_od} is below its spot price {max(g_spot)} in {target}, "
                    "so it is not an on-demand list price"] += 1
            continue
        spot = None
        if vm_spot and g_spot:
            spot = (round(min(vm_spot) + min(g_spot), 6), round(max(vm_spot) + max(g_spot), 6))
        result.prices.append(_price_row("gcp", inst.name, target, round(vm_od + g_od, 6), spot, date,
                                        src + f"; VM row + {gpu_name} x{inst.gpu_count} row, bundled Local SSD not included"))


def _guess_provider(path: Path, rows: list[dict], catalogue: Catalogue) -> str:
    for part in reversed(path.resolve().parts[:-1]):
        if part in ("aws", "gcp", "azure"):
            return part
    names = {(r.get("InstanceType") or "").strip().lower() for r in rows[:200000]}
    hits: dict[str, int] = defaultdict(int)
    for inst in catalogue.instances():
        if inst.name.lower() in names:
            hits[inst.provider] += 1
    if not hits:
        raise PriceImportError(f"{path}: no instance type of the catalogue appears in the file, so its cloud is unknown; "
                           "pass --provider aws|gcp|azure")
    best = sorted(hits.items(), key=lambda kv: -kv[1])
    if len(best) > 1 and best[0][1] == best[1][1]:
        raise PriceImportError(f"{path}: instance types of several clouds appear; pass --provider")
    return best[0][0]


def _price_row(provider: str, name: str, region: str, od: float | None, spot: tuple[float, float] | None,
               date: str, source: str) -> dict:
    return {"provider": provider, "instance": name, "region": region,
            "on_demand_usd_per_hour": round(od, 6) if od is not None else None,
            "spot_usd_per_hour_observed": [round(spot[0], 6), round(spot[1], 6)] if spot else None,
            "as_of": date, "source": source}


# --------------------------------------------------------------------------- AWS price-list CSV

def _aws_metadata(rows: Iterator[list[str]], path: Path) -> tuple[dict, list[str]]:
    meta: dict[str, str] = {}
    for cells in rows:
        if cells and cells[0] == "SKU":
            return meta, cells
        if len(cells) >= 2:
            meta[cells[0]] = cells[1]
        if len(meta) > 20:
            break
    raise PriceImportError(f"{path}: no header row (SKU, ...) after the price list's metadata lines")


def _aws_price_list(path: Path, fh: TextIO, catalogue: Catalogue, region: str | None, regions: dict, as_of: str | None,
                    digest: str) -> ImportResult:
    rows = csv.reader(fh)
    meta, header = _aws_metadata(rows, path)
    offer = meta.get("OfferCode", "")
    published = meta.get("Publication Date", "")
    if as_of:
        date, basis = as_of, "--as-of"
    elif price_date(published):
        date, basis = price_date(published).isoformat(), f"the file's Publication Date {published}"
    else:
        date, basis = _file_date(path, None)
    reader = (dict(zip(header, cells)) for cells in rows)
    aws = {i.name: i for i in catalogue.instances() if i.provider == "aws"}
    if offer == "AmazonEC2":
        return _aws_ec2(path, reader, header, aws, catalogue, region, regions, date, basis, digest, meta)
    if offer in ("AmazonComputeSavingsPlan", "AWSComputeSavingsPlan", "ComputeSavingsPlans"):
        return _aws_savings_plans(path, reader, header, aws, catalogue, region, regions, date, basis, digest, meta)
    if offer == "AmazonSageMaker":
        return _aws_sagemaker(path, reader, header, aws, catalogue, region, regions, date, basis, digest, meta)
    raise PriceImportError(f"{path}: OfferCode {offer or '(none)'}: only AmazonEC2 and AmazonSageMaker price lists and "
                       "AmazonComputeSavingsPlan rate files are read")


def _aws_region(row: dict) -> str:
    return row.get("Region Code") or row.get("DiscountedRegionCode") or row.get("Location") or ""


def _aws_ec2(path, reader, header, aws, catalogue, region, regions, date, basis, digest, meta) -> ImportResult:
    need = {"TermType", "PricePerUnit", "Unit", "Instance Type", "Operating System", "Tenancy"}
    if not need <= set(header):
        raise PriceImportError(f"{path}: missing price-list column(s) {', '.join(sorted(need - set(header)))}")
    skipped: dict[str, int] = defaultdict(int)
    on_demand: dict[tuple[str, str], float] = {}
    reserved: dict[tuple[str, str, str, str], dict] = defaultdict(lambda: {"hourly": 0.0, "upfront": 0.0})
    regions_seen: set[str] = set()
    for row in reader:
        name = row.get("Instance Type")
        if name not in aws:
            continue
        if (row.get("Operating System") != "Linux" or row.get("Tenancy") != "Shared"
                or row.get("Pre Installed S/W", "NA") != "NA" or row.get("CapacityStatus", "Used") != "Used"
                or row.get("Currency", "USD") != "USD" or row.get("License Model", "No License required") != "No License required"):
            continue  # other operating systems, tenancies, software bundles, reservations
        if row.get("MarketOption", "OnDemand") not in ("OnDemand", ""):
            continue  # Capacity Block rows
        reg = _aws_region(row)
        regions_seen.add(reg)
        price = _float(row.get("PricePerUnit"))
        if price is None:
            skipped["unreadable PricePerUnit"] += 1
            continue
        term = row.get("TermType")
        if term == "OnDemand" and row.get("Unit") == "Hrs":
            if price > 0:
                on_demand[(name, reg)] = price
        elif term == "Reserved" and row.get("OfferingClass", "standard") == "standard":
            length = row.get("LeaseContractLength", "")
            option = row.get("PurchaseOption", "")
            if length not in _HOURS or not option:
                continue
            slot = reserved[(name, reg, length, option)]
            if row.get("Unit") == "Hrs":
                slot["hourly"] += price
            elif row.get("Unit") == "Quantity":
                slot["upfront"] += price
    target = _pick_region("aws", region, regions, regions_seen, catalogue)
    src = (f"AWS price list {path.name} (OfferCode AmazonEC2, Version {meta.get('Version', '?')}, sha256 {digest[:12]}), "
           f"{target}, Linux/Shared on-demand rows")
    result = ImportResult("aws-price-list", "aws", target, date, basis, digest)
    for (name, reg), usd in sorted(on_demand.items()):
        if reg != target:
            continue
        row = _price_row("aws", name, target, usd, None, date, src)
        del row["spot_usd_per_hour_observed"]  # the price list has no spot prices: the catalogue's own observation stays
        result.prices.append(row)
    od_of = {name: usd for (name, reg), usd in on_demand.items() if reg == target}
    for (name, reg, length, option), slot in sorted(reserved.items()):
        if reg != target or option != "No Upfront":
            continue  # No Upfront: the commitment a team can take without paying in advance
        eff = slot["hourly"] + slot["upfront"] / _HOURS[length]
        od = od_of.get(name) or aws[name].on_demand_usd_per_hour
        if not od or eff <= 0 or eff >= od:
            skipped[f"{name} {length} reserved rate not below on-demand"] += 1
            continue
        result.commitments.append({
            "provider": "aws", "instance": name, "region": target, "term": length,
            "usd_per_hour": round(eff, 6), "on_demand_usd_per_hour": round(od, 6),
            "discount_pct": round(100 * (1 - eff / od), 1), "plan": "Standard Reserved Instance, No Upfront",
            "as_of": date, "source": src.replace("Linux/Shared on-demand rows", "Reserved standard No Upfront rows")})
    result.skipped = _counted(skipped)
    if not result.prices and not result.commitments:
        raise PriceImportError(f"{path}: no Linux on-demand or reserved row for an AWS instance of the catalogue in {target}"
                           + (f" (the file has {', '.join(sorted(regions_seen)[:6])}; pass --region)" if regions_seen else ""))
    return result


def _aws_savings_plans(path, reader, header, aws, catalogue, region, regions, date, basis, digest, meta) -> ImportResult:
    need = {"DiscountedRate", "DiscountedInstanceType", "LeaseContractLength", "PurchaseOption"}
    if not need <= set(header):
        raise PriceImportError(f"{path}: missing Savings Plans column(s) {', '.join(sorted(need - set(header)))}")
    rates: dict[tuple[str, str, str, str], float] = {}
    regions_seen: set[str] = set()
    for row in reader:
        name = row.get("DiscountedInstanceType")
        if name not in aws or row.get("DiscountedServiceCode", "AmazonEC2") != "AmazonEC2":
            continue
        if row.get("DiscountedOperation", "RunInstances") != "RunInstances" or "BoxUsage:" not in row.get("DiscountedUsageType", "BoxUsage:"):
            continue  # Linux/UNIX on shared tenancy only
        if row.get("PurchaseOption") != "No Upfront":
            continue
        years = row.get("LeaseContractLength", "")
        term = {"1": "1yr", "3": "3yr"}.get(years.strip())
        if term is None:
            continue
        plan = {"EC2InstanceSavingsPlans": "EC2 Instance Savings Plan, No Upfront",
                "ComputeSavingsPlans": "Compute Savings Plan, No Upfront"}.get(row.get("Product Family", ""), "Savings Plan, No Upfront")
        reg = _aws_region(row)
        regions_seen.add(reg)
        rate = _float(row.get("DiscountedRate"))
        if rate:
            rates[(name, reg, term, plan)] = rate
    target = _pick_region("aws", region, regions, regions_seen, catalogue)
    src = (f"AWS Savings Plans rates {path.name} (Version {meta.get('Version', '?')}, sha256 {digest[:12]}), {target}, "
           "Linux shared-tenancy No Upfront rows")
    result = ImportResult("aws-savings-plans", "aws", target, date, basis, digest)
    skipped: dict[str, int] = defaultdict(int)
    for (name, reg, term, plan), rate in sorted(rates.items()):
        if reg != target:
            continue
        inst = aws[name]
        od = inst.on_demand_usd_per_hour
        if not od or rate >= od:
            skipped[f"{name}: no catalogue on-demand price to compare with"] += 1
            continue
        result.commitments.append({
            "provider": "aws", "instance": name, "region": target, "term": term, "usd_per_hour": round(rate, 6),
            "on_demand_usd_per_hour": od, "discount_pct": round(100 * (1 - rate / od), 1), "plan": plan,
            "as_of": date, "source": src + f"; discount against the catalogue's on-demand price ({inst.as_of})"})
    result.skipped = _counted(skipped)
    if not result.commitments:
        raise PriceImportError(f"{path}: no No Upfront Linux rate for an AWS instance of the catalogue in {target}"
                           + (f" (the file has {', '.join(sorted(regions_seen)[:6])}; pass --region)" if regions_seen else ""))
    return result



_COMPONENT_USE = {v.lower(): k for k, v in SAGEMAKER_USES.items()}


def _sagemaker_name(row: dict) -> tuple[str, str]:
    """(ml.* name, component) of a SageMaker price-list row. The CSV names the instance in ``Instance Name`` and the
    component in ``Component``; older lists spell both in ``Instance Type`` ("ml.p4d.24xlarge-Training")."""
    name = (row.get("Instance Name") or "").strip()
    component = (row.get("Component") or "").strip()
    itype = (row.get("Instance Type") or "").strip()
    if not name and itype.startswith("ml."):
        name, _, suffix = itype.partition("-")
        component = component or suffix
    return name.lower(), component


def _aws_sagemaker(path, reader, header, aws, catalogue, region, regions, date, basis, digest, meta) -> ImportResult:
    need = {"TermType", "PricePerUnit", "Unit"}
    if not need <= set(header) or not ({"Instance Name", "Instance Type"} & set(header)):
        missing = sorted(need - set(header)) + ([] if {"Instance Name", "Instance Type"} & set(header) else ["Instance Name"])
        raise PriceImportError(f"{path}: missing SageMaker price-list column(s) {', '.join(missing)}")
    twins = {i.sagemaker_name.lower(): i for i in aws.values() if i.sagemaker_name}
    twins.update({f"ml.{n}": i for n, i in aws.items() if f"ml.{n}" not in twins})
    skipped: dict[str, int] = defaultdict(int)
    found: dict[tuple[str, str, str], float] = {}
    regions_seen: set[str] = set()
    for row in reader:
        if row.get("Product Family", "ML Instance") != "ML Instance" or row.get("TermType") != "OnDemand":
            continue  # storage, serverless, labelling; Savings Plans terms
        if row.get("Location Type", "AWS Region") != "AWS Region" or row.get("Currency", "USD") != "USD":
            continue  # Outposts, Local Zones
        name, component = _sagemaker_name(row)
        use = _COMPONENT_USE.get(component.lower())
        if name not in twins:
            continue  # a CPU size, or one the catalogue has no GPU facts for
        if use is None:
            skipped[f"component {component or '(none)'}"] += 1
            continue
        if row.get("Unit") not in ("Hrs", "Hours", "hours"):
            continue
        price = _float(row.get("PricePerUnit"))
        if not price:
            skipped["unreadable or zero PricePerUnit"] += 1
            continue
        reg = _aws_region(row)
        regions_seen.add(reg)
        found[(name, use, reg)] = price
    target = _pick_region("aws", region, regions, regions_seen, catalogue)
    src = (f"AWS price list {path.name} (OfferCode AmazonSageMaker, Version {meta.get('Version', '?')}, sha256 {digest[:12]}), "
           f"{target}, ML Instance on-demand rows")
    result = ImportResult("aws-sagemaker-price-list", "aws", target, date, basis, digest)
    for (name, use, reg), usd in sorted(found.items()):
        if reg == target:
            result.sagemaker.append({"instance": name, "use": use, "region": target, "usd_per_hour": round(usd, 6),
                                     "as_of": date, "source": src})
    result.skipped = _counted(skipped)
    if not result.sagemaker:
        raise PriceImportError(f"{path}: no on-demand ML Instance row for a GPU instance of the catalogue in {target}"
                           + (f" (the file has {', '.join(sorted(regions_seen)[:6])}; pass --region)" if regions_seen else ""))
    return result
