"""Small helpers every wing uses: JSON values and schemas, display, redaction, logs, the version."""

from gateway.shared._display import format_row, format_table, printable
from gateway.shared._exception_groups import leaf_error
from gateway.shared._json import as_array, as_object, properties_of
from gateway.shared.json_schema import (
    UnsupportedPattern,
    best_error,
    ecma_regex,
    linear_validator,
    short_message,
)
from gateway.shared._logging import JsonFormatter, redact_logs
from gateway.shared._redaction import Redactor
from gateway.shared._version import PACKAGE_NAME, package_version

__all__ = (
    "PACKAGE_NAME",
    "JsonFormatter",
    "Redactor",
    "UnsupportedPattern",
    "as_array",
    "as_object",
    "best_error",
    "ecma_regex",
    "format_row",
    "format_table",
    "leaf_error",
    "linear_validator",
    "package_version",
    "printable",
    "properties_of",
    "redact_logs",
    "short_message",
)
