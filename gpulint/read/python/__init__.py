"""Python code (scripts, notebooks, libraries): the shared `ast` index of a module and the facts read from it."""
