"""The one form in which the policy judges a resource URI, and in which the child then gets it.

Children percent-decode what they receive (the SDK's URI templates do), so a rule matched against
the URI as the snippet wrote it could judge `repo://acme/%73ecrets/key` while the child reads
`repo://acme/secrets/key`. `canonical_uri` computes, once, the form both see: the scheme in lower
case (RFC 3986 makes it case-insensitive), and every percent-escape decoded where decoding cannot
change the URI's structure. Escapes that could (of a reserved character such as `/`, of `%`, of a
backslash or a control character, or bytes that are not UTF-8), and dot or empty path segments,
which a child may resolve, are refused instead: there is no single meaning to judge.
"""

from __future__ import annotations

import re
import string

__all__ = ["NonCanonicalUri", "canonical_uri", "disguised_escape"]

_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
# RFC 3986 gen-delims and sub-delims, `%` (a second decoding) and `\` (a separator to some children).
_STRUCTURAL = frozenset(":/?#[]@!$&'()*+,;=%\\")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_PERCENT_RUN = re.compile(r"%(?:25)+", re.IGNORECASE)


class NonCanonicalUri(ValueError):
    """A URI with no single meaning to judge; the message says what to write instead."""


def canonical_uri(uri: str) -> str:
    """`uri` as the policy judges it and the child gets it; raises NonCanonicalUri saying why not."""
    if (control := next((c for c in uri if ord(c) < 0x20 or ord(c) == 0x7F), None)) is not None:
        raise NonCanonicalUri(f"it holds the control character U+{ord(control):04X}")
    scheme = _SCHEME.match(uri)
    head = scheme.group().lower() if scheme is not None else ""
    decoded = head + _ESCAPES.sub(_decoded_run, uri[len(head) :])
    if (left := _ESCAPE.search(decoded)) is not None:  # `%%37%33`: an escape made by decoding
        raise NonCanonicalUri(
            f"decoding its percent-escapes makes another ({left.group()!r}): write the characters themselves"
        )
    if (segment := _unresolved_segment(decoded, len(head))) is not None:
        raise NonCanonicalUri(
            f"its path has {segment}, which a child may resolve: write the path it leads to"
        )
    return decoded


def _decoded_run(match: re.Match[str]) -> str:
    """A run of percent-escapes decoded, or NonCanonicalUri if one would change the URI's structure."""
    run = match.group()
    raw = bytes.fromhex(run.replace("%", ""))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NonCanonicalUri(f"its percent-escapes {run!r} are not UTF-8 text") from None
    for index, char in enumerate(text):
        if char in _STRUCTURAL or ord(char) < 0x20 or ord(char) == 0x7F:
            escape = run[index * 3 : index * 3 + 3] if text.isascii() else run
            raise NonCanonicalUri(
                f"it holds the percent-escape {escape!r} (for {char!r}), which a child may decode after the "
                "policy judged the URI: write the URI without it"
            )
    return text


def _unresolved_segment(uri: str, scheme_end: int) -> str | None:
    """A `.`, `..` or empty segment of the URI's path (past `scheme://authority`; `\\` splits too, as for
    some children), described, or None."""
    rest = uri[scheme_end:]
    if rest.startswith("//"):
        slash = re.search(r"[/\\]", rest[2:])
        rest = "" if slash is None else rest[2 + slash.start() :]
    path = re.split(r"[?#]", rest, maxsplit=1)[0]
    segments = re.split(r"[/\\]", path)
    for index, segment in enumerate(segments):
        if segment in (".", ".."):
            return f"a {segment!r} segment"
        if segment == "" and 0 < index < len(segments) - 1:
            return "an empty segment ('//')"
    return None


def disguised_escape(text: str) -> str | None:
    """A percent-escape of an unreserved character (`%73` for `s`), after any `%25` runs collapse, or
    None: such an escape only ever disguises the character, which a rule then fails to see."""
    for match in _ESCAPE.finditer(_PERCENT_RUN.sub("%", text)):
        char = chr(int(match.group(1), 16))
        if char in _UNRESERVED:
            return f"the percent-escape {match.group()!r} (for {char!r})"
    return None
