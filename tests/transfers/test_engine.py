"""The transfer engine end to end, against the real sshd: striped and streamed transfers are
byte-exact, inputs the host holds are not sent again, fetches skip what is already home, and
cut or killed transfers resume from their verified pieces."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rtrain.client.errors import RemoteError
from rtrain.daemon.operations.run_limits import watcher_files
from rtrain.daemon.transfer.plan import LANDED_STEP
from tests.faults.conftest import Campaign, can_mount_tmpfs
from tests.hosts import GPU_USER, NOGPU_USER
from tests.hosts.sshd import Sshd
from tests.operations.harness import Ops
from tests.operations.processes import ssh_processes

MIB = 1024 * 1024
# Four pieces of 16 MiB plus a tail: striped, over two channels or more.
STRIPED = 4 * 16 * MIB + 12345
# Every byte value, at every offset modulo 256 once over the file.
PATTERN = bytes(range(256))


def patterned(size: int, salt: int = 0) -> bytes:
    rotated = PATTERN[salt % 256 :] + PATTERN[: salt % 256]
    return (rotated * (size // 256 + 1))[:size]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_far(ops: Ops, run_id: str, rel: str, data: bytes, user: str = GPU_USER) -> Path:
    """A file in a finished run's directory, owned by the far user."""
    path = ops.far_run_dir(run_id) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    shutil.chown(path, user, user)
    shutil.chown(path.parent, user, user)
    return path


def finished_run(ops: Ops, host: str = "plain", **params: Any) -> str:
    run_id = ops.new_run_id()
    ops.start("print('done')", run_id=run_id, host=host, **params)
    run = ops.wait_state(run_id, lambda run: run.state != "running", host=host)
    assert run.state == "completed", run
    return run_id


def fetch(ops: Ops, run_id: str, path: str, dest: Path, host: str = "plain", **kw: Any) -> Any:
    params = {"host": host, "runId": run_id, "path": path, "dest": str(dest), **kw}
    return ops.request("run/fetch", params)


def transfers_running(ops: Ops) -> list[list[str]]:
    """The daemon's ssh clients that carry a transfer (not its master, not its idle shells)."""
    prefix = f"ControlPath={ops.daemon.runtime}/"
    return [
        argv
        for argv in ssh_processes().values()
        if any(word.startswith(prefix) for word in argv)
        and "-N" not in argv
        and argv[-1] != "exec sh"
    ]


def partial_records(dest: Path) -> list[Path]:
    """The records of the partial copies anywhere under `dest`."""
    return sorted(
        Path(folder) / name
        for folder, _dirs, names in os.walk(dest)
        for name in names
        if Path(folder).name == ".rtrain-partial" and name.endswith(".json")
    )


def test_a_striped_upload_and_fetch_are_byte_exact_and_the_second_start_sends_nothing(
    ops: Ops,
) -> None:
    dataset = ops.tmp / "données d'été 1.bin"
    dataset.write_bytes(patterned(STRIPED))
    first = ops.start("print('one')", dataset=str(dataset))
    assert first.uploaded_bytes >= STRIPED
    assert {f.path: f.how for f in first.shipped}[dataset.name] == "sent"
    far = ops.far_run_dir(first.run.run_id) / dataset.name
    assert far.read_bytes() == dataset.read_bytes()
    # The same dataset again: placed from the host's cache, not one byte sent.
    second = ops.start("print('two')", dataset=str(dataset))
    assert second.uploaded_bytes == 0
    # Every input becomes the run's own copy (or reflink): no run can change the cache.
    assert {f.path: (f.how, f.sent_bytes) for f in second.shipped} == {
        "config.yaml": ("copied", 0),
        dataset.name: ("copied", 0),
    }
    assert (ops.far_run_dir(second.run.run_id) / dataset.name).read_bytes() == dataset.read_bytes()
    ops.wait_state(second.run.run_id, lambda run: run.state != "running")
    # ...and back home, striped, under a name with a space and non-ASCII letters.
    dest = ops.tmp / "home"
    result = fetch(ops, second.run.run_id, dataset.name, dest)
    assert (dest / dataset.name).read_bytes() == dataset.read_bytes()
    assert result.files[0].sha256 == sha256(dataset.read_bytes())
    assert result.sent_bytes == STRIPED
    assert partial_records(dest) == [] and not (dest / ".rtrain-partial").exists()


