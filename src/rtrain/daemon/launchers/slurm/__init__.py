"""The `slurm` launcher: a run is one batch job, submitted through a cluster's login node."""
