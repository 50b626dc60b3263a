"""The `process` launcher: a run is a detached session on its host."""
