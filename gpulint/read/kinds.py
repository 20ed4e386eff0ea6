"""File kinds (how a file is recognised and parsed) and fact extractors."""
from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatch
from typing import Callable

from gpulint.core.model import Fact
from gpulint.core.sources import Source


@dataclass(frozen=True)
class FileKind:
    """A kind of file: which names it claims, how it is parsed, how it comments.

    ``parse(text, path) -> Source`` raises ``gpulint.core.sources.ParseError``.
    ``globs`` match the file name (not the directory); ``shebang`` matches the
    first line of files without an extension.
    """

    name: str
    globs: tuple[str, ...]
    parse: Callable[[str, str], Source]
    comment: tuple[str, ...] = ("#",)
    shebang: tuple[str, ...] = ()
    priority: int = 0  # higher wins when several kinds claim a name

    def claims(self, filename: str) -> bool:
        return any(fnmatch(filename, g) for g in self.globs)


@dataclass(frozen=True)
class Extractor:
    """A pure function from a parsed source to facts, for the kinds it names.

    ``needs`` is a cheap text gate: when set, the extractor only runs on files
    whose text contains one of these strings.
    """

    name: str
    kinds: tuple[str, ...]
    extract: Callable[[Source], list[Fact]]
    needs: tuple[str, ...] = field(default_factory=tuple)

    def wants(self, source: Source) -> bool:
        return source.kind in self.kinds and (not self.needs or any(n in source.text for n in self.needs))
