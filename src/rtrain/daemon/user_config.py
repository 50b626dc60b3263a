"""The user's settings: `$XDG_CONFIG_HOME/rtrain/config.toml` (optional).

ssh_config = "~/.ssh/config.rtrain"      # passed as `ssh -F` (RTRAIN_SSH_CONFIG wins)
poll_interval = 5                         # seconds between state refreshes of active runs
notify = 'notify-send "rtrain" "$RTRAIN_RUN_ID: $RTRAIN_STATE"'  # when a run ends (per host too)

[hosts.gpubox]
transport = "console"                     # pin: exec | console (default: detected)
command = ["{python}", "train.py", "--config", "{config}"]   # default trainer command
python = "python3.11"
workdir = "~/runs"
env = { HF_HOME = "/workspace/hf" }       # variables for every run's setup and trainer
setup = "pip install -r requirements.txt" # run in the run dir before the trainer
code = "~/src/my-project"                 # local directory shipped into every run dir
channels = 4                              # ssh channels one large transfer uses at most
idle_stop = "30m"                         # with terminate: the daemon arms a guard (docs/guard.md)
terminate = "runpodctl stop pod $RUNPOD_POD_ID"  # the host's terminate command
stalled_idle = true                       # the guard counts a stalled run as idle
max_duration = "6h"                       # stop a run that runs longer (`off`: never)
stall_after = "30m"                       # flag a run whose log is still that long
on_stall = "stop"                         # flag | stop a stalled run
price_per_hour = 0.22                     # what the host costs (any unit; costs carry it)

A request's explicit value wins over these (for `env`, name by name).

[hosts.cluster]
scheduler = "slurm"                       # runs are batch jobs (docs/slurm.md)
partition = "gpu"                         # and account, qos, time, gres_type, sbatch_args

[pools.lab]
hosts = ["box1", "box2", "pod3"]          # `rtrain start @lab` places a run where GPUs are free
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from rtrain.daemon.transports.local_transport import LOCAL_ALIAS
from rtrain.protocol import locations, validation
from rtrain.protocol.durations import DurationError, parse_duration
from rtrain.protocol.errors import RpcError
from rtrain.protocol.launcher_words import Scheduler
from rtrain.protocol.limit_words import parse_limit

from .config_lines import line_of


class HostSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One `[hosts.ALIAS]` table. A key this version does not know is an error that names
    it, so a typo never silently does nothing."""

    transport: Literal["exec", "console"] | None = None
    command: list[str] | None = None
    python: str | None = None
    workdir: str | None = None
    env: dict[str, str] = {}
    setup: str | None = None
    # The daemon does not share a client's working directory, so a relative path would mean
    # wherever the daemon happened to start: absolute or ~/ only.
    code: Annotated[str, msgspec.Meta(pattern=r"^[/~]")] | None = None
    # A pip requirements file every start builds its environment from (docs/environments.md);
    # absolute or ~/ for the same reason.
    requirements: Annotated[str, msgspec.Meta(pattern=r"^[/~]")] | None = None
    # The container image every start runs in, and which runtime runs it (auto: the first
    # of podman, docker, apptainer, singularity the host has); docs/containers.md.
    image: str | None = None
    container_runtime: Literal["auto", "podman", "docker", "apptainer", "singularity"] = "auto"
    # `slurm`: the host is a cluster's login node and runs are batch jobs (docs/slurm.md).
    scheduler: Literal["none"] | Scheduler | None = None
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time: str | None = None
    gres_type: str | None = None
    sbatch_args: list[str] = []
    # The most channels of the host's connection one transfer stripes over (None: chosen
    # from the file's size and the round trip, see daemon/transfer/plan.py).
    channels: Annotated[int, msgspec.Meta(ge=1, le=64)] | None = None
    # The guard (docs/guard.md): how long the host must be idle (`30m`), and the shell
    # command that ends it, for `rtrain terminate` and for the guard the daemon arms when
    # both are set. Checked as the config is read, so a typo is found at start.
    idle_stop: str | None = None
    terminate: Annotated[str, msgspec.Meta(pattern=r"\S")] | None = None
    # The host opts in: a stalled run (docs/cost-safety.md) counts as idle for its guard.
    stalled_idle: bool = False

    @property
    def idle_stop_seconds(self) -> int | None:
        return None if self.idle_stop is None else parse_duration(self.idle_stop)

    # Every run's limits on the host, as durations (`6h`, `30m`) or `off`; a start's own win
    # (docs/cost-safety.md). Checked as the config is read.
    max_duration: str | None = None
    stall_after: str | None = None
    on_stall: Literal["flag", "stop"] | None = None
    # Attempts the daemon starts by itself after a run of the host ends lost (a start's own
    # --retry wins), docs/retry.md.
    retry: Annotated[int, msgspec.Meta(ge=0, le=100)] | None = None
    # What an hour of the host costs, in any unit (the figures rtrain shows carry it).
    price_per_hour: Annotated[float, msgspec.Meta(ge=0, le=1e6)] | None = None
    # Run on this machine when a run of the host ends, over the global `notify`; "" or []:
    # none for this host (daemon/run_end_notify.py).
    notify: str | list[str] | None = None

    def limit(self, key: Literal["max_duration", "stall_after"]) -> int | None:
        """The host's limit in seconds (0: off), None when the config sets none."""
        text = getattr(self, key)
        return None if text is None else parse_limit(text, _LIMIT_WHAT[key])


