"""Resource URIs in canonical form: the one string the policy judges and the child then gets."""

from __future__ import annotations

import pytest

from gateway.policy import NonCanonicalUri, canonical_uri

EQUIVALENT = [
    ("an escaped letter in the path", "repo://acme/%73ecrets/key", "repo://acme/secrets/key"),
    ("an escaped letter in the authority", "repo://%61cme/secrets/key", "repo://acme/secrets/key"),
    ("an upper-case escape", "repo://acme/%53ecrets/key", "repo://acme/Secrets/key"),
    ("an upper-case scheme", "REPO://acme/secrets/key", "repo://acme/secrets/key"),
    ("an escaped space", "repo://acme/my%20notes/key", "repo://acme/my notes/key"),
    ("escaped UTF-8", "note://caf%C3%A9", "note://café"),
    ("an escaped tilde and dash", "note://a%7E%2Db", "note://a~-b"),
]


@pytest.mark.parametrize(("uri", "canonical"), [e[1:] for e in EQUIVALENT], ids=[e[0] for e in EQUIVALENT])
def test_a_uri_with_an_equivalent_plain_form_is_judged_and_sent_in_it(uri: str, canonical: str) -> None:
    assert canonical_uri(uri) == canonical
    assert canonical_uri(canonical) == canonical  # the form is a fixed point: computed once, same again


PLAIN = [
    "note://public",
    "file:///srv/a/b.txt",
    "file:///srv/a/",
    "urn:isbn:0451450523",
    "repo://acme/a/b?q=..#x",
]


@pytest.mark.parametrize("uri", PLAIN)
def test_a_plain_uri_is_its_own_canonical_form(uri: str) -> None:
    assert canonical_uri(uri) == uri


REFUSED = [
    ("an escaped slash", "repo://acme%2Fsecrets/key/x", "'%2F'"),
    ("an escaped backslash", "file:///srv/a%5C..%5Cb", "'%5C'"),
    ("an escaped percent sign (a second decoding)", "repo://acme/%2573ecrets/key", "'%25'"),
    ("an escaped colon", "repo%3A//acme/x", "'%3A'"),
    ("an escaped control character", "note://a%0Ab", "'%0A'"),
    ("escapes that are not UTF-8", "note://a%C3", "not UTF-8"),
    ("an escape made by decoding", "note://a/%%37%33", "makes another ('%73')"),
    ("a parent segment", "file:///srv/public/../secrets", "'..' segment"),
    ("an escaped parent segment", "repo://acme/public/%2e%2e/secrets", "'..' segment"),
    ("a dot segment", "file:///srv/./secrets", "'.' segment"),
    ("a parent behind a backslash", "file:///srv\\..\\secrets", "'..' segment"),
    ("an empty segment", "file:///srv//secrets", "empty segment"),
    ("a raw control character", "note://a\nb", "U+000A"),
]


@pytest.mark.parametrize(("uri", "says"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_a_uri_with_no_single_meaning_is_refused_saying_why(uri: str, says: str) -> None:
    with pytest.raises(NonCanonicalUri) as refused:
        canonical_uri(uri)
    assert says in str(refused.value)
