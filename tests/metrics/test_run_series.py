"""One run's series, fed as the log arrives: the right points once each, bounded whatever the
log holds."""

from __future__ import annotations

from rtrain.daemon.metrics.run_series import (
    MAX_PARSE,
    MAX_PENDING,
    MAX_POINTS,
    MAX_SERIES,
    RunSeries,
)

MIXED = (
    b"loading\n"
    b"step 1 | loss 2.5 | lr 0.01\n"
    b"{'loss': 2.0, 'epoch': 0.5}\n"
    b"\r 10%|#  | 1/10 [00:01<00:09, 1.00it/s]\r 30%|### | 3/10 [00:03<00:07, 1.00it/s]"
    b"\r    \r{'loss': 1.75, 'epoch': 0.75}\n"
    b'{"step": 9, "loss": 1.5}\n'
)


def points(run: RunSeries, name: str) -> list[tuple[float, float]]:
    series = run.series[name]
    return list(zip(series.steps, series.values, strict=True))


def test_a_mixed_log_fed_in_pieces_and_twice_counts_each_line_once() -> None:
    run = RunSeries()
    for cut in range(0, len(MIXED), 7):
        run.feed("log", cut, MIXED[cut : cut + 7])
    run.feed("log", 0, MIXED)  # a second reader of the same bytes
    # Without a step: the bar's position when there is one, else the record's number.
    assert points(run, "loss") == [(1, 2.5), (2, 2.0), (3, 1.75), (9, 1.5)]
    assert points(run, "epoch") == [(2, 0.5), (3, 0.75)]
    assert run.latest == {"loss": 1.5, "lr": 0.01, "epoch": 0.75}
    assert run.progress is not None and (run.progress.n, run.progress.total) == (3, 10)


def test_the_bar_being_drawn_counts_before_its_line_ends() -> None:
    run = RunSeries()
    first = b"\r 20%|## | 2/10 [00:02<00:08, 1.00it/s]"
    assert run.feed("log", 0, first)
    assert run.progress is not None and run.progress.n == 2
    assert run.feed("log", len(first), b"\r 50%|#####| 5/10 [00:05<00:05, 1.00it/s]")
    assert run.progress.n == 5


def test_a_replaced_log_starts_over_and_a_gap_drops_the_broken_line() -> None:
    run = RunSeries()
    run.feed("log", 0, b"step 1 | loss 1.0\nstep 2 | lo")
    run.feed("log", 100, b"ss 9.0\nstep 3 | loss 0.5\n")  # bytes 30..100 never came
    assert points(run, "loss") == [(1, 1.0), (3, 0.5)]
    run.feed("log", 0, b"step 1 | loss 4.0\n", restarted=True)
    assert points(run, "loss")[-1] == (1, 4.0)
    assert run.consumed("log") == 18


