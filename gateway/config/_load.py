"""Finding, reading and validating the config file; every problem is one line naming its key.

What refuses the config: invalid settings (each a sentence with its key path), VS Code's layout,
policy rules naming no configured server. What only leaves one child out (`unavailable_servers`):
a `${VAR}` that is not set, or a reference the gateway cannot expand, in that child's entry; the
gateway's own entry. What loads with a note (`notes`): `"disabled": true`, other clients' keys.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gateway.children.config import StdioServer
from gateway.config._clients import (
    disabled_note,
    disabled_tools_problem,
    ignored_key_notes,
    layout_problems,
    python_name,
    runs_this_gateway,
    self_note,
)
from gateway.config._defaults import default_config
from gateway.config._errors import error_lines, key_path, model_titled
from gateway.config._http import validation_context
from gateway.config._model import GatewayConfig
from gateway.config._policy_servers import unknown_server_exposes, unknown_server_rules
from gateway.config._variables import VARIABLE_REFERENCE, Expander, Unresolved
from gateway.errors import ConfigError
from gateway.middleware.config import DEFER_IMPORT
from gateway.policy.config import PolicyConfig
from gateway.shared import as_array, as_object, printable
from gateway.state.config import literal_password

__all__ = [
    "CONFIG_ENV",
    "find_config_file",
    "format_validation_error",
    "load_config",
    "parse_config",
    "read_config_data",
]

CONFIG_ENV = "CODEMODE_CONFIG"


def _report(source: str, problems: list[str]) -> str:
    return "\n".join([f"{source}: {len(problems)} invalid setting(s)", *(f"  {line}" for line in problems)])


def format_validation_error(exc: ValidationError, source: str, model: type[BaseModel] | None = None) -> str:
    """One line per bad key, `path.to[2].key: what is wrong`, never a traceback.

    `model` is the model validated (the whole config, or one of its sections); by default, the one
    the error's title names.
    """
    root = model or model_titled(exc.title, GatewayConfig)
    return _report(source, [line for _, line in error_lines(exc, root)])


def _under(path: str, prefixes: list[str]) -> bool:
    return any(path == prefix or path.startswith((f"{prefix}.", f"{prefix}[")) for prefix in prefixes)


class _Reading:
    """One pass over the server entries: what is validated, left out, noted, or refused."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.expander = Expander(environ)
        self.entries: dict[str, Any] = {}  # every entry but the disabled ones, expanded, for validation
        self.unavailable: dict[str, str] = {}
        self.self_entries: set[str] = set()  # of `unavailable`: entries that run this gateway itself
        self.unresolved: list[Unresolved] = []
        self.notes: list[str] = []
        self.problems: list[str] = []

    def entry(self, name: str, entry: Any) -> None:
        where = key_path(("mcpServers", name))
        fields = as_object(entry)
        if fields is None:
            self.entries[name] = entry  # validation says what is wrong with it
            return
        if fields.get("disabled") is True:
            self.notes.append(disabled_note(where))
            return
        self.notes += ignored_key_notes(fields, where)
        if (problem := disabled_tools_problem(fields, where, name)) is not None:
            self.problems.append(problem)
            fields = {key: value for key, value in fields.items() if key != "disabledTools"}
        expanded, unresolved = self.expander.entry(fields, where)
        self.entries[name] = expanded
        self.unresolved += unresolved
        if (key := runs_this_gateway(expanded)) is not None:
            self.notes.append(self_note(where))
            self.unavailable[name] = f"{where}.{key}: runs codemode-gateway, which would start itself again"
            self.self_entries.add(name)
        elif unresolved:
            self.unavailable[name] = "; ".join(item.line for item in unresolved)

    def approvals(self, section: dict[str, Any]) -> dict[str, Any]:
        """The `approvals` section with its key read from the environment variable it names."""
        key = section.get("key")
        if not isinstance(key, str):
            return section  # validation says what is wrong with it
        where = "approvals.key"
        reference = VARIABLE_REFERENCE.fullmatch(key)
        if reference is None or reference.group(2) is not None:
            self.problems.append(
                f'{where}: write "${{NAME}}", naming an environment variable that holds the key; a key '
                "written into a shared config is no secret"
            )
            return {name: value for name, value in section.items() if name != "key"}
        expanded, unresolved = self.expander.one(key, where)
        if unresolved:
            self.notes.append(
                f"{unresolved[0].line}: each process makes its own approvals key, so a run paused for "
                "approval resumes only in the process that paused it"
            )
            return {name: value for name, value in section.items() if name != "key"}
        return {**section, "key": expanded}

    def state(self, section: dict[str, Any]) -> dict[str, Any]:
        """The `state` section with its URL's `${VAR}` expanded; a password written into it refuses the
        config, as does a variable that is not set (replicas would not agree on anything)."""
        url = section.get("url")
        if not isinstance(url, str):
            return section  # validation says what is wrong with it
        where = "state.url"
        if literal_password(url):
            self.problems.append(
                f'{where}: write the password as "${{NAME}}" ("redis://:${{REDIS_PASSWORD}}@host:6379/0"), '
                "naming an environment variable that holds it; a password written into a shared config is "
                "no secret"
            )
            return {name: value for name, value in section.items() if name != "url"}
        expanded, unresolved = self.expander.one(url, where)
        self.problems += [item.line for item in unresolved]
        return {**section, "url": expanded}

    def auth(self, section: dict[str, Any]) -> dict[str, Any]:
        """The `auth` section with each static token read from the environment variable it names.

        A token written into the config, or whose variable is not set, refuses the config: a server
        that cannot tell its callers apart must not start. Its entry is kept as a placeholder, so that
        the rest of the section is validated in the same round.
        """
        tokens = as_object(section.get("tokens"))
        if tokens is None:
            return section  # validation says what is wrong with it
        read: dict[str, Any] = {}
        for principal, token in tokens.items():
            where = key_path(("auth", "tokens", principal))
            reference = VARIABLE_REFERENCE.fullmatch(token) if isinstance(token, str) else None
            if not isinstance(token, str):
                read[principal] = token
            elif reference is None or reference.group(2) is not None:
                self.problems.append(
                    f'{where}: write "${{NAME}}", naming an environment variable that holds the token; a '
                    "token written into a shared config is no secret"
                )
                read[principal] = f"unread:{where}".ljust(64, ".")
            else:
                expanded, unresolved = self.expander.one(token, where)
                self.problems += [item.line for item in unresolved]
                read[principal] = f"unread:{where}".ljust(64, ".") if unresolved else expanded
        return {**section, "tokens": read}


