"""Python code (scripts, notebooks, libraries): the shared libcst index of a module and the facts read from it."""