def test_each_host_keeps_its_own_cache_and_gc_frees_what_no_run_uses(ops: Ops) -> None:
    dataset = ops.tmp / "data.bin"
    dataset.write_bytes(patterned(3 * MIB, salt=7))
    on_plain = ops.start("print(1)", dataset=str(dataset))
    # Another host (here another far user) has its own cache: everything is sent there.
    nogpu_workdir = ops.hosts.home(NOGPU_USER) / ".rtrain-t" / ops.tag
    try:
        on_nogpu = ops.start("print(2)", host="nogpu", dataset=str(dataset))
        assert on_nogpu.uploaded_bytes == on_plain.uploaded_bytes > 3 * MIB
        again = ops.start("print(3)", host="nogpu", dataset=str(dataset))
        assert again.uploaded_bytes == 0
    finally:
        shutil.rmtree(nogpu_workdir, ignore_errors=True)
    ops.wait_state(on_plain.run.run_id, lambda run: run.state != "running")
    # While a run holds the input, gc keeps it.
    kept = ops.request("host/gc", {"host": "plain", "workdir": ops.workdir})
    assert kept.entries == 0
    shutil.rmtree(ops.far_run_dir(on_plain.run.run_id))
    freed = ops.request("host/gc", {"host": "plain", "workdir": ops.workdir})
    # The dataset and the config, and the two scripts of the watcher of the run's limits.
    scripts = watcher_files()
    assert freed.entries == 2 + len(scripts)
    assert freed.freed_bytes == 3 * MIB + len("epochs: 1\n") + sum(len(t) for _, t in scripts)
    assert list((ops.far_workdir / ".cache" / "inputs").iterdir()) == []
    # With the cache empty, the next start sends everything again.
    assert ops.start("print(4)", dataset=str(dataset)).uploaded_bytes == on_plain.uploaded_bytes


def test_a_tree_comes_home_once_then_is_skipped_unless_forced(ops: Ops) -> None:
    run_id = finished_run(ops)
    files = {
        "out/a b.txt": b"spaces\n",
        "out/ünï/çödé.bin": patterned(70_000, salt=3),
        "out/empty": b"",
        "out/big.bin": patterned(20 * MIB, salt=9),
        **{f"out/many/{n:03d}.bin": patterned(4096 + n, salt=n) for n in range(40)},
    }
    for rel, data in files.items():
        write_far(ops, run_id, rel, data)
    (ops.far_run_dir(run_id) / "out" / "nothing").mkdir()
    shutil.chown(ops.far_run_dir(run_id) / "out" / "nothing", GPU_USER, GPU_USER)
    dest = ops.tmp / "home"
    first = fetch(ops, run_id, "out", dest)
    for rel, data in files.items():
        assert (dest / rel).read_bytes() == data, rel
    assert (dest / "out" / "nothing").is_dir()
    assert (first.skipped, first.sent_bytes) == (0, sum(map(len, files.values())))
    again = fetch(ops, run_id, "out", dest)
    assert (again.skipped, again.sent_bytes) == (len(files), 0)
    assert sorted(f.sha256 for f in again.files) == sorted(sha256(d) for d in files.values())
    # A file changed at home is fetched again; the others are not.
    (dest / "out" / "a b.txt").write_bytes(b"SPACES\n")
    changed = fetch(ops, run_id, "out", dest)
    assert (changed.skipped, changed.sent_bytes) == (len(files) - 1, len(b"spaces\n"))
    assert (dest / "out" / "a b.txt").read_bytes() == b"spaces\n"
    forced = fetch(ops, run_id, "out", dest, force=True)
    assert forced.skipped == 0 and forced.sent_bytes == first.sent_bytes


