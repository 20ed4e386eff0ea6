"""SYS: the scan itself. The engine emits these; the classes document them,
give them codes users can select, ignore and explain."""
from __future__ import annotations

from dataclasses import replace

from gpulint.rulekit import (
    Example, Expect, GPU, Rule, Severity, UNKNOWN, hookimpl, looks_like_gpu_instance, pre_tensor_core,
)


class ParseError(Rule):
    """A file of a known kind could not be parsed; the scan goes on without it.

    What it does:
        Reports Python and notebook syntax errors, invalid YAML/JSON/TOML/HCL and files that are
        not UTF-8 text, at the position the parser gave. Every other file is still scanned.
    Why it costs money:
        A file gpulint cannot read may hold the setting that decides a finding (the Terraform with
        the spot instance, the config that enables bf16); workloads that use it may be incomplete.
    How to fix:
        Fix the syntax error, or exclude generated and template files (Helm charts with ``{{ }}``)
        with ``exclude = ["charts/**"]`` in ``[tool.gpulint]``.
    Cost model:
        None: this is about the scan, not the spend.
    """

    code = "SYS001"
    name = "parse-error"
    severity = Severity.ERROR
    family = "SYS"
    VALID = [Example({"config.yaml": "a: 1\nb: [1, 2]\n"})]
    INVALID = [
        Example({"config.yaml": "a: [1, 2\nb: 3\n"}, expect=[Expect("config.yaml", 2, "YAML")]),
        Example({"train.py": "import torch\ndef f(:\n    pass\n"}, expect=[Expect("train.py", 2, "syntax")]),
    ]


class RuleError(Rule):
    """A rule or fact extractor raised an exception; the other rules still ran.

    What it does:
        Reports a crash of one rule (or plugin) on one file or workload instead of aborting the
        scan. ``--verbose`` prints the traceback.
    Why it costs money:
        The crashed rule's findings are missing from this scan.
    How to fix:
        Report it with the traceback from ``gpulint scan --verbose``; meanwhile ``--ignore`` the
        failing rule's code if it blocks CI.
    Cost model:
        None.
    """

    code = "SYS002"
    name = "rule-error"
    severity = Severity.ERROR
    family = "SYS"


class UnknownInstanceType(Rule):
    """An instance type in the infrastructure is not in the catalogue, so fit and cost rules skipped it.

    What it does:
        Reports instance types (EC2, SageMaker ``ml.``, GCP machine types with accelerators, Azure
        sizes) that the bundled catalogue and the configuration's ``instances`` do not know.
    Why it costs money:
        Without the instance's GPUs and price, memory-fit, network and cost checks cannot run on
        that workload.
    How to fix:
        Correct a typo, or describe the instance in ``[[tool.gpulint.instances]]`` (provider, name,
        gpu_model, gpu_count, gpu_memory_gib, on_demand_usd_per_hour ...).
    Cost model:
        None: no price is invented for an unknown instance.
    """

    code = "SYS003"
    name = "unknown-instance-type"
    severity = Severity.INFO
    family = "SYS"
    VALID = [
        Example({"infra/main.tf": 'resource "aws_instance" "t" {\n  instance_type = "p4d.24xlarge"\n}\n'}),
        Example({"infra/main.tf": 'resource "aws_instance" "web" {\n  instance_type = "m5.xlarge"\n}\n'}, title="CPU instances are not GPU compute"),
    ]
    INVALID = [
        Example({"infra/main.tf": 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "p9.48xlarge"\n}\n'},
                expect=[Expect("infra/main.tf", 3, "p9.48xlarge")]),
    ]

    def check_repo(self, workloads, ctx):
        for compute in ctx.computes.values():
            for u in compute.unknown_instances:
                if not looks_like_gpu_instance(u.name):
                    continue  # CPU compute (m5, n2-standard ...) is known to be CPU, not unknown
                old = pre_tensor_core(u.name)
                yield self.finding(
                    replace(u.loc, column=1, end_line=None, end_column=None),  # a notebook's cell and line stay
                    f"instance type {u.name!r} ({compute.target}) is "
                    + ("an older GPU generation without Tensor Cores (K80/M60/P100 class) that gpulint's catalogue does "
                       "not price; memory-fit and cost checks skip it, and current GPUs (T4, A10G, L4) do the same work "
                       "for less" if old else "not in gpulint's catalogue; memory-fit and cost checks skip it"),
                    symbol=f"{compute.target}:{u.name}",
                )


_TRAIN = """\
import torch
model = torch.nn.Linear(8, 8).cuda()
opt = torch.optim.AdamW(model.parameters())
for x in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
"""
_GPU_TF = 'resource "aws_instance" "trainer" {\n  ami = "ami-1"\n  instance_type = "g5.12xlarge"\n}\n'


