"""A team's own code around every child call (`middleware` in the config): the contract and the chain."""

from gateway.middleware._call import Call, CallNext, Middleware, Refused, Search, SearchEntry, SearchHook
from gateway.middleware._chain import Chain, Innermost, Layer, Passage
from gateway.middleware.config import (
    DEFAULT_MIDDLEWARE_TIMEOUT_SECONDS,
    DEFER_IMPORT,
    MAX_MIDDLEWARE_TIMEOUT_SECONDS,
    MiddlewarePath,
)

__all__ = (
    "DEFAULT_MIDDLEWARE_TIMEOUT_SECONDS",
    "DEFER_IMPORT",
    "MAX_MIDDLEWARE_TIMEOUT_SECONDS",
    "Call",
    "CallNext",
    "Chain",
    "Innermost",
    "Layer",
    "Middleware",
    "MiddlewarePath",
    "Passage",
    "Refused",
    "Search",
    "SearchEntry",
    "SearchHook",
)
