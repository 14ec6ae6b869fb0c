"""Static API tokens: each configured token kept as its SHA-256, a presented one compared with all.

Comparing digests rather than tokens gives every comparison the same length and content an attacker
cannot steer byte by byte; `compare_digest` runs in constant time, and every entry is compared even
after a match, so neither the time nor the code path says which entry (or whether any) matched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from hmac import compare_digest

from gateway.auth._identity import STATIC_ISSUER, GatewayAccessToken, Identity, token_digest
from gateway.auth._reasons import Reason, log_refusal, refused
from gateway.auth.config import AuthConfig
from gateway.errors import TokenRefused

__all__ = ["StaticTokenVerifier", "still_configured"]


def _sha256(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class StaticTokenVerifier:
    """The SDK's TokenVerifier over static tokens, each naming a principal (`auth.tokens`)."""

    def __init__(self, tokens: Mapping[str, str], *, scopes: Sequence[str] = ()) -> None:
        """`tokens` maps principal to token; each accepted token carries `scopes` (the required ones)."""
        self._table = tuple((_sha256(token), principal) for principal, token in tokens.items())
        self._scopes = tuple(scopes)

    def __repr__(self) -> str:
        return f"StaticTokenVerifier({len(self._table)} principals)"

    def principal(self, token: str) -> str | None:
        """The principal whose token this is, or None; compares against every entry, always."""
        presented = _sha256(token)
        found: str | None = None
        for digest, principal in self._table:
            matches = compare_digest(presented, digest)
            found = principal if matches and found is None else found
        return found

    def accept(self, token: str) -> GatewayAccessToken | None:
        """The AccessToken for a configured token, or None for any other."""
        principal = self.principal(token)
        if principal is None:
            return None
        digest = token_digest(token)
        return GatewayAccessToken(
            token=digest,
            client_id=principal,
            subject=principal,
            scopes=list(self._scopes),
            claims={"iss": STATIC_ISSUER},
            identity=Identity(principal=principal, scopes=self._scopes, credential=digest),
        )

    async def authenticate(self, token: str) -> GatewayAccessToken:
        """The AccessToken for a configured token, else TokenRefused."""
        accepted = self.accept(token) if token else None
        if accepted is None:
            raise refused(Reason.UNKNOWN if token else Reason.MISSING)
        return accepted

    async def verify_token(self, token: str) -> GatewayAccessToken | None:
        """The SDK's TokenVerifier: the AccessToken, or None (the reason logged)."""
        try:
            return await self.authenticate(token)
        except TokenRefused as refusal:
            log_refusal(refusal, "static")
            return None


def still_configured(identity: Identity, auth: AuthConfig | None) -> bool:
    """Whether the static token that vouched for `identity` is still one of `auth.tokens`, under the
    same principal (a reload may remove or change it); a caller no static token vouched for, True."""
    if identity.credential is None:
        return True
    token = auth.tokens.get(identity.principal) if auth is not None else None
    if token is None:
        return False
    return compare_digest(token_digest(token.get_secret_value()), identity.credential)
