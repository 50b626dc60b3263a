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
        ("pol_interval = 5\n", ", line 1: pol_interval: unknown key (known here: ssh_config,"),
        (
            '[hosts.gpubox]\ntransprt = "exec"\n',
            ", line 2: hosts.gpubox.transprt: unknown key (known here: transport, command,",
        ),
        ('[hosts.gpubox]\ntransport = "ssh"\n', ", line 2: hosts.gpubox.transport: Invalid enum"),
        ("[hosts.gpubox]\ncommand = 'python t.py'\n", ", line 2: hosts.gpubox.command: Expected"),
        ('[hosts.g]\ncommand = ["a", 1]\n', ", line 2: hosts.g.command: Expected `str`, got `int`"),
        ("poll_interval = 0\n", ", line 1: poll_interval: Expected `float` > 0.0"),
        ('poll_interval = "5"\n', ", line 1: poll_interval: Expected `float`, got `str`"),
        ("hosts = 3\n", ": hosts must hold [hosts.ALIAS] tables"),
        ("poll_interval = \n", " is not valid TOML: Invalid value"),
    ],
)
def test_a_mistake_is_one_sentence_naming_the_key(tmp_path: Path, text: str, said: str) -> None:
    path = config(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_user_config(path)
    assert str(raised.value).startswith(f"{path}{said}")


def test_the_guard_s_keys_are_read_and_a_bad_duration_names_its_line(tmp_path: Path) -> None:
    loaded = load_user_config(
        config(tmp_path, '[hosts.pod]\nidle_stop = "30m"\nterminate = "sudo shutdown -h now"\n')
    )
    assert loaded.host("pod").idle_stop_seconds == 1800
    assert loaded.host("pod").terminate == "sudo shutdown -h now"
    assert loaded.host("pod").stalled_idle is False
    opted = load_user_config(config(tmp_path, "[hosts.pod]\nstalled_idle = true\n"))
    assert opted.host("pod").stalled_idle is True
    assert load_user_config(config(tmp_path, "[hosts.pod]\n")).host("pod").idle_stop_seconds is None
    with pytest.raises(ConfigError) as raised:
        load_user_config(config(tmp_path, '[hosts.pod]\nterminate = "x"\nidle_stop = "30"\n'))
    assert ", line 3: hosts.pod.idle_stop: '30' is not a duration: write a number" in str(
        raised.value
    )
    with pytest.raises(ConfigError) as raised:
        load_user_config(config(tmp_path, '[hosts.pod]\nterminate = " "\n'))
    assert ", line 2: hosts.pod.terminate: Expected `str` matching regex" in str(raised.value)


def test_a_hosts_limits_and_price_are_read_as_seconds(tmp_path: Path) -> None:
    loaded = load_user_config(
        config(
            tmp_path,
            '[hosts.gpubox]\nmax_duration = "6h"\nstall_after = "off"\non_stall = "stop"\n'
            "price_per_hour = 0.22\n",
        )
    )
    host = loaded.host("gpubox")
    assert (host.limit("max_duration"), host.limit("stall_after")) == (21600, 0)
    assert (host.on_stall, host.price_per_hour) == ("stop", 0.22)
    assert loaded.host("other").limit("max_duration") is None


def test_a_bad_duration_names_its_line_and_key(tmp_path: Path) -> None:
    path = config(tmp_path, '[hosts.gpubox]\nworkdir = "~/runs"\nmax_duration = "6"\n')
    with pytest.raises(ConfigError) as caught:
        load_user_config(path)
    assert str(caught.value) == (
        f"{path}, line 3: hosts.gpubox.max_duration: '6' is not a maximum duration: write a "
        "number and a unit, like 90s, 30m, 6h or 1h30m, or off."
    )
