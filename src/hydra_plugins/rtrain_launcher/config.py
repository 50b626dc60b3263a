"""The launcher's settings, as `hydra.launcher.*` takes them. No `from __future__ import
annotations` here: Hydra loads plugins outside sys.modules, where a dataclass cannot resolve
string annotations, and OmegaConf reads these types at run time."""

from dataclasses import dataclass
from typing import Optional

from hydra.core.config_store import ConfigStore


@dataclass
class RtrainLauncherConf:
    _target_: str = "hydra_plugins.rtrain_launcher.rtrain_launcher.RtrainLauncher"
    # The pool of config.toml the jobs are placed in (`[pools.NAME]`), without the @.
    pool: str = "???"
    gpus: int = 1
    # At most this many jobs placed at once (None: as many as the pool's GPUs allow).
    max_parallel: Optional[int] = None  # noqa: UP045 (OmegaConf reads it)
    priority: int = 0
    # The python on the hosts that has hydra-core; `{python}`: the host's own.
    python: str = "{python}"
    # The sweep's name (its runs are NAME-0, NAME-1, ...); None: from the sweep directory.
    sweep: Optional[str] = None  # noqa: UP045


ConfigStore.instance().store(
    group="hydra/launcher", name="rtrain", node=RtrainLauncherConf, provider="rtrain"
)
