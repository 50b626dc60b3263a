"""Each launcher's options are one tagged union in run/start (`launcher: {kind, ...}`): every
member arrives as that launcher's Struct, a field of one launcher under another's kind (or an
unknown kind) is -32602 naming it, and the Python API's options objects and the CLI's flags
put the same object on the wire."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

import rtrain
from rtrain.client import api
from rtrain.client.cli.launcher_flags import launcher_options
from rtrain.protocol import errors as e
from rtrain.protocol import requests
from rtrain.protocol.events import Request
from rtrain.protocol.launcher_options import (
    LauncherOptions,
    NodesOptions,
    ProcessOptions,
    SlurmOptions,
    TorchrunOptions,
    asks_torchrun,
)
from rtrain.protocol.messages import StartParams

from .wire import frame, initialized_server, replies, request

MEMBERS: list[LauncherOptions] = [
    ProcessOptions(),
    TorchrunOptions(),
    NodesOptions(hosts=["a", "b"], nodes=2, master_addr="10.0.0.1"),
    SlurmOptions(partition="gpu", time="1:00:00", nodes=2, signal_before_timeout=90, requeue=True),
    SlurmOptions(torchrun=True),
]


@pytest.mark.parametrize("options", MEMBERS, ids=lambda o: type(o).__name__)
def test_a_start_with_each_launcher_s_options_arrives_as_that_struct(
    options: LauncherOptions,
) -> None:
    call = requests.run_start(host="h", launcher=api._wire_options(options))
    server = initialized_server()
    [event] = server.receive_data(frame(request(7, call.method, call.params)))
    assert isinstance(event, Request) and isinstance(event.params, StartParams)
    assert event.params.launcher == options
    assert call.params["launcher"]["kind"] == type(options).__struct_config__.tag


@pytest.mark.parametrize(
    ("launcher", "said"),
    [
        ({"kind": "kubernetes"}, "Invalid value 'kubernetes' - at `$.launcher.kind`"),
        ({"kind": "process", "partition": "gpu"}, "unknown field `partition`"),
        ({"kind": "torchrun", "hosts": ["a", "b"]}, "unknown field `hosts`"),
        ({"kind": "slurm", "masterAddr": "10.0.0.1"}, "unknown field `masterAddr`"),
        ({"kind": "slurm", "nodes": 0}, "Expected `int` >= 1 - at `$.launcher.nodes`"),
        ({"partition": "gpu"}, "missing required field `kind`"),
        ("slurm", "Expected `object | null`, got `str` - at `$.launcher`"),
    ],
)
def test_options_of_another_launcher_or_an_unknown_kind_are_invalid_params(
    launcher: object, said: str
) -> None:
    server = initialized_server()
    server.receive_data(frame(request(7, "run/start", {"host": "h", "launcher": launcher})))
    [reply] = replies(server)
    assert reply["error"]["code"] == e.INVALID_PARAMS, reply
    assert said in reply["error"]["message"], reply


def test_a_start_naming_no_launcher_leaves_it_to_the_host() -> None:
    params = msgspec.json.decode(b'{"host": "h"}', type=StartParams)
    assert params.launcher is None and asks_torchrun(params.launcher) is None
    assert "launcher" not in requests.run_start(host="h").params


def test_the_api_exports_an_options_object_per_launcher() -> None:
    for name, struct in (
        ("ProcessOptions", ProcessOptions),
        ("TorchrunOptions", TorchrunOptions),
        ("NodesOptions", NodesOptions),
        ("SlurmOptions", SlurmOptions),
    ):
        assert name in rtrain.__all__
        assert getattr(rtrain, name) is struct
    job = rtrain.SlurmOptions(partition="gpu", time="2:00:00")
    assert api._wire_options(job) == {"kind": "slurm", "partition": "gpu", "time": "2:00:00"}
    with pytest.raises(TypeError):
        rtrain.ProcessOptions(partition="gpu")


@pytest.mark.parametrize(
    ("hosts", "flags", "options"),
    [
        ([], {}, None),
        ([], {"launcher": "process"}, ProcessOptions()),
        ([], {"launcher": "torchrun"}, TorchrunOptions()),
        (["a", "b"], {"nodes": 2, "master_addr": "10.0.0.1"}, MEMBERS[2]),
        (
            [],
            {
                "partition": "gpu",
                "time_limit": "1:00:00",
                "nodes": 2,
                "signal_before_timeout": 90,
                "requeue": True,
            },
            MEMBERS[3],
        ),
        ([], {"launcher": "torchrun", "time_limit": "5"}, SlurmOptions(time="5", torchrun=True)),
        ([], {"launcher": "process", "nodes": 3}, SlurmOptions(nodes=3, torchrun=False)),
    ],
)
def test_the_cli_s_flags_make_the_api_s_options_object(
    hosts: list[str], flags: dict[str, Any], options: LauncherOptions | None
) -> None:
    given: dict[str, Any] = {
        "partition": None,
        "time_limit": None,
        "nodes": 1,
        "signal_before_timeout": None,
        "requeue": False,
        "master_addr": None,
    }
    given.update(flags)
    launcher = given.pop("launcher", None)
    assert launcher_options(hosts, launcher, **given) == api._wire_options(options)
