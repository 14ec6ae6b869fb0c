"""The config's `search` section: how search_docs (and a snippet's search()) ranks and shows tools."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gateway.catalog._semantic import SemanticMode

__all__ = [
    "DEFAULT_MAX_QUERY_CHARS",
    "DEFAULT_SERVER_INSTRUCTIONS_CHARS",
    "MAX_QUERY_CHARS_CEILING",
    "SearchConfig",
]

DEFAULT_MAX_QUERY_CHARS = 1_000
MAX_QUERY_CHARS_CEILING = 4_000
"""The most `search.max_query_chars` may be: the sandbox's cap on a question's JSON leaves room for
a query this long however it is escaped."""

DEFAULT_SERVER_INSTRUCTIONS_CHARS = 2_000
"""Enough for a server's usage notes (the reference `everything` server's are 1.6 KB)."""


class SearchConfig(BaseModel):
    """How search ranks and shows tools (the config's `search` section)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Search")

    semantic: SemanticMode = Field(
        default="auto",
        description="Re-rank search by meaning with a small embedding model (all-MiniLM-L6-v2, int8) that "
        "ships inside the wheel and runs on ONNX Runtime, which every install brings. `auto` (the default) "
        "uses it where it is installed and otherwise keeps search lexical, saying so once in the log; `on` "
        "requires it (the gateway refuses to start without it); `off` keeps search lexical and saves "
        "the memory the model takes (about 65 MiB). Nothing is downloaded or built at run "
        "time; the model loads in the background, and searches are lexical until it is ready.",
    )
    max_query_chars: int = Field(
        default=DEFAULT_MAX_QUERY_CHARS,
        ge=16,
        le=MAX_QUERY_CHARS_CEILING,
        description="Longest query search_docs and a snippet's search() take, in characters; a longer one "
        "is refused naming this key. A query says what a tool does in a few words: one far longer is a "
        "mistake, or work forced on the gateway.",
    )
    server_instructions_chars: int = Field(
        default=DEFAULT_SERVER_INSTRUCTIONS_CHARS,
        ge=0,
        le=100_000,
        description="The most characters of a child's own `instructions` (its usage notes, sent when it "
        "connects, redacted like all child text) that `search_docs(server=...)` and a snippet's "
        "`help(tools.<server>)` show; longer ones are cut, saying so. 0 never shows them.",
    )
    wait_seconds: float = Field(
        default=10.0,
        ge=0,
        le=600,
        description="How long a search that needs children still starting waits for them before it answers "
        "without them, naming them: `search_docs(server=...)` for that child, and a query no tool of the "
        "children ready fits for all of them (as `tools/list` does for the children of `expose`'s tools). "
        "At most `startup_timeout_seconds`; 0 always answers at once. A query a ready child's tool fits "
        "never waits.",
    )
    observed_shapes: bool = Field(
        default=True,
        description="Show, in the signature of a tool without an output schema, the shape of what its calls "
        "returned so far (types and field names, never values; keys that are data fold into "
        "`dict[str, ...]`), marked `(observed)`. With `auth`, each caller sees only what its own calls "
        "returned; without it, every caller shares one set. Dropped when the tool's schema changes. Turn "
        "off where no field name of a result may be shown.",
    )
