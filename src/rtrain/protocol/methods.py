"""The method table: every method and notification, its direction and its message types.

Everything the connection needs to validate a message lives here, in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from . import messages as m

Direction = Literal["client->server", "server->client", "both"]


@dataclass(frozen=True)
class Method:
    name: str
    params: type[Any]
    result: type[Any] | None  # None for a notification
    direction: Direction
    summary: str

    @property
    def is_notification(self) -> bool:
        return self.result is None


_TABLE = [
    Method(
        "initialize",
        m.InitializeParams,
        m.InitializeResult,
        "client->server",
        "Open the session; agree on the protocol version.",
    ),
    Method("initialized", m.Empty, None, "client->server", "The client is ready."),
    Method(
        "shutdown",
        m.Empty,
        type(None),
        "client->server",
        "Stop accepting requests on this connection.",
    ),
    Method("exit", m.Empty, None, "client->server", "Close this connection."),
    Method("$/cancelRequest", m.CancelParams, None, "both", "Cancel a pending request."),
    Method(
        "$/progress", m.ProgressParams, None, "server->client", "Progress of an upload or a fetch."
    ),
    Method(
        "host/preflight",
        m.PreflightParams,
        m.PreflightResult,
        "client->server",
        "Check that a host can train.",
    ),
    Method(
        "host/gc",
        m.GcParams,
        m.GcResult,
        "client->server",
        "Remove the host's cached inputs that no run uses, and cut uploads.",
    ),
    Method(
        "host/envs",
        m.EnvsParams,
        m.EnvsResult,
        "client->server",
        "List the run environments cached on the host.",
    ),
    Method(
        "host/guard",
        m.GuardParams,
        m.GuardResult,
        "client->server",
        "Show, arm or disarm the host's guard, which runs a command once the host is idle.",
    ),
    Method(
        "host/terminate",
        m.TerminateParams,
        m.TerminateResult,
        "client->server",
        "Run the host's terminate command now, unless a run or a transfer keeps it busy.",
    ),
    Method(
        "run/start",
        m.StartParams,
        m.StartResult,
        "client->server",
        "Ship a config (and dataset) and start a detached run.",
    ),
    Method(
        "run/tail",
        m.TailParams,
        m.TailResult,
        "client->server",
        "Stream a run's log as run/log notifications until it ends.",
    ),
    Method(
        "run/metrics",
        m.MetricsParams,
        m.MetricsResult,
        "client->server",
        "A run's metrics, progress and its host's GPUs; with follow, run/points until it ends.",
    ),
    Method("run/status", m.RunRef, m.StatusResult, "client->server", "The state of a run."),
    Method(
        "run/wait",
        m.WaitParams,
        m.WaitResult,
        "client->server",
        "Answer once a run has ended (or reached a given state), or a timeout passed.",
    ),
    Method(
        "forwards/open",
        m.ForwardParams,
        m.ForwardInfo,
        "client->server",
        "Reach a port on a host from 127.0.0.1 of this machine, over the host's connection.",
    ),
    Method(
        "forwards/reverse",
        m.ReverseForwardParams,
        m.ForwardInfo,
        "client->server",
        "Reach a port of this machine from 127.0.0.1 of a host, over the host's connection.",
    ),
    Method(
        "tensorboard/open",
        m.TensorBoardParams,
        m.TensorBoardInfo,
        "client->server",
        "Serve a run in the host's one TensorBoard and forward it to this machine.",
    ),
    Method(
        "tensorboard/stop",
        m.TensorBoardStopParams,
        m.TensorBoardStopResult,
        "client->server",
        "Take a run out of the host's TensorBoard, or end it.",
    ),
    Method(
        "kernel/open",
        m.KernelParams,
        m.KernelInfo,
        "client->server",
        "Start a Jupyter kernel as a detached run, or reattach to one; its ports forwarded.",
    ),
    Method(
        "forwards/list",
        m.ForwardsListParams,
        m.ForwardsListResult,
        "client->server",
        "The daemon's open port forwards.",
    ),
    Method(
        "forwards/close",
        m.ForwardCloseParams,
        m.ForwardCloseResult,
        "client->server",
        "End port forwards: one by its local port, a host's, or all.",
    ),
    Method(
        "run/fetch",
        m.FetchParams,
        m.FetchResult,
        "client->server",
        "Copy files of a run home, checksummed.",
    ),
    Method(
        "run/stop",
        m.StopParams,
        m.StopResult,
        "client->server",
        "Take a run off the host and confirm it is gone.",
    ),
    Method(
        "run/restart",
        m.RestartParams,
        m.RestartResult,
        "client->server",
        "Start an ended run's command again in its directory, as a new attempt.",
    ),
    Method(
        "run/remove",
        m.RemoveParams,
        m.RemoveResult,
        "client->server",
        "Remove runs that are not running: their far directories and registry rows.",
    ),
    Method(
        "run/exec",
        m.ExecParams,
        m.ExecResult,
        "client->server",
        "Run a command in a run's directory; its exit code and output.",
    ),
    Method(
        "run/shell",
        m.RunRef,
        m.ShellResult,
        "client->server",
        "The command that opens an interactive shell in a run's directory.",
    ),
    Method(
        "host/login",
        m.LoginParams,
        m.LoginResult,
        "client->server",
        "The ssh command that logs in to a host once on the user's terminal.",
    ),
    Method(
        "host/logout",
        m.LoginParams,
        m.LogoutResult,
        "client->server",
        "End a host's login connection.",
    ),
    Method(
        "runs/list",
        m.RunsListParams,
        m.RunsListResult,
        "client->server",
        "Runs in the registry; optionally subscribe to run/changed.",
    ),
    Method(
        "hosts/list",
        m.Empty,
        m.HostsListResult,
        "client->server",
        "Known hosts and their connections.",
    ),
    Method(
        "pools/list",
        m.Empty,
        m.PoolsListResult,
        "client->server",
        "The pools of config.toml: each host's free GPUs now, and the runs queued.",
    ),
    Method(
        "hosts/forget",
        m.ForgetHostParams,
        m.ForgetHostResult,
        "client->server",
        "Forget a host's connection record; one with runs is refused.",
    ),
    Method(
        "hosts/price",
        m.HostPriceParams,
        m.HostPriceResult,
        "client->server",
        "Set what a host costs per hour, over config.toml's price_per_hour.",
    ),
    Method("daemon/info", m.Empty, m.DaemonInfo, "client->server", "About the daemon."),
    Method("daemon/stop", m.Empty, m.StopDaemonResult, "client->server", "Stop the daemon."),
    Method("run/log", m.LogChunk, None, "server->client", "A chunk of a tailed log."),
    Method("run/changed", m.RunChanged, None, "server->client", "A run's state changed."),
    Method(
        "forwards/changed",
        m.ForwardsListResult,
        None,
        "server->client",
        "The open port forwards, after one opened or ended (to runs/list subscribers).",
    ),
    Method("run/points", m.MetricsUpdate, None, "server->client", "New metrics of a followed run."),
    Method(
        "run/reconnecting",
        m.Reconnecting,
        None,
        "server->client",
        "During run/tail: the host did not answer; trying again.",
    ),
    Method(
        "run/waiting",
        m.Waiting,
        None,
        "server->client",
        "During run/tail: the run is queued; its log is still to come.",
    ),
]

METHODS: dict[str, Method] = {method.name: method for method in _TABLE}

# Methods a server answers; listed in `initialize`'s capabilities.
REQUESTS = [m.name for m in _TABLE if not m.is_notification and m.direction != "server->client"]
SERVER_NOTIFICATIONS = [
    m.name for m in _TABLE if m.is_notification and m.direction in ("server->client", "both")
]
