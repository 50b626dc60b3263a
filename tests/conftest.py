from __future__ import annotations

import signal

import pytest

pytest_plugins = ["tests.hosts.fixtures", "tests.daemon_fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    # A shell without job control starts a background job with SIGINT ignored, and every
    # process the suite spawns would inherit that: a test's Ctrl-C would reach no one and the
    # test would hang. Python's own handler, restored here, becomes the default disposition in
    # every child at exec.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
