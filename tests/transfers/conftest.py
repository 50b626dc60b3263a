"""Transfers end to end: the operations' `ops` and the fault campaign's `campaign` worlds."""

from tests.faults.conftest import campaign
from tests.operations.conftest import ops

__all__ = ["campaign", "ops"]
