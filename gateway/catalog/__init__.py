"""Child tools as the snippet sees them: Python names, signatures, search, argument and result mapping,
and the lockfile that quarantines tools changed since review."""

from gateway.catalog._arguments import prepare_arguments
from gateway.catalog._catalog import Catalog, CatalogEntry, CatalogServer
from gateway.catalog._discovery import read_docs
from gateway.catalog.evaluation import (
    SearchCase,
    SearchReport,
    compare_reports,
    evaluate_search,
    load_search_cases,
    load_tool_snapshots,
)
from gateway.catalog._lock import (
    LOCKED_PARTS,
    Drift,
    ToolLock,
    lock_commands,
    lock_path,
    read_lock,
    write_lock,
)
from gateway.catalog._precheck import Finding, precheck_calls
from gateway.catalog._quarantine import CatalogLock, Quarantine
from gateway.catalog._render import DEFAULT_SEARCH_LIMIT, Detail, render_search
from gateway.catalog._results import resource_contents_value, tool_result_value
from gateway.catalog._search import SearchRefused, check_search, warm_search
from gateway.catalog._semantic import SemanticSearch, semantic_installed, semantic_search
from gateway.catalog._shapes import ObservedShapes, ShapeStore
from gateway.catalog._unknown import unknown_tool_message
from gateway.catalog.config import DEFAULT_MAX_QUERY_CHARS, SearchConfig

__all__ = (
    "DEFAULT_MAX_QUERY_CHARS",
    "DEFAULT_SEARCH_LIMIT",
    "LOCKED_PARTS",
    "Catalog",
    "CatalogEntry",
    "CatalogLock",
    "CatalogServer",
    "Detail",
    "Drift",
    "Finding",
    "ObservedShapes",
    "Quarantine",
    "SearchCase",
    "SearchConfig",
    "SearchRefused",
    "SearchReport",
    "SemanticSearch",
    "ShapeStore",
    "ToolLock",
    "check_search",
    "compare_reports",
    "evaluate_search",
    "load_search_cases",
    "load_tool_snapshots",
    "lock_commands",
    "lock_path",
    "precheck_calls",
    "prepare_arguments",
    "read_docs",
    "read_lock",
    "render_search",
    "resource_contents_value",
    "semantic_installed",
    "semantic_search",
    "tool_result_value",
    "unknown_tool_message",
    "warm_search",
    "write_lock",
)
