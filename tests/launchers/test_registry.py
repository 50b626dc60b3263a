"""Launchers are plug-ins: each one package, picked in one place by what it says of itself.

A launcher a test registers (below) is picked for a host and for a run exactly as the
shipped ones are, and its options are refused elsewhere in its own words: nothing outside
the registry knows launchers by name (the source is read to make sure).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NoReturn, get_args

import pytest

import rtrain
from rtrain.daemon.launchers import registry
from rtrain.daemon.launchers.launcher import Launcher
from rtrain.daemon.launchers.placement import Placement
from rtrain.daemon.launchers.process.launcher import ProcessLauncher
from rtrain.daemon.remote.contract.launch_scripts import LaunchAhead, Launched
from rtrain.daemon.remote.contract.run_scripts import StatusReport, StopReport
from rtrain.daemon.user_config import HostSettings
from rtrain.protocol.launcher_options import SlurmOptions
from rtrain.protocol.launcher_words import RunLauncher, Scheduler
from rtrain.protocol.messages import RunNode, StartParams

PACKAGE = Path(rtrain.__file__).parent
LAUNCHERS_DIR = PACKAGE / "daemon" / "launchers"
NAMES = set(get_args(RunLauncher))


class QueueLauncher(Launcher):
    """A launcher of the tests' own: runs whose command starts with `queue-me` are its."""

    name = "queue"  # type: ignore[assignment]  # a name the wire does not know: tests only

    @classmethod
    def placed(cls, where: Placement) -> Launcher:
        return cls()

    @classmethod
    def claims_command(cls, command: Sequence[str] | None) -> bool:
        return bool(command) and command[0] == "queue-me"  # type: ignore[index]

    @classmethod
    def given_options(cls, p: StartParams) -> list[str]:
        given = isinstance(p.launcher, SlurmOptions) and p.launcher.partition
        return ["--partition"] if given else []

    @classmethod
    def options_belong(cls, host: str) -> str:
        return f"belong to queues, and {host} has none"

    async def launch(
        self,
        run_dir: str,
        run_id: str,
        python: str,
        command: Sequence[str],
        secrets: bytes,
        params: StartParams | None = None,
        ahead: LaunchAhead | None = None,
    ) -> Launched:
        raise NotImplementedError

    async def status(self, workdir: str, run_ids: Sequence[str]) -> StatusReport:
        raise NotImplementedError

    async def stop(self, run_dir: str, run_id: str, grace: float, force: bool) -> StopReport:
        raise NotImplementedError


@pytest.fixture
def queue() -> Iterator[type[Launcher]]:
    before = dict(registry.LAUNCHERS)
    registry.register(QueueLauncher)
    yield QueueLauncher
    registry.LAUNCHERS.clear()
    registry.LAUNCHERS.update(before)


def test_every_launcher_on_the_wire_is_registered_from_its_own_package() -> None:
    assert set(registry.LAUNCHERS) == NAMES
    for name, launcher in registry.LAUNCHERS.items():
        assert launcher.__module__ == f"rtrain.daemon.launchers.{name}.launcher"


def test_config_toml_s_scheduler_words_are_the_registered_schedulers() -> None:
    # A scheduler picked by config.toml takes no registration of its own: its word is
    # beside its RunLauncher word, and the host's settings take exactly those.
    schedulers = {launcher.scheduler for launcher in registry.LAUNCHERS.values()} - {None}
    assert schedulers == set(get_args(Scheduler))
    assert schedulers <= NAMES
    for word in get_args(Scheduler):
        assert registry.for_host(HostSettings(scheduler=word)).scheduler == word


def test_a_registered_launcher_is_picked_for_the_runs_it_claims(queue: type[Launcher]) -> None:
    plain = HostSettings()
    assert registry.for_host(plain, ["queue-me", "train.py"]) is queue
    assert registry.for_host(plain, ["python3", "train.py"]) is ProcessLauncher
    # A recorded run keeps its launcher; a new attempt follows its new command.
    assert registry.for_run("queue", plain, ["python3"]) is queue
    assert registry.for_run("process", plain, ["queue-me"], again=True) is queue
    # A scheduler's host stays the scheduler's whatever the command.
    slurm = registry.for_host(HostSettings(scheduler="slurm"), ["queue-me"])
    assert slurm.scheduler == "slurm"
    # A run across hosts that lost its nodes is run as its host says now.
    nodes = registry.across_hosts()
    assert registry.for_run(nodes.name, plain, ["queue-me"]) is queue
    node = RunNode(host="a", remote_dir="/w/r")
    assert registry.for_run(nodes.name, plain, None, [node]) is nodes


def test_a_launcher_s_options_are_refused_elsewhere_in_its_own_words(
    queue: type[Launcher],
) -> None:
    p = StartParams(host="box", launcher=SlurmOptions(partition="gpu"))
    placement = Placement("box", HostSettings(), _never, _never)
    refused = registry.options_problem(ProcessLauncher.placed(placement), "box", p)
    assert refused is not None
    # Slurm's --partition and the queue's both claim it; whichever is asked first says why.
    assert refused in (
        "--partition belong to queues, and box has none.",
        "--partition apply to Slurm hosts only, and box is not one "
        '(set scheduler = "slurm" under [hosts.box] in config.toml).',
    )
    assert registry.options_problem(queue.placed(placement), "box", StartParams(host="box")) is None


async def _never(alias: str) -> NoReturn:
    raise AssertionError("nothing reaches a host here")


def _compares_a_launcher_name(node: ast.AST) -> bool:
    def named(value: ast.AST) -> bool:
        if isinstance(value, ast.Constant):
            return value.value in NAMES
        if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
            return any(named(element) for element in value.elts)
        return False

    if isinstance(node, ast.Compare):
        return any(named(side) for side in [node.left, *node.comparators])
    if isinstance(node, ast.MatchValue):
        return named(node.value)
    return False


def test_nothing_outside_the_registry_compares_launcher_names() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == LAUNCHERS_DIR / "registry.py" or "demo_trainer" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if _compares_a_launcher_name(node):
                where = path.relative_to(PACKAGE)
                offenders.append(f"{where}:{getattr(node, 'lineno', '?')}")
    assert offenders == []


def test_operations_know_launchers_only_through_the_registry_and_the_base() -> None:
    """A new launcher adds a package; what the operations import of launchers stays the
    registry, the base class and its placement (torchrun's command words aside: `{torchrun}`
    is a command placeholder every launcher may run)."""
    allowed = {
        "rtrain.daemon.launchers",
        "rtrain.daemon.launchers.registry",
        "rtrain.daemon.launchers.launcher",
        "rtrain.daemon.launchers.placement",
        "rtrain.daemon.launchers.torchrun.launcher",
    }
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if LAUNCHERS_DIR in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("rtrain.daemon.launchers")
                and node.module not in allowed
            ):
                offenders.append(f"{path.relative_to(PACKAGE)}: {node.module}")
    assert offenders == []
