"""The config's `policy` section: which child tools exist for the model, may be called, how, and how often.

Every pattern is an fnmatch glob, case-sensitive, matched against a tool's qualified Python name
(`server.tool`, as search_docs shows it); `server.*` names all of a server's tools. A pattern holding
a `:` is a resource rule instead, matched against `server:uri` (`github:repo://*`); resources are
governed by `allow`, `deny` and `hidden` alone. `*` matches every tool and every resource; any other
pattern matches tools or resources, never both. A rule is a pattern, or
`{"pattern": ..., "optional": true}` for one that may name a server the config does not have.
"""

from __future__ import annotations

import fnmatch
import re
import string
from collections.abc import Collection
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetPydanticSchema,
    SecretStr,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

__all__ = [
    "MIN_APPROVALS_KEY_BYTES",
    "RULE_LISTS",
    "ApprovalsConfig",
    "Glob",
    "PolicyConfig",
    "PolicyRule",
    "PolicyRules",
    "RateLimit",
    "RoleConfig",
    "Rule",
    "RuleList",
    "ToolName",
    "ToolPolicy",
    "may_name_server",
    "server_part",
]

_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_.")
_SERVER_CHARS = _NAME_CHARS - {"."}
_URI_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*")


def _class_end(pattern: str, start: int) -> int:
    """Index of the `]` closing the class opened at `start`, as fnmatch reads it; -1 if none."""
    j = start + 1
    if pattern[j : j + 1] == "!":
        j += 1
    if pattern[j : j + 1] == "]":  # a `]` right after `[` or `[!` is a literal
        j += 1
    return pattern.find("]", j)


def is_resource_rule(pattern: str) -> bool:
    """Whether a pattern matches resources (`server:uri`): those holding a `:`, and `*`."""
    return ":" in pattern or pattern == "*"


def is_tool_rule(pattern: str) -> bool:
    """Whether a pattern matches tools (`server.tool`): those without a `:`."""
    return ":" not in pattern


def server_part(pattern: str) -> tuple[str, str]:
    """The pattern up to its first `.`, `:` or `*` outside a `[...]` class, and that character (or "")."""
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "[":
            end = _class_end(pattern, i)
            i = end + 1 if end >= 0 else len(pattern)
            continue
        if char in ".:*":
            return pattern[:i], char
        i += 1
    return pattern, ""


def may_name_server(pattern: str, servers: Collection[str]) -> bool:
    """Whether a rule's pattern could match a tool or resource of a server going by one of `servers`
    (its Python name, as rules match it); False only when it certainly cannot."""
    part, end = server_part(pattern)
    if not part:
        return True  # `*`, `*.read_*`: any server
    wild = any(char in part for char in "?[")
    if end == "." or (end == ":" and not wild):
        # `server.tool` holds one dot, which the pattern's literal one must take, and `server:uri` its
        # first colon, which a part without wildcards cannot reach past: `part` matches the server whole.
        return any(fnmatch.fnmatchcase(server, part) for server in servers)
    if wild:
        return True  # `g?t*`, `s?:uri`: a wildcard might take the dot or colon; not worth deciding
    return any(server.startswith(part) for server in servers)  # `git*`


def _unexpected_char(pattern: str, allowed: frozenset[str]) -> str | None:
    """The first character outside `allowed`, `*` and `?` that no `[...]` class holds; raises for a
    class never closed."""
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "[":
            end = _class_end(pattern, i)
            if end < 0:
                raise ValueError(f'"[" at position {i} of {pattern!r} is never closed')
            i = end + 1
            continue
        if char not in allowed and char not in "*?":
            return char
        i += 1
    return None


def _check_resource_glob(pattern: str) -> str:
    """Refuse resource rules (`server:uri`) that can never match: the server part is a Python name."""
    server, _, uri = pattern.partition(":")
    if not server or not uri:
        raise ValueError(
            f'{pattern!r} names no resource: resource rules are "server:uri", with a glob on each side '
            '("github:repo://*"; "github:*" for all of a server\'s resources)'
        )
    if (char := _unexpected_char(server, _SERVER_CHARS)) is not None:
        raise ValueError(
            f"{char!r} cannot occur in a server name: write the server's Python name, as search_docs "
            'shows it, before the ":" of a resource rule ("server:uri")'
        )
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in uri):
        raise ValueError(f"{pattern!r} holds a control character, which no resource URI does")
    if (escape := _URI_ESCAPE.search(uri)) is not None:
        raise ValueError(
            f"{pattern!r} holds the percent-escape {escape.group()!r}: rules judge URIs with their escapes "
            "decoded, as children read them; write the characters themselves"
        )
    scheme = _URI_SCHEME.match(uri)
    if scheme is not None and scheme.group() != scheme.group().lower():
        raise ValueError(
            f"{pattern!r} writes its scheme in upper case: rules judge URIs with the scheme in lower case "
            f"(write {scheme.group().lower()!r})"
        )
    return pattern


