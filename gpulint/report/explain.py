"""`gpulint explain CODE`: a rule's full guidance, as text (terminal) or markdown.

Everything comes from the rule class: its one-line summary, the docstring
sections in the order written (What it does, Why it costs money, How to fix,
Cost model, Example, Sources), and its INVALID/VALID examples shown as
before/after files. SARIF's `help` reuses these renderings, so GitHub code
scanning shows the same guidance as the terminal.
"""
from __future__ import annotations

import posixpath
import textwrap
from typing import Any, Iterable

FORMATS = ("text", "markdown")

_LANG = {
    ".py": "python",
    ".ipynb": "json",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".tf": "hcl",
    ".hcl": "hcl",
    ".toml": "toml",
    ".sh": "bash",
    ".bash": "bash",
    ".sbatch": "bash",
    ".slurm": "bash",
    ".cfg": "ini",
    ".ini": "ini",
}


def language(path: str) -> str:
    base = posixpath.basename(path.replace("\\", "/"))
    if base == "Dockerfile" or base.startswith("Dockerfile.") or base.endswith(".dockerfile"):
        return "dockerfile"
    if base in ("Makefile", "makefile", "GNUmakefile"):
        return "make"
    return _LANG.get(posixpath.splitext(base)[1].lower(), "")


def _code_text(text: Any) -> str:
    return textwrap.dedent(str(text)).strip("\n")


def _example_files(example: Any) -> list[tuple[str, str]]:
    """(file name, text) pairs of an Example, its .gpulint.toml included."""
    try:
        files = example.file_map()
    except Exception:  # a plugin's malformed example must not break explain
        return []
    out = [(str(k), _code_text(v)) for k, v in files.items()]
    config = getattr(example, "config", "")
    if config:
        out.append((".gpulint.toml", _code_text(config)))
    return out


def _expectations(example: Any, code: str) -> list[str]:
    out = []
    for e in getattr(example, "expect", ()) or ():
        try:
            words = ", ".join(repr(w) for w in e.contains())
            out.append(f"{e.code or code} at {e.path}:{e.line}" + (f" (message mentions {words})" if words else ""))
        except Exception:
            continue
    return out


def _fence(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return fence


def _meta(rule: type) -> dict[str, str]:
    sev = getattr(rule, "severity", "")
    return {
        "severity": str(getattr(sev, "value", sev)),
        "family": str(getattr(rule, "family", "")),
        "since": str(getattr(rule, "since", "")),
        "enabled by default": "yes" if getattr(rule, "default_enabled", True) else "no",
    }


def _sections(rule: type) -> list[tuple[str, str]]:
    """Titled sections in docstring order; the summary paragraph's extra lines first, untitled."""
    try:
        secs = rule.sections()
    except Exception:
        secs = {}
    out = []
    summary_rest = "\n".join(secs.get("Summary", "").splitlines()[1:]).strip()
    if summary_rest:
        out.append(("", summary_rest))
    for title, body in secs.items():
        if title != "Summary" and body.strip():
            out.append((title, body.strip()))
    return out


def _summary(rule: type) -> str:
    try:
        return rule.summary()
    except Exception:
        return str(getattr(rule, "name", ""))


def _options(rule: type) -> list[tuple[str, str]]:
    """(option name, "[type]: description (default ...)") from the rule's options schema."""
    opts = getattr(rule, "options", None) or {}
    props = opts.get("properties") if isinstance(opts, dict) else None
    out = []
    for key in sorted(props if isinstance(props, dict) else {}):
        spec = props[key] if isinstance(props[key], dict) else {}
        kind = spec.get("type", "")
        desc = spec.get("description", "")
        default = f" (default {spec['default']!r})" if "default" in spec else ""
        out.append((str(key), (f" [{kind}]" if kind else "") + (f": {desc}" if desc else "") + default))
    return out


def _examples(rule: type) -> Iterable[tuple[str, str, Any]]:
    """(heading, example, is_before): INVALID first (what is flagged), then VALID."""
    for ex in getattr(rule, "INVALID", ()) or ():
        title = getattr(ex, "title", "")
        yield "Before (flagged)" + (f": {title}" if title else ""), ex, True
    for ex in getattr(rule, "VALID", ()) or ():
        title = getattr(ex, "title", "")
        yield "After (not flagged)" + (f": {title}" if title else ""), ex, False


def explain_markdown(rule: type, *, heading_level: int = 1, examples: bool = True) -> str:
    h = "#" * max(1, heading_level)
    code, name = getattr(rule, "code", ""), getattr(rule, "name", "")
    lines = [f"{h} {code} {name}".rstrip(), "", _summary(rule), ""]
    lines.append(" · ".join(f"**{k}**: {v}" for k, v in _meta(rule).items() if v))
    lines.append("")
    for title, body in _sections(rule):
        if title:
            lines += [f"{h}# {title}", ""]
        lines += [body, ""]
    opts = _options(rule)
    if opts:
        lines += [f"{h}# Options", "", f"Under `[tool.gpulint.rules.{code}]`:", ""]
        lines += [f"- `{key}`{rest}" for key, rest in opts]
        lines.append("")
    if examples:
        for heading, ex, before in _examples(rule):
            lines += [f"{h}# {heading}", ""]
            for path, text in _example_files(ex):
                fence = _fence(text)
                lines += [f"`{path}`:", "", f"{fence}{language(path)}", text, fence, ""]
            expected = _expectations(ex, code) if before else []
            lines += [f"- reports {e}" for e in expected] + ([""] if expected else [])
    return "\n".join(lines).rstrip() + "\n"


def explain_text(rule: type, *, examples: bool = True) -> str:
    code, name = getattr(rule, "code", ""), getattr(rule, "name", "")
    lines = [f"{code} {name}".rstrip(), _summary(rule), ""]
    lines.append(", ".join(f"{k}: {v}" for k, v in _meta(rule).items() if v))
    lines.append("")
    for title, body in _sections(rule):
        if title:
            lines.append(f"{title}:")
        lines += [("    " + ln) if ln.strip() else "" for ln in body.splitlines()]
        lines.append("")
    opts = _options(rule)
    if opts:
        lines.append(f"Options (under [tool.gpulint.rules.{code}]):")
        lines += [f"    {key}{rest}" for key, rest in opts]
        lines.append("")
    if examples:
        for heading, ex, before in _examples(rule):
            lines.append(f"{heading}:")
            for path, text in _example_files(ex):
                lines.append(f"  --- {path}")
                lines += [("    " + ln) if ln.strip() else "" for ln in text.splitlines()]
            for e in _expectations(ex, code) if before else ():
                lines.append(f"  reports {e}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def explain(rule: type, fmt: str = "text") -> str:
    """Render ``gpulint explain`` for ``rule`` in ``fmt`` ("text" or "markdown")."""
    if fmt in ("markdown", "md"):
        return explain_markdown(rule)
    if fmt == "text":
        return explain_text(rule)
    raise ValueError(f"unknown explain format {fmt!r} (known: {', '.join(FORMATS)})")
