"""Reading: each file kind parsed once and turned into per-file facts (pure: file bytes and config in, facts out)."""
