"""What a bearer JWT looks like, told without PyJWT: the verifier sorts tokens before it loads it."""

from __future__ import annotations

__all__ = ["MAX_JWT_CHARS", "looks_like_jwt"]

MAX_JWT_CHARS = 16 * 1024


def looks_like_jwt(token: str) -> bool:
    """Three base64url parts joined by dots: worth verifying as a JWT."""
    return token.count(".") == 2 and len(token) <= MAX_JWT_CHARS
