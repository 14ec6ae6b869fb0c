"""Bearer JWTs from a real local issuer: what is accepted, and each way a token is refused, and why."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from gateway import TokenRefused
from gateway.auth._jwt import JwtVerifier
from tests.auth.issuer import AUDIENCE, SCOPE, LocalIssuer

pytestmark = pytest.mark.anyio


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


async def _refusal(verifier: JwtVerifier, token: str) -> TokenRefused:
    with anyio.fail_after(10), pytest.raises(TokenRefused) as refused:
        await verifier.authenticate(token)
    assert token not in str(refused.value)
    return refused.value


class Clock:
    """The key set's monotonic clock, moved only by the test: a fetch interval passes when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The JWKS cache reads this clock (the event loop keeps the real one)."""
    fake = Clock()
    monkeypatch.setattr("gateway.auth._jwks.time", fake)
    return fake


@pytest.fixture
def never_answering() -> Iterator[str]:
    """A URL whose server accepts the connection and never says a word."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/jwks.json"


async def test_a_valid_rs256_token_names_its_subject_and_scopes(issuer: LocalIssuer) -> None:
    verifier = JwtVerifier(issuer.oauth())
    token = issuer.mint("rsa-1", scope=f"{SCOPE} audit:read")
    with anyio.fail_after(10):
        accepted = await verifier.authenticate(token)
    assert accepted.identity.principal == "alice"
    assert accepted.identity.scopes == (SCOPE, "audit:read")
    assert accepted.identity.issuer == issuer.url
    assert accepted.subject == "alice"
    assert accepted.scopes == [SCOPE, "audit:read"]
    assert accepted.resource == AUDIENCE
    assert accepted.expires_at is not None
    assert accepted.expires_at > time.time()
    assert accepted.token == "sha256:" + hashlib.sha256(token.encode()).hexdigest()
    assert token not in repr(accepted)


async def test_a_valid_es256_token_is_accepted_too(issuer: LocalIssuer) -> None:
    verifier = JwtVerifier(issuer.oauth())
    with anyio.fail_after(10):
        accepted = await verifier.authenticate(issuer.mint("ec-1", sub="ci-bot"))
    assert accepted.identity.principal == "ci-bot"
    assert issuer.fetches == 1


async def test_the_client_groups_and_list_or_string_scopes_are_read(issuer: LocalIssuer) -> None:
    verifier = JwtVerifier(issuer.oauth())
    with anyio.fail_after(10):
        listed = await verifier.authenticate(
            issuer.mint(scope=None, scp=["a", "b"], client_id="cli", groups=["eng", "ops"])
        )
        azure = await verifier.authenticate(issuer.mint(scope=None, scp="a b", azp="web"))
    assert (listed.identity.scopes, listed.identity.groups, listed.identity.client) == (
        ("a", "b"),
        ("eng", "ops"),
        "cli",
    )
    assert listed.client_id == "cli"
    assert (azure.identity.scopes, azure.identity.client) == (("a", "b"), "web")


async def test_a_token_for_several_audiences_including_this_gateway_is_accepted(issuer: LocalIssuer) -> None:
    verifier = JwtVerifier(issuer.oauth())
    with anyio.fail_after(10):
        accepted = await verifier.authenticate(issuer.mint(aud=["https://other.example.com", AUDIENCE]))
    assert accepted.identity.principal == "alice"


@pytest.mark.parametrize(
    ("claims", "reason", "detail"),
    [
        ({"exp": -120}, "expired", ""),
        ({"nbf": 600}, "not yet valid", ""),
        ({"iat": 600}, "not yet valid", ""),
        ({"aud": "https://other.example.com/mcp"}, "wrong audience", ""),
        ({"aud": AUDIENCE + "/more"}, "wrong audience", ""),
        ({"exp": None}, "missing claim", "exp"),
        ({"sub": None}, "missing claim", "sub"),
        ({"aud": None}, "missing claim", "aud"),
    ],
)
async def test_a_token_with_bad_times_audience_or_claims_is_refused_saying_why(
    issuer: LocalIssuer, claims: dict[str, int | str | None], reason: str, detail: str
) -> None:
    now = int(time.time())
    timed: dict[str, Any] = {
        name: now + value if isinstance(value, int) else value for name, value in claims.items()
    }
    refusal = await _refusal(JwtVerifier(issuer.oauth()), issuer.mint(**timed))
    assert (refusal.reason, refusal.detail) == (reason, detail)


async def test_a_token_past_its_expiry_by_less_than_the_leeway_is_accepted(issuer: LocalIssuer) -> None:
    verifier = JwtVerifier(issuer.oauth(leeway_seconds=60))
    with anyio.fail_after(10):
        accepted = await verifier.authenticate(issuer.mint(exp=int(time.time()) - 20))
    assert accepted.identity.principal == "alice"
    strict = JwtVerifier(issuer.oauth(leeway_seconds=0))
    refusal = await _refusal(strict, issuer.mint(exp=int(time.time()) - 20))
    assert refusal.reason == "expired"


@pytest.mark.parametrize("other", ["http://127.0.0.1:1", "{url}.evil.example", "{url}/"])
async def test_a_token_from_another_issuer_is_refused(issuer: LocalIssuer, other: str) -> None:
    refusal = await _refusal(JwtVerifier(issuer.oauth()), issuer.mint(iss=other.format(url=issuer.url)))
    assert refusal.reason == "wrong issuer"


async def test_a_tampered_payload_is_refused_as_a_bad_signature(issuer: LocalIssuer) -> None:
    header, payload, signature = issuer.mint(sub="alice").split(".")
    claims = json.loads(_unb64(payload)) | {"sub": "admin", "scope": "everything"}
    forged = f"{header}.{_b64(json.dumps(claims).encode())}.{signature}"
    refusal = await _refusal(JwtVerifier(issuer.oauth()), forged)
    assert refusal.reason == "bad signature"


@pytest.mark.parametrize("kid", ["rsa-1", "ec-1"])
async def test_a_tampered_signature_is_refused(issuer: LocalIssuer, kid: str) -> None:
    header, payload, signature = issuer.mint(kid).split(".")
    raw = bytearray(_unb64(signature))
    raw[len(raw) // 2] ^= 0x01
    refusal = await _refusal(JwtVerifier(issuer.oauth()), f"{header}.{payload}.{_b64(bytes(raw))}")
    assert refusal.reason == "bad signature"


async def test_an_unsigned_alg_none_token_is_refused_before_any_key_is_fetched(issuer: LocalIssuer) -> None:
    header = _b64(json.dumps({"alg": "none", "typ": "JWT", "kid": "rsa-1"}).encode())
    payload = _b64(json.dumps(issuer.claims(sub="admin")).encode())
    for token in (f"{header}.{payload}.", f"{header}.{payload}.c2ln"):
        refusal = await _refusal(JwtVerifier(issuer.oauth()), token)
        assert (refusal.reason, refusal.detail) == ("algorithm not allowed", "'none'")
    assert issuer.fetches == 0


async def test_an_hs256_token_keyed_with_the_issuers_public_key_is_refused(issuer: LocalIssuer) -> None:
    # The classic confusion: HMAC "signed" with the public key everyone can fetch, hoping the
    # verifier takes the RSA key it looks up as an HMAC secret.
    private = issuer.keys.private["rsa-1"]
    assert isinstance(private, rsa.RSAPrivateKey)
    public_pem = private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode())
    payload = _b64(json.dumps(issuer.claims(sub="admin")).encode())
    signature = _b64(hmac.new(public_pem, f"{header}.{payload}".encode(), hashlib.sha256).digest())
    refusal = await _refusal(JwtVerifier(issuer.oauth()), f"{header}.{payload}.{signature}")
    assert (refusal.reason, refusal.detail) == ("algorithm not allowed", "'HS256'")


async def test_an_algorithm_left_out_of_the_allow_list_is_refused(issuer: LocalIssuer) -> None:
    verifier = JwtVerifier(issuer.oauth(algorithms=["ES256"]))
    refusal = await _refusal(verifier, issuer.mint("rsa-1"))
    assert (refusal.reason, refusal.detail) == ("algorithm not allowed", "'RS256'")
    with anyio.fail_after(10):
        assert (await verifier.authenticate(issuer.mint("ec-1"))).identity.principal == "alice"


async def test_a_token_claiming_another_algorithm_than_its_key_is_refused(issuer: LocalIssuer) -> None:
    header, payload, signature = issuer.mint("rsa-1").split(".")
    relabelled = _b64(json.dumps({"alg": "ES256", "typ": "JWT", "kid": "rsa-1"}).encode())
    refusal = await _refusal(JwtVerifier(issuer.oauth()), f"{relabelled}.{payload}.{signature}")
    assert refusal.reason == "unknown signing key"
    assert header != relabelled


@pytest.mark.parametrize("token", ["not-a-jwt", "a.b.c", "e30.e30.", "x" * 20_000 + ".a.b"])
async def test_garbage_is_refused_as_malformed(issuer: LocalIssuer, token: str) -> None:
    refusal = await _refusal(JwtVerifier(issuer.oauth()), token)
    assert refusal.reason in ("malformed token", "algorithm not allowed")
    assert issuer.fetches == 0


async def test_an_unknown_kid_fetches_the_keys_again_once_then_is_refused(
    issuer: LocalIssuer, clock: Clock
) -> None:
    verifier = JwtVerifier(issuer.oauth(), min_fetch_interval=0.5)
    stranger = issuer.mint("rsa-2")  # signed by a key the issuer does not publish
    with anyio.fail_after(10):
        await verifier.authenticate(issuer.mint("rsa-1"))
        assert issuer.fetches == 1
        refusal = await _refusal(verifier, stranger)  # within the interval: no fetch
        assert (refusal.reason, issuer.fetches) == ("unknown signing key", 1)
        clock.now += 0.6
        refusal = await _refusal(verifier, stranger)  # fetched again, once, still unknown
        assert (refusal.reason, refusal.detail) == ("unknown signing key", "kid 'rsa-2' for RS256")
        assert issuer.fetches == 2
        for _ in range(5):
            await _refusal(verifier, stranger)
    assert issuer.fetches == 2


async def test_a_key_the_issuer_rotates_in_is_found_by_fetching_again(
    issuer: LocalIssuer, clock: Clock
) -> None:
    verifier = JwtVerifier(issuer.oauth(), min_fetch_interval=0.2)
    with anyio.fail_after(10):
        await verifier.authenticate(issuer.mint("rsa-1"))
        issuer.published = ["rsa-2"]
        clock.now += 0.3
        accepted = await verifier.authenticate(issuer.mint("rsa-2", sub="bob"))
    assert (accepted.identity.principal, issuer.fetches) == ("bob", 2)


async def test_many_tokens_with_made_up_kids_at_once_cost_the_issuer_one_fetch(issuer: LocalIssuer) -> None:
    verifier = JwtVerifier(issuer.oauth())
    real = issuer.mint("rsa-1")
    _, payload, signature = real.split(".")
    tokens = [
        f"{_b64(json.dumps({'alg': 'RS256', 'kid': f'made-up-{n}'}).encode())}.{payload}.{signature}"
        for n in range(50)
    ]
    reasons: list[str] = []

    async def attempt(token: str) -> None:
        reasons.append((await _refusal(verifier, token)).reason)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            for token in tokens:
                group.start_soon(attempt, token)
    assert reasons == ["unknown signing key"] * 50
    assert issuer.fetches == 1
    with anyio.fail_after(10):  # the keys were fetched: the token with its real kid verifies
        assert (await verifier.authenticate(real)).identity.principal == "alice"
    assert issuer.fetches == 1


async def test_a_jwks_endpoint_that_is_down_refuses_at_once_and_is_not_hammered(
    issuer: LocalIssuer, closed_port: int
) -> None:
    oauth = issuer.oauth(jwks_uri=f"http://127.0.0.1:{closed_port}/jwks.json")
    verifier = JwtVerifier(oauth, min_fetch_interval=60)
    # At once: refused with the connection's own error (not a timeout), and asked once, not again.
    with anyio.fail_after(10):
        refusal = await _refusal(verifier, issuer.mint())
        again = await _refusal(verifier, issuer.mint())
    assert refusal.reason == "signing keys unavailable"
    assert "ConnectError" in refusal.detail
    assert (again.reason, again.detail) == (refusal.reason, refusal.detail)
    assert verifier.keys.fetches == 1


async def test_a_jwks_endpoint_that_never_answers_is_given_up_on_within_the_timeout(
    issuer: LocalIssuer, never_answering: str
) -> None:
    verifier = JwtVerifier(issuer.oauth(jwks_uri=never_answering), fetch_timeout_seconds=0.5)
    with anyio.fail_after(10):  # a bound on a hang: the detail names the 0.5 s that ended the wait
        refusal = await _refusal(verifier, issuer.mint())
    assert (refusal.reason, refusal.detail) == ("signing keys unavailable", "no complete answer within 0.5 s")


@pytest.mark.parametrize(
    ("answer", "detail"),
    [
        ("huge", "bytes, over the cap of 65536"),
        ("huge-chunked", "the answer is over the cap of 65536 bytes"),
        ("error", "HTTP 503"),
        ("not-json", "the answer is not JSON"),
    ],
)
async def test_a_jwks_answer_too_large_failed_or_not_json_gives_no_keys(
    issuer: LocalIssuer, answer: str, detail: str
) -> None:
    issuer.answer = answer  # type: ignore[assignment]
    verifier = JwtVerifier(issuer.oauth(), max_jwks_bytes=64 * 1024)
    refusal = await _refusal(verifier, issuer.mint())
    assert refusal.reason == "signing keys unavailable"
    assert refusal.detail.endswith(detail)


async def test_keys_already_known_outlive_a_failed_fetch(issuer: LocalIssuer, clock: Clock) -> None:
    verifier = JwtVerifier(issuer.oauth(), min_fetch_interval=0.2)
    with anyio.fail_after(10):
        await verifier.authenticate(issuer.mint("rsa-1"))
        issuer.answer = "error"
        clock.now += 0.3
        await _refusal(verifier, issuer.mint("rsa-2"))  # fetched again for it, and failed
        assert issuer.fetches == 2
        accepted = await verifier.authenticate(issuer.mint("rsa-1"))
    assert accepted.identity.principal == "alice"


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")  # minting with it
async def test_a_published_rsa_key_under_2048_bits_is_refused(issuer: LocalIssuer) -> None:
    issuer.keys.private["rsa-weak"] = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    issuer.published = ["rsa-weak"]
    try:
        refusal = await _refusal(JwtVerifier(issuer.oauth()), issuer.mint("rsa-weak"))
    finally:
        del issuer.keys.private["rsa-weak"]
    assert refusal.reason == "unusable signing key"


async def test_verify_token_answers_none_and_logs_the_reason_without_the_token(
    issuer: LocalIssuer, auth_log: list[logging.LogRecord]
) -> None:
    verifier = JwtVerifier(issuer.oauth())
    token = issuer.mint(exp=int(time.time()) - 600)
    with anyio.fail_after(10):
        assert await verifier.verify_token(token) is None
    [refused] = [record for record in auth_log if record.getMessage() == "bearer token refused"]
    assert (refused.__dict__["reason"], refused.__dict__["verifier"]) == ("expired", "jwt")
    for record in auth_log:
        assert token not in json.dumps(record.__dict__, default=str)
        assert token.split(".")[2] not in json.dumps(record.__dict__, default=str)
