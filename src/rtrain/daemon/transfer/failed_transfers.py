"""The errors of a file the far side did not vouch for, whichever way and transport it moved."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

from rtrain.daemon.remote.contract.answers import Completed
from rtrain.daemon.remote.contract.file_scripts import received
from rtrain.daemon.remote.error_words import ErrorWord
from rtrain.protocol.errors import Kind, RpcError, app_error


class Unverified(RpcError):
    """Bytes that arrived are not the ones the far side vouched for: a partial copy of
    them is worth nothing, unlike one cut by a dropped connection."""


def fetch_unverified(rel: str) -> RpcError:
    """The error for a fetched file whose bytes the far side did not vouch for."""
    error = app_error(
        Kind.TRANSFER_FAILED,
        f"{rel} arrived with another sha256 than the host computed (it changed while "
        "fetching, or the copy was damaged); nothing was written under its name. Try again.",
        path=rel,
    )
    return Unverified(error.code, error.message, error.data)


def raise_for_failed_upload(alias: str, local: Path, done: Completed) -> NoReturn:
    """The error for a receive (or put_chunk) answer that is not `ok`; every transport's."""
    verdict = received(done)
    if verdict.mismatch:
        raise app_error(
            Kind.TRANSFER_FAILED,
            f"{alias}: {local.name} arrived damaged (sha256 mismatch); nothing was kept. "
            "Try again.",
        )
    error = verdict.error
    if error is not None and error.word == ErrorWord.DISK_FULL:
        raise app_error(
            Kind.DISK_FULL,
            f"{alias}: the disk is full; {local.name} was not shipped ({' '.join(error.args)}).",
        )
    raise app_error(
        Kind.TRANSFER_FAILED,
        f"{alias}: shipping {local.name} failed: {error or done.error_text}",
    )
