"""HTTP connections counted per client address before any request (in process)."""

from __future__ import annotations

import logging

import pytest

from gateway.server._connections import AddressCounts


def test_a_connection_past_the_per_address_cap_is_refused_while_other_addresses_connect() -> None:
    counts = AddressCounts(2)
    assert counts.open("10.0.0.1")
    assert counts.open("10.0.0.1")
    assert not counts.open("10.0.0.1")
    assert counts.open("10.0.0.2")
    assert counts["10.0.0.1"] == 2
    counts.close("10.0.0.1")
    assert counts.open("10.0.0.1")


def test_a_flood_from_one_address_is_logged_once_until_it_falls_below_the_cap(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counts = AddressCounts(1)
    with caplog.at_level(logging.WARNING, logger="gateway.server.http"):
        assert counts.open("10.0.0.1")
        for _ in range(100):
            assert not counts.open("10.0.0.1")
        counts.close("10.0.0.1")
        assert counts.open("10.0.0.1")
        assert not counts.open("10.0.0.1")
    refusals = [record for record in caplog.records if "too many from one address" in record.getMessage()]
    assert len(refusals) == 2
    assert refusals[0].__dict__["key"] == "http.max_connections_per_address"
    assert counts["10.0.0.1"] == 1
