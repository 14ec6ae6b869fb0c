"""The issuer's signing keys, from its JWKS URI: fetched over HTTP within a time and size bound, kept
for a TTL, and fetched again early for a key it does not list, at most once per interval.

The interval is what keeps the gateway from being a JWKS-fetch amplifier: tokens naming made-up
`kid`s cost the issuer at most one fetch per interval, however many arrive. A fetch that fails keeps
the keys already known (an issuer briefly down does not lock everyone out); with none known, tokens
are refused at once until the interval has passed, rather than each waiting on a dead endpoint.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import anyio
import httpx2
from jwt import PyJWK, PyJWTError

from gateway.auth._reasons import Reason, log, refused
from gateway.shared import as_array, as_object

__all__ = [
    "DEFAULT_FETCH_TIMEOUT_SECONDS",
    "DEFAULT_MAX_JWKS_BYTES",
    "DEFAULT_MIN_FETCH_INTERVAL",
    "JwksKeys",
]

DEFAULT_FETCH_TIMEOUT_SECONDS = 5.0
DEFAULT_MAX_JWKS_BYTES = 256 * 1024  # real key sets are a few KiB
DEFAULT_MIN_FETCH_INTERVAL = 30.0

# Which key type (and curve) each algorithm verifies with.
_KEY_TYPES: dict[str, tuple[str, str | None]] = {
    **{f"{family}{bits}": ("RSA", None) for family in ("RS", "PS") for bits in (256, 384, 512)},
    "ES256": ("EC", "P-256"),
    "ES384": ("EC", "P-384"),
    "ES512": ("EC", "P-521"),
    "EdDSA": ("OKP", None),
}


class _Unusable(Exception):
    """Why a fetch gave no keys (said in the log and in the refusal's detail)."""


async def _download(uri: str, *, timeout: float, max_bytes: int) -> bytes:
    """The JWKS document's bytes, within `timeout` in all and `max_bytes`, uncompressed."""
    try:
        with anyio.fail_after(timeout):
            async with (
                httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client,
                client.stream(
                    "GET", uri, headers={"Accept": "application/json", "Accept-Encoding": "identity"}
                ) as response,
            ):
                if response.is_redirect:
                    raise _Unusable(
                        f"HTTP {response.status_code}: redirects are not followed; name the final URL"
                    )
                if response.status_code != 200:
                    raise _Unusable(f"HTTP {response.status_code}")
                if response.headers.get("content-encoding", "identity").lower() != "identity":
                    raise _Unusable("the answer is compressed, though identity was asked for")
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    raise _Unusable(f"the answer is {declared} bytes, over the cap of {max_bytes}")
                body = bytearray()
                async for chunk in response.aiter_raw():
                    body += chunk
                    if len(body) > max_bytes:
                        raise _Unusable(f"the answer is over the cap of {max_bytes} bytes")
                return bytes(body)
    except TimeoutError:
        raise _Unusable(f"no complete answer within {timeout:g} s") from None
    except (httpx2.HTTPError, OSError) as exc:
        raise _Unusable(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from None


def _signing_keys(document: bytes, algorithms: Sequence[str]) -> dict[str | None, list[dict[str, Any]]]:
    """The document's public signing keys by `kid`; symmetric keys and keys for other uses left out."""
    try:
        parsed = json.loads(document)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _Unusable("the answer is not JSON") from None
    top = as_object(parsed) or {}
    if not isinstance(top.get("keys"), list):
        raise _Unusable('the answer is not a JWKS (an object with a "keys" list)')
    keys = as_array(top.get("keys"))
    usable: dict[str | None, list[dict[str, Any]]] = {}
    kinds = {kind for kind, _ in _KEY_TYPES.values()}
    for key in keys:
        jwk = as_object(key)
        if jwk is None:
            continue
        ops = jwk.get("key_ops")
        if (
            jwk.get("kty") not in kinds  # "oct" among others: a shared secret is never a JWKS key
            or jwk.get("use", "sig") != "sig"
            or (isinstance(ops, list) and "verify" not in ops)
            or ("alg" in jwk and jwk["alg"] not in algorithms)
        ):
            continue
        kid = jwk.get("kid")
        usable.setdefault(kid if isinstance(kid, str) else None, []).append(jwk)
    if not usable:
        raise _Unusable(f"no signing key for {', '.join(algorithms)}")
    return usable


def _fits(jwk: dict[str, Any], algorithm: str) -> bool:
    kind, curve = _KEY_TYPES[algorithm]
    return (
        jwk.get("kty") == kind
        and (curve is None or jwk.get("crv") == curve)
        and jwk.get("alg", algorithm) == algorithm
    )


class JwksKeys:
    """An issuer's public signing keys by `kid`, from its JWKS URI."""

    def __init__(
        self,
        uri: str,
        *,
        algorithms: Sequence[str],
        ttl_seconds: float,
        min_fetch_interval: float = DEFAULT_MIN_FETCH_INTERVAL,
        timeout_seconds: float = DEFAULT_FETCH_TIMEOUT_SECONDS,
        max_bytes: int = DEFAULT_MAX_JWKS_BYTES,
    ) -> None:
        self.uri = uri
        self._algorithms = tuple(algorithms)
        self._ttl = ttl_seconds
        self._interval = min_fetch_interval
        self._timeout = timeout_seconds
        self._max_bytes = max_bytes
        self._keys: dict[str | None, list[dict[str, Any]]] = {}
        self._built: dict[tuple[str | None, int, str], PyJWK] = {}
        self._fetched_at: float | None = None  # the last fetch that gave keys
        self._attempted_at: float | None = None  # the last fetch, whatever it gave
        self._problem = "not fetched yet"
        self._generation = 0  # counts fetches that gave keys
        self._lock = anyio.Lock()
        self.fetches = 0
        """Fetches made so far, whatever they gave (for diagnostics and tests)."""

    async def key(self, kid: str | None, algorithm: str) -> PyJWK:
        """The key that verifies a token with this `kid` and `alg`, else TokenRefused."""
        await self._fresh_keys()
        found = self._find(kid, algorithm)
        if found is None:
            await self._fetch_early()
            found = self._find(kid, algorithm)
        if found is None:
            detail = f"kid {kid[:64]!r}" if kid is not None else "no kid, and the JWKS has several keys"
            raise refused(Reason.UNKNOWN_KEY, f"{detail} for {algorithm}")
        return found

    def _find(self, kid: str | None, algorithm: str) -> PyJWK | None:
        candidates = self._keys.get(kid, [])
        if kid is None and not candidates:  # a token without `kid` is fine if the issuer has one key
            every = [jwk for listed in self._keys.values() for jwk in listed]
            candidates = every if len(every) == 1 else []
        for index, jwk in enumerate(candidates):
            if not _fits(jwk, algorithm):
                continue
            cached = self._built.get((kid, index, algorithm))
            if cached is not None:
                return cached
            try:
                built = PyJWK(jwk, algorithm=algorithm)
            except PyJWTError:
                continue  # a malformed key: another of the same kid may do
            self._built[(kid, index, algorithm)] = built
            return built
        return None

    def _since(self, moment: float | None) -> float:
        return float("inf") if moment is None else time.monotonic() - moment

    async def _fresh_keys(self) -> None:
        """Keys younger than the TTL, fetched if need be; stale ones while a fetch may not be retried."""
        if self._since(self._fetched_at) < self._ttl or (self._keys and self._lock.locked()):
            return  # fresh, or being refreshed: the keys known so far serve meanwhile
        async with self._lock:
            if self._since(self._fetched_at) < self._ttl:
                return  # fetched while this one waited
            if self._since(self._attempted_at) >= self._interval:
                await self._fetch()
        if not self._keys:
            raise refused(Reason.KEYS_UNAVAILABLE, self._problem)

    async def _fetch_early(self) -> None:
        """For a key not listed: fetch once more, unless a fetch was made within the interval."""
        generation = self._generation
        async with self._lock:
            if self._generation == generation and self._since(self._attempted_at) >= self._interval:
                await self._fetch()

    async def _fetch(self) -> None:
        self._attempted_at = time.monotonic()
        self.fetches += 1
        try:
            document = await _download(self.uri, timeout=self._timeout, max_bytes=self._max_bytes)
            keys = _signing_keys(document, self._algorithms)
        except _Unusable as problem:
            self._problem = str(problem)
            kept = sum(map(len, self._keys.values()))
            log.warning(
                "JWKS fetch failed", extra={"jwks_uri": self.uri, "problem": self._problem, "keys_kept": kept}
            )
            return
        self._keys, self._built = keys, {}
        self._fetched_at = time.monotonic()
        self._generation += 1
        log.info("JWKS fetched", extra={"jwks_uri": self.uri, "keys": sum(map(len, keys.values()))})
