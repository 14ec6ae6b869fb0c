"""Why a token was refused, as fixed phrases for logs, and the one place a refusal is logged."""

from __future__ import annotations

import logging
from enum import StrEnum

from gateway.errors import TokenRefused

__all__ = ["Reason", "log", "log_refusal", "refused"]

log = logging.getLogger("gateway.auth")


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


def log_refusal(refusal: TokenRefused, verifier: str) -> None:
    """One structured line per refused token: the reason and what it concerns, never the token."""
    extra = {"reason": refusal.reason, "verifier": verifier}
    if refusal.detail:
        extra["detail"] = refusal.detail
    log.info("bearer token refused", extra=extra)
