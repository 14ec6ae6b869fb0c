"""The audit log: one JSON line per execution and per tool call, append-only, and reading it back."""

from gateway.audit._log import NO_CALLER, Approval, AuditLog, Caller, check_audit_log, new_execution_id
from gateway.audit._read import format_records, issuers_of, read_audit, select_records

__all__ = (
    "NO_CALLER",
    "Approval",
    "AuditLog",
    "Caller",
    "check_audit_log",
    "format_records",
    "issuers_of",
    "new_execution_id",
    "read_audit",
    "select_records",
)
