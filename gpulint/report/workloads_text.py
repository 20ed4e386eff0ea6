"""`gpulint workloads` as text: every workload, every fact with its file:line,
how it was linked and what is unknown."""
from __future__ import annotations

from gpulint.core.result import ScanResult


def render_workloads(result: ScanResult) -> str:
    lines: list[str] = []
    by_id = {c.get("id"): c for c in result.computes}
    if not result.workloads:
        lines.append("No workloads found: no Python script or notebook that trains, and no launcher that starts one.")
    for wl in result.workloads:
        lines.append(f"workload {wl['name']}")
        lines.append(f"  entrypoint: {wl['entrypoint']}")
        res = wl.get("resolved") or {}
        if res.get("role"):
            lines.append(f"  role: {res['role']} ({res.get('role_reason')})")
        if len(wl["code_files"]) > 1:
            lines.append(f"  code: {', '.join(wl['code_files'])}")
        for l in wl["launchers"]:
            v = l["value"]
            extra = ", ".join(f"{k}={v[k]}" for k in ("program", "nnodes", "nproc_per_node", "mixed_precision") if v.get(k) is not None)
            lines.append(f"  launcher: {v.get('tool')} at {l['where']}{' (' + extra + ')' if extra else ''}")
            over = (l.get("attrs") or {}).get("overridable") or {}
            if over:
                said = ", ".join(f"{k} from ${name}" for k, name in over.items())
                lines.append(f"    defaults the caller's environment may override: {said}")
        for c in wl["configs"]:
            lines.append(f"  config: {c}")
        comp = wl.get("compute")
        if comp:
            head = comp.get("instance") or comp.get("id")
            lines.append(f"  compute: {head}" + (f" [{comp.get('id')}]" if comp.get("instance") and comp.get("id") else ""))
            if comp.get("device"):
                lines.append(f"    device: {comp['device']} ({comp.get('device_reason')})")
            if comp.get("assumed"):
                lines.append(f"    assumed: {comp['assumed']}")
            if comp.get("placed_on"):
                lines.append(f"    placed on: {comp['placement']}")
                for hop in comp.get("placed_via", [])[:-1]:  # capacity that is itself placed (a Slinky NodeSet's pods)
                    lines.append(f"    {hop} placed on: {(by_id.get(hop) or {}).get('placement')}")
            for key in ("provider", "nodes", "gpus_per_node", "gpu_model", "capacity", "efa_requested"):
                if comp.get(key) is not None:
                    lines.append(f"    {key}: {comp[key]}")
            if comp.get("usd_per_hour") is not None:
                lines.append(f"    price: ${comp['usd_per_hour']:.2f}/h for all nodes (${comp.get('unit_usd_per_hour') or 0:.2f}/h each, "
                             f"{_price_note(comp)})")
            elif comp.get("why_no_price"):
                lines.append(f"    price: unknown, {comp['why_no_price']}")
            for f in comp.get("facts", []):
                lines.append(f"    {f['kind']}: {_short(f['value'])}  ({f['where']})")
        for job in wl.get("job_computes") or []:
            lines.append(f"  also in the job: {job.get('instance') or job.get('id')} [{job.get('id')}]")
        for key, val in sorted(res.items()):
            if key == "to_price":  # advice to act on: never cut short
                lines.append(f"  {key}: {val}")
            elif key not in ("role", "role_reason"):
                lines.append(f"  {key}: {_short(val)}")
        if wl["facts"]:
            lines.append("  facts:")
            for f in wl["facts"]:
                lines.append(f"    {f['kind']}: {_short(f['value'])}  ({f['where']})")
        for e in wl["env"]:
            name, value = e["value"].get("name"), e["value"].get("value")
            shown = value if value is not None else "(not a literal value)"
            lines.append(f"  env: {name}={shown}  ({e['where']})")
        for r in wl["links"]:
            lines.append(f"  linked: {r}")
        for u in wl["unknown"]:
            lines.append(f"  unknown: {u}")
        lines.append("")
    # a workload runs on its compute, its jobs' computes, and the capacity they are placed on
    claimed = {cid for w in result.workloads for comp in [w.get("compute") or {}, *(w.get("job_computes") or [])]
               for cid in [comp.get("id"), *comp.get("placed_via", [])]}
    others = [c for c in result.computes if c.get("id") not in claimed]
    if others:
        lines.append("compute targets no workload runs on:")
        for c in others:
            what = c.get("instance") or c.get("instance_written") or "instance unknown"
            lines.append(f"  {c['id']}: {what}, {c.get('device')} ({c.get('device_reason')})"
                         + (f"; {c['why_unknown']}" if c.get("why_unknown") and c.get("device") != "cpu" else ""))
        lines.append("")
    lines += _unjoined(result.launchers)
    return "\n".join(lines) + ("\n" if lines and lines[-1] else "")


def _unjoined(launchers: dict) -> list[str]:
    """The launches that name a repository script and reach none, with why: what to declare or fix."""
    named, missed = launchers.get("named") or 0, launchers.get("unjoined") or []
    if not named:
        return []
    out = [f"launchers joined to a repository script: {launchers.get('joined', 0)} of {named}"]
    if missed:
        out.append("launchers not joined:")
        out += [f"  {u['where']}: {u['command']}: {u['why']}" for u in missed]
    out.append("")
    return out


def _price_note(comp: dict) -> str:
    """"on-demand, us-east-1; as of 2026-07-20; source", leaving out what is unknown (a rate from the user's
    configuration has no catalogue region or date; its source says whose rate it is)."""
    head = ", ".join(x for x in (comp.get("capacity") or "on-demand", comp.get("region")) if x)
    return "; ".join(x for x in (head, f"as of {comp['as_of']}" if comp.get("as_of") else None, comp.get("price_source")) if x)


def _short(v, limit: int = 140) -> str:
    text = _show(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_PARAM_KEYS = ("params", "parameters", "num_params", "param_count")


def _show(v, key: str | None = None) -> str:
    """A fact's value in words, not as a Python repr: a mapping as ``key=value`` pairs (unknown values left out),
    a list as ``[a, b]``, a parameter count as 13B / 25.6M."""
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        if not v and key is None:
            return "found"  # a fact with no details: it holds
        pairs = [f"{k}={_show(x, str(k))}" for k, x in v.items() if x is not None]
        text = ", ".join(pairs)
        return text if key is None else f"({text})"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_show(x) for x in v) + "]" if v else "none"
    if key is not None and (key in _PARAM_KEYS or key.endswith("_params")) and _is_number(v):
        return param_count(v)
    return str(v)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def param_count(n: float) -> str:
    """13000000000 -> "13B", 25557032 -> "25.6M", 900 -> "900"."""
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= scale:
            return f"{n / scale:.1f}".removesuffix(".0") + unit
    return f"{n:g}"
