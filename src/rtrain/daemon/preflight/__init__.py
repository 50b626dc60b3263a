"""The judges of a host's preflight report, one per topic (python, GPUs, packages, disk, the
Hub, the environment, the container); operations/preflight.py asks the host and calls them."""
