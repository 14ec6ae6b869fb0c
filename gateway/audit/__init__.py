"""The audit log: one JSON line per execution and per tool call, append-only, and reading it back."""

from gateway.audit._log import MAX_TOOL_CHARS, NO_CALLER, Approval, AuditLog, Caller, new_execution_id
from gateway.audit._read import (
    AuditRecords,
    audit_files,
    format_records,
    issuers_of,
    read_audit,
    select_records,
)
from gateway.audit.config import AuditConfig

__all__ = (
    "MAX_TOOL_CHARS",
    "NO_CALLER",
    "Approval",
    "AuditConfig",
    "AuditLog",
    "AuditRecords",
    "Caller",
    "audit_files",
    "format_records",
    "issuers_of",
    "new_execution_id",
    "read_audit",
    "select_records",
)
