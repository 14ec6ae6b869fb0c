"""The `auth` section: static tokens from the environment, kept secret; OAuth settings that can be trusted."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from gateway import ConfigError, Redactor
from gateway.auth.config import DEFAULT_ALGORITHMS
from gateway.config import config_secrets, parse_config

ALICE = secrets.token_urlsafe(32)
BOT = secrets.token_urlsafe(32)
ENVIRON = {"ALICE_TOKEN": ALICE, "CI_TOKEN": BOT}
OAUTH = {
    "issuer": "https://idp.example.com",
    "audience": "https://gw.example.com/mcp",
    "jwks_uri": "https://idp.example.com/.well-known/jwks.json",
}


def _refusal(auth: Any, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as refused:
        parse_config({"auth": auth}, "team.json", ENVIRON if environ is None else environ)
    message = str(refused.value)
    assert ALICE not in message
    assert BOT not in message
    return message


def test_the_issue_example_loads_with_tokens_read_from_the_environment_and_kept_secret() -> None:
    auth = {"tokens": {"alice": "${ALICE_TOKEN}", "ci-bot": "${CI_TOKEN}"}, "oauth": OAUTH}
    config = parse_config({"auth": auth}, "team.json", ENVIRON)
    assert config.auth is not None
    assert {name: token.get_secret_value() for name, token in config.auth.tokens.items()} == {
        "alice": ALICE,
        "ci-bot": BOT,
    }
    assert ALICE not in repr(config)
    assert ALICE not in config.model_dump_json()
    redactor = Redactor(config_secrets(config))
    assert redactor.redact(f"a={ALICE} b={BOT}") == "a=[REDACTED:ALICE_TOKEN] b=[REDACTED:CI_TOKEN]"
    assert config.auth.oauth is not None
    assert (config.auth.oauth.algorithms, config.auth.oauth.leeway_seconds) == (list(DEFAULT_ALGORITHMS), 30)
    assert "none" not in DEFAULT_ALGORITHMS
    assert not any(a.startswith("HS") for a in DEFAULT_ALGORITHMS)


@pytest.mark.parametrize(
    "written",
    [ALICE, "${ALICE_TOKEN:-" + ALICE + "}", "Bearer ${ALICE_TOKEN}"],
    ids=["literal", "default-of-a-variable", "prefixed-variable"],
)
def test_a_token_written_into_the_config_is_refused(written: str) -> None:
    message = _refusal({"tokens": {"alice": written}})
    expected = 'auth.tokens.alice: write "${NAME}", naming an environment variable that holds the token'
    assert expected in message


def test_a_token_whose_variable_is_not_set_refuses_the_config() -> None:
    message = _refusal({"tokens": {"alice": "${ALICE_TOKEN}", "ci-bot": "${CI_TOKEN}"}}, {"CI_TOKEN": BOT})
    assert "auth.tokens.alice: ${ALICE_TOKEN} is not set" in message
    assert "1 invalid setting(s)" in message


def test_a_short_token_is_refused_saying_why_and_how_to_make_one() -> None:
    message = _refusal({"tokens": {"alice": "${ALICE_TOKEN}"}}, {"ALICE_TOKEN": "hunter2hunter2"})
    assert "auth.tokens.alice: the token is 14 characters; it must be at least 32, or it can be guessed" in (
        message
    )
    assert "secrets.token_urlsafe(32)" in message
    assert "hunter2" not in message


def test_two_principals_with_one_token_are_refused() -> None:
    message = _refusal({"tokens": {"alice": "${ALICE_TOKEN}", "bob": "${ALICE_TOKEN}"}})
    assert "auth.tokens: alice and bob have the same token: give each principal its own" in message


def test_a_principal_name_with_spaces_or_controls_is_refused() -> None:
    message = _refusal({"tokens": {"alice smith": "${ALICE_TOKEN}"}})
    assert "auth.tokens: 'alice smith' is not a principal name" in message


def test_an_auth_section_with_neither_tokens_nor_oauth_is_refused() -> None:
    assert 'auth: "tokens", "oauth" or both: with neither, no client could call the gateway' in _refusal({})


@pytest.mark.parametrize("key", ["issuer", "audience", "jwks_uri"])
def test_an_oauth_url_over_plain_http_is_refused_unless_on_loopback(key: str) -> None:
    message = _refusal({"oauth": {**OAUTH, key: "http://idp.example.com/x"}})
    assert f"auth.oauth.{key}: use https:// (http:// only for a loopback address" in message
    loopback = {**OAUTH, key: "http://127.0.0.1:9000/x"}
    assert parse_config({"auth": {"oauth": loopback}}, "team.json", {}).auth is not None


def test_an_oauth_url_that_is_not_a_url_is_refused() -> None:
    assert "auth.oauth.jwks_uri: 'jwks.json' is not an absolute http(s) URL" in _refusal(
        {"oauth": {**OAUTH, "jwks_uri": "jwks.json"}}
    )


@pytest.mark.parametrize("algorithm", ["none", "HS256", "hs512"])
def test_none_and_shared_secret_algorithms_are_refused(algorithm: str) -> None:
    message = _refusal({"oauth": {**OAUTH, "algorithms": ["RS256", algorithm]}})
    assert f'auth.oauth.algorithms: "{algorithm}" is not allowed' in message
    assert "anyone could forge one" in message


def test_other_oauth_mistakes_name_their_key() -> None:
    message = _refusal(
        {
            "oauth": {
                "issuer": OAUTH["issuer"],
                "jwks_url": OAUTH["jwks_uri"],
                "algorithms": ["RS1"],
                "leeway_seconds": 3600,
                "jwks_cache_seconds": 0,
                "required_scopes": ["a b"],
            }
        }
    )
    for line in (
        'auth.oauth.jwks_url: unknown key "jwks_url"; did you mean "jwks_uri"?',
        'auth.oauth: "audience" is required',
        "auth.oauth.algorithms[0]: Input should be 'RS256'",
        "auth.oauth.leeway_seconds: Input should be less than or equal to 300",
        "auth.oauth.jwks_cache_seconds: Input should be greater than or equal to 30",
        "auth.oauth.required_scopes: 'a b' is not a scope",
    ):
        assert line in message
