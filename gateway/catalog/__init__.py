"""Child tools as the snippet sees them: Python names, signatures, search, argument and result mapping."""

from gateway.catalog._arguments import prepare_arguments
from gateway.catalog._catalog import Catalog, CatalogEntry, CatalogServer
from gateway.catalog._discovery import read_docs
from gateway.catalog._evaluation import (
    SearchCase,
    SearchReport,
    evaluate_search,
    load_search_cases,
    load_tool_snapshots,
)
from gateway.catalog._render import DEFAULT_SEARCH_LIMIT, Detail, render_search
from gateway.catalog._results import tool_result_value

__all__ = (
    "DEFAULT_SEARCH_LIMIT",
    "Catalog",
    "CatalogEntry",
    "CatalogServer",
    "Detail",
    "SearchCase",
    "SearchReport",
    "evaluate_search",
    "load_search_cases",
    "load_tool_snapshots",
    "prepare_arguments",
    "read_docs",
    "render_search",
    "tool_result_value",
)
