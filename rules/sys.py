"""SYS: the scan itself. The engine emits these; the classes document them,
give them codes users can select, ignore and explain."""
from __future__ import annotations

from gpulint.hookspecs import hookimpl
from gpulint.model import Location, Severity
from gpulint.rule import Example, Expect, Rule


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
        from gpulint.resolve import _all_computes, resolve_compute
        from gpulint.workloads import looks_like_gpu_instance

        for compute in _all_computes(ctx):
            info = resolve_compute(compute, ctx)
            for u in info.get("unknown_instance_types", []):
                if not looks_like_gpu_instance(u["name"]):
                    continue
                yield self.finding(
                    Location(u["path"], u["line"], 1),
                    f"instance type {u['name']!r} ({compute.target}) is not in gpulint's catalogue; memory-fit and cost checks skip it",
                    symbol=f"{compute.target}:{u['name']}",
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
    return [ParseError, RuleError, UnknownInstanceType, UnusedSuppression]
