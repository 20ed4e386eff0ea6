"""gpulint's language server (``gpulint lsp``): findings as editor diagnostics.

``server`` wires pygls to the scanner; ``convert`` turns findings into LSP
diagnostics and hovers; ``actions`` builds suppression edits and quick fixes;
``worker`` runs scans off the event loop, debounced, the latest request
winning. Only ``server`` needs pygls at import time of its own features.
"""
