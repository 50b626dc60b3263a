"""The W&B transaction log as the importer reads it (rtrain.daemon.trackers.wandb_import):
whole records only, whatever prefix of a growing file it is given, across 32 KiB blocks."""

from __future__ import annotations

from rtrain.daemon.trackers.wandb_import import BLOCK, HEADER, read_records, write_records

# Sizes around the block's edges: a record that fills a block to within a header's length
# leaves padding, and one larger than a block is cut into first, middle and last chunks.
RECORDS = [bytes([i % 251]) * size for i, size in enumerate(
    [1, 50, BLOCK - 82, 0, 2 * BLOCK + 123, 7, BLOCK, 300]
)]  # fmt: skip


def test_written_records_read_back_whole() -> None:
    data = write_records(RECORDS)
    assert data.startswith(HEADER)
    assert data[BLOCK - 3 : BLOCK] == bytes(3)  # the third record ends 3 bytes short: padding
    assert read_records(data) == RECORDS


def test_every_prefix_of_a_growing_file_reads_as_a_prefix_of_its_records() -> None:
    data = write_records(RECORDS)
    ends = []
    for cut in range(0, len(data) + 1, 97):
        got = read_records(data[:cut])
        assert got == RECORDS[: len(got)], cut
        ends.append(len(got))
    assert ends == sorted(ends)  # never fewer for a longer copy
    assert read_records(data[:-1]) == RECORDS[:-1]  # the last one, half written, waits


def test_a_file_that_is_not_a_wandb_log_has_no_records() -> None:
    assert read_records(b"") == []
    assert read_records(b"not a wandb file at all") == []
