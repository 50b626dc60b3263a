"""Hydra's launcher `rtrain`: `python train.py -m lr=1,2 hydra/launcher=rtrain
hydra.launcher.pool=lab` runs each job of the multirun as an rtrain run of one sweep in the
pool, with Hydra's own output layout here."""

from __future__ import annotations

import os
import subprocess
import sys

from omegaconf import OmegaConf

from tests.pools.conftest import Lab
from tests.torch_python import far_hydra_python

TRAIN = """\
import hydra
from omegaconf import DictConfig


@hydra.main(version_base=None, config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    print(f"step 1 | loss {1 / cfg.lr:.3f}", flush=True)
    print(f"trained {cfg.model.name} with lr={cfg.lr}", flush=True)


main()
"""


def test_a_hydra_multirun_runs_each_job_as_an_rtrain_run_in_the_pool(lab: Lab) -> None:
    python = far_hydra_python()
    lab.configure({"lab": ["box1", "box2", "box3"]})
    project = lab.cwd / "project"
    (project / "conf").mkdir(parents=True)
    (project / "conf" / "config.yaml").write_text("lr: 1.0\nmodel:\n  name: tiny\n")
    (project / "train.py").write_text(TRAIN)
    (project / ".rtrainignore").write_text("multirun/\n")
    env = dict(lab.env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # this tree's rtrain
    done = subprocess.run(
        [
            sys.executable, "train.py", "-m", "lr=1,2,4", "hydra/launcher=rtrain",
            "hydra.launcher.pool=lab", "hydra.launcher.gpus=0", f"hydra.launcher.python={python}",
            "hydra.launcher.max_parallel=2", f"hydra.launcher.sweep=hy{lab.tag}",
            "hydra.sweep.dir=multirun/here",
        ],
        cwd=project, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]

    runs = {r["runId"]: r for r in lab("runs", "--sweep", f"hy{lab.tag}", "--json").json()}
    assert sorted(runs) == [f"hy{lab.tag}-{n}" for n in range(3)]
    assert {r["state"] for r in runs.values()} == {"completed"}
    assert {r["params"]["lr"] for r in runs.values()} == {"1", "2", "4"}
    for number, lr in enumerate(("1", "2", "4")):
        job = project / "multirun" / "here" / str(number)
        overrides = OmegaConf.to_container(OmegaConf.load(job / ".hydra" / "overrides.yaml"))
        assert overrides == [f"lr={lr}"]
        config = OmegaConf.to_container(OmegaConf.load(job / ".hydra" / "config.yaml"))
        assert isinstance(config, dict) and config["lr"] == int(lr)
        assert f"trained tiny with lr={lr}" in (job / "train.log").read_text()
        run = runs[f"hy{lab.tag}-{number}"]
        far = lab.far_run_dir(run["host"], run["runId"])
        assert (far / ".hydra" / "overrides.yaml").exists()  # Hydra's own run on the host
        assert not (far / "multirun").exists()  # the local outputs were not shipped
