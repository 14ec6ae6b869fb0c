"""Redaction: a secret and its encodings replaced in text, JSON values and execution results."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

import pytest

from gateway.shared._redaction import Redactor

TOKEN = "ghp_Zq8vN3kLp0Xw7Rt2Yb5Hc9Jd4Mf6Gs1Ae"


@pytest.fixture
def redactor() -> Redactor:
    return Redactor({TOKEN: "GITHUB_TOKEN", 'pa ss/wo+rd"\\é': "DB_PASSWORD"})


# ---- redaction ----------------------------------------------------------------------------------


def test_a_secret_and_its_url_json_and_base64_encodings_are_replaced_by_its_variable_name(
    redactor: Redactor,
) -> None:
    password = 'pa ss/wo+rd"\\é'
    forms = [
        password,
        quote(password),
        quote(password, safe=""),
        quote_plus(password),
        json.dumps(password)[1:-1],
        json.dumps(password, ensure_ascii=False)[1:-1],
        json.dumps(json.dumps(password)[1:-1])[1:-1],  # inside JSON text inside a JSON string
        base64.b64encode(password.encode()).decode(),
        base64.urlsafe_b64encode(password.encode()).decode().rstrip("="),
    ]
    for form in forms:
        assert redactor.redact(f"<{form}>") == "<[REDACTED:DB_PASSWORD]>", form
    assert redactor.redact(f"token {TOKEN}.") == "token [REDACTED:GITHUB_TOKEN]."


def test_a_secret_base64_encoded_inside_a_longer_text_is_redacted(redactor: Redactor) -> None:
    for user in ("u", "us", "usr"):  # every byte offset modulo 3
        basic = base64.b64encode(f"{user}:{TOKEN}".encode()).decode()
        redacted = redactor.redact(f"Authorization: Basic {basic}")
        assert "[REDACTED:GITHUB_TOKEN]" in redacted
        assert len(redacted.split("[REDACTED:GITHUB_TOKEN]")[0]) < len("Authorization: Basic ") + 8


def test_values_shorter_than_four_characters_are_never_redacted() -> None:
    redactor = Redactor({"abc": "SHORT", "abcd": "FOUR"})
    assert redactor.redact("abc abcd") == "abc [REDACTED:FOUR]"
    assert not Redactor({"ab": "X"})


def test_a_secret_whose_variable_is_unknown_gets_a_bare_label() -> None:
    assert Redactor(["s3cr3t-value"]).redact("x=s3cr3t-value") == "x=[REDACTED]"


def test_the_longest_of_two_overlapping_secrets_wins() -> None:
    redactor = Redactor({"token-1234": "SHORT", "token-1234-extended": "LONG"})
    assert redactor.redact("token-1234-extended token-1234") == "[REDACTED:LONG] [REDACTED:SHORT]"


def test_json_values_are_redacted_in_strings_and_keys_and_keep_their_shape(redactor: Redactor) -> None:
    value = {"items": [TOKEN, 1, 2.5, None, True, (f"a{TOKEN}b",)], TOKEN: {"clean": "text"}}
    assert redactor.redact_json(value) == {
        "items": ["[REDACTED:GITHUB_TOKEN]", 1, 2.5, None, True, ("a[REDACTED:GITHUB_TOKEN]b",)],
        "[REDACTED:GITHUB_TOKEN]": {"clean": "text"},
    }
    clean = {"a": ["b", {"c": 1}]}
    assert redactor.redact_json(clean) is clean  # nothing to redact: no copy


def test_text_already_holding_a_short_secrets_label_is_withheld_whole_as_if_it_held_the_secret() -> None:
    # Text a snippet chose (candidates for a PIN), redacted in place on the way, then shown: the
    # label's place among the candidates would tell which one the PIN is.
    redactor = Redactor({"4821": "PIN", "a-long-token-value-1234": "TOKEN"})
    placed = "4820_" + redactor.redact("4821") + "_4822"
    assert placed == "4820_[REDACTED:PIN]_4822"
    withheld = redactor.redact_text(placed, "traceback")
    assert withheld.startswith("[traceback withheld: it held the value of PIN")
    assert "4820" not in withheld
    long_label = "token: " + redactor.redact("a-long-token-value-1234")
    assert redactor.redact_text(long_label, "stdout") == "token: [REDACTED:TOKEN]"
