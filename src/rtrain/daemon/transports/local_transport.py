"""The `local` transport: the embedded host `local` runs the same scripts with /bin/sh, no SSH."""

from __future__ import annotations

from collections.abc import Sequence

from rtrain.daemon.transports.transport import ProcessTransport

LOCAL_ALIAS = "local"


class LocalTransport(ProcessTransport):
    kind = "local"
    alias = LOCAL_ALIAS

    async def connect(self) -> None:
        return None

    def _argv(self, text: str, args: Sequence[str]) -> list[str]:
        return ["/bin/sh", "-c", f'cd "$HOME" 2>/dev/null; {text}', "rtrain", *args]
