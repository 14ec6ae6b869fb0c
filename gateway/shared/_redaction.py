"""Redaction: secret values, and their common encodings, replaced in what leaves the gateway.

Redaction stops accidental disclosure: a child echoing a token, an error quoting a header, a log line
carrying an `extra`, whatever the type of the value (a numeric PIN is redacted as text). It cannot stop
a snippet that deliberately transforms a secret it was handed (reversed, split, re-encoded): keep
secrets out of what children return. Which values are secret is the config's business
(`gateway.config.config_secrets`).

Redaction must not become an oracle. Where `[REDACTED:PIN]` lands in an echo of candidates would
give a short secret away, so a snippet never gets to put a secret into a tool call (`secret_in`
finds one and the run ends), and an output holding a guessable secret (few bits: a PIN, a short
password) is withheld whole rather than redacted in place.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, cast
from urllib.parse import quote, quote_plus

__all__ = ["GUESSABLE_BITS", "MIN_SECRET_CHARS", "Redactor", "guessable"]

MIN_SECRET_CHARS = 4
"""Shorter values are never redacted: replacing every "on" or "123" would be noise, not safety."""

GUESSABLE_BITS = 48
"""A secret with fewer bits than this (length x log2 of its character classes) can be enumerated."""

# The base64 of a secret inside a longer base64 text (HTTP Basic auth, say) is matched by a core that
# depends only on the secret's bytes; short cores would match random base64 by chance.
_MIN_BASE64_CORE_CHARS = 8
_MAX_CACHED_PATTERNS = 64

# ---- redaction ----------------------------------------------------------------------------------


def _base64_forms(data: bytes) -> set[str]:
    whole = base64.b64encode(data).decode()
    forms = {whole, whole.rstrip("=")}
    for offset in range(3):
        # Inside a longer text the secret may start at any byte offset modulo 3; these characters
        # depend on the secret's bytes only, whatever surrounds it.
        encoded = base64.b64encode(b"\0" * offset + data).decode()
        core = encoded[math.ceil(8 * offset / 6) : (8 * (offset + len(data))) // 6]
        if len(core) >= _MIN_BASE64_CORE_CHARS:
            forms.add(core)
    return forms | {form.replace("+", "-").replace("/", "_") for form in forms}


def guessable(value: str) -> bool:
    """Whether a secret is short enough in bits that a snippet could list every candidate."""
    alphabet = (
        10 * any(c.isdigit() for c in value)
        + 26 * any(c.islower() for c in value)
        + 26 * any(c.isupper() for c in value)
        + 33 * any(c.isascii() and not c.isalnum() for c in value)
        + 1000 * any(not c.isascii() for c in value)
    )
    return len(value) * math.log2(max(alphabet, 2)) < GUESSABLE_BITS


def _encodings(value: str) -> set[str]:
    """The value as written, URL-quoted, JSON-escaped (once and twice) and base64-encoded."""
    escaped = json.dumps(value)[1:-1]
    forms = {
        value,
        quote(value),
        quote(value, safe=""),
        quote_plus(value),
        escaped,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(escaped)[1:-1],
        *_base64_forms(value.encode()),
    }
    return {form for form in forms if len(form) >= MIN_SECRET_CHARS}


class Redactor:
    """Replaces secret values and their common encodings with `[REDACTED:VAR]` (or `[REDACTED]`).

    `secrets` maps each value to the variable it came from (None when unknown), or is a plain
    iterable of values. Values shorter than MIN_SECRET_CHARS are ignored.
    """

    def __init__(self, secrets: Mapping[str, str | None] | Iterable[str] = ()) -> None:
        self._labels: dict[str, str] = {}
        self._forms: tuple[str, ...] = ()
        self._guessable: tuple[str, ...] = ()
        self._guessable_labels: tuple[str, ...] = ()
        self._patterns: dict[tuple[str, ...], re.Pattern[str]] = {}
        self.names: frozenset[str] = frozenset()
        self.add(secrets)

    def add(self, secrets: Mapping[str, str | None] | Iterable[str]) -> None:
        """Redact these values too, from now on (a config reload that brings new secrets); a value
        once secret stays secret. Safe while other threads redact: each table is replaced whole."""
        named: dict[str, str | None] = (
            dict(cast(Mapping[str, str | None], secrets))
            if isinstance(secrets, Mapping)
            else dict.fromkeys(secrets)
        )
        labels = dict(self._labels)
        short, short_labels = set(self._guessable), set(self._guessable_labels)
        for value, name in named.items():
            if len(value) < MIN_SECRET_CHARS:
                continue
            label = f"[REDACTED:{name}]" if name else "[REDACTED]"
            for form in _encodings(value):
                labels.setdefault(form, label)
                if guessable(value):
                    short.add(form)
                    short_labels.add(labels[form])
        # Labels before forms: a reader that sees a new form finds its label.
        self._labels = labels
        self._forms = tuple(labels)
        self._guessable = tuple(sorted(short))
        self._guessable_labels = tuple(sorted(short_labels))
        self.names = self.names | frozenset(name for name in named.values() if name)

    def __bool__(self) -> bool:
        return bool(self._forms)

    def _pattern_in(self, text: str) -> re.Pattern[str] | None:
        """A pattern for the forms that occur in `text`, or None if none does.

        Substring tests first: over text holding no secret they cost far less than one big alternation.
        """
        present = tuple(form for form in self._forms if form in text)
        return self._pattern_of(present) if present else None

    def _pattern_of(self, forms: tuple[str, ...]) -> re.Pattern[str]:
        pattern = self._patterns.get(forms)
        if pattern is None:
            if len(self._patterns) >= _MAX_CACHED_PATTERNS:
                self._patterns.clear()
            # Longest first: a regex alternation takes the first alternative that matches, not the longest.
            ordered = sorted(forms, key=len, reverse=True)
            pattern = self._patterns[forms] = re.compile("|".join(map(re.escape, ordered)))
        return pattern

    def _sub(self, pattern: re.Pattern[str], text: str) -> str:
        return pattern.sub(lambda match: self._labels[match.group()], text)

    def redact(self, text: str) -> str:
        """`text` with every secret (and encoding of one) replaced by its label."""
        pattern = self._pattern_in(text) if self._forms and text else None
        return text if pattern is None else self._sub(pattern, text)

    def redact_json(self, value: Any) -> Any:
        """A copy of a JSON-like value (dicts, lists, strings, numbers; keys too) with secrets redacted.

        A number holding a secret (a numeric PIN a child answered with) becomes its redacted text.
        """
        if not self._forms:
            return value
        if isinstance(value, str):
            return self.redact(value)
        probe = _dump(value)
        pattern = self._pattern_in(probe) if probe is not None else self._pattern_of(self._forms)
        return value if pattern is None else self._walk(pattern, value)

    def secret_in(self, value: Any) -> str | None:
        """The label of a secret that `value` (any JSON-like value) holds in any known form, else None."""
        if not self._forms:
            return None
        probe = value if isinstance(value, str) else _dump(value)
        if probe is None:  # not JSON at all: look at what it says
            probe = repr(value)
        pattern = self._pattern_in(probe)
        match = pattern.search(probe) if pattern is not None else None
        return self._labels[match.group()] if match is not None else None

    def _guessable_in(self, text: str) -> str | None:
        """The label of a guessable secret in `text`, as itself or already redacted in place: text the
        snippet chose and the gateway redacted on the way (an error quoting its tool calls, say) would
        tell by the label's place which of its candidates was the secret."""
        found = next((self._labels[form] for form in self._guessable if form in text), None)
        return found or next((label for label in self._guessable_labels if label in text), None)

    def _walk(self, pattern: re.Pattern[str], value: Any) -> Any:
        if isinstance(value, str):
            return self._sub(pattern, value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            text = json.dumps(value)
            return self._sub(pattern, text) if pattern.search(text) else value
        if isinstance(value, dict):
            items = cast(dict[Any, Any], value).items()
            return {
                (self._sub(pattern, key) if isinstance(key, str) else key): self._walk(pattern, item)
                for key, item in items
            }
        if isinstance(value, list | tuple):
            redacted = [self._walk(pattern, item) for item in cast(Iterable[Any], value)]
            return tuple(redacted) if isinstance(value, tuple) else redacted
        return value

    def redact_text(self, text: str, what: str) -> str:
        """`text` redacted; withheld whole when it holds a guessable secret, whose place would tell it."""
        if self._guessable and (label := self._guessable_in(text)) is not None:
            return (
                f"[{what} withheld: it held {label.strip('[]').replace('REDACTED:', 'the value of ')}, "
                "a short secret, which is never shown, not even redacted in place]"
            )
        return self.redact(text)

    def guessable_label(self, *texts: str) -> str | None:
        """The label of a guessable secret that any of `texts` holds (or holds redacted), else None."""
        if not self._guessable:
            return None
        return next((label for text in texts if (label := self._guessable_in(text)) is not None), None)

    def redact_value(self, value: Any) -> Any:
        """A JSON value redacted; withheld whole (as text) when it holds a guessable secret."""
        dumped = _dump(value) if value is not None else None
        if dumped is not None and self._guessable and self._guessable_in(dumped) is not None:
            return self.redact_text(dumped, "value")
        return self.redact_json(value)


def _dump(value: Any) -> str | None:
    """The JSON text of a value (every string of it appears there JSON-escaped), or None."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return None
