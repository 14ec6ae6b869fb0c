"""Why a token was refused, as fixed phrases for logs, and the one place a refusal is logged."""

from __future__ import annotations

import logging
from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import StrEnum

from gateway.errors import TokenRefused

__all__ = ["Reason", "log", "log_refusal", "refusals_from", "refused"]

log = logging.getLogger("gateway.auth")

# The address of the client whose token is being verified: the SDK hands the verifier the token alone.
_CLIENT: ContextVar[str | None] = ContextVar("codemode_token_client", default=None)


class Reason(StrEnum):
    """Why a bearer token was refused; logged as `reason`, never with the token."""

    MISSING = "no token"
    UNKNOWN = "unknown token"
    MALFORMED = "malformed token"
    ALGORITHM = "algorithm not allowed"
    UNKNOWN_KEY = "unknown signing key"
    UNUSABLE_KEY = "unusable signing key"
    KEYS_UNAVAILABLE = "signing keys unavailable"
    BAD_SIGNATURE = "bad signature"
    EXPIRED = "expired"
    NOT_YET_VALID = "not yet valid"
    WRONG_AUDIENCE = "wrong audience"
    WRONG_ISSUER = "wrong issuer"
    MISSING_CLAIM = "missing claim"


def refused(reason: Reason, detail: str = "") -> TokenRefused:
    """The error for a refusal; `detail` names a claim or key, never the token."""
    return TokenRefused(reason.value, detail)


@contextmanager
def refusals_from(client: str | None) -> Generator[None]:
    """While one request's token is verified: the client's address, for a refusal's log line."""
    token = _CLIENT.set(client)
    try:
        yield
    finally:
        _CLIENT.reset(token)


def log_refusal(refusal: TokenRefused, verifier: str) -> None:
    """One warning per refused token: the reason, what it concerns (a claim, a key id), and the
    client's address; never the token. At warning: the client sees only a 401 without the reason."""
    extra = {"reason": refusal.reason, "verifier": verifier}
    if refusal.detail:
        extra["detail"] = refusal.detail
    if (client := _CLIENT.get()) is not None:
        extra["client"] = client
    log.warning("bearer token refused", extra=extra)
