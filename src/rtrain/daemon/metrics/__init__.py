"""Metrics a run's log and metrics.jsonl reveal, read with no change to the trainer.

`log_formats` reads one line (sans-IO), `run_series` keeps one run's bounded series,
`gpu_telemetry` reads what nvidia-smi said, and `store` holds all of it for the daemon.
The formats are documented in docs/metrics.md.
"""