def test_a_file_changing_during_a_striped_fetch_is_refused(campaign: Campaign) -> None:
    # One channel: the pieces come one after another, each read while the far file still is
    # in the state the fetch began with. At the first bytes home the link freezes, the file
    # grows, and the link flows again: the piece in flight cannot have been read whole by
    # then, so it (or else the next one) finds the file changed, however late the client
    # hears of the progress.
    one_channel(campaign, "viaproxy")
    run_id = finished_run(campaign, host="viaproxy")
    far = write_far(campaign, run_id, "growing.bin", patterned(STRIPED))
    dest = campaign.tmp / "home"
    touched = threading.Event()

    def grow_while_the_link_is_frozen(method: str, params: Any) -> None:
        if method == "$/progress" and params.value.done_bytes > 0 and not touched.is_set():
            touched.set()
            campaign.link.stall()
            with open(far, "ab") as f:
                f.write(b"more")
            campaign.link.resume()

    client = campaign.client()
    with pytest.raises(RemoteError) as caught:
        client.request(
            "run/fetch",
            {
                "host": "viaproxy",
                "runId": run_id,
                "path": "growing.bin",
                "dest": str(dest),
                "progressToken": 1,
            },
            on_notification=grow_while_the_link_is_frozen,
        )
    assert touched.is_set()
    assert caught.value.kind == "transfer_failed", caught.value.message
    assert "changed while fetching" in caught.value.message
    assert not (dest / "growing.bin").exists()
    assert partial_records(dest) == []


def one_channel(ops: Ops, host: str) -> None:
    """Tell the daemon, before it starts, to carry `host`'s pieces one after another, so that
    a test can act between two of them."""
    config = ops.daemon.config / "rtrain" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"[hosts.{host}]\nchannels = 1\n")


def model_through_the_proxy(campaign: Campaign, size: int, salt: int) -> tuple[str, bytes]:
    """A finished run on `viaproxy`, whose pieces come over one channel, holding model.bin of
    `size` patterned bytes: (its run id, the bytes)."""
    one_channel(campaign, "viaproxy")
    run_id = finished_run(campaign, host="viaproxy")
    data = patterned(size, salt=salt)
    write_far(campaign, run_id, "model.bin", data)
    return run_id, data


def test_a_cut_upload_of_a_run_of_pieces_says_so_and_the_next_start_sends_only_the_rest(
    campaign: Campaign,
) -> None:
    # One channel: the first four pieces go in one stream to one far process, which keeps
    # each piece as it verifies; the link is cut once two of them are kept.
    one_channel(campaign, "viaproxy")
    dataset = campaign.tmp / "cut-up.bin"
    data = patterned(STRIPED, salt=41)
    dataset.write_bytes(data)
    run_id = campaign.new_run_id()
    markers = campaign.far_run_dir(run_id).parent / ".cache" / "partial" / f"{sha256(data)}.pieces"
    cut = threading.Event()

    def cut_once_two_pieces_are_kept(method: str, params: Any) -> None:
        if cut.is_set() or method != "$/progress" or not markers.is_dir():
            return
        if len(list(markers.iterdir())) >= 2:
            cut.set()
            campaign.link.stall()
            campaign.cut("a run of pieces going up")
            campaign.link.resume()

    campaign.link.delay_s = 0.1
    with pytest.raises(RemoteError) as caught:
        campaign.client().request(
            "run/start",
            {
                "host": "viaproxy", "runId": run_id, "workdir": campaign.workdir, "gpus": 0,
                "config": str(campaign.file("config.yaml", "epochs: 1\n")),
                "dataset": str(dataset), "command": ["true"], "progressToken": 1,
            },
            on_notification=cut_once_two_pieces_are_kept,
        )  # fmt: skip
    assert cut.is_set()
    assert caught.value.kind == "host_unreachable", caught.value.message
    assert "nothing was started" in caught.value.message
    kept = len(list(markers.iterdir()))
    assert kept >= 2
    campaign.link.delay_s = 0.0
    again = campaign.start("print('again')", dataset=str(dataset), host="viaproxy")
    far = campaign.far_run_dir(again.run.run_id) / dataset.name
    assert far.read_bytes() == data
    shipped = {f.path: f.sent_bytes for f in again.shipped}
    assert shipped[dataset.name] <= STRIPED - kept * 16 * MIB


