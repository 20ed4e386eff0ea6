"""``gpulint catalogue``: the prices a scan uses, with their region, date and source;
``gpulint catalogue import FILE``: refresh them, offline, from a price list the user downloaded.

Listing warns on standard error (exit 0) when a provider's prices are older than
``[tool.gpulint.pricing] max-age-days`` (default 180) or carry no verified date.
Importing writes the project's price overlay (``gpulint.pricing.overlay``), which every later
scan reads.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path

from gpulint import __version__
from gpulint.pricing.catalogue import SAGEMAKER_USES, TERMS, Catalogue, CatalogueError, Instance, price_date
from gpulint.core.config import Config, ConfigError, load_config

EXIT_OK, EXIT_ERROR = 0, 2
_PROVIDER_ORDER = {"aws": 0, "gcp": 1, "azure": 2}


def add_parser(sub: argparse._SubParsersAction) -> None:
    cat = sub.add_parser("catalogue", help="instance prices with region, date and source; `catalogue import FILE` refreshes them",
                         description="List every catalogue instance with the on-demand and spot price a scan uses, its region, "
                                     "date and source. Warns (exit 0) when prices are older than [tool.gpulint.pricing] max-age-days.")
    cat.add_argument("--format", choices=["text", "json"], default="text")
    cat.add_argument("--config", type=Path, help="configuration file (default: looked up from the current directory)")
    cat.add_argument("--provider", help="only this provider (aws, gcp, azure, or a plugin's)")
    cat.add_argument("--today", type=_date_arg, help="the date ages are measured against (YYYY-MM-DD; default: today)")
    csub = cat.add_subparsers(dest="catalogue_command", metavar="{import}")
    imp = csub.add_parser("import", help="write a dated price overlay from a downloaded SkyPilot vms.csv or AWS price-list CSV",
                          description="Read a price list you downloaded and write the project's price overlay "
                                      "(.gpulint-prices.json next to the configuration, or [tool.gpulint.pricing] overlay). "
                                      "Later scans use its prices; gpulint never goes online.")
    imp.add_argument("file", type=Path, help="a SkyPilot catalogs/v*/<cloud>/vms.csv, an AWS AmazonEC2 price-list CSV "
                                             "or an AWS Savings Plans rate CSV")
    imp.add_argument("--source-format", choices=["auto", "skypilot", "aws"], default="auto", help="default: detected from the file")
    imp.add_argument("--provider", default=argparse.SUPPRESS, help="cloud of a SkyPilot vms.csv (default: from its directory or instance names)")
    imp.add_argument("--region", help="region to import (default: [tool.gpulint.pricing] region, the file's only region, or the catalogue's)")
    imp.add_argument("--as-of", type=_date_arg, help="date of the prices (default: the AWS Publication Date, or the file's modification date)")
    imp.add_argument("--output", "-o", type=Path, help="overlay file to write (default: the project's overlay path)")
    imp.add_argument("--config", type=Path, default=argparse.SUPPRESS, help="configuration file")
    imp.add_argument("--today", type=_date_arg, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def _date_arg(text: str) -> _dt.date:
    d = price_date(text)
    if d is None or d.isoformat() != text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date YYYY-MM-DD")
    return d


def run(args, host) -> int:
    today = getattr(args, "today", None) or _dt.date.today()
    try:
        if getattr(args, "catalogue_command", None) == "import":
            return _import(args, host, today)
        return _list(args, host, today)
    except CatalogueError as exc:
        print(f"gpulint: {exc}", file=sys.stderr)
        return EXIT_ERROR


def _config(args) -> Config:
    return load_config(getattr(args, "config", None), Path("."), require_overlay=False)


def _catalogue(cfg: Config, host) -> Catalogue:
    additions = list(getattr(getattr(host, "registry", None), "catalogue", []) or []) + list(cfg.instances)
    return Catalogue.load(additions=additions, pricing=cfg.pricing, overlay=cfg.price_overlay)


# --------------------------------------------------------------------------- listing

def _gpus(inst: Instance) -> str:
    return f"{inst.gpu_count}x {inst.gpu_model}"


def _rows(cat: Catalogue, provider: str | None) -> list[dict]:
    rows = []
    insts = sorted(cat.instances(), key=lambda i: _PROVIDER_ORDER.get(i.provider, 9))
    for inst in insts:
        if provider and inst.provider != provider:
            continue
        od, spot = cat.price(inst), cat.price(inst, "spot")
        commits = {}
        for term in TERMS:
            c = cat.commitment(inst, term)
            commits[term] = None if c is None else {
                "discount_pct": c.discount_pct, "usd_per_hour": c.usd_per_hour, "up_to": c.up_to, "plan": c.plan,
                "region": c.region, "as_of": c.as_of, "source": c.source}
        rows.append({
            "provider": inst.provider, "instance": inst.name, "gpu_model": inst.gpu_model, "gpu_count": inst.gpu_count,
            "gpu_memory_gib": inst.gpu_memory_gib, "retired": inst.retired,
            "on_demand": {"usd_per_hour": od.usd_per_hour, "usd_per_month": cat.monthly(od.usd_per_hour), "region": od.region,
                          "as_of": od.as_of, "source": od.source, "note": od.note},
            "spot": {"usd_per_hour": spot.usd_per_hour,
                     "observed_range": list(inst.spot_usd_per_hour_observed) if inst.spot_usd_per_hour_observed else None,
                     "as_of": spot.as_of, "source": spot.source, "note": spot.note},
            "commitments": commits,
            "committed": cat.committed(inst),
            "sagemaker": _sagemaker(cat, inst),
        })
    return rows


def _sagemaker(cat: Catalogue, inst: Instance) -> dict | None:
    """SageMaker's own prices of the instance's ml.* twin, per use; None for instances SageMaker does not offer."""
    if not inst.sagemaker_name:
        return None
    prices = {}
    for use in SAGEMAKER_USES:
        p = cat.sagemaker_price(inst.sagemaker_name, use)
        if p is not None:
            prices[use] = {"usd_per_hour": p.usd_per_hour, "region": p.region, "as_of": p.as_of, "source": p.source}
    return {"name": inst.sagemaker_name, "prices": prices}


def _warnings(cat: Catalogue, provider: str | None, today: _dt.date, cfg: Config) -> list[str]:
    out = []
    limit = cat.max_age_days
    for age in cat.price_ages():
        if provider and age.provider != provider:
            continue
        days = age.days(today)
        if days is None:
            out.append(f"{age.provider} prices carry no verified date ({age.undated} priced instance(s)); import a current "
                       f"price list with `gpulint catalogue import FILE`")
        elif days > limit:
            out.append(f"{age.provider} prices are {days} days old (oldest as of {age.oldest.isoformat()}; limit {limit} days, "
                       f"[tool.gpulint.pricing] max-age-days); refresh them with `gpulint catalogue import FILE`")
    configured = cfg.pricing.get("overlay")
    if configured and cfg.price_overlay is None:
        from gpulint.pricing.overlay import overlay_path

        out.append(f"[tool.gpulint.pricing] overlay {overlay_path(cfg.root, cfg.pricing)} does not exist; bundled prices are used")
    return out


def _list(args, host, today: _dt.date) -> int:
    cfg = _config(args)
    cat = _catalogue(cfg, host)
    provider = args.provider.lower() if args.provider else None
    rows = _rows(cat, provider)
    if provider and not rows:
        known = sorted({i.provider for i in cat.instances()})
        print(f"gpulint: no instances of provider {args.provider!r} (known: {', '.join(known)})", file=sys.stderr)
        return EXIT_ERROR
    warnings = _warnings(cat, provider, today, cfg)
    ages = [{"provider": a.provider, "oldest": a.oldest.isoformat() if a.oldest else None, "days": a.days(today),
             "dated": a.dated, "undated": a.undated}
            for a in sorted(cat.price_ages(), key=lambda a: (_PROVIDER_ORDER.get(a.provider, 9), a.provider))
            if not provider or a.provider == provider]
    if args.format == "json":
        print(json.dumps({"version": __version__, "today": today.isoformat(), "max_age_days": cat.max_age_days,
                          "hours_per_month": cat.hours_per_month, "overlay": cat.overlay_source, "ages": ages,
                          "warnings": warnings, "instances": rows}, indent=2))
    else:
        sys.stdout.write(_render_text(rows, ages, cat, today))
    for w in warnings:
        print(f"gpulint: warning: {w}", file=sys.stderr)
    return EXIT_OK


def _money(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.4f}" if v < 1 else f"{v:.2f}"


def _render_text(rows: list[dict], ages: list[dict], cat: Catalogue, today: _dt.date) -> str:
    sources: dict[str, int] = {}

    def ref(src: str) -> str:
        return f"[{sources.setdefault(src, len(sources) + 1)}]"

    table = [("PROVIDER", "INSTANCE", "GPUS", "ON-DEMAND $/h", "SPOT $/h", "REGION", "AS OF", "SRC")]
    for r in rows:
        od, sp = r["on_demand"], r["spot"]
        rng = sp["observed_range"]
        spot = "-" if not rng else (_money(rng[0]) if rng[0] == rng[1] else f"{_money(rng[0])}-{_money(rng[1])}")
        if rng:
            spot += " " + ref(f"spot: {sp['source']}; as of {sp['as_of'] or 'an unrecorded date'}")
        date = od["as_of"] or "-"
        date = date if price_date(date) else "undated"
        table.append((r["provider"], r["instance"] + (" (retired)" if r["retired"] else ""), f"{r['gpu_count']}x {r['gpu_model']}",
                      _money(od["usd_per_hour"]), spot, od["region"] or "-", date, ref(od["source"])))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
    lines.append("")
    lines.append("Sources:")
    lines += [f"  [{n}] {src}" for src, n in sources.items()]
    lines.append("")
    parts = []
    for a in ages:
        if a["oldest"]:
            parts.append(f"{a['provider']} {a['oldest']} ({a['days']} days)" + (f", {a['undated']} undated" if a["undated"] else ""))
        else:
            parts.append(f"{a['provider']} undated")
    lines.append(f"{len(rows)} instances; on-demand prices as of: {'; '.join(parts) or 'none'} (today {today.isoformat()}).")
    sm = [r for r in rows if r.get("sagemaker")]
    priced = sum(1 for r in sm if r["sagemaker"]["prices"])
    if sm:
        lines.append(f"SageMaker: {priced} of {len(sm)} ml.* instances have SageMaker's own prices" +
                     ("" if priced == len(sm) else "; the others are priced at their EC2 twin, a lower bound "
                      "(`gpulint catalogue import` of an AmazonSageMaker price list adds them)") + ".")
    lines.append(f"Overlay: {cat.overlay_source}" if cat.overlay_source else
                 "Overlay: none (bundled prices; `gpulint catalogue import FILE` writes one).")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- import

def _import(args, host, today: _dt.date) -> int:
    from gpulint.pricing.overlay import (
        OverlayError,
        merge,
        overlay_path,
        read_overlay,
        write_overlay,
    )
    from gpulint.pricing.price_import import PriceImportError, import_price_file

    cfg = _config(args)
    target = args.output or overlay_path(cfg.root, cfg.pricing)
    existing = None
    if target.is_file():
        try:
            existing = read_overlay(target)
        except OverlayError as exc:
            raise ConfigError(f"{exc} (delete it or pass --output to write another file)") from None
    # rows are matched against the bundled catalogue plus additions, not against the overlay being replaced
    cat = Catalogue.load(additions=list(getattr(getattr(host, "registry", None), "catalogue", []) or []) + list(cfg.instances),
                         pricing=cfg.pricing)
    region_cfg = cfg.pricing.get("region")
    regions = region_cfg if isinstance(region_cfg, dict) else ({"*": region_cfg} if region_cfg else {})
    try:
        result = import_price_file(args.file, cat, fmt=args.source_format, provider=getattr(args, "provider", None),
                                   region=args.region, as_of=args.as_of.isoformat() if args.as_of else None, regions=regions)
    except PriceImportError as exc:
        print(f"gpulint: {exc}", file=sys.stderr)
        return EXIT_ERROR
    data = merge(existing, result.record(args.file.name, today), result.prices, result.commitments, today, result.sagemaker)
    if not target.parent.is_dir():
        print(f"gpulint: {target.parent}: no such directory", file=sys.stderr)
        return EXIT_ERROR
    try:
        write_overlay(target, data)
    except (OverlayError, OSError) as exc:
        print(f"gpulint: cannot write {target}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    counted = (f"{len(result.sagemaker)} SageMaker price(s) ({len({r['instance'] for r in result.sagemaker})} ml.* instance(s))"
               if result.sagemaker else
               f"{len(result.prices)} {result.provider} price(s) and {len(result.commitments)} commitment price(s)")
    print(f"wrote {target}: {counted} for {result.region}, as of {result.as_of} ({result.as_of_basis}), "
          f"from {args.file.name} ({result.format}).")
    if result.missing:
        shown = ", ".join(result.missing[:8]) + (" ..." if len(result.missing) > 8 else "")
        what = {"aws-savings-plans": "commitment rates",
                "aws-sagemaker-price-list": "pricing (the EC2 price of the same hardware, a lower bound)"}.get(result.format, "prices")
        print(f"{len(result.missing)} {result.provider} catalogue instance(s) are not in the file and keep their current {what}: {shown}")
    for line in result.skipped:
        print(f"skipped {line}")
    if not args.output and not cfg.pricing.get("overlay"):
        print(f"Scans of this project read it from {target.name} next to "
              f"{cfg.path.name if cfg.path else 'the scanned directory'}; commit it so every run prices the same way.")
    return EXIT_OK
