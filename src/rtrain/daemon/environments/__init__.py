"""A run's environment: a virtual environment on the host built once per lock (pip
requirements) and reused by every run with the same lock, python and platform
(docs/environments.md)."""
