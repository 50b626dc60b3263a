"""Which limits a run gets (its own, else its host's, else none and a 30-minute stall flag),
what a restart reads back from meta.json, and a maximum duration as Slurm's --time."""

from __future__ import annotations

import msgspec
import pytest

from rtrain.daemon.launchers.slurm.launcher import slurm_time
from rtrain.daemon.operations.restart import RecordedLaunch
from rtrain.daemon.operations.run_limits import Limits, chosen_limits, launch_line
from rtrain.daemon.remote.contract.launch_scripts import launch_stdin
from rtrain.daemon.user_config import HostSettings
from rtrain.protocol.messages import StartParams


def params(**given: object) -> StartParams:
    return StartParams(host="gpubox", config="/c.yaml", **given)  # type: ignore[arg-type]


def test_a_start_s_own_limits_win_over_the_host_s() -> None:
    host = HostSettings(max_duration="6h", stall_after="10m", on_stall="stop")
    assert chosen_limits(params(), host) == Limits(21600, 600, "stop")
    assert chosen_limits(params(max_duration=60, stall_after=0, on_stall="flag"), host) == (
        Limits(60, 0, "flag")
    )


def test_without_any_a_run_has_no_maximum_and_is_flagged_after_30_minutes() -> None:
    assert chosen_limits(params(), HostSettings()) == Limits(0, 1800, "flag")
    assert chosen_limits(params(), HostSettings(stall_after="off")) == Limits(0, 0, "flag")
    assert launch_line(Limits(0, 0, "flag"), 10.0) is None


def test_the_limits_reach_launch_sh_and_meta_json_and_come_back_for_a_restart() -> None:
    limits = Limits(21600, 1800, "stop")
    line = launch_line(limits, 35.0)
    assert line is not None
    stdin = launch_stdin({}, {}, None, {"limits": msgspec.to_builtins(limits)}, limits=line)
    assert stdin.decode().splitlines()[-1] == "+limits\t21600\t1800\tstop\t35.0"
    meta = {"command": ["python3", "t.py"], "limits": msgspec.to_builtins(limits)}
    recorded = msgspec.json.decode(msgspec.json.encode(meta), type=RecordedLaunch)
    assert recorded.limits == limits


@pytest.mark.parametrize(
    "seconds,time",
    [(21600, "06:00:00"), (90, "00:02:00"), (1, "00:01:00"), (30 * 3600, "1-06:00:00")],
)
def test_a_maximum_duration_is_slurm_s_time_in_whole_minutes_rounded_up(
    seconds: int, time: str
) -> None:
    assert slurm_time(seconds) == time
