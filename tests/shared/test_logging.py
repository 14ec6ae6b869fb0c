"""Logs: JSON lines on stderr, with secrets redacted from every field of a record."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from gateway.shared._logging import JsonFormatter, redact_logs
from gateway.shared._redaction import Redactor

TOKEN = "ghp_Zq8vN3kLp0Xw7Rt2Yb5Hc9Jd4Mf6Gs1Ae"


@pytest.fixture
def redactor() -> Redactor:
    return Redactor({TOKEN: "GITHUB_TOKEN", 'pa ss/wo+rd"\\é': "DB_PASSWORD"})


# ---- logs ---------------------------------------------------------------------------------------


@pytest.fixture
def json_log() -> Iterator[tuple[logging.Logger, io.StringIO, logging.Handler]]:
    """A logger under `gateway` with its own JSON handler, as configure_logging sets one up."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("gateway.test_secrets")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield logger, stream, handler
    finally:
        logger.removeHandler(handler)


def test_the_log_filter_redacts_message_arguments_extras_and_exception_text(
    redactor: Redactor, json_log: tuple[logging.Logger, io.StringIO, logging.Handler]
) -> None:
    logger, stream, _ = json_log
    redact_logs(redactor, loggers=[logger.name])
    logger.info("calling with %s", TOKEN, extra={"headers": {"Authorization": f"Bearer {TOKEN}"}, "n": 3})
    try:
        raise RuntimeError(f"child said {TOKEN}")
    except RuntimeError:
        logger.exception("failed", extra={"line": f"stderr {TOKEN}"})
    text = stream.getvalue()
    assert TOKEN not in text
    first, second = (json.loads(line) for line in text.splitlines())
    assert first["msg"] == "calling with [REDACTED:GITHUB_TOKEN]"
    assert first["headers"] == {"Authorization": "Bearer [REDACTED:GITHUB_TOKEN]"}
    assert first["n"] == 3
    assert second["line"] == "stderr [REDACTED:GITHUB_TOKEN]"
    assert "RuntimeError: child said [REDACTED:GITHUB_TOKEN]" in second["exc"]


def test_the_log_filter_on_a_handler_also_redacts_records_of_child_loggers(
    redactor: Redactor, json_log: tuple[logging.Logger, io.StringIO, logging.Handler]
) -> None:
    logger, stream, handler = json_log
    redact_logs(redactor, loggers=[logger.name])
    assert len(handler.filters) == 1
    logging.getLogger(f"{logger.name}.child").warning("child stderr", extra={"line": TOKEN})
    assert json.loads(stream.getvalue())["line"] == "[REDACTED:GITHUB_TOKEN]"


def test_a_log_line_carries_no_character_a_terminal_acts_on_and_reads_back_the_same(
    json_log: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    logger, stream, _ = json_log
    line = "cannot handle \x9b2K\r\u202e\u2028forged\x1b]0;t\x07"  # what a child may print to its stderr
    logger.info("child stderr %s", "\x85", extra={"line": line})

    written = stream.getvalue()
    assert written.count("\n") == 1
    assert written.endswith("\n")
    assert not {"\x9b", "\x85", "\r", "\x1b", "\u202e", "\u2028"} & set(written)
    record = json.loads(written)
    assert record["line"] == line
    assert record["msg"] == "child stderr \x85"
