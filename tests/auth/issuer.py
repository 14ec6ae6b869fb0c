"""A local OAuth issuer for the tests: keys made here, its JWKS served over real HTTP on loopback,
tokens minted with PyJWT as an authorization server would."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway.auth.config import AuthConfig, OAuthConfig

AUDIENCE = "http://127.0.0.1:8080/mcp"
SCOPE = "mcp:tools"

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
Answer = Literal["keys", "error", "huge", "huge-chunked", "not-json"]


@dataclass
class Keys:
    """Signing keys by kid: two RSA and one EC (P-256), made once per test session."""

    private: dict[str, PrivateKey]

    @classmethod
    def make(cls) -> Keys:
        return cls(
            {
                "rsa-1": rsa.generate_private_key(public_exponent=65537, key_size=2048),
                "rsa-2": rsa.generate_private_key(public_exponent=65537, key_size=2048),
                "ec-1": ec.generate_private_key(ec.SECP256R1()),
            }
        )

    def jwk(self, kid: str) -> dict[str, Any]:
        key = self.private[kid]
        if isinstance(key, rsa.RSAPrivateKey):
            public: dict[str, Any] = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
        else:
            public = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
        return {**public, "kid": kid, "use": "sig"}


@dataclass
class LocalIssuer:
    """An authorization server's token side: its JWKS at /jwks.json, and `mint` for its tokens."""

    keys: Keys
    port: int = 0
    published: list[str] = field(default_factory=lambda: ["rsa-1", "ec-1"])
    answer: Answer = "keys"
    fetches: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def jwks_uri(self) -> str:
        return f"{self.url}/jwks.json"

    def oauth(self, **overrides: Any) -> OAuthConfig:
        return OAuthConfig.model_validate(
            {"issuer": self.url, "audience": AUDIENCE, "jwks_uri": self.jwks_uri, **overrides}
        )

    def auth(self, tokens: dict[str, str] | None = None, **overrides: Any) -> AuthConfig:
        return AuthConfig.model_validate({"tokens": tokens or {}, "oauth": self.oauth(**overrides)})

    def claims(self, **overrides: Any) -> dict[str, Any]:
        """A valid token's claims, with `overrides` (a None value leaves the claim out)."""
        now = int(time.time())
        claims = {"iss": self.url, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 300}
        claims |= {"scope": SCOPE} | overrides
        return {name: value for name, value in claims.items() if value is not None}

    def mint(self, kid: str = "rsa-1", algorithm: str | None = None, **claims: Any) -> str:
        """A token signed with the key `kid` (RS256 for RSA, ES256 for EC unless `algorithm`)."""
        key = self.keys.private[kid]
        chosen = algorithm or ("RS256" if isinstance(key, rsa.RSAPrivateKey) else "ES256")
        return jwt.encode(self.claims(**claims), key, algorithm=chosen, headers={"kid": kid})

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/jwks.json", self._jwks)])

    async def _jwks(self, _: Request) -> Response:
        self.fetches += 1
        if self.answer == "error":
            return Response("down for maintenance", status_code=503)
        if self.answer == "not-json":
            return Response("<html>login</html>", media_type="text/html")
        if self.answer == "huge":  # declared as such
            padding = " " * (2 * 1024 * 1024)
            return Response(json.dumps({"keys": [], "padding": padding}), media_type="application/json")
        if self.answer == "huge-chunked":  # no Content-Length: only counting the bytes finds out
            return StreamingResponse(_endless_json(), media_type="application/json")
        return JSONResponse({"keys": [self.keys.jwk(kid) for kid in self.published]})


async def _endless_json() -> AsyncIterator[bytes]:
    yield b'{"keys": ['
    for _ in range(10_000):
        yield b'{"kty": "RSA", "n": "' + b"A" * 1024 + b'", "e": "AQAB"},'
    yield b"]}"
