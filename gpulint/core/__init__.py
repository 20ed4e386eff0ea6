"""What every stage shares: the plain records (locations, facts, findings), the fact vocabulary, parsed sources, the scan result, configuration and per-file budgets."""
