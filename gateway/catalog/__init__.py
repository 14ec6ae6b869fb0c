"""Child tools as the snippet sees them: Python names, signatures, search, argument and result mapping,
and the lockfile that quarantines tools changed since review."""

from gateway.catalog._arguments import prepare_arguments
from gateway.catalog._catalog import Catalog, CatalogEntry, CatalogServer
from gateway.catalog._naming import server_identifiers
from gateway.catalog._precheck import precheck_calls
from gateway.catalog._results import resource_contents_value, tool_result_value
from gateway.catalog._shapes import ObservedShapes, ShapeStore
from gateway.catalog._unknown import unknown_tool_message

__all__ = (
    "Catalog",
    "CatalogEntry",
    "CatalogServer",
    "ObservedShapes",
    "ShapeStore",
    "precheck_calls",
    "prepare_arguments",
    "resource_contents_value",
    "server_identifiers",
    "tool_result_value",
    "unknown_tool_message",
)
