"""Hydra's launcher `rtrain` (`hydra/launcher=rtrain`): each job of a multirun is an rtrain
run placed in a pool (docs/hydra.md)."""
