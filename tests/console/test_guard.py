"""The guard through a console-only gateway (RunPod's proxy): armed, shown and terminated over
rtrain's PTY, and rtrain's own console session, open all along, never counts as a person's."""

from __future__ import annotations

import asyncio
import shlex
import time

from rtrain.daemon.remote.contract import guard_scripts
from rtrain.daemon.ssh.console_transport import ConsoleTransport
from tests.console.conftest import Consoles, Far

# Other tests' terminals on this machine may keep the host busy for a while; never for long.
WAIT_S = 90.0


def test_the_guard_armed_over_a_console_fires_while_the_console_stays_open(
    console: Consoles, far: Far
) -> None:
    calls = far.path / "calls"

    async def body(transport: ConsoleTransport) -> None:
        command = f"echo fired >> {shlex.quote(str(calls))}"
        armed = await guard_scripts.guard_arm(transport, far.tilde, 2, False, command)
        assert armed.ok and armed.armed and armed.idle_seconds == 2
        deadline = time.monotonic() + WAIT_S
        while not calls.exists():
            assert time.monotonic() < deadline, "the guard never fired"
            # The console's PTY is in use meanwhile, as it is for every command there.
            shown = await guard_scripts.guard_show(transport, far.tilde)
            assert shown.armed
            await asyncio.sleep(0.5)
        done = await guard_scripts.terminate(transport, far.tilde, None, force=False, wait=30)
        assert done.exit_code == 0 and done.command == command
        off = await guard_scripts.guard_off(transport, far.tilde)
        assert off.ok and not off.armed

    console.run(body)
    assert calls.read_text() == "fired\nfired\n"
