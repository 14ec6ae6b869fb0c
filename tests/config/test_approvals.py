"""The `approvals` section: its key comes from the environment, is long enough, and is kept secret."""

from __future__ import annotations

import secrets

import pytest

from gateway import ConfigError, Redactor
from gateway.config import config_secrets, parse_config

KEY = secrets.token_hex(32)


def test_the_key_is_read_from_the_variable_it_names_and_redacted_like_any_secret() -> None:
    config = parse_config({"approvals": {"key": "${APPROVALS_KEY}"}}, "team.json", {"APPROVALS_KEY": KEY})
    assert config.approvals.key is not None
    assert config.approvals.key.get_secret_value() == KEY
    assert KEY not in repr(config)
    assert Redactor(config_secrets(config)).redact(f"key={KEY}") == "key=[REDACTED:APPROVALS_KEY]"


@pytest.mark.parametrize(
    "written",
    [KEY, "${APPROVALS_KEY:-" + KEY + "}", "prefix-${APPROVALS_KEY}"],
    ids=["literal", "default-of-a-variable", "prefixed-variable"],
)
def test_a_key_written_into_the_config_is_refused(written: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config({"approvals": {"key": written}}, "team.json", {"APPROVALS_KEY": KEY})
    message = str(refused.value)
    assert 'approvals.key: write "${NAME}", naming an environment variable that holds the key' in message
    assert KEY not in message


def test_a_short_key_is_refused_saying_how_to_make_one() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config({"approvals": {"key": "${APPROVALS_KEY}"}}, "team.json", {"APPROVALS_KEY": "hunter2"})
    message = str(refused.value)
    assert "approvals.key: the key is 7 bytes; it must be at least 32 bytes" in message
    assert "secrets.token_hex(32)" in message
    assert "hunter2" not in message


def test_an_unset_key_variable_falls_back_to_a_key_per_process_with_a_note() -> None:
    config = parse_config({"approvals": {"key": "${APPROVALS_KEY}"}}, "team.json", {})
    assert config.approvals.key is None
    [note] = config.notes
    assert note.startswith("approvals.key: ${APPROVALS_KEY} is not set")
    assert "resumes only in the process that paused it" in note


def test_the_other_approvals_keys_have_bounds() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(
            {"approvals": {"max_rounds": 0, "max_state_bytes": 10, "ttl_seconds": -1}}, "team.json", {}
        )
    message = str(refused.value)
    for key in ("approvals.max_rounds", "approvals.max_state_bytes", "approvals.ttl_seconds"):
        assert key in message
