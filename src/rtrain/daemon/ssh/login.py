"""`rtrain login HOST`: a connection the user opens once on a terminal, the daemon then uses.

The daemon runs ssh in BatchMode and never prompts, so a host that asks for a password, a
one-time code or a security key's touch cannot be reached by a master of its own. The user's
terminal answers those questions instead: the client runs `login_argv` there, an ssh that
becomes a master on the host's login path (control_master.py) and stays in the background
once the login succeeds (`-f`, `ControlPersist=yes`). The daemon finds it there and sends
every command through it until it ends: the network drops it, the host closes it, or
`rtrain logout HOST` asks it to exit. It is not the daemon's child, so it outlives a daemon
restart (a version upgrade, `rtrain daemon stop` after a config edit) and is found again.
"""

from __future__ import annotations

import asyncio

from .control_master import HELLO_TIMEOUT, ControlMaster, ask_master_to_exit, greets
from .options import ALIVE_COUNT, ALIVE_INTERVAL, CONNECT_TIMEOUT


def login_argv(master: ControlMaster, cipher_options: list[str]) -> list[str]:
    """The ssh to run on the user's terminal: it asks what the host asks, then goes to the
    background as the host's login master (`cipher_options` from cipher_order.py)."""
    return [
        "ssh",
        *(["-F", str(master.config)] if master.config else []),
        # The user's config may say BatchMode for scripts; this one is there to be asked.
        "-o",
        "BatchMode=no",
        "-o",
        f"ConnectTimeout={CONNECT_TIMEOUT}",
        "-o",
        f"ServerAliveInterval={ALIVE_INTERVAL}",
        "-o",
        f"ServerAliveCountMax={ALIVE_COUNT}",
        "-o",
        f"ControlPath={master.login_path}",
        "-o",
        "ControlMaster=yes",
        "-o",
        "ControlPersist=yes",
        *cipher_options,
        "-f",
        "-N",
        master.alias,
    ]


async def end_login(master: ControlMaster) -> bool:
    """Ask the host's login master to exit; False when none answered."""
    if await greets(master.login_path) != "live":
        await master.use_login()  # let go of it, and of a dead socket
        return False
    await ask_master_to_exit(master.config, master.login_path, master.alias)
    # The master removes its socket as it exits; until then it may still greet.
    for _ in range(int(HELLO_TIMEOUT / 0.05)):
        if await greets(master.login_path) != "live":
            break
        await asyncio.sleep(0.05)
    await master.use_login()
    return True
