"""A W&B-compatible endpoint for the `--sync wandb` tests: the target `wandb sync` sends to,
never a stand-in for anything of rtrain's. W&B's own server needs Docker, which these
machines lack (docs/trackers.md, "Why a recording endpoint").

It answers the few calls `wandb sync` makes (GraphQL UpsertBucket, RunResumeStatus,
ServerFeaturesQuery, CreateRunFiles; the file stream; file uploads) and keeps what a W&B
server keeps of a run's history: each row at the offset the client gives it, so a row sent
twice is one row, and `received` counts every row that came, to tell a row sent twice from
one sent once. RunResumeStatus answers from what it holds, as W&B's server does: how many
rows, the last ones, the summary and the config, so a resumed sync continues after them."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class StoredRun:
    history: dict[int, str] = field(default_factory=dict)  # offset -> the row's JSON
    received: int = 0  # history rows that came, counting a row sent again
    summary: str = "{}"
    config: str = "{}"
    logs: int = 0
    events: int = 0
    complete: bool = False

    def rows(self) -> list[dict[str, Any]]:
        return [json.loads(self.history[offset]) for offset in sorted(self.history)]


@dataclass
class Endpoint:
    url: str
    runs: dict[str, StoredRun] = field(default_factory=dict)  # by run id
    requests: int = 0  # every call that reached it
    lock: threading.Lock = field(default_factory=threading.Lock)


def _bucket(name: str, project: str, entity: str, run: StoredRun) -> dict[str, Any]:
    tail = [run.history[o] for o in sorted(run.history)[-10:]]
    return {
        "id": f"bucket-{name}",
        "name": name,
        "displayName": name,
        "sweepName": None,
        "summaryMetrics": run.summary,
        "logLineCount": run.logs,
        "historyLineCount": len(run.history),
        "eventsLineCount": run.events,
        "historyTail": json.dumps(tail),
        "eventsTail": "[]",
        "config": run.config,
        "tags": [],
        "notes": None,
        "wandbConfig": "{}",
        "project": {
            "id": f"project-{project}",
            "name": project,
            "entity": {"id": "e", "name": entity},
        },
    }


def _handler(endpoint: Endpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _answer(self, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = self._body()
            with endpoint.lock:
                endpoint.requests += 1
                if self.path.startswith("/graphql"):
                    self._answer({"data": self._graphql(json.loads(body))})
                elif self.path.endswith("/file_stream"):
                    self._file_stream(self.path.split("/")[-2], json.loads(body))
                    self._answer({"exitcode": None, "limits": {}})
                else:
                    self._answer({})  # the SDK's own telemetry

        def do_PUT(self) -> None:
            self._body()  # an uploaded run file (config.yaml, output.log...)
            with endpoint.lock:
                endpoint.requests += 1
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _graphql(self, query: dict[str, Any]) -> dict[str, Any]:
            name, given = query.get("operationName"), query.get("variables") or {}
            project = given.get("project") or "uncategorized"
            entity = given.get("entity") or "me"
            if name == "UpsertBucket":
                run_id = given.get("name") or "run"
                run = endpoint.runs.setdefault(run_id, StoredRun())
                if given.get("config"):
                    run.config = given["config"]
                return {
                    "upsertBucket": {
                        "inserted": True,
                        "bucket": _bucket(run_id, project, entity, run),
                    }
                }
            if name == "RunResumeStatus":
                found = endpoint.runs.get(given["name"])
                bucket = None if found is None else _bucket(given["name"], project, entity, found)
                return {
                    "model": {
                        "id": "p",
                        "name": project,
                        "entity": {"id": "e", "name": entity},
                        "bucket": bucket,
                    }
                }
            if name == "ServerFeaturesQuery":
                return {"serverInfo": {"features": []}}
            if name == "CreateRunFiles":
                files = [
                    {"name": f, "uploadUrl": f"{endpoint.url}/upload/{f}"} for f in given["files"]
                ]
                return {
                    "createRunFiles": {"runID": given["run"], "uploadHeaders": [], "files": files}
                }
            return {}

        def _file_stream(self, run_id: str, sent: dict[str, Any]) -> None:
            run = endpoint.runs.setdefault(run_id, StoredRun())
            files = sent.get("files", {})
            history = files.get("wandb-history.jsonl")
            if history:
                for i, line in enumerate(history["content"]):
                    run.history[history["offset"] + i] = line
                run.received += len(history["content"])
            summary = files.get("wandb-summary.json")
            if summary and summary["content"]:
                run.summary = summary["content"][-1]
            for name, attribute in (("output.log", "logs"), ("wandb-events.jsonl", "events")):
                if name in files:
                    part = files[name]
                    setattr(
                        run,
                        attribute,
                        max(getattr(run, attribute), part["offset"] + len(part["content"])),
                    )
            if sent.get("complete"):
                run.complete = True

    return Handler


@contextmanager
def wandb_endpoint() -> Iterator[Endpoint]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    endpoint = Endpoint(f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler(endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
