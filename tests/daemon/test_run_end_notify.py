"""config.toml's `notify`: read and checked as the config is, chosen per host, and run once
per end of a run (a real command, the run in its environment only)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rtrain.daemon.run_end_notify import RunEndNotify
from rtrain.daemon.user_config import ConfigError, UserConfig, load_user_config
from rtrain.protocol.messages import Attempt, RunInfo


def load(tmp_path: Path, text: str) -> UserConfig:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_user_config(path)


def test_global_host_and_off(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        'notify = "notify-send done"\n'
        '[hosts.gpubox]\nnotify = ["/bin/tell", "chat"]\n'
        '[hosts.quiet]\nnotify = ""\n',
    )
    notify = RunEndNotify(config, [])
    assert notify.command("gpubox") == ["/bin/tell", "chat"]
    assert notify.command("other") == "notify-send done"
    assert notify.command("quiet") is None
    assert RunEndNotify(UserConfig(), []).command("gpubox") is None


def test_a_bad_notify_names_its_line_and_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, "[hosts.gpubox]\nnotify = 3\n")
    assert "line 2: hosts.gpubox.notify: Expected `str | array | null`, got `int`" in str(
        caught.value
    )


def run(state: str, attempts: int = 1, **extra: object) -> RunInfo:
    tried = [Attempt(number=n + 1, state="running") for n in range(attempts)]
    return RunInfo(host="gpubox", run_id="r1", state=state, attempts=tried, **extra)  # type: ignore[arg-type]


def test_each_end_is_told_once(tmp_path: Path) -> None:
    told = tmp_path / "told"
    command = ["sh", "-c", f'echo "$RTRAIN_STATE $RTRAIN_EXIT_CODE" >> {told}']
    config = UserConfig(notify=command)

    async def scenario() -> None:
        # Known to the registry as running when the daemon starts; an old run already ended.
        notify = RunEndNotify(config, [run("running"), RunInfo("gpubox", "old", "completed")])
        notify.seen(run("unknown", reason="host unreachable"))
        notify.seen(run("failed", exit_code=3))
        notify.seen(run("failed", exit_code=3))  # its metrics, its after-run plan: no new end
        notify.seen(RunInfo("gpubox", "old", "completed"))
        notify.seen(RunInfo("gpubox", "found", "completed"))  # never seen before it ended
        notify.seen(run("running", attempts=2))  # restarted
        notify.seen(run("completed", attempts=2, exit_code=0))
        await notify.close()

    asyncio.run(scenario())
    assert sorted(told.read_text().splitlines()) == ["completed 0", "failed 3"]
