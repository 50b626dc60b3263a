"""How a fetch cuts a file and what it still lacks after a cut (plan.py, no I/O)."""

from __future__ import annotations

from rtrain.daemon.transfer.plan import LARGE_FILE, LARGE_PIECE, MIB, PIECE, fetch_pieces, missing


def test_a_large_file_is_fetched_in_large_pieces_a_small_one_in_small() -> None:
    assert {length for _offset, length in fetch_pieces(LARGE_FILE)} == {LARGE_PIECE}
    assert {length for _offset, length in fetch_pieces(LARGE_FILE - 1)[:-1]} == {PIECE}


def test_what_landed_of_a_piece_is_not_fetched_again_only_its_rest() -> None:
    cut = fetch_pieces(3 * PIECE)
    # The first piece whole, 5 MiB of the second (checked after a cut), nothing of the third.
    verified = {0: PIECE, PIECE: 5 * MIB}
    assert missing(cut, verified) == [(PIECE + 5 * MIB, PIECE - 5 * MIB), (2 * PIECE, PIECE)]


def test_small_pieces_an_older_fetch_verified_join_up_inside_a_large_one() -> None:
    cut = fetch_pieces(LARGE_FILE)
    verified = {offset: PIECE for offset in range(0, 3 * PIECE, PIECE)}
    assert missing(cut, verified)[0] == (3 * PIECE, LARGE_PIECE - 3 * PIECE)


def test_an_empty_file_is_one_empty_piece_until_it_is_verified() -> None:
    assert missing(fetch_pieces(0), {}) == [(0, 0)]
    assert missing(fetch_pieces(0), {0: 0}) == []
