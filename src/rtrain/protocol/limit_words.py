"""A run's limits as people write them: a duration (`6h`, `30m`, `90s`) or `off`, read back
into words for its state (`max duration 6h`), and a cost as a currency-free number.

Standard library only: the CLI checks them before it talks to the daemon.
"""

from __future__ import annotations

from .durations import DurationError, human_duration, parse_duration

OFF_WORDS = ("off", "none", "never")


def parse_limit(text: str, what: str) -> int:
    """Whole seconds of a limit, 0 for `off`; a DurationError says, in one sentence, why
    `text` is neither."""
    if text.strip().lower() in OFF_WORDS:
        return 0
    try:
        return parse_duration(text, what=what)
    except DurationError as error:
        raise DurationError(f"{str(error).removesuffix('.')}, or off.") from None


def limit_reason(stopped_by: str, seconds: int) -> str:
    """The words of a stop one of a run's limits made: `max duration 6h`, `stalled for 30m`."""
    if stopped_by == "max_duration":
        return f"max duration {human_duration(seconds)}"
    return f"stalled for {human_duration(seconds)}"


def cost_text(cost: float) -> str:
    """A cost in the rate's own unit, to the cent, or to four places while under one."""
    if 0 < cost < 0.01:
        return f"{cost:.4f}"
    return f"{cost:.2f}"
