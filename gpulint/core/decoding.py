"""Bytes of a file to text, as the file's own kind defines it.

UTF-8 (with or without a BOM) for every kind; UTF-16/32 when a BOM says so
(YAML and JSON allow them); for Python, the PEP 263 encoding declaration of
the first two lines (``# -*- coding: latin-1 -*-``), as CPython reads it.
Content with a NUL byte near the start is binary, whatever its extension.
"""
from __future__ import annotations

import codecs
import io
import re

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


_COOKIE = re.compile(rb"coding[:=]")  # PEP 263: a declaration on one of the first two lines


def decode(data: bytes | str, kind: str) -> tuple[str | None, str]:
    """(text, "") or (None, why the bytes are not text of this kind)."""
    if isinstance(data, str):  # an editor buffer or standard input: already text
        return data, ""
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), None)
    if encoding is None or encoding == "utf-8-sig":
        nul = data.find(b"\0", 0, 8192)
        if nul >= 0:
            return None, f"binary content (a NUL byte at offset {nul})"
    if kind == "python" and encoding is None and _COOKIE.search(data, 0, 400):
        import tokenize

        try:
            encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        except SyntaxError as exc:  # an unknown or contradictory coding declaration
            return None, f"bad source encoding declaration ({exc})"
    encoding = encoding or "utf-8-sig"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        what = "UTF-8" if encoding in ("utf-8", "utf-8-sig") else encoding
        return None, f"not {what} text ({exc.reason} at byte {exc.start})"
    except LookupError:
        return None, f"unknown source encoding {encoding!r}"
    return text.lstrip("\ufeff") if text.startswith("\ufeff") else text, ""
