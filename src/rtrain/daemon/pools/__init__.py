"""Pools of hosts (`[pools.NAME]` in config.toml): a run started `@NAME` is placed on a host
that can give it its GPUs now, else queued in the daemon's registry until one can
(docs/pools.md)."""
