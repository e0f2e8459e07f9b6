"""`make bench`: performance harness, side-by-side baselines, JSON results in benchmarks/results/."""
