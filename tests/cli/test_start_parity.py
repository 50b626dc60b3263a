"""`rtrain start` and `RemoteRunner.start` offer every field of StartParams: a field the
protocol gains fails this test until both the CLI and the Python API take it."""

from __future__ import annotations

import inspect

import msgspec
import typer

from rtrain.client.api import RemoteHost, RemoteRunner
from rtrain.client.cli.app import app
from rtrain.protocol.messages import StartParams

# Fields neither side takes from its user: the progress token names the client's own bar;
# a sweep's point is `rtrain sweep`'s to fill.
INTERNAL = {"progress_token", "sweep"}
# StartParams field -> the CLI's parameter, where the names differ.
CLI_NAMES = {"datasets": "dataset", "secrets": "secret", "time": "time_limit"}
# `dataset` is one of the CLI's repeated --dataset; `then_fetch_into` is its -o/--out.
CLI_NAMES |= {"dataset": "dataset", "then_fetch_into": "out"}
# `hosts`: HOST as a comma list (`rtrain start h1,h2 --nodes 2`).
CLI_NAMES |= {"hosts": "host"}
# StartParams field -> the API's parameter (or the RemoteHost field it is taken from).
API_NAMES = {
    "config": "config_path",
    "dataset": "dataset_path",
    "code": "code_dir",
}
HOST_FIELDS = {"host": "alias", "python": "python", "workdir": "workdir"}


def _name(command: typer.models.CommandInfo) -> str | None:
    return command.name or (command.callback.__name__ if command.callback else None)


def _fields() -> list[str]:
    return [f.name for f in msgspec.structs.fields(StartParams) if f.name not in INTERNAL]


def _cli_start_parameters() -> set[str]:
    [start] = [c for c in app.registered_commands if _name(c) == "start"]
    assert start.callback is not None
    return set(inspect.signature(start.callback).parameters)


def test_the_cli_takes_every_start_field() -> None:
    taken = _cli_start_parameters()
    missing = [f for f in _fields() if CLI_NAMES.get(f, f) not in taken]
    assert missing == []


def test_the_python_api_takes_every_start_field() -> None:
    taken = set(inspect.signature(RemoteRunner.start).parameters)
    host = set(inspect.signature(RemoteHost).parameters)
    missing = [
        f for f in _fields() if API_NAMES.get(f, f) not in taken and HOST_FIELDS.get(f) not in host
    ]
    assert missing == []


def test_the_api_and_the_cli_agree_on_defaults() -> None:
    """Where both take a field under its own name, an unset one means the same."""
    api = inspect.signature(RemoteRunner.start).parameters
    [start] = [c for c in app.registered_commands if _name(c) == "start"]
    assert start.callback is not None
    cli = inspect.signature(start.callback).parameters
    for name in ("gpus", "nodes", "wait", "share_gpus", "requeue", "launcher", "partition"):
        default = cli[name].default
        cli_default = default.default if isinstance(default, typer.models.OptionInfo) else default
        assert api[name].default == cli_default, name