def test_a_cut_striped_fetch_resumes_from_its_verified_pieces(campaign: Campaign) -> None:
    run_id, data = model_through_the_proxy(campaign, STRIPED, salt=5)
    dest = campaign.tmp / "home"
    cut = threading.Event()

    def cut_once_pieces_are_verified(method: str, params: Any) -> None:
        if cut.is_set() or method != "$/progress":
            return
        for record in partial_records(dest):
            if len(json.loads(record.read_text())["pieces"]) >= 2:
                cut.set()
                # Stalled first, so that no more pieces land between the look and the cut.
                campaign.link.stall()
                campaign.cut("a striped fetch")
                campaign.link.resume()

    # Slow enough that the last pieces are still on their way when a client late to read
    # its notifications (a loaded machine) finds two pieces verified.
    campaign.link.delay_s = 0.1
    client = campaign.client()
    with pytest.raises(RemoteError) as caught:
        client.request(
            "run/fetch",
            {
                "host": "viaproxy",
                "runId": run_id,
                "path": "model.bin",
                "dest": str(dest),
                "progressToken": 1,
            },
            on_notification=cut_once_pieces_are_verified,
        )
    assert cut.is_set()
    assert caught.value.kind in ("host_unreachable", "transfer_failed"), caught.value.message
    assert not (dest / "model.bin").exists()
    records = partial_records(dest)
    assert len(records) == 1, (caught.value.message, sorted(dest.rglob("*")))
    verified = sum(length for _offset, length in json.loads(records[0].read_text())["pieces"])
    assert verified > 16 * MIB  # two pieces or more
    campaign.link.delay_s = 0.0
    again = fetch(campaign, run_id, "model.bin", dest, host="viaproxy")
    assert (dest / "model.bin").read_bytes() == data
    assert again.sent_bytes <= STRIPED - verified
    assert partial_records(dest) == [] and not (dest / ".rtrain-partial").exists()


def test_a_fetch_killed_with_the_daemon_resumes(campaign: Campaign) -> None:
    run_id, data = model_through_the_proxy(campaign, STRIPED, salt=11)
    dest = campaign.tmp / "home"
    killed = threading.Event()

    def kill_once_a_piece_is_verified(method: str, params: Any) -> None:
        if killed.is_set() or method != "$/progress":
            return
        for record in partial_records(dest):
            if json.loads(record.read_text())["pieces"]:
                killed.set()
                # Stalled, so that the fetch cannot finish before the daemon is killed.
                campaign.link.stall()
                raise KeyboardInterrupt  # leave the request; the daemon is killed below

    campaign.link.delay_s = 0.02
    try:
        with pytest.raises(KeyboardInterrupt):
            campaign.client().request(
                "run/fetch",
                {
                    "host": "viaproxy",
                    "runId": run_id,
                    "path": "model.bin",
                    "dest": str(dest),
                    "progressToken": 1,
                },
                on_notification=kill_once_a_piece_is_verified,
            )
        campaign.kill_daemon()
    finally:
        campaign.link.resume()
    campaign.link.delay_s = 0.0
    assert not (dest / "model.bin").exists()
    [record] = partial_records(dest)
    verified = sum(length for _offset, length in json.loads(record.read_text())["pieces"])
    assert verified > 0
    again = fetch(campaign, run_id, "model.bin", dest, host="viaproxy")
    assert (dest / "model.bin").read_bytes() == data
    assert again.sent_bytes <= STRIPED - verified
    assert partial_records(dest) == []


# Four pieces and two notes' worth: its half lies early in the third piece, which is in
# flight then, one note (LANDED_STEP) into it.
HALF_IN_A_PIECE = 4 * 16 * MIB + 2 * LANDED_STEP


def cut_fetch(campaign: Campaign, run_id: str, dest: Path, at: int, how: str) -> int:
    """Fetch model.bin through the proxy and cut it (Ctrl-C, or `kill -9` of the daemon)
    once `at` bytes have arrived; how many had when the cut came."""
    cut_at: list[int] = []

    def cut_there(method: str, params: Any) -> None:
        if cut_at or method != "$/progress" or params.value.done_bytes < at:
            return
        cut_at.append(params.value.done_bytes)
        # Stalled, so that the fetch cannot finish before the cut lands.
        campaign.link.stall()
        raise KeyboardInterrupt

    from rtrain.client.errors import Interrupted

    campaign.link.delay_s = 0.05
    try:
        with pytest.raises((KeyboardInterrupt, Interrupted)):
            campaign.client().request(
                "run/fetch",
                {
                    "host": "viaproxy",
                    "runId": run_id,
                    "path": "model.bin",
                    "dest": str(dest),
                    "progressToken": 1,
                },
                on_notification=cut_there,
                cancel_on_interrupt=how == "ctrl-c",
            )
        if how == "kill -9":
            campaign.kill_daemon()
    finally:
        campaign.link.resume()
    campaign.link.delay_s = 0.0
    return cut_at[0]


