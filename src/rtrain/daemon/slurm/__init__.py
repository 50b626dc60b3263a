"""The Slurm launcher: runs as batch jobs submitted through a login node."""
