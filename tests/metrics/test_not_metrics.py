"""Text that is not a metric gives no series, whatever it is mixed with: paths, timestamps,
versions, URLs, warnings about loss of precision, log-level prefixes with dates, and the
words (loss, step, epoch, iter) that open the general rule's door."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtrain.daemon.metrics.log_formats import read_line

DOOR_WORDS = ["loss", "Loss", "LOSS", "step", "Step", "epoch", "Epoch", "iter", "iteration"]
PROSE = ["the", "of", "precision", "saved", "model", "to", "at", "in", "float16", "is", "done"]
segment = st.one_of(
    st.sampled_from(DOOR_WORDS + PROSE + ["ckpt", "runs", "out"]),
    st.builds("{}_{}".format, st.sampled_from(DOOR_WORDS), st.integers(0, 10**6)),
    st.builds("{}-{}".format, st.sampled_from(DOOR_WORDS), st.integers(0, 999)),
    st.builds("{:.4f}".format, st.floats(0, 10, allow_nan=False)),
)
path = st.builds(
    "{}{}{}".format,
    st.sampled_from(["/", "./", "~/", "../", "C:\\"]),
    st.lists(segment, min_size=1, max_size=5).map("/".join),
    st.sampled_from(["", ".pt", ".bin", ".json", "/", ".0.5"]),
)
date = st.builds(
    "{:04d}-{:02d}-{:02d}".format, st.integers(1970, 2099), st.integers(1, 12), st.integers(1, 28)
)
clock = st.builds(
    "{:02d}:{:02d}:{:02d}".format, st.integers(0, 23), st.integers(0, 59), st.integers(0, 59)
)
timestamp = st.one_of(
    st.builds("{} {}".format, date, clock),
    st.builds("{}T{}Z".format, date, clock),
    st.builds("{} {},{:03d}".format, date, clock, st.integers(0, 999)),
    st.builds("[{}]".format, clock),
    st.builds("{}.{:06d}".format, clock, st.integers(0, 999999)),
    st.builds(
        "{}/{:02d}/{:02d}".format, st.integers(1970, 2099), st.integers(1, 12), st.integers(1, 28)
    ),
)
dotted = st.builds("{}.{}.{}".format, st.integers(0, 20), st.integers(0, 99), st.integers(0, 999))
version = st.one_of(
    dotted,
    st.builds("v{}".format, dotted),
    st.builds("torch=={}".format, dotted),
    st.builds("{}+cu121".format, dotted),
    st.builds("{} {}".format, st.sampled_from(["transformers", "lightning", "torch"]), dotted),
    st.builds(
        "{} {}.{}".format,
        st.sampled_from(["python", "Python", "CUDA", "version", "torch"]),
        st.integers(2, 13),
        st.integers(0, 12),
    ),
)
url = st.builds(
    "{}://{}/{}?{}={}&{}={}".format,
    st.sampled_from(["http", "https", "s3", "gs"]),
    st.sampled_from(["example.com", "host:8080", "wandb.ai/team"]),
    st.lists(segment, max_size=3).map("/".join),
    st.sampled_from(DOOR_WORDS),
    st.integers(0, 1000),
    st.sampled_from(DOOR_WORDS),
    st.floats(0, 10, allow_nan=False),
)
warning = st.sampled_from(
    [
        "UserWarning: loss of precision when casting to float16",
        "RuntimeWarning: overflow encountered in exp; loss of precision",
        "warnings.warn('the step argument is deprecated')",
        "Warning: epoch and iter are ignored when max_steps is set",
        "loss of precision",
    ]
)
level = st.one_of(
    st.builds("{} - {} - ".format, timestamp, st.sampled_from(["INFO", "WARNING", "DEBUG"])),
    st.builds("[{}][{}] ".format, timestamp, st.sampled_from(["INFO", "W", "ERROR"])),
    st.builds(
        "{}:{}:".format,
        st.sampled_from(["INFO", "WARNING"]),
        st.sampled_from(["root", "__main__", "train"]),
    ),
    st.builds(
        "I{:02d}{:02d} {}.{:06d} {:5d} {}:{}] ".format,
        st.integers(1, 12),
        st.integers(1, 28),
        clock,
        st.integers(0, 999999),
        st.integers(1, 99999),
        st.sampled_from(["train.py", "loss.py", "step.cc"]),
        st.integers(1, 9999),
    ),
)
fragment = st.one_of(
    path, timestamp, version, url, warning, st.sampled_from(DOOR_WORDS), st.sampled_from(PROSE)
)
line = st.builds(
    "{}{}".format,
    st.one_of(st.just(""), level),
    st.lists(fragment, min_size=1, max_size=8).flatmap(
        lambda parts: st.sampled_from([" ", ", ", " | ", "  "]).map(lambda sep: sep.join(parts))
    ),
)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(line)
def test_text_that_is_not_a_metric_gives_no_series(text: str) -> None:
    reading = read_line(text)
    assert reading is None or (not reading.values and reading.progress is None), (
        text,
        reading,
    )


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_any_text_reads_without_error_and_names_stay_bounded(text: str) -> None:
    reading = read_line(text)
    if reading is not None:
        assert all(0 < len(name) <= 64 for name in reading.values)
