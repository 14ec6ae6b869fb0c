"""Who is calling, once a token is verified: the `Identity`, carried in the SDK's `AccessToken` shape."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from mcp.server.auth.provider import AccessToken

__all__ = [
    "STATIC_ISSUER",
    "UNVERIFIED_ISSUERS",
    "GatewayAccessToken",
    "Identity",
    "Owner",
    "identity_of",
    "token_digest",
]

STATIC_ISSUER = "codemode-gateway:tokens"
"""The `iss` a static token's AccessToken carries, so that the SDK's principal (client, issuer,
subject) of a static principal never equals that of an OAuth subject with the same name."""

SESSION_ISSUER = "codemode-gateway:session"
ADDRESS_ISSUER = "codemode-gateway:address"
STDIO_ISSUER = "codemode-gateway:stdio"
UNVERIFIED_ISSUERS = frozenset({SESSION_ISSUER, ADDRESS_ISSUER, STDIO_ISSUER})
"""Who names a caller no token vouched for (no `auth`): its MCP session, its address, or stdio."""


@dataclass(frozen=True, slots=True)
class Owner:
    """Whose a per-caller thing is: background runs, caps, rate windows, audit records.

    The issuer that vouched for the caller and the name it vouched for, as the request-state seal
    binds them: a JWT whose `sub` is `alice` is not the static token named `alice`. Without `auth`
    nobody vouches, and the caller is its MCP session, its address, or stdio's one client.
    """

    issuer: str
    principal: str

    @classmethod
    def of_session(cls, session_digest: str) -> Owner:
        """The handshake-era session a caller without a token speaks in (named by a digest of its id)."""
        return cls(SESSION_ISSUER, session_digest)

    @classmethod
    def of_address(cls, address: str) -> Owner:
        """A caller without a token or a session (2026-07-28), by its client address."""
        return cls(ADDRESS_ISSUER, address)

    @classmethod
    def of_stdio(cls) -> Owner:
        """Stdio's one client."""
        return cls(STDIO_ISSUER, "stdio")

    @property
    def verified(self) -> bool:
        """Whether a token vouched for this caller (so that it, and only it, may reach its things)."""
        return self.issuer not in UNVERIFIED_ISSUERS

    def __str__(self) -> str:
        return f"{self.principal} ({self.issuer})"


@dataclass(frozen=True, slots=True)
class Identity:
    """Who is calling: the principal a verified token names, the client acting for it, what it may do."""

    principal: str
    """The static token's configured name, or the JWT's `sub`."""
    client: str | None = None
    """The OAuth client acting for the principal (`client_id`, else `azp`); None for a static token."""
    scopes: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    issuer: str | None = None
    """The JWT's `iss`; None for a static token."""
    expires_at: int | None = None
    """When the token expires (seconds since the epoch); None for a static token."""
    credential: str | None = None
    """The static token that vouched for the caller, as its digest (`token_digest`), so that work it
    started can be told apart once a reload removes or changes that token; None for a JWT."""

    @property
    def owner(self) -> Owner:
        """The key of this caller's things: its issuer (a static token's own) and its principal."""
        return Owner(self.issuer or STATIC_ISSUER, self.principal)


class GatewayAccessToken(AccessToken):
    """The SDK's AccessToken, with the Identity the gateway reads.

    `token` holds the token's SHA-256 (`token_digest`), not the token: nothing the gateway keeps can
    leak it or pass it on (MCP forbids passing a client's token through to another service).
    """

    identity: Identity


def token_digest(token: str) -> str:
    """What stands for a bearer token wherever one is kept: `sha256:<hex>`."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


def identity_of(access_token: AccessToken) -> Identity:
    """The Identity of a token a verifier accepted (an SDK AccessToken from elsewhere too)."""
    if isinstance(access_token, GatewayAccessToken):
        return access_token.identity
    issuer = (access_token.claims or {}).get("iss")
    return Identity(
        principal=access_token.subject or access_token.client_id,
        client=access_token.client_id,
        scopes=tuple(access_token.scopes),
        issuer=str(issuer) if issuer is not None else None,
        expires_at=access_token.expires_at,
    )
