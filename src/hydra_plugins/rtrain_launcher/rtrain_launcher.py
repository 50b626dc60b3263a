"""Hydra's launcher plugin for rtrain: each job of a multirun becomes an rtrain run of one
sweep, placed in a pool of config.toml, and the launcher waits for them all.

A job runs the same script on its host, with its overrides and `hydra.run.dir=.` (so its
outputs land in its run directory); the script's directory is shipped as the run's code.
Locally each job keeps Hydra's own layout: `SWEEP_DIR/N/.hydra/{config,hydra,overrides}.yaml`
as Hydra writes them, and the job's log as `SWEEP_DIR/N/TASK.log` once it has ended.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobReturn, JobStatus, configure_log, filter_overrides, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol import requests
from rtrain.protocol.run_states import is_ended

from .config import RtrainLauncherConf

__all__ = ["RtrainLauncher", "RtrainLauncherConf"]

log = logging.getLogger(__name__)
# How often the launcher asks the daemon how the jobs stand.
POLL_S = 1.0


class RtrainLauncher(Launcher):
    def __init__(self, **params: Any) -> None:
        self.params = params
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        assert self.config is not None and self.hydra_context is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        name = self.params.get("sweep") or _sweep_name(sweep_dir)
        script = Path(sys.argv[0]).resolve()
        jobs = []
        with DaemonClient.connect(name="rtrain-hydra") as client:
            for index, overrides in enumerate(job_overrides):
                number = initial_job_idx + index
                jobs.append(self._start(client, name, number, list(overrides), script))
            runs = _wait(client, name, [job["run_id"] for job in jobs])
            return [self._outcome(client, job, runs[job["run_id"]]) for job in jobs]

    def _start(
        self,
        client: DaemonClient,
        name: str,
        number: int,
        overrides: list[str],
        script: Path,
    ) -> dict[str, Any]:
        assert self.config is not None and self.hydra_context is not None
        loader = self.hydra_context.config_loader
        sweep_config = loader.load_sweep_config(self.config, overrides)
        run_id = f"{name}-{number}"
        with open_dict(sweep_config):
            sweep_config.hydra.job.id = run_id
            sweep_config.hydra.job.num = number
        HydraConfig.instance().set_config(sweep_config)
        job_dir = Path(str(sweep_config.hydra.sweep.dir)) / str(sweep_config.hydra.sweep.subdir)
        _save_hydra_files(job_dir, sweep_config, overrides)
        command = [
            str(self.params.get("python", "{python}")),
            script.name,
            *overrides,
            "hydra.run.dir=.",
        ]
        params = {key: value for key, _, value in (o.partition("=") for o in overrides)}
        result = client.call(
            requests.run_start(
                host=f"@{self.params['pool']}",
                run_id=run_id,
                code=str(script.parent),
                gpus=int(self.params.get("gpus", 1)),
                priority=int(self.params.get("priority", 0)) or None,
                command=command,
                sweep={
                    "name": name,
                    "params": params,
                    "maxParallel": self.params.get("max_parallel"),
                },
            )
        )
        where = result.placement or f"queued: {result.run.reason}"
        log.info(
            "\t#%d : %s -> %s (%s)", number, " ".join(filter_overrides(overrides)), run_id, where
        )
        return {"run_id": run_id, "dir": job_dir, "config": sweep_config, "overrides": overrides}

    def _outcome(self, client: DaemonClient, job: dict[str, Any], run: Any) -> JobReturn:
        config: DictConfig = job["config"]
        task_name = str(config.hydra.job.name)
        job_dir: Path = job["dir"]
        if not run.host.startswith("@"):
            client.call(
                requests.run_fetch(
                    host=run.host, run_id=run.run_id, path="train.log", dest=str(job_dir.resolve())
                )
            )
            fetched = job_dir / "train.log"
            if fetched.exists():
                fetched.replace(job_dir / f"{task_name}.log")
        ret = JobReturn(
            overrides=job["overrides"],
            cfg=config,
            hydra_cfg=config,
            working_dir=str(job_dir),
            task_name=task_name,
        )
        if run.state == "completed":
            ret.status = JobStatus.COMPLETED
            ret.return_value = None
        else:
            ret.status = JobStatus.FAILED
            ret.return_value = RuntimeError(
                f"rtrain run {run.run_id} on {run.host}: {run.state}"
                + (f" ({run.reason})" if run.reason else "")
            )
        return ret


def _sweep_name(sweep_dir: Path) -> str:
    """A sweep named from Hydra's sweep directory (`multirun/2026-12-06/18-40-01`)."""
    words = re.sub(r"[^A-Za-z0-9]+", "-", "-".join(sweep_dir.parts[-2:])).strip("-")
    return f"hydra-{words}"[:48]


def _save_hydra_files(job_dir: Path, config: DictConfig, overrides: list[str]) -> None:
    """Hydra's own record of a job: `.hydra/config.yaml`, `hydra.yaml`, `overrides.yaml`."""
    output = job_dir / str(config.hydra.output_subdir or ".hydra")
    output.mkdir(parents=True, exist_ok=True)
    task = OmegaConf.masked_copy(config, [str(k) for k in config if k != "hydra"])
    OmegaConf.save(task, output / "config.yaml", resolve=False)
    OmegaConf.save(OmegaConf.create({"hydra": config.hydra}), output / "hydra.yaml")
    OmegaConf.save(OmegaConf.create(overrides), output / "overrides.yaml")


def _wait(client: DaemonClient, name: str, run_ids: list[str]) -> dict[str, Any]:
    """Every job's run once all have ended."""
    while True:
        runs = {r.run_id: r for r in client.call(requests.runs_list(sweep=name)).runs}
        mine = {run_id: runs[run_id] for run_id in run_ids if run_id in runs}
        if len(mine) == len(run_ids) and all(is_ended(r.state) for r in mine.values()):
            return mine
        time.sleep(POLL_S)
