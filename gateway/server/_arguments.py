"""The arguments of `search_docs` and `execute_code`: their input schemas, and the refusals that name
the rule an argument broke.

execute_code's `code` is needed unless `collect` or `cancel` names a background run. JSON Schema says
that only with a top-level `anyOf`, which the Anthropic API refuses and Claude Code drops or rewrites
(docs/results.md): so the schema says it in the descriptions, and the refusals here enforce it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.catalog.docs import DEFAULT_SEARCH_LIMIT

__all__ = [
    "BackgroundExecuteCodeArgs",
    "ExecuteCodeArgs",
    "SearchDocsArgs",
    "bad_arguments",
    "execute_code_arguments",
    "input_schema",
]

CODE_DESCRIPTION = "Python source; top-level await is allowed."
DETAILS_DESCRIPTION = (
    "Also return the full record as JSON: every tool call with its time and outcome, fuel and "
    "milliseconds used. Off by default: the result is what the snippet printed and its value."
)
CONTROLS = ("collect", "cancel")
"""The arguments that name a background run instead of giving code."""


class SearchDocsArgs(BaseModel):
    query: str = Field(default="", description="What the tool should do; empty for an overview.")
    server: str | None = Field(default=None, description="Only this server's tools.")
    limit: int = Field(default=DEFAULT_SEARCH_LIMIT, ge=1, le=50, description="How many tools to show.")
    detail: Literal["names", "signatures", "full"] = Field(
        default="signatures", description="full adds each tool's JSON Schema."
    )


class ExecuteCodeArgs(BaseModel):
    """execute_code's arguments when background executions are off."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(min_length=1, description=CODE_DESCRIPTION)
    timeout: float | None = Field(default=None, gt=0, description="Seconds; capped by the gateway's limit.")
    details: bool = Field(default=False, description=DETAILS_DESCRIPTION)


class BackgroundExecuteCodeArgs(BaseModel):
    """execute_code's arguments when background executions are on: code to run, or a run to collect
    or cancel (`execute_code_arguments` enforces which go together)."""

    model_config = ConfigDict(extra="forbid")

    code: str | None = Field(
        default=None, description=CODE_DESCRIPTION + " Required, unless collect or cancel is given."
    )
    timeout: float | None = Field(default=None, gt=0, description="Seconds; capped by the gateway's limit.")
    details: bool = Field(default=False, description=DETAILS_DESCRIPTION)
    background: bool = Field(default=False, description="Run in the background; answers an id at once.")
    collect: str | None = Field(
        default=None, description="A background run's id: its result, once it ends. Give it alone."
    )
    cancel: str | None = Field(default=None, description="A background run's id: cancel it. Give it alone.")


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON Schema as a tool's inputSchema: no titles, and an optional argument shown as
    its type alone (absent means not given, so neither `null` nor a default of null is offered)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)  # the model's docstring, for this code's readers
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        branches = [b for b in prop.pop("anyOf", []) if b != {"type": "null"}]
        if len(branches) == 1:
            prop.update(branches[0])
        if prop.get("default", 0) is None:
            del prop["default"]
    return schema


def bad_arguments(tool: str, exc: ValidationError, accepted: type[BaseModel]) -> str:
    """What was wrong with a tool's arguments, naming each argument and, for an unknown one, those
    the tool takes."""
    problems: list[str] = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        if error["type"] == "extra_forbidden":
            problems.append(
                f"{where}: not an argument of {tool} (it takes {', '.join(accepted.model_fields)})"
            )
        elif error["type"] == "missing":
            problems.append(f"{where}: required")
        else:
            problems.append(f"{where}: {error['msg']}")
    return f"invalid arguments for {tool}: {'; '.join(problems)}"


def execute_code_arguments(
    arguments: dict[str, Any], *, background: bool
) -> ExecuteCodeArgs | BackgroundExecuteCodeArgs | str:
    """execute_code's arguments, validated; or, refused, the message naming the rule they broke."""
    model = BackgroundExecuteCodeArgs if background else ExecuteCodeArgs
    if not arguments.get("code") and not (background and any(arguments.get(c) for c in CONTROLS)):
        needed = (
            "code is required unless collect or cancel names a background run"
            if background
            else "code is required"
        )
        return f"invalid arguments for execute_code: {needed} (the Python source to run)"
    try:
        run = model.model_validate(arguments)
    except ValidationError as exc:
        return bad_arguments("execute_code", exc, model)
    if isinstance(run, BackgroundExecuteCodeArgs):
        return _refused_combination(run) or run
    return run


def _refused_combination(run: BackgroundExecuteCodeArgs) -> str | None:
    """Why these arguments cannot go together, if they cannot: collect and cancel each take a
    background run's id alone."""
    control = next((name for name in CONTROLS if getattr(run, name) is not None), None)
    if control is None:
        return None
    given = [
        name for name in run.model_fields_set if name != control and getattr(run, name) not in (None, False)
    ]
    if not given:
        return None
    return (
        f"invalid arguments for execute_code: {control} takes a background run's id alone, "
        f"without {', '.join(sorted(given))} (code, timeout, details and background go with the call "
        "that starts the run)"
    )
