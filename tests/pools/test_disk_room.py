"""A pool's placement skips a host whose workdir has too little room for what the start
would ship there (what the host's input cache holds is not shipped), with preflight's
margin, and says how much there is."""

from __future__ import annotations

from rtrain.daemon.pools.run_fit import disk_refusal
from rtrain.daemon.remote.contract.fit_scripts import Fit

GIB = 1024**3


def _fit(free_gib: float, cached_bytes: int = 0) -> Fit:
    return Fit(
        unfit=[],
        cached=1 if cached_bytes else 0,
        cached_bytes=cached_bytes,
        free_kib=int(free_gib * GIB) // 1024,
        env_built=None,
        exit=0,
        error_text="",
    )


def test_too_little_room_for_the_inputs_is_a_reason_and_cached_inputs_need_none() -> None:
    said = disk_refusal(_fit(5), 10 * GIB, "~/.rtrain")
    assert said == "only 5.4 GB free in ~/.rtrain, and the run ships 10.7 GB", said
    # The 10 GiB dataset is in the host's cache: nothing to ship but the margin.
    assert disk_refusal(_fit(5, cached_bytes=10 * GIB), 10 * GIB, "~/.rtrain") is None
    # Room for the inputs but not for the margin (a tenth of them) is still too little.
    assert disk_refusal(_fit(10.5), 10 * GIB, "~/.rtrain") is not None
    assert disk_refusal(_fit(12), 10 * GIB, "~/.rtrain") is None
    # A host whose df said nothing is not refused for it.
    unknown = Fit(
        unfit=[], cached=0, cached_bytes=0, free_kib=None, env_built=None, exit=0, error_text=""
    )
    assert disk_refusal(unknown, 10 * GIB, "~/.rtrain") is None
