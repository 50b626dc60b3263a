"""Load for the RPC benchmark: N clients, each sending one request and awaiting its answer,
back to back, for a fixed time. The same generator drives both servers.

Frames are encoded by hand and answers only split by Content-Length (not parsed), so the
generator stays far cheaper than the servers it measures.

    python -m bench.rpc_load SOCKET CLIENTS SECONDS INIT_PARAMS_JSON   # prints one JSON line
"""

from __future__ import annotations

import asyncio
import json
import sys
import time


def frame(payload: dict[str, object]) -> bytes:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    header = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in header.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return await reader.readexactly(length)


async def one_client(
    path: str,
    init_params: dict[str, object],
    ready: asyncio.Queue[None],
    go: asyncio.Event,
    stop_at: list[float],
    latencies: list[float],
) -> None:
    reader, writer = await asyncio.open_unix_connection(path, limit=1024 * 1024)
    writer.write(frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init_params}))
    while b'"id"' not in await read_frame(reader):
        pass
    writer.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    await writer.drain()
    ready.put_nowait(None)
    await go.wait()
    request_id = 1
    while True:
        started = time.perf_counter()
        if started >= stop_at[0]:
            break
        body = b'{"jsonrpc":"2.0","id":%d,"method":"daemon/info","params":{}}' % request_id
        writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        answer = await read_frame(reader)
        while b'"id"' not in answer:  # a notification of the server's own: not the answer
            answer = await read_frame(reader)
        latencies.append(time.perf_counter() - started)
        if b'"result"' not in answer:
            raise RuntimeError(f"not a result: {answer[:200]!r}")
        request_id += 1
    writer.close()


async def main(path: str, clients: int, seconds: float, init_params: dict[str, object]) -> None:
    go = asyncio.Event()
    ready: asyncio.Queue[None] = asyncio.Queue()
    stop_at = [float("inf")]
    per_client: list[list[float]] = [[] for _ in range(clients)]
    tasks = [
        asyncio.create_task(one_client(path, init_params, ready, go, stop_at, per_client[i]))
        for i in range(clients)
    ]
    for _ in range(clients):  # every client connected and initialized before the clock starts
        await asyncio.wait_for(ready.get(), 30)
    await asyncio.sleep(0.1)
    started = time.perf_counter()
    stop_at[0] = started + seconds
    go.set()
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - started
    latencies = sorted(value for values in per_client for value in values)

    def pick(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    print(json.dumps({
        "requests": len(latencies),
        "per_second": len(latencies) / elapsed,
        "p50_s": pick(0.50),
        "p99_s": pick(0.99),
    }))  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4])))