def _check_glob(pattern: str) -> str:
    """Refuse globs that can never match a qualified name: a silent no-op `deny` is a hole."""
    if not pattern:
        raise ValueError("a pattern must not be empty")
    if ":" in pattern:
        return _check_resource_glob(pattern)
    char = _unexpected_char(pattern, _NAME_CHARS)
    if char is not None:
        hint = ' ("-" becomes "_")' if char == "-" else ""
        raise ValueError(
            f"{char!r} cannot occur in a tool name: write the Python name search_docs shows{hint}"
        )
    if "." not in pattern and "*" not in pattern:
        raise ValueError(
            f'{pattern!r} names no tool: tools are "server.tool" (write "{pattern}.*" for a whole server)'
        )
    return pattern


def _check_tool_name(name: str) -> str:
    if not _TOOL_NAME.fullmatch(name):
        raise ValueError(
            f"{name!r} must name one tool exactly, as search_docs shows it (server.tool, no globs)"
        )
    return name


Glob = Annotated[str, AfterValidator(_check_glob)]
ToolName = Annotated[str, AfterValidator(_check_tool_name)]


class PolicyRule(BaseModel):
    """A rule in its long form: a pattern, and whether it may name a server the config does not have."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Policy rule")

    pattern: Glob = Field(
        description="The fnmatch glob over `server.tool` Python names, or over `server:uri` for resources."
    )
    optional: bool = Field(
        default=False,
        description="The rule may name a server that is not configured (it is not a config error then).",
    )


def _rule(value: Any, handler: core_schema.ValidatorFunctionWrapHandler) -> str | PolicyRule:
    if isinstance(value, str):
        return _check_glob(value)  # a plain pattern stays a string, as it was written
    if not isinstance(value, dict):
        raise PydanticCustomError(
            "policy_rule", 'a rule is a pattern, or {"pattern": "server.tool", "optional": true}'
        )
    rule: PolicyRule = handler(value)
    return rule


def _dump_rule(rule: str | PolicyRule) -> str | dict[str, Any]:
    return rule if isinstance(rule, str) else {"pattern": rule.pattern, "optional": rule.optional}


def _rule_core_schema(source: Any, handler: Any) -> core_schema.CoreSchema:
    return core_schema.no_info_wrap_validator_function(
        _rule,
        handler.generate_schema(PolicyRule),
        serialization=core_schema.plain_serializer_function_ser_schema(_dump_rule),
    )


def _rule_json_schema(schema: core_schema.CoreSchema, handler: Any) -> JsonSchemaValue:
    return {"anyOf": [{"type": "string"}, handler(schema)]}


Rule = Annotated[str | PolicyRule, GetPydanticSchema(_rule_core_schema, _rule_json_schema)]
"""A glob, or a PolicyRule; a glob is kept as the string it was."""

RuleList = Literal["allow_writes", "allow", "deny", "hidden", "approve"]
RULE_LISTS: tuple[RuleList, ...] = ("allow_writes", "allow", "deny", "hidden", "approve")
"""The policy's lists of rules, in the order `check` reports them."""


class RateLimit(BaseModel):
    """At most `calls` calls in any window of `per_seconds`, counted across callers or per caller."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: int = Field(ge=1, description="Calls allowed in any sliding window.")
    per_seconds: float = Field(gt=0, le=86_400, description="The window's length in seconds.")
    per: Literal["gateway", "principal"] = Field(
        default="gateway",
        description='"gateway": one window for every caller\'s calls of the tool (what the child can '
        'take); "principal": a window per authenticated caller (over stdio every call is one caller\'s).',
    )


class ToolPolicy(BaseModel):
    """Per-tool rules: argument constraints, a per-execution quota, a sliding-window rate."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    args: dict[str, Any] | None = Field(
        default=None,
        description="JSON Schema (2020-12) the wire arguments must also satisfy; it only tightens.",
    )
    max_calls: int | None = Field(default=None, ge=0, description="Calls of this tool per execution.")
    rate: RateLimit | None = None
    optional: bool = Field(
        default=False,
        description="The tool's server may be one the config does not have (it is not a config error then).",
    )

    @field_validator("args")
    @classmethod
    def _valid_fragment(cls, fragment: dict[str, Any] | None) -> dict[str, Any] | None:
        if fragment is None:
            return None
        # Checking a fragment takes jsonschema, which a config without one never loads.
        from gateway.policy._constraints import fragment_problems

        if problems := fragment_problems(fragment):
            raise ValueError("; ".join(problems))
        return fragment


