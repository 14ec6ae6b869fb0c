"""A team's own code around every child call (`middleware` in the config): the contract and the chain."""

from gateway.middleware._call import Call, CallNext, Middleware, Refused, Search, SearchEntry
from gateway.middleware._chain import Chain, Layer, Passage

__all__ = (
    "Call",
    "CallNext",
    "Chain",
    "Layer",
    "Middleware",
    "Passage",
    "Refused",
    "Search",
    "SearchEntry",
)
