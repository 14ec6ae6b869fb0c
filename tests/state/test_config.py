"""The `state` section: a Redis URL whose password only comes from a variable."""

from __future__ import annotations

import pytest

from gateway import ConfigError
from gateway.config import parse_config
from gateway.state.config import without_credentials


def test_a_password_written_into_the_url_refuses_the_config_naming_the_rule() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config({"state": {"url": "redis://:hunter2@cache:6379/0"}}, "team.json", {})
    message = str(refused.value)
    assert 'state.url: write the password as "${NAME}"' in message
    assert "hunter2" not in message


def test_a_password_from_a_variable_is_expanded_and_kept_secret() -> None:
    config = parse_config(
        {"state": {"url": "rediss://:${REDIS_PASSWORD}@cache:6380/2"}},
        "team.json",
        {"REDIS_PASSWORD": "s3cret-pw"},
    )
    assert config.state is not None
    assert config.state.url == "rediss://:s3cret-pw@cache:6380/2"
    assert "s3cret-pw" in config.secret_values
    assert "s3cret-pw" not in repr(config.state)


def test_a_password_variable_that_is_not_set_refuses_the_config() -> None:
    with pytest.raises(ConfigError, match=r"state\.url.*REDIS_PASSWORD"):
        parse_config({"state": {"url": "redis://:${REDIS_PASSWORD}@cache:6379/0"}}, "team.json", {})


@pytest.mark.parametrize("url", ["http://cache:6379", "cache:6379", "redis://"])
def test_a_url_that_is_not_a_redis_one_is_refused(url: str) -> None:
    with pytest.raises(ConfigError, match=r"state\.url: .*redis://host:6379/0"):
        parse_config({"state": {"url": url}}, "team.json", {})


def test_without_a_state_section_nothing_is_shared() -> None:
    assert parse_config({}, "team.json", {}).state is None


def test_a_url_shown_in_a_message_has_no_credentials() -> None:
    assert without_credentials("rediss://user:pw@cache.internal:6380/1") == "rediss://cache.internal:6380/1"
    assert without_credentials("redis://[::1]:6379/0") == "redis://[::1]:6379/0"
