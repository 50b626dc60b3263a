"""Durations as people write them: parsed to whole seconds, refused in one sentence, read back."""

from __future__ import annotations

import pytest

from rtrain.protocol.durations import DurationError, human_duration, parse_duration


@pytest.mark.parametrize(
    "text,seconds",
    [("90s", 90), ("30m", 1800), ("6h", 21600), ("2d", 172800), ("1h30m", 5400), (" 1H 5m ", 3900)],
)
def test_a_duration_is_its_seconds(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "30", "m", "1.5h", "-5m", "5 minutes", "0s", "400d", "3w"])
def test_what_is_no_duration_is_refused_in_one_sentence(text: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(text, what="an idle period")
    message = str(caught.value)
    assert "an idle period" in message
    assert message.endswith(".") and message.count(". ") == 0 and "\n" not in message


@pytest.mark.parametrize(
    "seconds,text",
    [
        (0, "0s"),
        (0.4, "0s"),
        (45, "45s"),
        (60, "1m"),
        (754, "12m 34s"),
        (3600, "1h"),
        (3900, "1h 5m"),
        (183600, "2d 3h"),
    ],
)
def test_a_duration_reads_back_in_its_two_largest_units(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text
