"""The failure a rank ends with, where torchrun looks for it (TORCHELASTIC_ERROR_FILE).

torch's own `@record` writes this file for a script that imports torch; the demo trainer
writes the same JSON itself so it needs no torch import to report, and so its one-sentence
errors (which it catches to exit 2) still reach torchrun's summary and rtrain's status.
"""

from __future__ import annotations

import json
import os
import time


def record_failure(message: str, callstack: str = "") -> None:
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path:
        return
    payload = {
        "message": {
            "message": message,
            "extraInfo": {"py_callstack": callstack, "timestamp": str(int(time.time()))},
        }
    }
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(payload, handle)
    except OSError:
        pass  # reporting must never hide the failure itself
