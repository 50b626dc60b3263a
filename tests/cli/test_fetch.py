"""`rtrain fetch`: each file listed with its size and checksum verdict, byte-identical at home."""

from __future__ import annotations

from tests.cli.conftest import OUTPUTS_TRAINER, Cli


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
