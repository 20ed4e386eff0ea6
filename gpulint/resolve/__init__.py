"""Resolution: linked facts decided once per scan into typed results (compute, precision, model size, memory fit, scale)."""
