"""What a search is asked: how many tools it shows, in how much detail, and the refusal of a question
past a cap. Apart from the search itself, so the gateway's handlers name them before it loads."""

from __future__ import annotations

from typing import Literal

__all__ = ["DEFAULT_SEARCH_LIMIT", "Detail", "SearchRefused"]

Detail = Literal["names", "signatures", "full"]

DEFAULT_SEARCH_LIMIT = 5
"""Signatures a search shows unless asked for more: enough to choose from, little context spent."""


class SearchRefused(ValueError):
    """A search's question is past a cap: the message names it and says what to ask instead."""
