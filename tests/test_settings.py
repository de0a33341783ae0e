"""The settings table: a TOML file, the environment over it, the caller over both."""

from __future__ import annotations

from pathlib import Path

import pytest

from board.server.settings import config_path, load


def test_the_file_is_read_and_the_environment_wins_over_it(tmp_path: Path) -> None:
    file = tmp_path / "board.toml"
    file.write_text('port = 9123\nbind = "127.0.0.2"\nwrite_rate = 5\ndb = "~/data/b.db"\n')
    env = {"BOARD_CONFIG": str(file), "BOARD_PORT": "9200", "HOME": str(tmp_path)}
    settings = load(env=env)
    assert settings.port == 9200 and settings.bind == "127.0.0.2" and settings.write_rate == 5.0
    assert settings.db == str(Path("~/data/b.db").expanduser())
    assert load({"port": 9300}, env=env).port == 9300


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
