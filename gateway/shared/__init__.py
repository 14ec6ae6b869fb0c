"""Small helpers every wing uses: JSON values and schemas, display, redaction, logs, the version, and
each caller's share of a pool of places."""

from gateway.shared._display import format_row, format_table, printable, terminal_text
from gateway.shared._exception_groups import leaf_error
from gateway.shared._json import MAX_JSON_DEPTH, as_array, as_object, nesting_depth, properties_of
from gateway.shared._logging import NOTICE, JsonFormatter, redact_logs
from gateway.shared._redaction import Redactor
from gateway.shared._shares import Shares, ShareWaitTimedOut, share_of
from gateway.shared._version import PACKAGE_NAME, package_version

__all__ = (
    "MAX_JSON_DEPTH",
    "NOTICE",
    "PACKAGE_NAME",
    "JsonFormatter",
    "Redactor",
    "ShareWaitTimedOut",
    "Shares",
    "as_array",
    "as_object",
    "format_row",
    "format_table",
    "leaf_error",
    "nesting_depth",
    "package_version",
    "printable",
    "properties_of",
    "redact_logs",
    "share_of",
    "terminal_text",
)
