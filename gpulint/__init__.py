"""gpulint: audit ML training repositories for GPU spend mistakes before they run."""

__version__ = "0.1.0"
