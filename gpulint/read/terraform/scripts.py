"""Launch scripts inside Terraform compute: ``user_data``, GCP startup scripts,
Azure ``custom_data``.

A script written inline (a heredoc, possibly inside ``base64encode(...)``, a
``locals`` value or a ``data "template_file"``) is read by the shell reader's
scanner at its lines in the .tf file; its launch and env facts carry the
resource's target, so the linker sees that the compute holds the launcher.
Terraform interpolations in the script are unknown words, except a ``var.``/
``local.`` with a literal value in the file or a template variable with a
literal value; ``$${X}`` is the shell's ``${X}``. A ``#cloud-config`` document
is read for its ``runcmd`` commands.

A script named by ``file()``, ``filebase64()`` or ``templatefile()`` (directly,
or through ``data "template_file"`` / ``data "cloudinit_config"``) is a launch
``{"tool": "shell", "script": <path relative to the .tf file's folder>}``:
"this compute runs that shell file", followed by the linker.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import replace

from hcl2.rules.functions import FunctionCallRule
from hcl2.rules.strings import HeredocTemplateRule, HeredocTrimTemplateRule, InterpolationRule, StringRule
from hcl2.utils import process_escape_sequences

from gpulint.core.model import Location
from gpulint.read.shell.commands import Word, empty_launch
from gpulint.read.shell.scanner import ShellScanner
from gpulint.read.terraform.hcl import OPTS, UNKNOWN, View, evaluate, node_name, position, traversal, unwrap

__all__ = ["startup_scripts"]

# resource type -> attributes holding a boot script
_ATTRS = {
    "aws_instance": ("user_data", "user_data_base64"),
    "aws_spot_instance_request": ("user_data", "user_data_base64"),
    "aws_launch_template": ("user_data",),
    "aws_launch_configuration": ("user_data", "user_data_base64"),
    "google_compute_instance": ("metadata_startup_script",),
    "google_compute_instance_template": ("metadata_startup_script",),
    "google_compute_region_instance_template": ("metadata_startup_script",),
    "azurerm_linux_virtual_machine": ("custom_data", "user_data"),
    "azurerm_linux_virtual_machine_scale_set": ("custom_data", "user_data"),
    "azurerm_orchestrated_virtual_machine_scale_set": ("user_data_base64",),
}
_NESTED = {  # blocks whose attributes hold one
    "azurerm_virtual_machine": ("os_profile", ("custom_data",)),
    "azurerm_orchestrated_virtual_machine_scale_set": ("os_profile", ("custom_data",)),
}
_METADATA_KEYS = ("startup-script", "user-data")  # GCP instance metadata read at boot
_PASS_THROUGH = {"base64encode", "base64gzip", "textencodebase64", "chomp", "trimspace", "sensitive", "nonsensitive"}
_FILE_FUNCS = {"file", "filebase64", "templatefile"}
MAX_DEPTH = 6


def startup_scripts(ctx, target: str, rtype: str, view: View) -> None:
    """Emit the launch/env facts of every boot script of one compute resource."""
    for name in _ATTRS.get(rtype, ()):
        attr = view.attrs.get(name)
        if attr is not None:
            _script(ctx, target, attr.node, attr.line, attr.column, name, {}, 0)
    if rtype in _NESTED:
        block, names = _NESTED[rtype]
        for sub in view.blocks(block):
            for name in names:
                attr = sub.attrs.get(name)
                if attr is not None:
                    _script(ctx, target, attr.node, attr.line, attr.column, f"{block}.{name}", {}, 0)
    if rtype.startswith("google_compute_"):
        for md in view.blocks("metadata"):
            for key in _METADATA_KEYS:
                attr = md.attrs.get(key)
                if attr is not None:
                    _script(ctx, target, attr.node, attr.line, attr.column, f"metadata.{key}", {}, 0)


def _script(ctx, target, node, line, col, attribute, tvars, depth) -> None:
    node = unwrap(node)
    if node is None or depth > MAX_DEPTH:
        return
    if isinstance(node, FunctionCallRule):
        fname = "::".join(node_name(i) or "" for i in node.identifiers)
        args = node.arguments.arguments if node.arguments else []
        if fname in _PASS_THROUGH and args:
            _script(ctx, target, args[0], *position(args[0], line, col), attribute, tvars, depth + 1)
        elif fname in _FILE_FUNCS and args:
            vars_ = evaluate(args[1]) if fname == "templatefile" and len(args) > 1 else None
            _file_launch(ctx, target, args[0], line, col, attribute, fname,
                         vars_ if isinstance(vars_, dict) else None)
        return
    if isinstance(node, HeredocTemplateRule):
        hline, _ = position(node, line, col)
        body, indent = _heredoc_body(node)
        if body is not None:
            _feed(ctx, target, body, hline + 1, 1 + indent, indent, attribute, tvars)
        return
    if isinstance(node, StringRule):
        text = node.serialize(OPTS)
        if isinstance(text, str):
            sline, scol = position(node, line, col)
            # "#!/bin/bash\ntorchrun ...": lines of the script, one line of the file (HCL
            # quoted strings cannot span lines)
            _feed(ctx, target, process_escape_sequences(text), sline, scol + 1, 0, attribute, tvars, one_line=True)
        return
    parts = traversal(node)
    if not parts:
        return
    if len(parts) == 2 and parts[0] == "local" and parts[1] in ctx.local_nodes:
        lnode, lline, lcol = ctx.local_nodes[parts[1]]
        _script(ctx, target, lnode, lline, lcol, attribute, tvars, depth + 1)
    elif len(parts) == 2 and parts[0] == "var" and parts[1] in ctx.variable_nodes:
        vnode, vline, vcol = ctx.variable_nodes[parts[1]]
        _script(ctx, target, vnode, vline, vcol, attribute, tvars, depth + 1)
    elif len(parts) == 4 and parts[0] == "data" and parts[3] == "rendered":
        data = ctx.data_views.get(f"data.{parts[1]}.{parts[2]}")
        if data is not None:
            _rendered(ctx, target, parts[1], data, attribute, depth + 1)


def _rendered(ctx, target, dtype: str, view: View, attribute, depth) -> None:
    if dtype == "template_file":
        tv = view.attrs.get("vars")
        vars_ = evaluate(tv.node) if tv is not None else None
        vars_ = vars_ if isinstance(vars_, dict) else {}
        tmpl = view.attrs.get("template")
        if tmpl is None:
            return
        inner = unwrap(tmpl.node)
        if isinstance(inner, FunctionCallRule) and [node_name(i) for i in inner.identifiers] == ["file"]:
            args = inner.arguments.arguments if inner.arguments else []
            if args:
                _file_launch(ctx, target, args[0], tmpl.line, tmpl.column, attribute, "template_file", vars_)
            return
        _script(ctx, target, tmpl.node, tmpl.line, tmpl.column, attribute, vars_, depth)
    elif dtype == "cloudinit_config":
        for part in view.blocks("part"):
            ctype = evaluate(part.attrs["content_type"].node) if "content_type" in part.attrs else None
            content = part.attrs.get("content")
            if content is None or (isinstance(ctype, str) and ctype not in ("text/x-shellscript", "text/cloud-config")):
                continue
            _script(ctx, target, content.node, content.line, content.column, attribute, {}, depth)


def _heredoc_body(node) -> tuple[str | None, int]:
    """The heredoc's lines as written (``<<-`` heredocs dedented; the indent is returned)."""
    raw = str(node.children[0]) if node.children else ""
    lines = raw.split("\n")
    if len(lines) < 2:
        return None, 0
    delim = lines[0].lstrip("<-").strip()
    body = []
    for ln in lines[1:]:
        if ln.strip() == delim:
            break
        body.append(ln)
    indent = 0
    if isinstance(node, HeredocTrimTemplateRule):
        widths = [len(ln) - len(ln.lstrip(" \t")) for ln in body if ln.strip()]
        indent = min(widths) if widths else 0
        body = [ln[indent:] for ln in body]
    return "\n".join(body) + "\n", indent


