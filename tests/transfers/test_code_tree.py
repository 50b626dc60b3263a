"""The walk of a code directory on this machine's real filesystem: what ships, what its
ignore rules leave home and which rule did, `include` inside an ignored directory, links
(inside, outside, dangling, looping, followed) and the names that look like secrets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rtrain.daemon.operations import code_tree
from rtrain.daemon.operations.code_tree import CodeTree, looks_secret, walk_code
from rtrain.protocol.errors import RpcError


def walk(root: Path, *include: str, follow_links: bool = False) -> CodeTree:
    return walk_code(
        root, include=list(include), follow_links=follow_links, keep_top=lambda *_: True
    )


def shipped(tree: CodeTree) -> list[str]:
    return sorted(f.rel for f in tree.files)


def make(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def test_include_ships_a_file_inside_an_ignored_directory_and_the_rest_is_counted(
    tmp_path: Path,
) -> None:
    root = make(
        tmp_path,
        {
            ".gitignore": b"# prepared data\ndata/\n*.log\n",
            "train.py": b"x",
            "data/a/train.bin": b"t" * 10,
            "data/a/val.bin": b"v" * 7,
            "data/b/raw.txt": b"r" * 5,
            "run.log": b"l" * 3,
            ".git/HEAD": b"ref",
        },
    )
    tree = walk(root)
    assert shipped(tree) == [".gitignore", "train.py"]
    assert tree.rules == ".gitignore"
    left = {h.path: (h.rule, h.files, h.size) for h in tree.left_home}
    assert left == {"data/": ("data/", 3, 22), "run.log": ("*.log", 1, 3)}

    tree = walk(root, "data/a/train.bin")
    assert shipped(tree) == [".gitignore", "data/a/train.bin", "train.py"]
    assert tree.dirs == ["data", "data/a"]
    left = {h.path: (h.rule, h.files, h.size) for h in tree.left_home}
    assert left == {"data/": ("data/", 2, 12), "run.log": ("*.log", 1, 3)}

    # A pattern of a directory ships all of it, its files' own rules notwithstanding.
    tree = walk(root, "data/a/")
    assert shipped(tree) == [".gitignore", "data/a/train.bin", "data/a/val.bin", "train.py"]


def test_a_negated_rule_ships_and_an_rtrainignore_names_its_own_rules(tmp_path: Path) -> None:
    root = make(
        tmp_path,
        {".rtrainignore": b"*.bin\n!keep.bin\n", "keep.bin": b"k", "drop.bin": b"d"},
    )
    tree = walk(root)
    assert shipped(tree) == [".rtrainignore", "keep.bin"]
    assert tree.rules == ".rtrainignore"
    assert [(h.path, h.rule) for h in tree.left_home] == [("drop.bin", "*.bin")]


def test_a_huge_ignored_directory_is_counted_in_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(code_tree, "COUNT_AT_MOST", 5)
    root = make(
        tmp_path, {".gitignore": b"images/\n", **{f"images/{n}.jpg": b"j" for n in range(9)}}
    )
    tree = walk(root)
    (home,) = tree.left_home
    assert (home.path, home.files, home.more) == ("images/", 5, True)
    # An anchored include elsewhere does not make the walk go through it all...
    (root / "prepared.bin").write_bytes(b"p")
    (home,) = walk(root, "/prepared.bin").left_home
    assert (home.files, home.more) == (5, True)
    # ...one that may match inside it does.
    tree = walk(root, "images/3.jpg")
    assert "images/3.jpg" in shipped(tree)
    (home,) = tree.left_home
    assert (home.files, home.more) == (8, False)


def test_links_inside_outside_dangling_and_looping(tmp_path: Path) -> None:
    outside = make(tmp_path / "elsewhere", {"secret.txt": b"s", "sub/deep.txt": b"d"})
    root = make(tmp_path / "code", {"data/rows.txt": b"1\n", "train.py": b"x"})
    os.symlink(outside / "secret.txt", root / "creds")
    os.symlink(outside, root / "shared")
    os.symlink("data/rows.txt", root / "rows.txt")
    os.symlink("data", root / "latest")
    os.symlink("data", root / "a_first")  # walked before its target, by name
    os.symlink("nowhere", root / "dangling")
    os.symlink("..", root / "data" / "up")  # a loop back to the top

    tree = walk(root)
    assert shipped(tree) == ["data/rows.txt", "rows.txt", "train.py"]
    links = {k.path: (k.target, k.outside) for k in tree.links}
    assert links == {
        "creds": (str(outside / "secret.txt"), True),
        "shared": (str(outside), True),
        "latest": ("data", False),
        "a_first": ("data", False),
        "dangling": ("nowhere", True),
        "data/up": ("..", False),
    }

    followed = walk(root, follow_links=True)
    assert shipped(followed) == [
        "creds", "data/rows.txt", "rows.txt", "shared/secret.txt", "shared/sub/deep.txt",
        "train.py",
    ]  # fmt: skip
    # What cannot be followed (nothing there) or need not be (a directory inside, which
    # ships on its own) stays a link.
    assert {k.path for k in followed.links} == {"a_first", "dangling", "data/up", "latest"}
    # Two links to one directory outside: it ships once, the second stays a link.
    os.symlink(outside, root / "shared_again")
    again = walk(root, follow_links=True)
    assert "shared_again" in {k.path for k in again.links}


def test_secrets_are_named_unless_a_rule_names_them(tmp_path: Path) -> None:
    names = [
        ".env", ".env.local", ".env.example", "server.pem", "tls.key", "id_rsa",
        "id_rsa.pub", "id_map.py", "credentials", "credentials.json", ".netrc", "ok.py",
    ]  # fmt: skip
    assert [n for n in names if looks_secret(n)] == [
        ".env", ".env.local", "server.pem", "tls.key", "id_rsa", "credentials",
        "credentials.json", ".netrc",
    ]  # fmt: skip
    root = make(tmp_path, {"conf/.env": b"A=1", "keys/server.pem": b"k", ".gitignore": b"x\n"})
    assert walk(root).secrets == ["conf/.env", "keys/server.pem"]
    assert walk(root, "keys/").secrets == ["conf/.env"]
    (root / ".gitignore").write_text("!conf/.env\n")
    assert walk(root).secrets == ["keys/server.pem"]


def test_a_name_with_a_newline_is_refused_in_one_sentence(tmp_path: Path) -> None:
    make(tmp_path, {"bad\nname.py": b"x"})
    with pytest.raises(RpcError, match="its name holds a control character"):
        walk(tmp_path)


def test_an_include_pattern_that_matches_nothing_is_refused(tmp_path: Path) -> None:
    make(tmp_path, {".gitignore": b"*.bin\n", "data/shakespeare_char/train.bin": b"t"})
    assert shipped(walk(tmp_path, "data/*/train.bin", ".gitignore")) == [
        ".gitignore", "data/shakespeare_char/train.bin",
    ]  # fmt: skip
    with pytest.raises(RpcError, match=r"--include 'data/train.bin' matches nothing"):
        walk(tmp_path, "*.bin", "data/train.bin")


def test_a_deeper_gitignore_rules_its_directory_and_an_rtrainignore_rules_alone(
    tmp_path: Path,
) -> None:
    root = make(
        tmp_path,
        {
            ".gitignore": b"*.log\n",
            "train.py": b"x",
            "data/.gitignore": b"*\n!.gitignore\n!keep.txt\n",
            "data/keep.txt": b"k",
            "data/big.bin": b"b" * 9,
            "data/debug.log": b"d",
            "logs/run.log": b"l",
        },
    )
    tree = walk(root)
    assert shipped(tree) == [".gitignore", "data/.gitignore", "data/keep.txt", "train.py"]
    left = {h.path: h.rule for h in tree.left_home}
    assert left == {
        "data/big.bin": "data/.gitignore: *",
        "data/debug.log": "data/.gitignore: *",
        "logs/run.log": "*.log",
    }
    (root / ".rtrainignore").write_text("logs/\n")
    assert shipped(walk(root)) == [
        ".gitignore", ".rtrainignore", "data/.gitignore", "data/big.bin", "data/debug.log",
        "data/keep.txt", "train.py",
    ]  # fmt: skip
