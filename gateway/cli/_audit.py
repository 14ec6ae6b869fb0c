"""`codemode-gateway audit`: the audit log as a table or JSON lines, filtered by time, tool and caller."""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import ValidationError

from gateway.audit import format_records, issuers_of, read_audit, select_records
from gateway.audit.config import AuditConfig
from gateway.cli._exit_codes import EXIT_FAILED, EXIT_OK
from gateway.config import find_config_file, format_validation_error, read_config_data
from gateway.errors import ConfigError

__all__ = ["audit_command", "parse_since"]


_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_AGE_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """`--since`: an ISO time (UTC unless it says otherwise) or an age such as 30m, 1h, 2d."""
    text = text.strip()
    if (age := _AGE.fullmatch(text)) is not None:
        delta = timedelta(**{_AGE_UNITS[age.group(2)]: float(age.group(1))})
        return (now or datetime.now(UTC)) - delta
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"--since {text!r}: give an ISO time (2026-05-01T12:00Z) or an age (30m, 1h, 2d)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _audit_path(args: argparse.Namespace) -> Path:
    if args.path:
        return Path(args.path)
    file = find_config_file(args.config)
    # Only the `audit` section is read: reading a log must not need the children's tokens in the environment.
    data = read_config_data(file) if file is not None else None
    section = data.get("audit") if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if file is None or section is None:
        raise ConfigError('no audit log configured: add an "audit" section to the config, or pass --path')
    try:
        audit = AuditConfig.model_validate(section)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, f"{file}: audit")) from None
    return audit.resolve_path(file.resolve().parent)


def audit_command(args: argparse.Namespace) -> int:
    """`audit`: print the log (and its rotated files) as a table or JSON lines."""
    path = _audit_path(args)
    since = parse_since(args.since) if args.since else None
    log = read_audit(path)
    if not log.records and not log.malformed and not path.exists():
        print(f"codemode-gateway: no audit log at {path}", file=sys.stderr)
        return EXIT_FAILED
    if log.malformed:
        print(f"codemode-gateway: skipped {log.malformed} unreadable line(s) in {path}", file=sys.stderr)
    records = select_records(
        log.records, since=since, tool=args.tool, principal=args.principal, issuer=args.issuer
    )
    issuers = issuers_of(records) if args.principal and not args.issuer else []
    if len(issuers) > 1:
        # A JWT's `sub` may equal a static token's name: two callers, never one to mix up.
        print(
            f"codemode-gateway: principal {args.principal!r} is named by {len(issuers)} issuers in this "
            f"log ({', '.join(issuers)}), each a different caller: pass --issuer to choose one",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if args.json:
        for record in records:
            print(json.dumps(record, ensure_ascii=False))
    else:
        print(format_records(records))
    return EXIT_OK
