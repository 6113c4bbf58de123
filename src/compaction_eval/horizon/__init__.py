"""Long-horizon suite: per-sample measurements, the cache-aware cost model, the ablation and
the runner that writes `results/<run>/horizon.json`."""
