"""Static API tokens: the right one names its principal, any other is refused the same way."""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets

import anyio
import pytest

from gateway import TokenRefused
from gateway.auth import Identity
from gateway.auth import _static as static_module
from gateway.auth._static import StaticTokenVerifier, still_configured
from gateway.auth.config import AuthConfig

pytestmark = pytest.mark.anyio

ALICE = secrets.token_urlsafe(32)
BOT = secrets.token_urlsafe(32)
CAROL = secrets.token_urlsafe(32)
TOKENS = {"alice": ALICE, "ci-bot": BOT, "carol": CAROL}


async def test_the_right_token_names_its_principal_with_the_scopes_given() -> None:
    verifier = StaticTokenVerifier(TOKENS, scopes=["mcp:tools"])
    with anyio.fail_after(5):
        accepted = await verifier.authenticate(BOT)
    assert (accepted.identity.principal, accepted.identity.scopes) == ("ci-bot", ("mcp:tools",))
    assert (accepted.client_id, accepted.subject, accepted.scopes) == ("ci-bot", "ci-bot", ["mcp:tools"])
    assert accepted.expires_at is None
    assert accepted.token == "sha256:" + hashlib.sha256(BOT.encode()).hexdigest()
    assert BOT not in repr(accepted)
    assert BOT not in repr(verifier)


@pytest.mark.parametrize(
    "presented",
    [
        secrets.token_urlsafe(32),
        ALICE[:-1],  # a prefix
        ALICE + "x",  # an extension
        ALICE[:-1] + ("A" if ALICE[-1] != "A" else "B"),  # the same but for the last character
        ALICE.upper(),
        f" {ALICE}",
    ],
    ids=["unknown", "prefix", "extension", "last-character", "upper-case", "leading-space"],
)
async def test_a_wrong_or_similar_token_is_refused_as_unknown(presented: str) -> None:
    with anyio.fail_after(5), pytest.raises(TokenRefused) as refused:
        await StaticTokenVerifier(TOKENS).authenticate(presented)
    assert (refused.value.reason, refused.value.detail) == ("unknown token", "")
    assert presented not in str(refused.value)


async def test_an_empty_token_is_refused_as_missing() -> None:
    with anyio.fail_after(5), pytest.raises(TokenRefused) as refused:
        await StaticTokenVerifier(TOKENS).authenticate("")
    assert refused.value.reason == "no token"


@pytest.mark.parametrize(
    "presented",
    [ALICE, CAROL, secrets.token_urlsafe(32), ALICE[:-1]],
    ids=["first-entry", "second-entry", "unknown", "prefix"],
)
def test_every_configured_digest_is_compared_whichever_token_comes(
    presented: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The mechanism that keeps timing from telling which entry matched: each presented token's
    # SHA-256 is compared, in constant time, with every configured digest, a match or not.
    compared: list[tuple[bytes, bytes]] = []

    def recording(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return hmac.compare_digest(a, b)

    verifier = StaticTokenVerifier(TOKENS)
    monkeypatch.setattr(static_module, "compare_digest", recording)
    verifier.principal(presented)
    digest = hashlib.sha256(presented.encode()).digest()
    configured = [hashlib.sha256(token.encode()).digest() for token in TOKENS.values()]
    assert compared == [(digest, each) for each in configured]


def test_the_verifier_keeps_digests_of_the_tokens_not_the_tokens() -> None:
    kept = repr(vars(StaticTokenVerifier(TOKENS)))
    for token in TOKENS.values():
        assert token not in kept
        assert repr(hashlib.sha256(token.encode()).digest()) in kept


async def test_verify_token_answers_none_and_logs_why_without_the_token(
    auth_log: list[logging.LogRecord],
) -> None:
    wrong = secrets.token_urlsafe(32)
    with anyio.fail_after(5):
        assert await StaticTokenVerifier(TOKENS).verify_token(wrong) is None
        assert await StaticTokenVerifier(TOKENS).verify_token(ALICE) is not None
    [record] = auth_log
    assert (record.getMessage(), record.__dict__["reason"], record.__dict__["verifier"]) == (
        "bearer token refused",
        "unknown token",
        "static",
    )
    assert wrong not in str(record.__dict__)


def test_work_a_token_started_is_vouched_for_only_while_that_token_is_configured_for_its_principal() -> None:
    alice, bob = "a" * 40, "b" * 40
    identity = StaticTokenVerifier({"alice": alice}).accept(alice)
    assert identity is not None
    both = AuthConfig.model_validate({"tokens": {"alice": alice, "bob": bob}})
    assert still_configured(identity.identity, both)
    assert not still_configured(identity.identity, AuthConfig.model_validate({"tokens": {"bob": bob}}))
    rotated = AuthConfig.model_validate({"tokens": {"alice": "c" * 40}})
    assert not still_configured(identity.identity, rotated)  # a leaked token replaced stops its work too
    assert not still_configured(identity.identity, None)
    assert still_configured(
        Identity("alice", issuer="https://id.example.com"), None
    )  # a JWT: no static token
