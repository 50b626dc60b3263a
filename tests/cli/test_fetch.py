"""`rtrain fetch`: each file listed with its size and checksum verdict, byte-identical at home."""

from __future__ import annotations

import json
import signal
import time

from tests.cli.conftest import OUTPUTS_TRAINER, PROXIED_ALIAS, WAIT_S, Cli
from tests.hosts import TcpProxy


def test_fetch_lists_each_file_and_copies_it_exactly(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", OUTPUTS_TRAINER)
    cli.wait_state("plain", run_id, "completed")

    done = cli("fetch", "plain", run_id, "lora_model", "-o", "out")
    assert done.code == 0, done
    assert sorted(done.out_lines) == [
        "  out/lora_model/adapter.txt  10 B  sha256 ok",
        "  out/lora_model/shards/part-0.bin  2.5 kB  sha256 ok",
    ]
    assert done.err_lines[-1] == "fetched 2 file(s), 2.5 kB, all checksums matched"

    far = cli.far_run_dir(run_id) / "lora_model"
    home = cli.cwd / "out" / "lora_model"
    far_files = sorted(p.relative_to(far) for p in far.rglob("*") if p.is_file())
    home_files = sorted(p.relative_to(home) for p in home.rglob("*") if p.is_file())
    assert home_files == far_files
    for name in far_files:
        assert (home / name).read_bytes() == (far / name).read_bytes()

    # --json names every file; a directory outside the cwd is shown as it is.
    elsewhere = cli.daemon.root / "elsewhere"
    as_json = cli(
        "fetch", "plain", run_id, "lora_model/adapter.txt", "-o", str(elsewhere), "--json"
    )
    assert as_json.code == 0, as_json
    result = as_json.json()
    (fetched,) = result["files"]
    assert (fetched["size"], fetched["verified"], result["totalBytes"]) == (10, True, 10)
    assert (elsewhere / "adapter.txt").read_bytes() == b"0123456789"
    assert fetched["localPath"] == str(elsewhere / "adapter.txt")


def test_fetch_of_a_missing_path_is_one_sentence(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", "print('nothing saved')")
    cli.wait_state("plain", run_id, "completed")
    done = cli("fetch", "plain", run_id, "lora_model", "-o", "out")
    assert done.code == 1, done
    (sentence,) = done.err_lines
    assert sentence.startswith("rtrain: ") and "lora_model" in sentence, sentence
    assert not (cli.cwd / "out" / "lora_model").exists()


def test_a_destination_that_cannot_be_made_is_one_sentence(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", OUTPUTS_TRAINER)
    cli.wait_state("plain", run_id, "completed")
    done = cli("fetch", "plain", run_id, "lora_model", "-o", "/proc/nope")
    assert (done.code, done.out) == (1, ""), done
    assert done.err_lines == [
        "rtrain: cannot create the directory /proc/nope to fetch into: No such file or directory."
    ], done
    log = cli.daemon.log.read_text()
    assert "Traceback" not in log and "internal error" not in log.lower()


def test_no_local_disk_error_is_an_internal_error(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", OUTPUTS_TRAINER)
    cli.wait_state("plain", run_id, "completed")
    # Where the file should land, a directory is in the way: the rename cannot happen.
    (cli.cwd / "out" / "lora_model" / "adapter.txt").mkdir(parents=True)
    done = cli("fetch", "plain", run_id, "lora_model", "-o", "out", "--json")
    assert (done.code, done.out) == (1, ""), done
    error = json.loads(done.err)["error"]
    assert error["kind"] == "local_io", error
    assert "Internal error" not in error["message"]
    assert str(cli.cwd / "out" / "lora_model" / "adapter.txt") in error["message"], error
    assert "Traceback" not in cli.daemon.log.read_text()


BIG_TRAINER = """
import os
with open("big.bin", "wb") as f:
    f.write(os.urandom(32 * 1024 * 1024))
print("step 1 | loss 1.0", flush=True)
"""


def test_ctrl_c_during_fetch_says_what_was_kept(cli: Cli, link: TcpProxy) -> None:
    # Its two pieces one after another, so that Ctrl-C can come between them.
    config = cli.daemon.config / "rtrain" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"[hosts.{PROXIED_ALIAS}]\nchannels = 1\n")
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", BIG_TRAINER)
    cli.wait_state("plain", run_id, "completed")
    out = cli.cwd / "out"
    link.delay_s = 0.2  # a far WAN: the file takes long enough to be interrupted on its way
    fetching = cli.spawn("fetch", PROXIED_ALIAS, run_id, "big.bin", "-o", "out",
                         "--workdir", cli.workdir)  # fmt: skip
    deadline = time.monotonic() + WAIT_S

    def a_piece_is_verified() -> bool:
        records = list(out.glob(".rtrain-partial/big.bin.*.json"))
        try:
            return bool(records and json.loads(records[0].read_text())["pieces"])
        except (OSError, ValueError):
            return False  # replaced between the look and the read

    while not a_piece_is_verified():
        assert time.monotonic() < deadline and fetching.process.poll() is None, "no piece came"
        time.sleep(0.01)
    fetching.process.send_signal(signal.SIGINT)
    done = fetching.finish()
    assert (done.code, done.out) == (130, ""), done
    (sentence,) = done.err.splitlines()
    assert sentence.startswith("rtrain: interrupted: the fetch was cancelled"), done
    assert "are in out and verified" in sentence and "resumes from the verified pieces" in sentence
    # Nothing under the final name; what had arrived waits, hidden, for the next fetch...
    assert not (out / "big.bin").exists()
    assert [p.name for p in out.iterdir()] == [".rtrain-partial"]
    # ...which completes it and leaves no partial copy behind.
    link.delay_s = 0.0
    again = cli("fetch", PROXIED_ALIAS, run_id, "big.bin", "-o", "out", "--workdir", cli.workdir)
    assert again.code == 0, again
    assert (out / "big.bin").stat().st_size == 32 * 1024 * 1024
    assert [p.name for p in out.iterdir()] == ["big.bin"]
