"""The `auth` section's verifier: static tokens first, then JWTs of the issuer when configured."""

from __future__ import annotations

import logging
import secrets

import anyio
import pytest

from gateway import TokenRefused
from gateway.auth import build_verifier, identity_of
from gateway.auth._verifier import GatewayTokenVerifier
from gateway.auth.config import AuthConfig
from tests.auth.issuer import SCOPE, LocalIssuer

pytestmark = pytest.mark.anyio

ALICE = secrets.token_urlsafe(32)


async def _reason(verifier: GatewayTokenVerifier, token: str) -> str:
    with anyio.fail_after(10), pytest.raises(TokenRefused) as refused:
        await verifier.authenticate(token)
    return refused.value.reason


async def test_a_static_token_is_accepted_without_asking_the_issuer(issuer: LocalIssuer) -> None:
    verifier = build_verifier(issuer.auth({"alice": ALICE}, required_scopes=[SCOPE]))
    with anyio.fail_after(10):
        accepted = await verifier.authenticate(ALICE)
    assert identity_of(accepted).principal == "alice"
    assert accepted.scopes == [SCOPE]  # a static token is given the scopes every token needs
    assert issuer.fetches == 0


async def test_a_jwt_is_verified_when_it_is_not_a_static_token(issuer: LocalIssuer) -> None:
    verifier = build_verifier(issuer.auth({"alice": ALICE}))
    with anyio.fail_after(10):
        accepted = await verifier.authenticate(issuer.mint(sub="bob", client_id="claude"))
    identity = identity_of(accepted)
    assert (identity.principal, identity.client, identity.issuer) == ("bob", "claude", issuer.url)


async def test_a_wrong_token_that_is_no_jwt_is_refused_as_unknown_without_a_fetch(
    issuer: LocalIssuer,
) -> None:
    verifier = build_verifier(issuer.auth({"alice": ALICE}))
    assert await _reason(verifier, secrets.token_urlsafe(32)) == "unknown token"
    assert await _reason(verifier, "") == "no token"
    assert issuer.fetches == 0


async def test_with_static_tokens_alone_a_jwt_is_an_unknown_token(issuer: LocalIssuer) -> None:
    verifier = build_verifier(AuthConfig.model_validate({"tokens": {"alice": ALICE}}))
    assert verifier.jwt is None
    assert await _reason(verifier, issuer.mint()) == "unknown token"
    assert issuer.fetches == 0


async def test_with_oauth_alone_a_bad_jwt_says_what_is_wrong_with_it(issuer: LocalIssuer) -> None:
    verifier = build_verifier(issuer.auth())
    assert verifier.static is None
    assert await _reason(verifier, issuer.mint(aud="https://elsewhere.example.com")) == "wrong audience"


async def test_verify_token_answers_none_warns_once_naming_the_reason_and_reports_it_to_be_counted(
    issuer: LocalIssuer, auth_log: list[logging.LogRecord]
) -> None:
    reasons: list[str] = []
    verifier = build_verifier(issuer.auth({"alice": ALICE}), on_refusal=reasons.append)
    forged = issuer.mint(iss="https://attacker.example.com")
    with anyio.fail_after(10):
        assert await verifier.verify_token(forged) is None
        assert await verifier.verify_token(ALICE) is not None
    refusals = [record for record in auth_log if record.getMessage() == "bearer token refused"]
    assert [(r.levelno, r.__dict__["reason"], r.__dict__["verifier"]) for r in refusals] == [
        (logging.WARNING, "wrong issuer", "auth")
    ]
    assert reasons == ["wrong issuer"]
    assert all(forged not in str(record.__dict__) for record in auth_log)
