"""The `background` section's shares of what finished runs keep (gateway/config/_background.py)."""

from __future__ import annotations

from gateway.config.server import BackgroundConfig


def test_a_callers_share_of_kept_runs_is_a_tenth_of_the_total_unless_the_config_says() -> None:
    assert BackgroundConfig().kept_per_caller() == 10
    assert BackgroundConfig(max_kept=3).kept_per_caller() == 1
    assert BackgroundConfig(max_kept=3, max_kept_per_caller=2).kept_per_caller() == 2
    assert BackgroundConfig(max_kept=3, max_kept_per_caller=50).kept_per_caller() == 3  # never past the total


def test_a_callers_share_of_kept_bytes_is_never_more_than_the_total() -> None:
    assert BackgroundConfig().kept_bytes_per_caller() == 32 * 2**20
    small = BackgroundConfig(max_kept_bytes=2**20, max_kept_bytes_per_caller=2 * 2**20)
    assert small.kept_bytes_per_caller() == 2**20
