"""What one execution returns: the full record (`exec --json`, and execute_code with `details`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from gateway.errors import ExecutionFailed, SnippetError

__all__ = ["ErrorInfo", "ExecutionResult", "ShownItem", "ToolCallRecord"]


class ToolCallRecord(BaseModel):
    """One tool call the snippet made: `error` is the kind of failure, `message` what the snippet was told."""

    tool: str
    ms: float
    ok: bool
    error: str | None = None
    message: str | None = None


class ShownItem(BaseModel):
    """An image, audio clip or file the snippet showed: it reaches the client as MCP content."""

    kind: Literal["image", "audio", "resource"]
    mime_type: str
    size: int = Field(description="Bytes, decoded.")
    uri: str | None = None
    # The bytes as base64: sent as the content block itself, never inside the structured result.
    data: str = Field(exclude=True, repr=False)


class ErrorInfo(BaseModel):
    """Why an execution failed: `type` is the error class, `category` one of snippet, limit, denied,
    crash, cancelled."""

    type: str
    category: str
    message: str
    traceback: str | None = None

    @classmethod
    def from_exception(cls, exc: ExecutionFailed) -> ErrorInfo:
        """Describe a gateway execution error for the wire."""
        if isinstance(exc, SnippetError):
            return cls(
                type=exc.exc_type, category=exc.category, message=str(exc), traceback=exc.traceback or None
            )
        return cls(type=type(exc).__name__, category=exc.category, message=str(exc))


class ExecutionResult(BaseModel):
    """The outcome of one snippet: output, last value, error, tool-call log and cost."""

    ok: bool
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    value: Any = Field(
        default=None, description="The last expression's value as JSON (its repr if not JSON)."
    )
    value_repr: str | None = None
    error: ErrorInfo | None = None
    tool_calls: list[ToolCallRecord] = Field(default_factory=list[ToolCallRecord])
    shown: list[ShownItem] = Field(
        default_factory=list[ShownItem],
        description="Images, audio and files the snippet showed, sent as MCP content blocks.",
    )
    fuel: int = 0
    ms: float = 0.0

    def summary(self) -> str:
        """A short text for a human or a model: output, then the value or the error."""
        parts: list[str] = []
        if self.stdout:
            parts.append(self.stdout.rstrip("\n"))
        if self.stderr:
            parts.append("[stderr]\n" + self.stderr.rstrip("\n"))
        if self.error is not None:
            parts.append(
                self.error.traceback.rstrip("\n")
                if self.error.traceback
                else f"{self.error.type}: {self.error.message}"
            )
        elif self.value_repr is not None:
            parts.append(self.value_repr)
        return "\n".join(parts) if parts else "(no output)"
