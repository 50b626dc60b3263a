"""The `torchrun` launcher: torchrun's ranks on one host, as a detached session."""