def test_a_hostile_log_stays_bounded() -> None:
    run = RunSeries()
    offset = 0

    def feed(data: bytes) -> None:
        nonlocal offset
        run.feed("log", offset, data)
        offset += len(data)

    # A 3 MB line without a newline, in 1 MiB reads: never held, never parsed.
    for _ in range(3):
        feed(b"x" * (1 << 20))
        assert len(run._sources["log"].pending) <= MAX_PENDING
    feed(b"\nstep 1 | loss 1.0\n")
    assert points(run, "loss") == [(1, 1.0)]
    # NaN and infinities are values like any other (shown as null on the wire).
    feed(b"step 2 | loss nan\nstep 3 | loss inf\n")
    assert [v for _, v in points(run, "loss")][1:] != [1.0, 1.0]
    # 10^6 lines of a thousand metric names, in 1 MiB reads: a bounded share of each read is
    # parsed, and the series stay within their limits.
    lines = b"".join(b"step %d | m%d 1.5 | loss 0.25\n" % (i, i % 1000) for i in range(10**6))
    before = run.records
    for cut in range(0, len(lines), 1 << 20):
        feed(lines[cut : cut + (1 << 20)])
    reads = len(lines) // (1 << 20) + 1
    assert run.records - before <= reads * (MAX_PARSE // 25 + 1)
    assert len(run.series) <= MAX_SERIES
    assert all(len(s.steps) <= MAX_POINTS for s in run.series.values())
    assert run.latest["loss"] == 0.25


def test_many_points_are_thinned_keeping_the_latest_whole() -> None:
    run = RunSeries()
    data = b"".join(b"step %d | loss %d\n" % (i, i) for i in range(1, 5001))
    for cut in range(0, len(data), 4096):
        run.feed("log", cut, data[cut : cut + 4096])
    steps = run.series["loss"].steps
    assert len(steps) <= MAX_POINTS
    assert steps == sorted(steps) and steps[0] == 1 and steps[-1] == 5000
    assert steps[-100:] == [float(i) for i in range(4901, 5001)]


def test_metrics_jsonl_is_a_source_of_its_own() -> None:
    run = RunSeries()
    run.feed("log", 0, b"step 1 | loss 2.0\n")
    run.feed("jsonl", 0, b'{"step": 1, "eval_loss": 1.9}\n{"step": 2, "eval_loss": 1.7}\n')
    assert points(run, "eval_loss") == [(1, 1.9), (2, 1.7)]
    assert run.consumed("log") == 18 and run.consumed("jsonl") == 60


def test_rank_tagged_lines_read_and_rank_0s_series_wins() -> None:
    run = RunSeries()
    log = (
        b"[rank1]:iter 1: loss 9.0, time 1.0ms\n"  # rank 1 first: its series, for now
        b"[rank0]: iter 1: loss 2.0, time 1.0ms\n"  # rank 0 takes the series over
        b"[rank1]:iter 2: loss 8.0, time 1.0ms\n"  # a higher rank's copy: ignored
        b"[rank0]: iter 2: loss 1.5, time 1.0ms\n"
        b"[rank1]: {'grad_norm': '0.5'}\n"  # only rank 1 prints it: rank 1's series
    )
    run.feed("log", 0, log)
    assert points(run, "loss") == [(1, 2.0), (2, 1.5)]
    assert run.latest["loss"] == 1.5
    assert list(run.series["grad_norm"].values) == [0.5]
    # Lines with no tag are rank 0's (a single process, or torchrun without --tee).
    run.feed("log", len(log), b"iter 3: loss 1.0, time 1.0ms\n")
    assert points(run, "loss")[-1] == (3, 1.0)


def test_a_restart_resumed_continues_the_curve_one_afresh_starts_it_over() -> None:
    run = RunSeries()
    first = b"".join(b"iter %d: loss %d.0\n" % (i, 10 - i) for i in range(1, 6))
    resumed = b"==> rtrain: attempt 2 of r started at 2026-01-01 00:00:00 UTC <==\n" + b"".join(
        b"iter %d: loss %d.5\n" % (i, 10 - i) for i in range(3, 5)
    )
    run.feed("log", 0, first)
    generation = run.generation
    run.feed("log", len(first), resumed)
    # Attempt 1's points from step 3 on were undone by the resume from step 3.
    assert points(run, "loss") == [(1, 9.0), (2, 8.0), (3, 7.5), (4, 6.5)]
    assert run.attempt == 2 and run.generation > generation
    afresh = (
        b"==> rtrain: attempt 3 of r started at 2026-01-01 00:01:00 UTC <==\niter 1: loss 11.0\n"
    )
    run.feed("log", len(first) + len(resumed), afresh)
    assert points(run, "loss") == [(1, 11.0)]


def test_lightnings_bar_counts_steps_across_epochs() -> None:
    run = RunSeries()
    log = b"".join(
        b"\rEpoch %d:  %d%%|##  | %d/4 [00:01<00:01,  2.00it/s, v_num=0, train_loss=%.1f]"
        % (epoch, n * 25, n, 3 - epoch - n / 10)
        for epoch in range(2)
        for n in range(1, 5)
    )
    run.feed("log", 0, log + b"\n")
    steps = [step for step, _ in points(run, "train_loss")]
    assert steps == [1, 2, 3, 4, 5, 6, 7, 8]
    assert "v_num" not in run.series


def bar(n: int, total: int = 20, postfix: str = "") -> bytes:
    return b"\r %3d%%|#   | %d/%d [00:01<00:09, 9.90it/s%s]" % (
        100 * n // total,
        n,
        total,
        postfix.encode(),
    )


CLEAR = b"\r" + b" " * 40 + b"\r"


def test_a_record_under_a_bar_takes_the_bars_next_drawing() -> None:
    run = RunSeries()
    # tqdm skipped drawing steps 2 and 3 (quicker than 0.1 s); the dict is step 3's.
    log = bar(1) + CLEAR + b"{'loss': '2.5'}\n"
    run.feed("log", 0, log)
    assert "loss" not in run.series, "not before the bar says where it stands"
    more = bar(3) + CLEAR + b"{'loss': '2.25'}\n"
    run.feed("log", len(log), more)
    assert points(run, "loss") == [(3, 2.5)]
    # A bar drawn under the main one (a checkpoint writer's) says nothing of the step.
    rest = b"\n\rWriting model shards:   0%|   | 0/1 [00:00<?, ?it/s]\x1b[A" + bar(4)
    run.feed("log", len(log) + len(more), rest)
    assert points(run, "loss") == [(3, 2.5), (4, 2.25)]


def test_a_record_left_waiting_when_the_run_ends_takes_the_bar_as_it_stands() -> None:
    run = RunSeries()
    run.feed("log", 0, bar(5) + CLEAR + b"{'loss': '2.5'}\n")
    assert run.settle()
    assert points(run, "loss") == [(5, 2.5)]
    assert not run.settle()


def test_a_restart_after_a_bar_cut_off_mid_line_opens_the_attempt() -> None:
    run = RunSeries()
    first = b"".join(bar(n, 10, f", train_loss={9 - n}.0") for n in range(1, 5))
    # The trainer died: no newline after its bar; rtrain's line follows on the same line.
    restart = b"==> rtrain: attempt 2 of r started at 2026-01-01 00:00:00 UTC <==\n"
    again = b"".join(bar(n, 10, f", train_loss={9 - n}.5") for n in range(3, 5)) + b"\n"
    run.feed("log", 0, first + restart + again)
    assert run.attempt == 2
    assert points(run, "train_loss") == [(1, 8.0), (2, 7.0), (3, 6.5), (4, 5.5)]


def test_a_point_at_its_series_last_step_replaces_it() -> None:
    run = RunSeries()
    # Lightning draws each step twice: on the update (the last step's loss), then with its own.
    log = bar(1, 10, ", loss=3.0") + bar(2, 10, ", loss=3.0") + bar(2, 10, ", loss=2.0")
    run.feed("log", 0, log + b"\n")
    assert points(run, "loss") == [(1, 3.0), (2, 2.0)]


LIGHTNING_BARS = (
    b"\rEpoch 0:  40%|####      | 4/10 [00:01<00:02,  2.50it/s, train_loss=2.310]"
    b"\rEpoch 0: 100%|##########| 10/10 [00:04<00:00,  2.50it/s, train_loss=2.100]\n"
    b"\rEpoch 1:  40%|####      | 4/10 [00:01<00:02,  2.50it/s, train_loss=1.900]"
)


def test_lightnings_epoch_bars_give_progress_over_the_planned_epochs() -> None:
    # As the command said `--max_epochs 3`: 3 epochs of 10 batches.
    run = RunSeries()
    run.planned_epochs = 3
    run.feed("log", 0, LIGHTNING_BARS)
    assert run.progress is not None
    assert (run.progress.n, run.progress.total) == (14, 30)
    assert run.progress.remaining == (30 - 14) / 2.5
    # `--max_steps 12` cuts the fit short of its epochs.
    short = RunSeries()
    short.planned_epochs, short.planned_steps = 3, 12
    short.feed("log", 0, LIGHTNING_BARS)
    assert short.progress is not None
    assert (short.progress.n, short.progress.total) == (12, 12)
    # Nothing planned: the epoch's own bar, as Lightning draws it.
    plain = RunSeries()
    plain.feed("log", 0, LIGHTNING_BARS)
    assert plain.progress is not None
    assert (plain.progress.n, plain.progress.total) == (4, 10)
    # Lightning's last word says the whole fit is done: the progress is all of it.
    plain.feed("log", len(LIGHTNING_BARS), b"\n`Trainer.fit` stopped: `max_epochs=2` reached.\n")
    assert plain.progress is not None
    assert (plain.progress.n, plain.progress.total, plain.progress.remaining) == (14, 14, None)
