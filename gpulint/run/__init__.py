"""Running a scan: discovery, the engine, the per-file cache, worker isolation, plugins, suppressions, baselines, fixes."""
