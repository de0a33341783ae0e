"""The settings table: a TOML file, the environment over it, the caller over both."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from board.server.settings import (
    Settings,
    announced_url,
    config_path,
    load,
    local_url,
    origins,
    write_file,
)


def test_the_file_is_read_and_the_environment_wins_over_it(tmp_path: Path) -> None:
    file = tmp_path / "board.toml"
    file.write_text('port = 9123\nbind = "127.0.0.2"\nwrite_rate = 5\ndb = "~/data/b.db"\n')
    env = {"BOARD_CONFIG": str(file), "BOARD_PORT": "9200", "HOME": str(tmp_path)}
    settings = load(env=env)
    assert settings.port == 9200 and settings.bind == "127.0.0.2" and settings.write_rate == 5.0
    assert settings.db == str(Path("~/data/b.db").expanduser())
    assert load({"port": 9300}, env=env).port == 9300


def test_origins_say_where_each_setting_that_is_set_came_from(tmp_path: Path) -> None:
    file = tmp_path / "board.toml"
    file.write_text('port = 9123\nbind = "127.0.0.2"\n')
    env = {"BOARD_CONFIG": str(file), "BOARD_PORT": "9200", "BOARD_LOG_LEVEL": "", "HOME": str(tmp_path)}
    assert origins(env=env) == {"port": "BOARD_PORT", "bind": str(file)}  # an empty variable sets nothing
    assert origins({"port": 9300, "db": None}, env=env) == {"port": "flag", "bind": str(file)}
    assert origins(env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "none")}) == {}
    file.write_text("prot = 1\n")
    with pytest.raises(ValueError, match="unknown setting"):
        origins(env=env)


def test_the_default_file_is_in_the_users_config_folder(tmp_path: Path) -> None:
    assert config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "bot-board" / "board.toml"
    (tmp_path / "bot-board").mkdir()
    (tmp_path / "bot-board" / "board.toml").write_text("port = 8181\n")
    assert load(env={"XDG_CONFIG_HOME": str(tmp_path)}).port == 8181
    assert load(env={"XDG_CONFIG_HOME": str(tmp_path / "none")}).port == 8080  # no file: defaults


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("prot = 8080\n", "unknown setting(s) prot"),
        ('port = "eighty"\n', "port (BOARD_PORT) must be a whole number"),
        ("port = \n", "cannot read the settings file"),
    ],
)
def test_a_bad_file_is_refused_naming_what_is_wrong(tmp_path: Path, text: str, says: str) -> None:
    file = tmp_path / "board.toml"
    file.write_text(text)
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
        load(env={"BOARD_CONFIG": str(file)})


def test_a_named_file_that_is_missing_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        load(env={"BOARD_CONFIG": str(tmp_path / "nope.toml")})


def test_write_file_sets_keys_and_keeps_the_other_lines(tmp_path: Path) -> None:
    file = tmp_path / "conf" / "board.toml"
    env = {"BOARD_CONFIG": str(file)}
    assert write_file({"port": "18080", "db": "/data/b.db"}, env) == file  # no file yet: made
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    file.write_text("# mine\nwrite_rate = 5\nport = 9000\n")
    file.chmod(0o644)
    write_file({"port": "18081", "public_url": 'http://b"x'}, env)
    assert file.read_text() == '# mine\nwrite_rate = 5\nport = 18081\npublic_url = "http://b\\"x"\n'
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    settings = load(env=env)
    assert (settings.port, settings.write_rate, settings.public_url) == (18081, 5.0, 'http://b"x')
    assert load(env={**env, "BOARD_PORT": "9999"}).port == 9999  # the environment still wins
    assert [p.name for p in file.parent.iterdir()] == ["board.toml"]  # no temporary file left


@pytest.mark.parametrize(
    ("values", "says"),
    [({"prot": "1"}, "unknown setting"), ({"port": "x"}, "must be a whole number")],
)
def test_write_file_refuses_what_is_not_a_setting_and_changes_nothing(
    tmp_path: Path, values: dict[str, str], says: str
) -> None:
    file = tmp_path / "board.toml"
    file.write_text("port = 9000\n")
    with pytest.raises(ValueError, match=says):
        write_file(values, {"BOARD_CONFIG": str(file)})
    assert file.read_text() == "port = 9000\n"


def test_write_file_refuses_to_replace_a_file_that_does_not_read(tmp_path: Path) -> None:
    file = tmp_path / "board.toml"
    file.write_text("port = \n")
    with pytest.raises(ValueError, match="cannot read the settings file"):
        write_file({"port": "1"}, {"BOARD_CONFIG": str(file)})
    assert file.read_text() == "port = \n"


def test_the_local_url_is_loopback_and_the_announced_one_prefers_the_public_url() -> None:
    assert local_url(Settings(port=18080)) == "http://127.0.0.1:18080"
    assert local_url(Settings(bind="0.0.0.0", port=1)) == "http://127.0.0.1:1"
    assert local_url(Settings(bind="::", port=1)) == "http://[::1]:1"
    assert announced_url(Settings(port=2)) == "http://127.0.0.1:2"
    assert announced_url(Settings(public_url="https://board.example/")) == "https://board.example"
