"""The command line (``gpulint``): scan, rules, explain, workloads, plugins, catalogue, lsp."""
from gpulint.cli.main import main

__all__ = ["main"]