class PolicyRules(BaseModel):
    """The lists of rules the policy and each of its roles hold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow_writes: list[Rule] = Field(
        default_factory=list[Rule], description="Writes allowed under read_only."
    )
    allow: list[Rule] = Field(default_factory=list[Rule], description="Tools that may be called.")
    deny: list[Rule] = Field(default_factory=list[Rule], description="Tools that may not; beats allow.")
    hidden: list[Rule] = Field(
        default_factory=list[Rule], description="Tools neither listed nor callable: they look unknown."
    )
    approve: list[Rule] = Field(default_factory=list[Rule], description="Calls that need a human's approval.")
    tools: dict[ToolName, ToolPolicy] = Field(default_factory=dict[str, ToolPolicy])

    @field_validator("allow_writes", "approve")
    @classmethod
    def _tool_rules_only(cls, rules: list[str | PolicyRule]) -> list[str | PolicyRule]:
        for rule in rules:
            pattern = rule if isinstance(rule, str) else rule.pattern
            if ":" in pattern:
                raise ValueError(
                    f"{pattern!r} is a resource rule (server:uri): resources are governed by allow, deny "
                    "and hidden alone (reading one writes nothing, and cannot ask for approval)"
                )
        return rules

    def rules(self, key: RuleList) -> list[PolicyRule]:
        """The rules of one list (`"deny"`...) in their long form; a plain pattern is not optional."""
        return [PolicyRule(pattern=rule) if isinstance(rule, str) else rule for rule in getattr(self, key)]

    def patterns(self, key: RuleList) -> list[str]:
        """The plain patterns of one list (`"deny"`...), optional or not, in order."""
        return [rule.pattern for rule in self.rules(key)]


class RoleConfig(PolicyRules):
    """An overlay on the policy for the callers it names (HTTP with `auth`): more reach or less.

    Its lists add to the policy's; `read_only`, `approve_destructive` and `max_tool_calls` replace the
    policy's when set; its `tools` entries replace the policy's for those tools. A caller several roles
    name gets all their lists, and of their settings the strictest.
    """

    principals: list[str] = Field(
        default_factory=list[str],
        description="Callers by principal: a static token's name, or a JWT's `sub`.",
    )
    groups: list[str] = Field(
        default_factory=list[str], description="Callers by a group their JWT's `groups` claim names."
    )
    scopes: list[str] = Field(default_factory=list[str], description="Callers by a scope their token grants.")
    read_only: bool | None = Field(
        default=None, description="Replaces policy.read_only for these callers when set."
    )
    approve_destructive: bool | None = Field(
        default=None, description="Replaces policy.approve_destructive for these callers when set."
    )
    max_tool_calls: int | None = Field(
        default=None, ge=0, description="Replaces policy.max_tool_calls for these callers when set."
    )

    @model_validator(mode="after")
    def _names_someone(self) -> RoleConfig:
        if not (self.principals or self.groups or self.scopes):
            raise ValueError(
                "the role names no caller: give it principals, groups or scopes (a role that matches "
                "nobody is likely a mistake)"
            )
        return self


class PolicyConfig(PolicyRules):
    """Which tools the model sees and may call, with which arguments, how often (the `policy` section)."""

    read_only: bool = Field(
        default=False,
        description="Only tools annotated readOnlyHint, plus allow_writes, may be called.",
    )
    allow: list[Rule] = Field(default_factory=lambda: ["*"], description="Tools that may be called.")
    approve_destructive: bool = Field(
        default=False, description="Every tool that may be destructive needs approval too."
    )
    max_tool_calls: int | None = Field(default=None, ge=0, description="Tool calls per execution.")
    roles: dict[Annotated[str, StringConstraints(min_length=1, max_length=64)], RoleConfig] = Field(
        default_factory=dict[str, RoleConfig],
        description="Overlays for the HTTP callers they name (principals, groups, scopes); over stdio "
        "nobody is named, and the policy applies as written.",
    )


MIN_APPROVALS_KEY_BYTES = 32


class ApprovalsConfig(BaseModel):
    """How a run paused for approval (MCP 2026-07-28) is carried to the round that resumes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: SecretStr | None = Field(
        default=None,
        description='The key sealing paused runs, as "${VAR}" naming an environment variable that holds at '
        "least 32 bytes of secret randomness; replicas sharing it resume each other's runs. Without it "
        "each process makes its own, and a paused run resumes only in the process that paused it.",
    )
    ttl_seconds: float = Field(
        default=600.0, gt=0, le=86_400, description="How long the user has to answer an approval."
    )
    max_state_bytes: int = Field(
        default=1024 * 1024,
        ge=4096,
        le=16 * 1024 * 1024,
        description="Cap on a paused run's state (its earlier tool results, compressed), which the "
        "client carries back; a run that would need more stops with an error naming this key.",
    )
    max_rounds: int = Field(
        default=10,
        ge=1,
        le=100,
        description="Approvals one execution may pause for (one client round each; the SDK clients "
        "retry 10 rounds by default).",
    )

    @field_validator("key")
    @classmethod
    def _long_enough(cls, key: SecretStr | None) -> SecretStr | None:
        size = 0 if key is None else len(key.get_secret_value().encode())
        if key is not None and size < MIN_APPROVALS_KEY_BYTES:
            raise ValueError(
                f"the key is {size} bytes; it must be at least {MIN_APPROVALS_KEY_BYTES} bytes of secret "
                'randomness: generate one with python -c "import secrets; print(secrets.token_hex(32))"'
            )
        return key
