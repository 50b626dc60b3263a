"""rtrain's benchmark suite: `python bench/run_all.py` (see docs/performance.md)."""
