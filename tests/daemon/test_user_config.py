"""The user config: every key type-checked, and a key this version does not know is an
error naming it (and its host), never a setting that silently does nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtrain.daemon.user_config import ConfigError, HostSettings, load_user_config


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_every_documented_key_is_read(tmp_path: Path) -> None:
    loaded = load_user_config(
        config(
            tmp_path,
            'ssh_config = "~/.ssh/config.rtrain"\npoll_interval = 2\n'
            '[hosts.gpubox]\ntransport = "console"\ncommand = ["{python}", "t.py"]\n'
            'python = "python3.11"\nworkdir = "~/runs"\n',
        )
    )
    assert loaded.ssh_config == "~/.ssh/config.rtrain"
    assert loaded.poll_interval == 2.0
    assert loaded.host("gpubox") == HostSettings(
        "console", ["{python}", "t.py"], "python3.11", "~/runs"
    )
    assert loaded.host("other") == HostSettings()


def test_no_file_is_the_defaults(tmp_path: Path) -> None:
    loaded = load_user_config(tmp_path / "absent.toml")
    assert (loaded.poll_interval, loaded.hosts, loaded.ssh_config) == (5.0, {}, None)


@pytest.mark.parametrize(
    "text,said",
    [
        ("pol_interval = 5\n", "unknown field `pol_interval`"),
        (
            '[hosts.gpubox]\ntransprt = "exec"\n',
            "in [hosts.gpubox]: Object contains unknown field `transprt`",
        ),
        (
            '[hosts.gpubox]\ntransport = "ssh"\n',
            "in [hosts.gpubox]: Invalid enum value 'ssh' - at `$.transport`",
        ),
        (
            "[hosts.gpubox]\ncommand = 'python train.py'\n",
            "got `str` - at `$.command`",
        ),
        ("poll_interval = 0\n", "Expected `float` > 0.0 - at `$.poll_interval`"),
        ('poll_interval = "5"\n', "Expected `float`, got `str` - at `$.poll_interval`"),
        ("hosts = 3\n", "`hosts` must hold [hosts.ALIAS] tables"),
        ("poll_interval = \n", "Invalid value"),
    ],
)
def test_a_mistake_is_one_sentence_naming_the_key(tmp_path: Path, text: str, said: str) -> None:
    path = config(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_user_config(path)
    assert str(raised.value).startswith(f"{path}: ")
    assert said in str(raised.value)
