"""Which bearer tokens the verifier hands to the JWT check: three dot-joined parts within the size cap."""

from __future__ import annotations

from gateway.auth._jwt_shape import MAX_JWT_CHARS, looks_like_jwt


def test_three_dot_joined_parts_look_like_a_jwt() -> None:
    assert looks_like_jwt("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJib2IifQ.c2lnbmF0dXJl")


def test_a_token_with_two_or_four_parts_is_not_taken_for_a_jwt() -> None:
    assert not looks_like_jwt("header.payload")
    assert not looks_like_jwt("a.b.c.d")


def test_a_jwt_past_the_size_cap_is_not_taken_for_one() -> None:
    at_cap = "a.b." + "c" * (MAX_JWT_CHARS - 4)
    assert len(at_cap) == MAX_JWT_CHARS
    assert looks_like_jwt(at_cap)
    assert not looks_like_jwt(at_cap + "c")
