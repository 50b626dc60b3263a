"""Real trainers (transformers' Trainer, lightning.Trainer) run through the `rtrain` command
on the suite's sshd, in the world of tests/cli (`cli`: an isolated daemon, a private far
workdir), with a far python that has torch, transformers and Lightning."""

from __future__ import annotations

import pytest

from tests.cli.conftest import cli as cli  # the same fixture, for this folder too
from tests.torch_python import far_trainers_python


@pytest.fixture
def trainers_python() -> str:
    return far_trainers_python()
