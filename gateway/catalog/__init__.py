"""Child tools as the snippet sees them: Python names, signatures, search, argument and result mapping."""

from gateway.catalog._arguments import prepare_arguments
from gateway.catalog._catalog import Catalog, CatalogEntry, CatalogServer
from gateway.catalog._render import Detail, render_search
from gateway.catalog._results import tool_result_value

__all__ = (
    "Catalog",
    "CatalogEntry",
    "CatalogServer",
    "Detail",
    "prepare_arguments",
    "render_search",
    "tool_result_value",
)
