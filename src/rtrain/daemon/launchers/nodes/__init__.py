"""The `nodes` launcher: one run across several hosts reached by plain SSH, torchrun on each."""
