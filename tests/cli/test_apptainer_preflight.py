"""Preflight of an Apptainer image through the real far script on the plain host, which has
no Apptainer: the finding says so in one sentence (docs/containers.md)."""

from __future__ import annotations

from tests.cli.conftest import Cli


def test_preflight_says_a_host_has_no_apptainer(cli: Cli) -> None:
    settings = cli.daemon.config / "rtrain"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "config.toml").write_text('[hosts.plain]\ncontainer_runtime = "apptainer"\n')
    image = "/shared/images/train.sif"
    done = cli(
        "preflight", "plain", "--gpus", "0", "--workdir", cli.workdir, "--image", image, "--json"
    )
    assert done.code == 1, done
    problems = [f["text"] for f in done.json()["findings"] if f.get("level", "ok") == "problem"]
    assert problems == [f"plain has no apptainer on PATH, so --image {image} cannot run there."]