class WorkloadAmbiguous(Rule):
    """A compute target could not be paired with one entry point, so cross-file checks skip it.

    What it does:
        When the repository has GPU compute that no launcher ties to a script, gpulint pairs the
        one remaining GPU target with the one training script that has none (preferring the one
        script a launcher starts). When several candidates remain on either side it does not
        guess: it reports the target here, names the candidate entry points, and shows the
        ``[[tool.gpulint.workloads]]`` row that settles it. Targets that resolve to CPU capacity (a
        variable's default machine type), or whose machine type is unknown and which ask for no GPU or
        accelerator, are not reported: no GPU check is known to wait on them.
    Why it costs money:
        Without the pairing, every check that needs the instance (memory fit, fabric, spot
        resilience, the dollar figures) is skipped for these scripts, silently but for this note.
    How to fix:
        Pin the pairing in pyproject.toml (or .gpulint.toml)::

            [[tool.gpulint.workloads]]
            entrypoint = "train.py"
            compute = "infra/main.tf#aws_instance.trainer"

        or make the launcher explicit (a script, job or task that runs the entry point).
    Cost model:
        None: it says which checks were not run.
    """

    code = "SYS005"
    name = "workload-ambiguous"
    severity = Severity.INFO
    family = "SYS"
    since = "0.2.0"
    VALID = [
        Example({"train.py": _TRAIN, "infra/main.tf": _GPU_TF}, title="one script, one GPU target: paired"),
        Example({"a.py": _TRAIN, "b.py": _TRAIN, "infra/main.tf": _GPU_TF},
                config='[[workloads]]\nentrypoint = "a.py"\ncompute = "infra/main.tf#aws_instance.trainer"\n',
                title="pinned by the workloads table"),
    ]
    INVALID = [
        Example({"a.py": _TRAIN, "b.py": _TRAIN, "infra/main.tf": _GPU_TF},
                expect=[Expect("infra/main.tf", 1, ("aws_instance.trainer", "a.py", "b.py", "[[tool.gpulint.workloads]]"))],
                title="two training scripts, one GPU target"),
    ]

    def check_repo(self, workloads, ctx):
        for amb in ctx.ambiguities:
            rc = ctx.computes.get(amb.subject)
            if rc is not None and rc.device not in (GPU, UNKNOWN):
                continue  # resolved to CPU capacity: no GPU check was skipped for it
            if rc is not None and rc.device == UNKNOWN and not (rc.accelerator or rc.gpu_count or rc.efa_requested
                                                                or looks_like_gpu_instance(rc.instance_written or "")):
                continue  # a machine type gpulint cannot read (a variable set elsewhere) and no GPU asked for: maybe CPU
            cands = ", ".join(amb.candidates[:6]) + (f" and {len(amb.candidates) - 6} more" if len(amb.candidates) > 6 else "")
            yield self.finding(
                amb.loc,
                f"{amb.subject} could not be paired with one entry point ({cands}): memory, network, spot and cost checks "
                f"skip them; pin it with [[tool.gpulint.workloads]] entrypoint = \"{amb.candidates[0]}\" compute = \"{amb.subject}\"",
                symbol=f"ambiguous:{amb.subject}",
            )


class UnusedSuppression(Rule):
    """A ``gpulint: ignore[...]`` comment suppresses nothing.

    What it does:
        After the scan, reports every inline suppression that matched no finding: the code does
        not fire on that line (or the next), names an unknown rule, or a bare ``gpulint: ignore``
        hides nothing. Codes of rules that are not enabled are not reported.
    Why it costs money:
        Stale suppressions pile up and one day hide a real finding.
    How to fix:
        Delete the comment or fix the code it names.
    Cost model:
        None.
    """

    code = "SYS004"
    name = "unused-suppression"
    severity = Severity.INFO
    family = "SYS"
    VALID = [
        Example(
            config='select = ["SYS004", "NET006"]\n',
            files="""\
import torch.nn as nn
model = nn.DataParallel(model).cuda()  # gpulint: ignore[NET006]
for x in loader:
    model(x).sum().backward()
    opt.step()
""",
        ),
    ]
    INVALID = [
        Example(
            """\
import torch
x = 1  # gpulint: ignore[NET006]
""",
            config='select = ["SYS004", "NET006"]\n',
            expect=[Expect("train.py", 2, "NET006")],
        ),
    ]


@hookimpl
def gpulint_rules():
    return [ParseError, RuleError, UnknownInstanceType, UnusedSuppression, WorkloadAmbiguous]