@pytest.mark.parametrize("how", ["kill -9", "ctrl-c"])
def test_a_fetch_cut_at_half_moves_little_more_than_the_other_half_again(
    campaign: Campaign, how: str
) -> None:
    run_id, data = model_through_the_proxy(campaign, HALF_IN_A_PIECE, salt=23)
    dest = campaign.tmp / "home"
    cut_at = cut_fetch(campaign, run_id, dest, HALF_IN_A_PIECE // 2, how)
    assert not (dest / "model.bin").exists()
    [record] = partial_records(dest)
    assert json.loads(record.read_text())["landed"]  # the third piece was cut in flight
    again = fetch(campaign, run_id, "model.bin", dest, host="viaproxy")
    assert (dest / "model.bin").read_bytes() == data
    # What landed of the piece in flight is kept (as noted every LANDED_STEP before a kill).
    assert again.sent_bytes <= HALF_IN_A_PIECE - cut_at + LANDED_STEP
    assert again.sent_bytes <= 0.55 * HALF_IN_A_PIECE
    assert partial_records(dest) == [] and not (dest / ".rtrain-partial").exists()


def test_bytes_that_landed_but_differ_from_the_far_file_are_fetched_again(
    campaign: Campaign,
) -> None:
    run_id, data = model_through_the_proxy(campaign, HALF_IN_A_PIECE, salt=29)
    dest = campaign.tmp / "home"
    cut_fetch(campaign, run_id, dest, 33 * MIB, "ctrl-c")
    [record] = partial_records(dest)
    # Damage one byte of what landed of the third piece: it must not be trusted.
    [(offset, count)] = json.loads(record.read_text())["landed"]
    part = record.with_suffix(".part")
    with open(part, "r+b") as copy:
        copy.seek(offset + count // 2)
        byte = copy.read(1)
        copy.seek(offset + count // 2)
        copy.write(bytes([byte[0] ^ 0xFF]))
    again = fetch(campaign, run_id, "model.bin", dest, host="viaproxy")
    assert (dest / "model.bin").read_bytes() == data
    assert again.sent_bytes >= HALF_IN_A_PIECE - offset  # the whole third piece came again
    assert partial_records(dest) == []


def test_a_file_found_home_takes_the_partial_copy_a_killed_fetch_left_with_it(
    campaign: Campaign,
) -> None:
    # A daemon killed after it moved the file into place and before it removed its partial
    # copy leaves that copy's record: the next fetch finds the file home and sends nothing,
    # and must not leave the record (and its folder) behind for good.
    run_id, data = model_through_the_proxy(campaign, HALF_IN_A_PIECE, salt=31)
    dest = campaign.tmp / "home"
    cut_fetch(campaign, run_id, dest, 33 * MIB, "kill -9")
    assert partial_records(dest) != []
    (dest / "model.bin").write_bytes(data)  # in place, as the killed daemon had put it
    again = fetch(campaign, run_id, "model.bin", dest, host="viaproxy")
    assert again.sent_bytes == 0 and again.skipped == 1
    assert partial_records(dest) == []
    assert not (dest / ".rtrain-partial").exists()


def test_ctrl_c_during_a_fetch_leaves_nothing_running_and_nothing_under_its_name(
    ops: Ops,
) -> None:
    run_id = finished_run(ops)
    write_far(ops, run_id, "model.bin", patterned(STRIPED, salt=13))
    dest = ops.tmp / "home"
    pressed = threading.Event()

    def press_ctrl_c(method: str, params: Any) -> None:
        if method == "$/progress" and params.value.done_bytes > 0 and not pressed.is_set():
            pressed.set()
            raise KeyboardInterrupt

    client = ops.client()
    from rtrain.client.errors import Interrupted

    with pytest.raises(Interrupted) as caught:
        client.request(
            "run/fetch",
            {
                "host": "plain",
                "runId": run_id,
                "path": "model.bin",
                "dest": str(dest),
                "progressToken": 1,
            },
            on_notification=press_ctrl_c,
            cancel_on_interrupt=True,
        )
    assert caught.value.result is None  # cancelled, not finished anyway
    # The daemon answered the cancel only once the fetch had stopped: nothing of it runs,
    # and nothing appears under the final name later.
    assert transfers_running(ops) == []
    assert ops.request("daemon/info", {}) is not None
    assert not (dest / "model.bin").exists()


def test_ctrl_c_during_an_upload_leaves_nothing_running(ops: Ops) -> None:
    dataset = ops.tmp / "data.bin"
    dataset.write_bytes(patterned(STRIPED, salt=17))
    run_id = ops.new_run_id()
    pressed = threading.Event()

    def press_ctrl_c(method: str, params: Any) -> None:
        if method == "$/progress" and params.value.done_bytes > 0 and not pressed.is_set():
            pressed.set()
            raise KeyboardInterrupt

    from rtrain.client.errors import Interrupted

    with pytest.raises(Interrupted) as caught:
        ops.client().request(
            "run/start",
            {
                "host": "plain",
                "runId": run_id,
                "workdir": ops.workdir,
                "gpus": 0,
                "config": str(ops.file("config.yaml", "epochs: 1\n")),
                "dataset": str(dataset),
                "command": ["{python}", "-c", "print(1)"],
                "progressToken": 1,
            },
            on_notification=press_ctrl_c,
            cancel_on_interrupt=True,
        )
    assert caught.value.result is None
    assert transfers_running(ops) == []
    assert not (ops.far_run_dir(run_id) / "data.bin").exists()
    assert not (ops.far_run_dir(run_id) / "meta.json").exists()


@pytest.fixture
def two_sessions(ops: Ops) -> Iterator[str]:
    """An sshd allowing two sessions per connection, and a daemon told to stripe over 8."""
    sshd = Sshd(
        "maxsessions2",
        ops.hosts.base,
        ops.hosts.host_key,
        [
            f"AllowUsers {GPU_USER}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "MaxSessions 2",
        ],
    )
    sshd.start()
    config = ops.daemon.config / "rtrain" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[hosts.maxsessions2]\nchannels = 8\n")
    try:
        ops.hosts.add_alias("maxsessions2", sshd.port)
        yield "maxsessions2"
    finally:
        sshd.close()


def test_a_host_with_two_sessions_gets_striped_transfers_all_the_same(
    ops: Ops, two_sessions: str
) -> None:
    dataset = ops.tmp / "data.bin"
    dataset.write_bytes(patterned(STRIPED, salt=19))
    started = ops.start("print('ok')", host=two_sessions, dataset=str(dataset))
    run_id = started.run.run_id
    assert (ops.far_run_dir(run_id) / "data.bin").read_bytes() == dataset.read_bytes()
    ops.wait_state(run_id, lambda run: run.state != "running", host=two_sessions)
    dest = ops.tmp / "home"
    fetch(ops, run_id, "data.bin", dest, host=two_sessions)
    assert (dest / "data.bin").read_bytes() == dataset.read_bytes()


@pytest.fixture
def small_local_disk(ops: Ops) -> Iterator[Path]:
    """A 4 MiB tmpfs on this machine: the fetch's destination."""
    why = can_mount_tmpfs(ops.tmp)
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"cannot mount a small filesystem for the disk-full test: {why}")
        pytest.skip(f"cannot mount a small filesystem here: {why}")
    mount = ops.tmp / "small"
    mount.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        check=True,
        capture_output=True,
    )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False, capture_output=True)


@pytest.mark.parametrize("size", [6 * MIB, STRIPED], ids=["one stream", "striped"])
def test_a_full_local_disk_is_one_sentence_and_leaves_nothing(
    ops: Ops, small_local_disk: Path, size: int
) -> None:
    run_id = finished_run(ops)
    write_far(ops, run_id, "model.bin", patterned(size, salt=23))
    error = ops.error(
        "run/fetch",
        {"host": "plain", "runId": run_id, "path": "model.bin", "dest": str(small_local_disk)},
    )
    assert error.kind == "disk_full", error.message
    assert "local disk is full" in error.message and "nothing was written" in error.message
    assert list(small_local_disk.iterdir()) == []  # no file, no partial copy
    assert transfers_running(ops) == []
    # The daemon answers on: nothing hangs on the ssh it stopped reading from.
    assert ops.request("daemon/info", {}) is not None
