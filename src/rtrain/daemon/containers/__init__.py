"""A run inside a container image, in the host's own runtime (docs/containers.md)."""
