"""Linking: the facts of many files joined into workloads; the only stage that looks across files."""
