"""Structured logs on stderr (stdout belongs to the MCP protocol): one JSON object per line, redacted."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from typing import Any

from gateway.shared._display import terminal_text
from gateway.shared._redaction import Redactor

__all__ = ["NOTICE", "JsonFormatter", "RedactingFilter", "redact_logs"]

NOTICE = 25
"""Between info and warning: what an operator needs to see of a normal run (the URL served on, a
reload applied), shown at the default level without being a warning."""
logging.addLevelName(NOTICE, "NOTICE")

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Renders a record and its `extra` fields as one JSON line that moves no terminal's cursor."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        # JSON escapes only C0 controls: a C1 CSI, a bidi override or a line separator a child wrote to
        # its stderr would reach the operator's terminal raw, so those are escaped too.
        return terminal_text(json.dumps(entry, default=str, ensure_ascii=False))


class RedactingFilter(logging.Filter):
    """Redacts a log record's message, `extra` fields, exception and stack text; never drops a record.

    Attach it to handlers (see `redact_logs`): a logger's own filters miss records from its children.
    """

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor  # replaceable once the config (and so the secrets) is known

    def filter(self, record: logging.LogRecord) -> bool:
        redactor = self.redactor
        if not redactor:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave it for the handler to report
            message = None
        if message is not None:
            record.msg, record.args = redactor.redact(message), None
        fields = record.__dict__
        for key, value in list(fields.items()):
            if key in _STANDARD or key.startswith("_"):
                continue
            if isinstance(value, str | dict | list | tuple):
                fields[key] = redactor.redact_json(value)
            elif not isinstance(value, int | float | bool | None):
                text = str(value)  # what the JSON formatter would write for it
                if (redacted := redactor.redact(text)) != text:
                    fields[key] = redacted
        if record.exc_info:
            # Rendered and redacted once here; `exc` is the key the JSON formatter emits it under.
            record.exc_text = redactor.redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
            fields["exc"] = record.exc_text
        elif record.exc_text:
            record.exc_text = redactor.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redactor.redact(record.stack_info)
        return True


def redact_logs(redactor: Redactor, loggers: Iterable[str] = ("gateway", "mcp")) -> RedactingFilter:
    """Add one RedactingFilter to every handler of these loggers (call after `configure_logging`)."""
    redacting = RedactingFilter(redactor)
    for name in loggers:
        for handler in logging.getLogger(name).handlers:
            handler.addFilter(redacting)
    return redacting
