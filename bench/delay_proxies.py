"""WAN imitation in a process of its own: one TcpProxy (tests/hosts/proxy.py) per one-way delay.

The proxies forward every byte of the benchmarks in Python; in their own process they never
compete with the benchmark's own measuring for the interpreter lock.

    python -m bench.delay_proxies TARGET_PORT DELAY_S...   # prints {"DELAY_S": port, ...}
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class DelayProxies:
    """Starts the proxy process; `ports[delay_s]` is where to connect for that delay."""

    def __init__(self, target_port: int, delays_s: list[float]) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bench.delay_proxies", str(target_port)]
            + [repr(delay) for delay in delays_s],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._process.wait(5)
            raise RuntimeError("the delay proxies did not start")
        self.ports = {float(delay): port for delay, port in json.loads(line).items()}
        self.pid = self._process.pid

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()  # the process ends when its stdin does
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(REPO))
    from tests.hosts.proxy import TcpProxy

    target = int(argv[0])
    proxies = {delay: TcpProxy(target, float(delay)) for delay in argv[1:]}
    try:
        print(json.dumps({delay: proxy.port for delay, proxy in proxies.items()}), flush=True)
        sys.stdin.read()
    finally:
        for proxy in proxies.values():
            proxy.close()


if __name__ == "__main__":
    main(sys.argv[1:])