def _resolve_paths(config: GatewayConfig, base: Path) -> None:
    """A stdio child's relative `cwd`, and a relative `command` with a slash, start from `base`."""

    def resolved(path: str) -> str:
        expanded = Path(path).expanduser()
        return str(expanded if expanded.is_absolute() else base / expanded)

    for name, server in list(config.mcp_servers.items()):
        if not isinstance(server, StdioServer):
            continue
        update: dict[str, str] = {}
        if server.cwd is not None:
            update["cwd"] = resolved(server.cwd)
        if any(sep in server.command for sep in (os.sep, os.altsep, "/") if sep):
            update["command"] = resolved(server.command)
        if update:
            config.mcp_servers[name] = server.model_copy(update=update)


def _policy_problems(top: dict[str, Any], configured: list[str]) -> list[str]:
    """Servers sharing a Python name, and policy rules and `expose` entries naming no configured server."""
    expose = as_array(top.get("expose"))
    exposes = (
        _hidden_characters(configured)
        + _shared_server_names(configured)
        + unknown_server_exposes(expose, configured)
    )
    try:
        policy = PolicyConfig.model_validate(top.get("policy", {}))
    except ValidationError:
        return exposes  # the whole config's validation reports the policy's problems
    return unknown_server_rules(policy, configured) + exposes


def _hidden_characters(configured: list[str]) -> list[str]:
    """A line for each server name holding a control or invisible character: the name is printed in
    logs, `reload` and `check` and shown to the model, and such a character could start a line there
    or send the operator's terminal a control sequence."""
    lines: list[str] = []
    for name in configured:
        if (shown := printable(name)) != name:
            lines.append(
                f'mcpServers: "{shown}" holds a control or invisible character (shown escaped): name the '
                "server with visible characters, since its name is printed in logs and command output"
            )
    return lines


def _shared_server_names(configured: list[str]) -> list[str]:
    """A line for each set of servers with one Python name (`my-db`, `my_db`): which of them gets the
    bare name, and so which one a rule naming it means, would change as servers are added."""
    by_name: dict[str, list[str]] = {}
    for name in configured:
        by_name.setdefault(python_name(name), []).append(name)
    return [
        f"mcpServers: {' and '.join(json.dumps(n) for n in names)} are all {shared} in Python (search_docs, "
        "policy rules); rename all but one, so that a rule naming it names one server for good"
        for shared, names in by_name.items()
        if len(names) > 1
    ]