def _mask_template(text: str, ctx, tvars: dict) -> str:
    """Terraform template syntax made shell: ``$${`` is ``${``, an interpolation is its
    literal value when known and an unknown shell word otherwise, a ``%{...}``
    directive is blank; line breaks are kept so positions stay right."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("$${", i) or text.startswith("%%{", i):
            out.append(text[i + 1:i + 3])
            i += 3
            continue
        if text.startswith("${", i) or text.startswith("%{", i):
            end = _closing(text, i + 2)
            inner = text[i + 2:end - 1]
            if text[i] == "%":
                out.append("".join("\n" if c == "\n" else " " for c in text[i:end]))
            else:
                value = _known(inner.strip().strip("~").strip(), ctx, tvars)
                out.append(value if value is not None else
                           "${" + "".join("\n" if c == "\n" else "_" for c in inner) + "}")
            i = end
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _closing(text: str, i: int) -> int:
    depth, quote, n = 1, None, len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c == '"':
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _known(expr: str, ctx, tvars: dict) -> str | None:
    value = UNKNOWN
    if re.match(r"^[A-Za-z_][\w-]*$", expr) and expr in tvars:
        value = tvars[expr]
    elif re.match(r"^(var|local)\.[A-Za-z_][\w-]*$", expr) and expr in ctx.known:
        value = ctx.known[expr]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)) and "\n" not in str(value):
        return str(value)
    return None


def _feed(ctx, target, text, line, column, indent, attribute, tvars, one_line=False) -> None:
    text = _mask_template(text, ctx, tvars)
    if text.lstrip().startswith("#cloud-config"):
        _cloud_config(ctx, target, text, line, attribute)
        return
    scanner = ShellScanner(ctx.path, launch_target=target)
    facts = scanner.feed(text, line, column, indent)
    for f in facts:
        loc = Location(ctx.path, line, column - 1) if one_line and "\n" in text else f.loc
        ctx.facts.append(replace(f, loc=loc, target=target, attrs={**f.attrs, "attribute": attribute}))


def _cloud_config(ctx, target, text, line, attribute) -> None:
    """``runcmd`` of a cloud-init document: each entry a shell line or an argv list."""
    from gpulint.read.yamlnodes import YamlError, load_documents

    try:
        docs = load_documents(text)
    except (YamlError, RecursionError):
        return
    for doc in docs[:1]:
        runcmd = doc.data.get("runcmd") if isinstance(doc.data, dict) else None
        if not isinstance(runcmd, list):
            continue
        for i, item in enumerate(runcmd):
            iline, icol = doc.at(("runcmd", i))
            scanner = ShellScanner(ctx.path, launch_target=target)
            at = line + iline - 1
            if isinstance(item, str):
                facts = scanner.feed(item, at, icol)
            elif isinstance(item, list) and all(isinstance(a, (str, int, float)) for a in item):
                facts = scanner.feed_words([Word(str(a), at, icol, "$" not in str(a)) for a in item])
            else:
                continue
            for f in facts:
                ctx.facts.append(replace(f, target=target, attrs={**f.attrs, "attribute": attribute,
                                                                  "cloud_init": "runcmd"}))


def _file_path(node, ctx) -> tuple[str | None, str]:
    """The path a ``file()`` argument names, relative to the .tf file's folder, and
    what it was relative to as written (``module`` for ``${path.module}``, ``cwd``)."""
    node = unwrap(node)
    if not isinstance(node, StringRule):
        return None, ""
    out, anchor = [], "cwd"
    for k, part in enumerate(node.string_parts):
        content = part.content
        if isinstance(content, InterpolationRule):
            trav = traversal(content.expression)
            if k == 0 and trav in (["path", "module"], ["path", "root"], ["path", "cwd"]):
                anchor = trav[1]
                out.append(".")
                continue
            value = _known(".".join(trav) if trav else "", ctx, {})
            if value is None:
                return None, anchor
            out.append(value)
        else:
            text = content.serialize(OPTS)
            if not isinstance(text, str):
                return None, anchor
            out.append(process_escape_sequences(text))
    path = "".join(out)
    if not path or path.startswith("/") or "${" in path:
        return None, anchor
    return posixpath.normpath(path), anchor


def _file_launch(ctx, target, arg, line, col, attribute, via, tvars) -> None:
    path, anchor = _file_path(arg, ctx)
    value = empty_launch("shell")
    value["script"] = path
    attrs = {"attribute": attribute, "via": via, "relative_to": "module" if anchor == "module" else anchor}
    if tvars:
        attrs["template_vars"] = {str(k): v for k, v in tvars.items() if isinstance(v, (str, int, float, bool))}
    ctx.emit("launch", value, line, col, key=f"{attribute}", target=target, attrs=attrs)
