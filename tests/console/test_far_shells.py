"""The agent on other far-side shells and tool sets, without ssh: a local terminal stands in.

Gateways put rtrain in front of whatever the image has: /bin/sh may be dash, bash or busybox
ash, and head, dd, base64 and sha256sum may be GNU's or busybox's. bash's `read` and busybox's
`head -c` both read ahead on a terminal in raw mode; the agent must not lose a byte to them.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from pathlib import Path

from rtrain.daemon.ssh.console_framing import Request
from rtrain.daemon.ssh.console_session import ConsoleSession
from rtrain.daemon.transports.transport import Completed
from tests.required_tools import need

# A terminal for the login shell given as arguments, relayed to our pipes (what sshd does).
PTY_RELAY = "import pty, sys; pty.spawn(sys.argv[1:])"
BUSYBOX_TOOLS = ("sh", "head", "base64", "sha256sum", "dd", "mktemp", "stty", "cat", "rm", "mv")
SCRIPT = """
printf '<%s>' "$@"
echo
cat | sha256sum
head -c 200000 /dev/zero | tr '\\0' 'z'
echo "to stderr" >&2
exit 5
"""


def tool_dir(tmp_path: Path, name: str, links: dict[str, str]) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    for link, target in links.items():
        (directory / link).symlink_to(target)
    return directory


def run_on(tmp_path: Path, path_front: Path, login: list[str]) -> list[Completed]:
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{path_front}{os.pathsep}{os.environ['PATH']}",
    }
    argv = ["env", *(f"{key}={value}" for key, value in env.items()), sys.executable]
    argv += ["-c", PTY_RELAY, *login]
    stdin = bytes(range(256)) * 500

    async def main() -> list[Completed]:
        session = ConsoleSession("local", argv)
        await session.open()
        try:
            return [
                await session.execute(
                    Request.of(SCRIPT, ["a b", "it's", "ü", ""], stdin), 30, "probe"
                ),
                await session.execute(Request.of(SCRIPT, [], None), 30, "probe"),
            ]
        finally:
            await session.close()

    results = asyncio.run(main())
    expected_out = [
        b"<a b><it's><\xc3\xbc><>\n" + hashlib.sha256(stdin).hexdigest().encode(),
        b"<>\n" + hashlib.sha256(b"").hexdigest().encode(),  # printf prints its format once
    ]
    for done, head in zip(results, expected_out, strict=True):
        assert done.returncode == 5
        assert done.stdout == head + b"  -\n" + b"z" * 200_000
        assert done.stderr == b"to stderr\n"
    return results


def test_sh_being_bash(tmp_path: Path) -> None:
    bash = need("bash")
    front = tool_dir(tmp_path, "bin", {"sh": bash})
    run_on(tmp_path, front, [bash, "--norc", "--noprofile", "-i"])


def test_busybox_shell_and_tools_behind_a_zsh_login(tmp_path: Path) -> None:
    busybox = need("busybox")
    zsh = need("zsh")
    front = tool_dir(tmp_path, "bin", dict.fromkeys(BUSYBOX_TOOLS, busybox))
    run_on(tmp_path, front, [zsh, "-f", "-i"])