_LIMIT_WHAT = {"max_duration": "a maximum duration", "stall_after": "a stall period"}
_LIMIT_KEYS: tuple[Literal["max_duration", "stall_after"], ...] = ("max_duration", "stall_after")


# What ssh aliases and pool names may be (protocol/validation.py says the same in words).
HOST_ALIAS = r"^[A-Za-z0-9_][A-Za-z0-9._@-]{0,252}$"
POOL_NAME = r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$"
Alias = Annotated[str, msgspec.Meta(pattern=HOST_ALIAS)]


class PoolSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One `[pools.NAME]` table: the hosts a run started `@NAME` may be placed on, in the
    order that breaks ties (docs/pools.md)."""

    hosts: Annotated[
        list[Annotated[str, msgspec.Meta(pattern=HOST_ALIAS)]], msgspec.Meta(min_length=1)
    ]


class UserConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    ssh_config: str | None = None
    poll_interval: Annotated[float, msgspec.Meta(gt=0)] = 5.0
    # A command run on this machine when a run ends: a string for the user's shell, or an
    # argv; the run's host, id, state and reason are in its environment only.
    notify: str | list[str] | None = None
    hosts: dict[str, HostSettings] = {}
    pools: dict[Annotated[str, msgspec.Meta(pattern=POOL_NAME)], PoolSettings] = {}

    def host(self, alias: str) -> HostSettings:
        settings = self.hosts.get(alias, HostSettings())
        if alias == LOCAL_ALIAS and settings.workdir is None:
            return msgspec.structs.replace(settings, workdir=local_workdir())
        return settings


def local_workdir() -> str | None:
    """Where the embedded host `local` keeps its runs and its input cache when config.toml
    names no workdir: beside the registry, in the state directory (so a fresh state, as a
    test's, starts with none of the account's runs or cache). None, and so `~/.rtrain`, when
    that path is one the far scripts cannot take (see validation.workdir)."""
    try:
        return validation.workdir(str(locations.state_dir() / "local"))
    except RpcError:
        return None


class ConfigError(Exception):
    pass


def load_user_config(path: Path | None = None) -> UserConfig:
    """The config, every key type-checked by msgspec; a mistake names its file, line and key."""
    path = path or locations.config_dir() / "config.toml"
    if not path.exists():
        return UserConfig()
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} cannot be read: {error}") from None
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        # tomllib says where: "Invalid value (at line 3, column 8)".
        raise ConfigError(f"{path} is not valid TOML: {error}") from None

    def refuse(error: msgspec.ValidationError, table: list[str], struct: type) -> ConfigError:
        keys, problem = _complaint(str(error), table, struct)
        line = line_of(text, keys)
        return ConfigError(
            f"{path}, line {line}: {'.'.join(keys)}: {problem}"
            if line
            else f"{path}: {'.'.join(keys)}: {problem}"
        )

    # Each host on its own, so an error names the host as well as the key.
    tables = data.pop("hosts", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: hosts must hold [hosts.ALIAS] tables")
    hosts = {}
    for alias, table in tables.items():
        try:
            hosts[alias] = msgspec.convert(table, HostSettings)
        except msgspec.ValidationError as error:
            raise refuse(error, ["hosts", alias], HostSettings) from None
        try:
            _ = hosts[alias].idle_stop_seconds
        except DurationError as error:
            keys = ["hosts", alias, "idle_stop"]
            line = line_of(text, keys)
            where = f"{path}, line {line}" if line else f"{path}"
            raise ConfigError(f"{where}: {'.'.join(keys)}: {error}") from None
        for key in _LIMIT_KEYS:
            try:
                hosts[alias].limit(key)
            except DurationError as error:
                keys = ["hosts", alias, key]
                line = line_of(text, keys)
                where = f"{path}, line {line}" if line else f"{path}"
                raise ConfigError(f"{where}: {'.'.join(keys)}: {error}") from None
    try:
        config = msgspec.convert(data, UserConfig)
    except msgspec.ValidationError as error:
        raise refuse(error, [], UserConfig) from None
    return msgspec.structs.replace(config, hosts=hosts)


_AT = re.compile(r"^(.*) - at `\$([^`]*)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `([^`]*)`$")


def _complaint(message: str, table: list[str], struct: type) -> tuple[list[str], str]:
    """msgspec's message as (the TOML key it is about, what is wrong with it)."""
    keys = list(table)
    at = _AT.match(message)
    if at:
        message = at.group(1)
        keys += re.findall(r"\.([^.\[]+)", at.group(2))
    unknown = _UNKNOWN.match(message)
    if unknown:
        keys.append(unknown.group(1))
        fields: tuple[str, ...] = getattr(struct, "__struct_fields__", ())
        message = f"unknown key (known here: {', '.join(fields)})"
    elif not keys:
        keys = ["(top level)"]
    return keys, message
