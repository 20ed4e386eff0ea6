"""What the file uses from other modules: the ``invokes`` and ``import`` facts.

The workload linker joins files with them: a script that calls (or subclasses) the training of a repository
module is a workload though its own file holds no training step. Only names are recorded here; which modules
are files of the repository is the linker's decision.
"""
from __future__ import annotations

from gpulint.core.model import Fact
from gpulint.read.python.common import Facts
from gpulint.read.python.names import NOT_LOCAL


def invokes(f: Facts) -> None:
    """Calls of names imported from other modules (``from engine import train_one_epoch`` ...
    ``train_one_epoch(model, ...)``; ``Trainer(cfg).run()``): the linker makes a script that calls the
    training of a repository module a workload, though its own file holds no training step."""
    seen = set()
    for c in f.ix.calls:
        head = (c.func or "").split(".", 1)[0]
        q = f.ix.imports.get(head)
        if not q or not c.qualname or "." not in c.qualname or c.qualname in seen:
            continue
        module, _, name = c.qualname.partition("(")[0].rpartition(".")
        if module and name and not module.startswith(NOT_LOCAL):
            seen.add(c.qualname)
            f.add("invokes", {"module": module, "name": name}, c.node, c.qualname)
    # names imported relatively (``from .engine import Engine`` ... ``Engine()``): the index keeps no qualified name
    relative = f.ix.relative_names
    for c in f.ix.calls if relative else ():
        head = (c.func or "").split(".", 1)[0]
        if head in relative and (c.func or "") not in seen:
            module, name, level = relative[head]
            seen.add(c.func or "")
            parts = (c.func or "").split(".")
            if len(parts) > 1:  # ``from . import engine`` ... ``engine.Engine()``: a name of that module
                module, name = ".".join(p for p in (module, name, *parts[1:-1]) if p), parts[-1]
            f.add("invokes", {"module": module, "name": name}, c.node, c.func, relative=level)
    # a class of the file built on an imported one (``class MyTrainer(BaseTrainer)``) runs that class's methods
    for node, bases in f.ix.classes.values():
        for q in bases:
            module, _, name = (q or "").rpartition(".")
            if module and name and q not in seen and not module.startswith(NOT_LOCAL):
                seen.add(q)
                f.add("invokes", {"module": module, "name": name}, node, q)


def local_imports(f: Facts) -> None:
    # module names only; the workload linker decides which are files of this repository
    for module in sorted(f.ix.imported_modules):
        f.out.append(Fact("import", module, f.src.loc(1), module, "", {}))
    for level, module in f.ix.relative_imports:
        f.out.append(Fact("import", "." * level + module, f.src.loc(1), module, "", {"relative": level}))
