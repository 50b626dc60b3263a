"""Joins stdin/stdout to the daemon's Unix socket, so a client that speaks to a server
process over stdio (pygls's `JsonRPCClient.start_io`) reaches the daemon unchanged.

    python stdio_bridge.py SOCKET
"""

from __future__ import annotations

import os
import socket
import sys
import threading


def main() -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(sys.argv[1])

    def upstream() -> None:
        while data := os.read(0, 65536):
            sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, daemon=True).start()
    while data := sock.recv(65536):
        os.write(1, data)


if __name__ == "__main__":
    main()
