"""receive.sh: an upload lands under its name only when its sha256 matches."""

from __future__ import annotations

import hashlib
import resource
import signal

from tests.run_mark import entries, names

from .conftest import Remote

DATA = b"col1,col2\n" * 1000 + bytes(range(256))


def test_matching_upload_is_kept(remote: Remote) -> None:
    _, run_dir = remote.prepare()
    dest = run_dir / "data set.csv"
    digest = hashlib.sha256(DATA).hexdigest()

    result = remote.run("receive", str(dest), digest, stdin=DATA)

    assert result.returncode == 0, result
    assert result.lines == [["ok", digest, str(len(DATA))]]
    assert dest.read_bytes() == DATA
    assert names(run_dir) == ["data set.csv"]


def test_mismatch_deletes_the_upload(remote: Remote) -> None:
    _, run_dir = remote.prepare()
    dest = run_dir / "config.yaml"

    result = remote.run("receive", str(dest), "0" * 64, stdin=DATA)

    assert result.returncode == 3
    assert result.lines == [["mismatch", hashlib.sha256(DATA).hexdigest(), str(len(DATA))]]
    assert entries(run_dir) == []


def test_write_error_is_reported_and_cleaned_up(remote: Remote) -> None:
    _, run_dir = remote.prepare()
    dest = run_dir / "big.bin"

    def small_disk() -> None:
        # Writes past 4 KiB fail with EFBIG, as they would on a full disk.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    result = remote.run(
        "receive", str(dest), hashlib.sha256(DATA).hexdigest(), stdin=DATA, preexec=small_disk
    )

    assert result.returncode == 4
    (fields,) = result.values("error")
    assert fields[0] == "write" and fields[1] != ""
    assert entries(run_dir) == []


def test_missing_directory_is_a_write_error(remote: Remote) -> None:
    dest = remote.home / "no-such-dir" / "file"

    result = remote.run("receive", str(dest), hashlib.sha256(DATA).hexdigest(), stdin=DATA)

    assert result.returncode == 4
    assert result.values("error")[0][0] == "write"
    assert not (remote.home / "no-such-dir").exists()
