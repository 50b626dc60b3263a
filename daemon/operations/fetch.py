"""run/fetch: bring files of a run home, each checked against the far side's sha256.

The listing gives names and sizes only; each file's sha256 is taken by the far side as it
sends the file (send.sh), so the far disk reads it once, and the transport compares it with
its own hash of what arrived. A file is written under a temporary name and renamed only once
both hashes and the listed size matched, so an interrupted, damaged or changing fetch never
leaves a truncated file under the final name.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import secrets
import time
from pathlib import Path
from typing import Literal

from rtrain.daemon.local_disk import refused
from rtrain.daemon.remote import contract
from rtrain.daemon.remote.contract import Exit
from rtrain.daemon.ssh.transport import fetch_unverified
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import FetchedFile, FetchParams, FetchResult, byte_progress

from .context import Ops
from .notifier import Notifier


async def fetch(ops: Ops, p: FetchParams, ctx: Notifier) -> FetchResult:
    run_dir = ops.run_dir(p.host, p.run_id, p.workdir)
    rel = validation.fetch_path(p.path)
    dest = Path(p.dest).expanduser()
    if dest.exists() and not dest.is_dir():
        raise app_error(Kind.INVALID_PATH, f"{p.dest} exists and is not a directory.")
    # Before any ssh: a destination that cannot be made is known at once. A fetch that then
    # fails leaves no empty directory of its own making behind.
    made = [d for d in (dest, *dest.parents) if not d.exists()]
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise refused(error, f"create the directory {dest} to fetch into") from None
    try:
        return await _fetch_into(ops, p, ctx, run_dir, rel, dest)
    except BaseException:
        for directory in made:  # deepest first; only while empty
            with contextlib.suppress(OSError):
                directory.rmdir()
        raise


async def _fetch_into(
    ops: Ops, p: FetchParams, ctx: Notifier, run_dir: str, rel: str, dest: Path
) -> FetchResult:
    transport = await ops.transport(p.host)
    # No hashes in the listing: send.sh hashes each file as it sends it.
    listing = await contract.list_files(transport, run_dir, rel, hashed=False)
    if listing.error is not None:
        kind, *rest = listing.error + [""]
        if kind == "path_outside_run":
            raise app_error(
                Kind.PATH_OUTSIDE_RUN,
                f"{rest[0] or rel!r} points outside the run "
                "directory (a symlink?); rtrain fetches only the run's own files.",
            )
        if kind == "not_found":
            raise app_error(
                Kind.REMOTE_FILE_MISSING, f"{rel} does not exist in run {p.run_id} on {p.host}."
            )
        if kind in ("run_not_found", "no_run_dir"):
            raise app_error(
                Kind.RUN_NOT_FOUND,
                f"no run {p.run_id} on {p.host} (looked in {run_dir}); check the run id, or "
                "pass --workdir if it was started with another one.",
            )
        if kind == "bad_name":
            raise app_error(
                Kind.INVALID_PATH,
                f"{rest[0] or rel!r} has a tab or a newline in its name; rtrain cannot fetch it.",
            )
        raise app_error(
            Kind.REMOTE_FAILED, f"{p.host}: cannot fetch {rel}: {' '.join(listing.error)}"
        )
    if listing.exit != Exit.OK:
        raise app_error(Kind.REMOTE_FAILED, f"{p.host}: listing {rel} failed: {listing.error_text}")
    files = [(listed.size, listed.path) for listed in listing.files]
    dirs = listing.dirs
    total = sum(size for size, _ in files)
    # The fetched path lands in dest under its own last component: `a/b` -> dest/b/...
    parent = posixpath.dirname(rel) if rel != "." else ""
    done = 0
    last = 0.0

    def report(kind: Literal["begin", "report", "end"], message: str | None = None) -> None:
        if p.progress_token is not None:
            title = f"Fetching {rel} from {p.host}"
            progress = byte_progress(p.progress_token, kind, title, done, total, message)
            ctx.notify("$/progress", progress)

    def advance(count: int) -> None:
        nonlocal done, last
        done += count
        if time.monotonic() - last > 0.1:
            last = time.monotonic()
            report("report")

    report("begin")
    fetched = []
    for directory in dirs:
        _local_target(dest, directory, parent).mkdir(parents=True, exist_ok=True)
    for size, path in files:
        target = _local_target(dest, path, parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.rtrain-{secrets.token_hex(4)}")
        try:
            # Verified by the transport against the far side's hash of the same bytes.
            sha = await transport.download(run_dir, path, temporary, advance)
            if temporary.stat().st_size != size:
                # Whole and unchanged while sent, but not the file that was listed.
                raise fetch_unverified(path)
            os.replace(temporary, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
        fetched.append(
            FetchedFile(
                remote_path=path, local_path=str(target), size=size, sha256=sha, verified=True
            )
        )
    report("end", f"{len(fetched)} file(s), {total} bytes verified")
    return FetchResult(files=fetched, total_bytes=total)


def _local_target(dest: Path, remote_rel: str, parent: str) -> Path:
    inner = posixpath.relpath(remote_rel, parent) if parent else remote_rel
    target = (dest / inner).resolve()
    if not target.is_relative_to(dest.resolve()):
        raise app_error(Kind.PATH_OUTSIDE_RUN, f"{remote_rel!r} would land outside {dest}.")
    return target
