"""Which pytest-xdist worker this process is, and the far user names that follow from it.

Under `pytest -n N` every worker is a test session of its own: its own sshds (free ports),
its own daemons (per-test temp dirs) and, from here, its own far users, so one worker's
`scancel -u`, fake GPU load or slowed `sh` never reaches another's tests. A serial run keeps
the plain names.
"""

import os

# "gw0", "gw1", ... inside a worker; unset in a serial run. RTRAIN_TEST_TAG (a few letters)
# sets apart the far users of test sessions that run at once from several checkouts of the
# project on one machine; CI leaves it unset.
WORKER = os.environ.get("RTRAIN_TEST_TAG", "") + os.environ.get("PYTEST_XDIST_WORKER", "")


def worker_user(name: str) -> str:
    """The far user `name` of this worker: `rtrain-gpu` serially, `rtrain-gpu-gw1` in gw1."""
    return f"{name}-{WORKER}" if WORKER else name