def parse_config(
    data: Any,
    source: str,
    environ: Mapping[str, str] | None = None,
    *,
    config_dir: Path | None = None,
    config_file: Path | None = None,
    command_line: Mapping[str, Any] | None = None,
    import_middleware: bool = True,
) -> GatewayConfig:
    """Validate already-parsed JSON as a config, expanding `${VAR}` in the server entries.

    An entry whose references cannot all be expanded is left out, into `unavailable_servers`;
    relative paths in stdio entries start from `config_dir` when it is given (the file's directory).
    `config_file` is the file it was read from, whose lockfile applies. `command_line` holds the
    `mcpServers` entries given on the command line: each replaces the file's entry of that name.
    Without `import_middleware` the middleware paths are not imported (a reload imports them only
    once it may apply them).
    """
    reading = _Reading(os.environ if environ is None else environ)
    top = as_object(data)
    if top is not None and command_line:
        top = _with_command_line(top, command_line, reading)
    if top is None:
        return _validate(data, source, reading, [], import_middleware)
    reading.problems += layout_problems(top)
    top = {key: value for key, value in top.items() if key not in ("servers", "inputs")}
    servers = as_object(top.get("mcpServers"))
    configured = list(servers or {})
    for name, entry in (servers or {}).items():
        reading.entry(name, entry)
    if servers is not None:
        top["mcpServers"] = reading.entries
    if (approvals := as_object(top.get("approvals"))) is not None:
        top["approvals"] = reading.approvals(approvals)
    if (auth := as_object(top.get("auth"))) is not None:
        top["auth"] = reading.auth(auth)
    if (state := as_object(top.get("state"))) is not None:
        top["state"] = reading.state(state)
    config = _validate(top, source, reading, _policy_problems(top, configured), import_middleware)
    if config_dir is not None:
        _resolve_paths(config, config_dir)
    config.set_origin(
        secret_names=reading.expander.secrets,
        config_dir=config_dir,
        unavailable_servers=reading.unavailable,
        self_entries=frozenset(reading.self_entries),
        notes=reading.notes,
        config_file=config_file,
        command_line=command_line,
    )
    return config


def _with_command_line(
    top: dict[str, Any], command_line: Mapping[str, Any], reading: _Reading
) -> dict[str, Any]:
    """`top` with the command line's children added; where a name is in both, the command line wins."""
    servers = as_object(top.get("mcpServers")) or {}
    for name in command_line:
        if name in servers:
            where = key_path(("mcpServers", name))
            reading.notes.append(f"{where}: the command line's entry replaces the file's")
    return {**top, "mcpServers": {**servers, **command_line}}


def _validate(
    data: Any, source: str, reading: _Reading, policy_problems: list[str], import_middleware: bool
) -> GatewayConfig:
    """The config with the unavailable entries left out, or a ConfigError naming every problem.

    The entries are validated with the others first, their unexpanded references (kept as written)
    excepted, so that a typo in an entry that is left out still refuses the config.
    """
    problems = list(reading.problems)
    context = validation_context(data) | {DEFER_IMPORT: not import_middleware}
    unresolved = [item.where for item in reading.unresolved]
    try:
        GatewayConfig.model_validate(data, context=context)
    except ValidationError as exc:
        problems += [line for path, line in error_lines(exc, GatewayConfig) if not _under(path, unresolved)]
    problems += policy_problems
    if problems:
        # Refused anyway: the variables that are not set are worth fixing in the same round.
        problems += [item.line for item in reading.unresolved]
        raise ConfigError(_report(source, problems))
    top = as_object(data)
    servers = as_object(top.get("mcpServers")) if top is not None else None
    if top is None or servers is None or not reading.unavailable:
        return GatewayConfig.model_validate(data, context=context)
    available = {name: entry for name, entry in servers.items() if name not in reading.unavailable}
    try:
        return GatewayConfig.model_validate({**top, "mcpServers": available}, context=context)
    except ValidationError as exc:  # not expected: the same entries validated above
        raise ConfigError(format_validation_error(exc, source, GatewayConfig)) from None


def find_config_file(
    path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> Path | None:
    """The config file to read: `path`, else `$CODEMODE_CONFIG`, else None (the built-in default)."""
    chosen = path or (os.environ if environ is None else environ).get(CONFIG_ENV)
    return Path(chosen) if chosen else None


def load_config(
    path: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    command_line: Mapping[str, Any] | None = None,
    import_middleware: bool = True,
) -> GatewayConfig:
    """Load the config from `path`, else `$CODEMODE_CONFIG`, else the built-in default; children
    given on the command line (`command_line`) are added to a file's, and replace the built-in ones
    (see `parse_config` for `import_middleware`)."""
    file = find_config_file(path, environ)
    if file is None:
        if not command_line:
            return default_config()
        return parse_config({}, "the command line", environ, config_dir=Path.cwd(), command_line=command_line)
    data = read_config_data(file, named_by=None if path else f"${CONFIG_ENV}")
    resolved = file.resolve()
    return parse_config(
        data,
        str(file),
        environ,
        config_dir=resolved.parent,
        config_file=resolved,
        command_line=command_line,
        import_middleware=import_middleware,
    )


def read_config_data(file: Path, *, named_by: str | None = None) -> Any:
    """A config file's JSON as written, before validation and `${VAR}` expansion.

    `named_by` says where the path came from (`$CODEMODE_CONFIG`), for the error if it cannot be read.
    """
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        origin = f" (named by {named_by})" if named_by else ""
        where = ""
        if isinstance(exc, FileNotFoundError) and not file.is_absolute():
            where = f"; looked for {file.absolute()}, relative to the working directory {Path.cwd()}"
        raise ConfigError(f"cannot read config {file}{origin}: {exc.strerror or exc}{where}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{file}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
