"""`rtrain start`: what it prints before streaming, following to the end, and its exit status."""

from __future__ import annotations

from tests.cli.conftest import FAILING_TRAINER, Cli


def test_start_prints_how_to_reattach_then_follows_to_completion(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.file("cfg.yaml", "steps: 20\nlog_every: 5\nbackend: python\n")
    cli.file("data.jsonl", '{"text": "the cat sat on the mat"}\n' * 20)
    done = cli(
        "start", "plain", "-c", "cfg.yaml", "-d", "data.jsonl",
        "--run-id", run_id, "--workdir", cli.workdir,
    )  # fmt: skip
    assert done.code == 0, done
    assert done.out_lines[:3] == [
        f"✓ started {run_id} on plain",
        f"  tail:  rtrain tail plain {run_id}",
        f"  stop:  rtrain stop plain {run_id}",
    ]
    log = done.out_lines[3:]
    assert log[0].startswith(f"rtrain demo trainer | run {run_id} | backend python"), done
    assert "step 20 | loss" in done.out
    assert log[-1].startswith("done: 20 steps, final loss"), done
    # The streamed log is the far log, byte for byte.
    far_log = (cli.far_run_dir(run_id) / "train.log").read_text()
    assert "\n".join(log) + "\n" == far_log
    assert done.err_lines[-1] == f"{run_id} on plain: completed"
    # The inputs arrived under their names.
    assert (cli.far_run_dir(run_id) / "data.jsonl").read_bytes() == (
        cli.cwd / "data.jsonl"
    ).read_bytes()

    status = cli("status", "plain", run_id)
    assert (status.code, status.out) == (0, "completed\n"), status


def test_failing_trainer_fails_the_follow_and_says_how(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.file("cfg.yaml", "epochs: 1\n")
    done = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--", "{python}", "-c", FAILING_TRAINER,
    )  # fmt: skip
    assert done.code == 1, done
    assert done.out_lines[0] == f"✓ started {run_id} on plain"
    assert "step 1 | loss 1.0" in done.out_lines
    # The trainer's stderr is part of the run's log.
    assert "out of patience" in done.out_lines
    assert done.err_lines[-1] == f"{run_id} on plain: failed (exit 3)"

    status = cli("status", "plain", run_id)
    assert (status.code, status.out) == (0, "failed (exit 3)\n"), status
    as_json = cli("status", "plain", run_id, "--json").json()
    assert (as_json["runId"], as_json["state"], as_json["exitCode"]) == (run_id, "failed", 3)


def test_start_json_is_one_object_per_line(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.file("cfg.yaml", "epochs: 1\n")
    done = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "0", "--json", "--", "{python}", "-c", "print('step 1 | loss 1.0')",
    )  # fmt: skip
    assert done.code == 0, done
    started, *logs, end = done.json_lines()
    assert started["run"]["runId"] == run_id
    assert started["run"]["state"] == "running"
    assert started["uploadedBytes"] == len("epochs: 1\n")
    assert {entry["type"] for entry in logs} == {"log"}
    assert "".join(entry["text"] for entry in logs) == "step 1 | loss 1.0\n"
    assert end["type"] == "end"
    assert end["run"]["state"] == "completed"
    assert end["offset"] == len("step 1 | loss 1.0\n")
    # Nothing meant for a human on stdout.
    assert all(line.startswith("{") for line in done.out_lines)


def test_a_workdir_that_cannot_be_made_is_said_once(cli: Cli) -> None:
    cli.file("cfg.yaml", "epochs: 1\n")
    run_id = cli.new_run_id()
    done = cli("start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", "/",
               "--", "{python}", "-c", "print('no')")  # fmt: skip
    assert (done.code, done.out) == (1, ""), done
    (sentence,) = done.err_lines
    assert sentence.startswith("rtrain: plain: could not create the run directory: mkdir:"), done
    assert sentence.count("rtrain:") == 1 and "Permission denied" in sentence, done
    assert sentence.endswith("nothing was started.")
