"""``slurm.conf`` node and partition lines -> one capacity target per partition.

::

    ClusterName=ml
    NodeName=DEFAULT CPUs=96 RealMemory=1000000 State=UNKNOWN
    NodeName=gpu[001-016] Gres=gpu:a100:8 Feature=a100,ib
    PartitionName=gpu Nodes=gpu[001-016] Default=YES MaxTime=2-00:00:00 State=UP

What slurm.conf(5) fixes and this module follows: one ``key=value`` list per line, keys case-insensitive,
``#`` starts a comment to the end of the line, a line ending in ``\\`` continues on the next;
``NodeName=DEFAULT`` / ``PartitionName=DEFAULT`` set defaults for the lines after them; node names are
hostlist expressions (``gpu[001-016,020],dgx[1-2]``); a partition's ``Nodes`` are hostlists, ``ALL`` or
``NodeSet`` names (a NodeSet lists ``Nodes`` or selects by ``Feature``); ``Default=YES`` marks the
partition jobs without ``--partition`` get; ``Gres=gpu[:type]:count`` are a node's GPUs.

The partition's GPUs per node (``compute.gpus_per_node``, ``compute.accelerator {type, count}``) are stated
only when every node of it is defined here and all agree: a partition over nodes this file does not define
(an ``include``d file) or over mixed nodes says only how many nodes it has. On-premises hardware: no
provider, no instance type, no price.
"""
from __future__ import annotations

import re
from typing import Iterator

from gpulint.core.model import Fact
from gpulint.read.clusters.common import capacity
from gpulint.read.kubernetes import FactSink
from gpulint.read.yamlnodes import Doc

SOURCE = "slurm.conf"
#: a hostlist is expanded only up to this many names (a hostile ``n[0-999999999]`` is counted, not listed)
MAX_HOSTS = 100_000

_RANGE = re.compile(r"\[([^\[\]]*)\]")


def _logical_lines(text: str) -> Iterator[list[tuple[str, int, int]]]:
    """Each logical line as its ``(token, line, column)`` list: comments dropped, ``\\`` continuations joined."""
    tokens: list[tuple[str, int, int]] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        body = raw.split("#", 1)[0]
        cont = body.rstrip().endswith("\\")
        if cont:
            body = body.rstrip()[:-1]
        for m in re.finditer(r'(?:[^\s"]|"[^"]*")+', body):
            tokens.append((m.group(0), lineno, m.start() + 1))
        if not cont:
            if tokens:
                yield tokens
            tokens = []
    if tokens:
        yield tokens


def _pairs(tokens) -> list[tuple[str, str, int, int]]:
    out = []
    for tok, line, col in tokens:
        key, sep, value = tok.partition("=")
        if sep:
            out.append((key.lower(), value.strip('"'), line, col))
    return out


