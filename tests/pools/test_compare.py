"""`rtrain compare`: a sweep's runs side by side, best first by a metric, as a table with
sparklines, as JSON, and their loss curves as a PNG."""

from __future__ import annotations

import struct

from tests.pools.conftest import Lab

# Prints a loss curve the log parser reads (`step N | loss X`), ending at 1 + 1/lr: the
# larger lr, the lower its loss.
CURVE = (
    "for step in range(1, 6):\n"
    "    print('step %d | loss %.5f' % (step, (6 - step) + 1 / {lr}), flush=True)\n"
)


def test_compare_a_sweep_sorted_by_its_loss_with_a_png(lab: Lab) -> None:
    lab.configure({"lab": ["box1", "box2", "box3"]})
    name = f"cmp{lab.tag}"
    started = lab(
        "sweep", "@lab", "--name", name, "--grid", "lr=1,2,4", "--gpus", "0",
        "--", "{python}", "-c", CURVE,
    )  # fmt: skip
    assert started.code == 0, started
    assert lab("sweep", "wait", name).code == 0

    shown = lab("compare", "--sweep", name, "--sort", "loss", "--json")
    assert shown.code == 0, shown
    rows = shown.json()
    assert [row["params"]["lr"] for row in rows] == ["4", "2", "1"]  # lowest loss first
    best = rows[0]["metrics"]["loss"]
    assert best == {"last": 1.25, "best": 1.25}, rows[0]
    assert rows[-1]["metrics"]["loss"]["best"] == 2.0
    assert all(row["state"] == "completed" and row["duration"] is not None for row in rows)

    table = lab("compare", "--sweep", name, "--png", "curves.png")
    assert table.code == 0, table
    header, *lines = table.out_lines
    assert header.split()[:4] == ["RUN", "HOST", "lr", "STATE"], table
    assert lines[0].startswith(f"{name}-3 ") and "1.25/1.25" in lines[0], table
    assert any(ch in lines[0] for ch in "▁▂▃▄▅▆▇█"), table  # the loss, as a sparkline
    assert "sorted by loss, lowest first" in table.err, table
    png = (lab.cwd / "curves.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png[12:16] == b"IHDR"
    assert struct.unpack(">II", png[16:24]) == (960, 540)

    one = lab("compare", f"{name}-1", f"{name}-2", "--json")
    assert [row["runId"] for row in one.json()] == [f"{name}-2", f"{name}-1"], one
    missing = lab("compare", "nosuchrun")
    assert missing.code == 1 and "no run 'nosuchrun'" in missing.err, missing