def _split_top(text: str) -> list[str]:
    """``a[1-2,4],b`` -> ``["a[1-2,4]", "b"]``: commas outside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def _range_values(body: str) -> list[str] | None:
    vals: list[str] = []
    for piece in body.split(","):
        lo, dash, hi = piece.strip().partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            return None
        if not dash:
            vals.append(lo)
            continue
        a, b = int(lo), int(hi)
        if b < a or len(vals) + (b - a + 1) > MAX_HOSTS:
            return None
        vals += [str(i).zfill(len(lo)) for i in range(a, b + 1)]
    return vals


def hostlist(expr: str) -> list[str] | None:
    """The names of a hostlist expression, None when it is not one this module can expand."""
    names: list[str] = []
    for part in _split_top(expr):
        group = [""]
        pos = 0
        for m in _RANGE.finditer(part):
            vals = _range_values(m.group(1))
            if vals is None or len(group) * len(vals) > MAX_HOSTS:
                return None
            group = [g + part[pos:m.start()] + v for g in group for v in vals]
            pos = m.end()
        if "[" in part[pos:] or "]" in part[pos:]:
            return None
        names += [g + part[pos:] for g in group]
        if len(names) > MAX_HOSTS:
            return None
    return names


def gres_gpus(gres: str) -> tuple[int, str | None] | None:
    """``gpu:a100:8,mps:100`` -> ``(8, "a100")``; ``gpu:8`` -> ``(8, None)``; no ``gpu`` -> ``(0, None)``;
    None when a GPU count is not a literal."""
    total, types = 0, set()
    for part in _split_top(gres):
        bits = part.split("(")[0].split(":")
        if bits[0].strip().lower() != "gpu":
            continue
        if len(bits) == 1:
            total += 1  # a count of one is implied (slurm.conf: Gres=<name>[:<type>][:no_consume]:<count>)
            types.add(None)
            continue
        count = bits[-1].strip()
        if not count.isdigit():
            return None
        middle = [b for b in bits[1:-1] if b and b.lower() != "no_consume"]
        total += int(count)
        types.add(middle[0] if middle else None)
    return total, (types.pop() if len(types) == 1 else None)


class _Nodes:
    def __init__(self):
        self.by_name: dict[str, dict] = {}
        self.order: list[str] = []
        self.sets: dict[str, dict] = {}  # NodeSet name -> its keys, resolved once every node is known
        self.defaults: dict[str, tuple[str, int, int]] = {}

    def add(self, pairs) -> None:
        first = pairs[0]
        attrs = {k: (v, line, col) for k, v, line, col in pairs[1:]}
        if first[1].upper() == "DEFAULT":
            self.defaults.update(attrs)
            return
        names = hostlist(first[1])
        for name in names or []:
            if name not in self.by_name:
                self.order.append(name)
            self.by_name[name] = {**self.defaults, **attrs}

    def add_set(self, pairs) -> None:
        self.sets[pairs[0][1]] = {k: v for k, v, _, _ in pairs[1:]}

    def _set(self, name: str, seen: frozenset) -> list[str] | None:
        spec = self.sets[name]
        if "nodes" in spec and name not in seen:
            return self.resolve(spec["nodes"], seen | {name})
        if "feature" in spec:
            want = spec["feature"]
            return [n for n in self.order if want in _features(self.by_name[n])]
        return None

    def resolve(self, expr: str, seen: frozenset = frozenset()) -> list[str] | None:
        if expr.strip().upper() == "ALL":
            return list(self.order)
        out: list[str] = []
        for part in _split_top(expr):
            got = self._set(part, seen) if part in self.sets else hostlist(part)
            if got is None:
                return None
            out += got
        return list(dict.fromkeys(out))


def _features(node: dict) -> set[str]:
    feats = node.get("feature") or node.get("features")
    return {f.strip() for f in feats[0].split(",")} if feats else set()


def read_slurmconf(text: str, path: str) -> list[Fact]:
    """The capacity targets of one slurm.conf (never raises: a line it cannot read is skipped)."""
    nodes = _Nodes()
    partitions: list[tuple[list, dict]] = []
    part_defaults: dict = {}
    cluster = None
    for tokens in _logical_lines(text):
        pairs = _pairs(tokens)
        if not pairs:
            continue
        key = pairs[0][0]
        if key == "nodename":
            nodes.add(pairs)
        elif key == "nodeset":
            nodes.add_set(pairs)
        elif key == "partitionname":
            attrs = {k: (v, line, col) for k, v, line, col in pairs[1:]}
            if pairs[0][1].upper() == "DEFAULT":
                part_defaults.update(attrs)
            else:
                partitions.append((pairs[0], {**part_defaults, **attrs}))
        elif key == "clustername" and len(pairs) == 1:
            cluster = pairs[0][1] or None
    marks: dict[tuple, tuple[int, int]] = {}
    doc = Doc(None, marks)
    sink = FactSink(doc, path)
    for (_, pname, line, col), attrs in partitions:
        at = ("PartitionName", pname)
        marks[at] = (line, col)
        members = nodes.resolve(attrs["nodes"][0]) if "nodes" in attrs else None
        count = None
        if members is not None:
            count = (len(members), at + ("Nodes",))
            marks[at + ("Nodes",)] = attrs["nodes"][1:]
        default = "default" in attrs and attrs["default"][0].upper() == "YES"
        gpus = _gpus(nodes, members, marks, at)
        capacity(sink, f"Partition/{pname}", source=SOURCE, provider=None, resource=f"Partition/{pname}", at=at,
                 capacity_of="slurm", partition=pname, max_nodes=count,
                 gpus_per_node=(gpus[0], gpus[2]) if gpus else None, default=default, cluster=cluster)
        if gpus and gpus[1]:
            sink.add("compute.accelerator", {"type": gpus[1], "count": gpus[0]}, gpus[2], f"Partition/{pname}")
    return sink.facts


def _gpus(nodes: _Nodes, members: list[str] | None, marks: dict, at: tuple):
    """``(gpus per node, type, where)`` when every member node is defined here and all agree, else None."""
    if not members or any(m not in nodes.by_name for m in members):
        return None
    seen = set()
    where = None
    for m in members:
        gres = nodes.by_name[m].get("gres")
        got = gres_gpus(gres[0]) if gres else (0, None)
        if got is None:
            return None
        seen.add(got)
        if gres and where is None:
            where = gres[1:]
    if len(seen) != 1:
        return None
    count, kind = seen.pop()
    if count <= 0:
        return None
    marks[at + ("Gres",)] = where
    return count, kind, at + ("Gres",)
