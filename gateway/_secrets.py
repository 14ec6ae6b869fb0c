"""Secrets: redacted from what leaves the gateway, kept from children, warned about when literal in a config.

Redaction stops accidental disclosure: a child echoing a token, an error quoting a header, a log line
carrying an `extra`. It cannot stop a snippet that deliberately transforms a secret it was handed
(reversed, split, re-encoded): keep secrets out of what children return.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote, quote_plus

from gateway._result import ExecutionResult

if TYPE_CHECKING:
    from gateway._config import GatewayConfig

__all__ = [
    "BASE_ENV_VARS",
    "MIN_SECRET_CHARS",
    "NOT_SECRET_VARS",
    "RedactingFilter",
    "Redactor",
    "child_environment",
    "find_literal_secrets",
    "literal_secret_warning",
    "redact_logs",
]

MIN_SECRET_CHARS = 4
"""Shorter values are never redacted: replacing every "on" or "123" would be noise, not safety."""

# The base64 of a secret inside a longer base64 text (HTTP Basic auth, say) is matched by a core that
# depends only on the secret's bytes; short cores would match random base64 by chance.
_MIN_BASE64_CORE_CHARS = 8
_MAX_CACHED_PATTERNS = 64

# Variables `${VAR}` commonly takes from the environment whose values are not secret: redacting the
# home directory out of every path a tool returns would make results useless and hide nothing.
NOT_SECRET_VARS = frozenset(
    {
        "HOME",
        "USER",
        "USERNAME",
        "LOGNAME",
        "PWD",
        "SHELL",
        "TERM",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "TMPDIR",
        "TEMP",
        "TMP",
        "PATH",
        "HOSTNAME",
        "USERPROFILE",
        "APPDATA",
        "LOCALAPPDATA",
    }
)

_POSIX_ENV = ("HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")
_WINDOWS_ENV = (
    "APPDATA",
    "COMSPEC",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
)
_NETWORK_ENV = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
)
BASE_ENV_VARS: tuple[str, ...] = tuple(
    dict.fromkeys(
        ["PATH", *(_WINDOWS_ENV if sys.platform == "win32" else _POSIX_ENV), "TEMP", "TMP", *_NETWORK_ENV]
    )
)
"""What every stdio child inherits from the gateway: enough to run, find certificates and use a proxy."""

_LOG_RECORD_FIELDS = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


# ---- redaction ----------------------------------------------------------------------------------


def _base64_forms(data: bytes) -> set[str]:
    whole = base64.b64encode(data).decode()
    forms = {whole, whole.rstrip("=")}
    for offset in range(3):
        # Inside a longer text the secret may start at any byte offset modulo 3; these characters
        # depend on the secret's bytes only, whatever surrounds it.
        encoded = base64.b64encode(b"\0" * offset + data).decode()
        core = encoded[math.ceil(8 * offset / 6) : (8 * (offset + len(data))) // 6]
        if len(core) >= _MIN_BASE64_CORE_CHARS:
            forms.add(core)
    return forms | {form.replace("+", "-").replace("/", "_") for form in forms}


def _encodings(value: str) -> set[str]:
    """The value as written, URL-quoted, JSON-escaped (once and twice) and base64-encoded."""
    escaped = json.dumps(value)[1:-1]
    forms = {
        value,
        quote(value),
        quote(value, safe=""),
        quote_plus(value),
        escaped,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(escaped)[1:-1],
        *_base64_forms(value.encode()),
    }
    return {form for form in forms if len(form) >= MIN_SECRET_CHARS}


class Redactor:
    """Replaces secret values and their common encodings with `[REDACTED:VAR]` (or `[REDACTED]`).

    `secrets` maps each value to the variable it came from (None when unknown), or is a plain
    iterable of values. Values shorter than MIN_SECRET_CHARS are ignored.
    """

    def __init__(self, secrets: Mapping[str, str | None] | Iterable[str] = ()) -> None:
        named: dict[str, str | None] = (
            dict(cast(Mapping[str, str | None], secrets))
            if isinstance(secrets, Mapping)
            else dict.fromkeys(secrets)
        )
        labels: dict[str, str] = {}
        for value, name in named.items():
            if len(value) < MIN_SECRET_CHARS:
                continue
            label = f"[REDACTED:{name}]" if name else "[REDACTED]"
            for form in _encodings(value):
                labels.setdefault(form, label)
        self._labels = labels
        self._forms = tuple(labels)
        self._patterns: dict[tuple[str, ...], re.Pattern[str]] = {}
        self.names = frozenset(name for name in named.values() if name)

    @classmethod
    def from_config(cls, config: GatewayConfig, environ: Mapping[str, str] | None = None) -> Redactor:
        """The secrets of a loaded config: `${VAR}` values, passed-through variables, literal secrets."""
        from gateway._config import StdioServer  # not at the top: _config imports _audit, which imports us

        environ = os.environ if environ is None else environ
        secrets: dict[str, str | None] = {}
        for value, name in config.secret_names.items():
            if name not in NOT_SECRET_VARS:
                secrets.setdefault(value, name)
        for server in config.mcp_servers.values():
            if isinstance(server, StdioServer):
                for name in server.env_passthrough:
                    value = environ.get(name)
                    if value and name not in NOT_SECRET_VARS:
                        secrets.setdefault(value, name)
        for finding in _scan(config.model_dump(mode="json", by_alias=True)):
            secrets.setdefault(finding.secret, finding.name)
        return cls(secrets)

    def __bool__(self) -> bool:
        return bool(self._forms)

    def _pattern_in(self, text: str) -> re.Pattern[str] | None:
        """A pattern for the forms that occur in `text`, or None if none does.

        Substring tests first: measured ~20x faster than one big alternation over text holding no secret.
        """
        present = tuple(form for form in self._forms if form in text)
        return self._pattern_of(present) if present else None

    def _pattern_of(self, forms: tuple[str, ...]) -> re.Pattern[str]:
        pattern = self._patterns.get(forms)
        if pattern is None:
            if len(self._patterns) >= _MAX_CACHED_PATTERNS:
                self._patterns.clear()
            # Longest first: a regex alternation takes the first alternative that matches, not the longest.
            ordered = sorted(forms, key=len, reverse=True)
            pattern = self._patterns[forms] = re.compile("|".join(map(re.escape, ordered)))
        return pattern

    def _sub(self, pattern: re.Pattern[str], text: str) -> str:
        return pattern.sub(lambda match: self._labels[match.group()], text)

    def redact(self, text: str) -> str:
        """`text` with every secret (and encoding of one) replaced by its label."""
        pattern = self._pattern_in(text) if self._forms and text else None
        return text if pattern is None else self._sub(pattern, text)

    def redact_json(self, value: Any) -> Any:
        """A copy of a JSON-like value (dicts, lists, strings; keys too) with secrets redacted."""
        if not self._forms:
            return value
        if isinstance(value, str):
            return self.redact(value)
        try:
            # Every string of the value appears JSON-escaped in its dump, and those forms are known.
            probe = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            probe = None
        pattern = self._pattern_in(probe) if probe is not None else self._pattern_of(self._forms)
        return value if pattern is None else self._walk(pattern, value)

    def _walk(self, pattern: re.Pattern[str], value: Any) -> Any:
        if isinstance(value, str):
            return self._sub(pattern, value)
        if isinstance(value, dict):
            items = cast(dict[Any, Any], value).items()
            return {
                (self._sub(pattern, key) if isinstance(key, str) else key): self._walk(pattern, item)
                for key, item in items
            }
        if isinstance(value, list | tuple):
            redacted = [self._walk(pattern, item) for item in cast(Iterable[Any], value)]
            return tuple(redacted) if isinstance(value, tuple) else redacted
        return value

    def redact_result(self, result: ExecutionResult) -> ExecutionResult:
        """A copy of an execution's result with secrets redacted from everything a client sees."""
        if not self._forms:
            return result
        redact = self.redact
        error = result.error
        if error is not None:
            traceback = redact(error.traceback) if error.traceback is not None else None
            error = error.model_copy(update={"message": redact(error.message), "traceback": traceback})
        calls = [
            call.model_copy(
                update={"tool": redact(call.tool), "error": redact(call.error) if call.error else call.error}
            )
            for call in result.tool_calls
        ]
        return result.model_copy(
            update={
                "stdout": redact(result.stdout),
                "stderr": redact(result.stderr),
                "value": self.redact_json(result.value),
                "value_repr": redact(result.value_repr) if result.value_repr is not None else None,
                "error": error,
                "tool_calls": calls,
            }
        )


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
            if key in _LOG_RECORD_FIELDS or key.startswith("_"):
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


# ---- the environment of a stdio child -----------------------------------------------------------


def child_environment(
    entry_env: Mapping[str, str],
    pass_through: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A child's whole environment: BASE_ENV_VARS, then the variables `pass_through` names, then `entry_env`.

    Nothing else of the gateway's environment reaches a child: tokens meant for one server stay
    out of every other one.
    """
    environ = os.environ if environ is None else environ
    env: dict[str, str] = {}
    for name in BASE_ENV_VARS:
        value = environ.get(name)
        if value is not None and not value.startswith("()"):  # an exported shell function, not a setting
            env[name] = value
    for name in pass_through:
        value = environ.get(name)
        if value is not None:
            env[name] = value
    return env | dict(entry_env)


# ---- literal secrets in a config file -----------------------------------------------------------

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_TOKEN = re.compile(
    r"""(?<![A-Za-z0-9])(?:
      gh[pousr]_[A-Za-z0-9]{20,}              # GitHub tokens
    | github_pat_[A-Za-z0-9_]{20,}
    | xox[abposr]-[A-Za-z0-9-]{10,}           # Slack
    | xapp-[A-Za-z0-9-]{10,}
    | sk-ant-[A-Za-z0-9_-]{16,}               # Anthropic
    | sk-[A-Za-z0-9_-]{16,}                   # OpenAI and similar
    | [sr]k_(?:live|test)_[A-Za-z0-9]{16,}    # Stripe
    | (?:AKIA|ASIA)[0-9A-Z]{16}               # AWS access key ids
    | AIza[0-9A-Za-z_-]{35}                   # Google API keys
    | glpat-[A-Za-z0-9_-]{20,}                # GitLab
    | npm_[A-Za-z0-9]{36}
    | hf_[A-Za-z0-9]{30,}                     # Hugging Face
    | eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*   # a JWT
    | -----BEGIN[A-Z ]*PRIVATE\ KEY-----
    )""",
    re.VERBOSE,
)
_AUTH_SCHEME = re.compile(r"^(?:Bearer|Token|Basic|Bot)\s+(\S{12,})$", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"://[^/@:\s]+:([^/@\s]{4,})@")
_URL_PARAMETER = re.compile(r"[?&]([A-Za-z0-9_.-]+)=([^&#\s]{8,})")
_SECRET_WORDS = frozenset(
    {
        "token",
        "secret",
        "password",
        "passwd",
        "pass",
        "pwd",
        "key",
        "apikey",
        "credential",
        "credentials",
        "auth",
        "authorization",
        "cookie",
        "session",
        "pat",
        "bearer",
        "private",
        "signature",
        "sig",
    }
)
_ENTROPY_MIN_CHARS = 20
_ENTROPY_MIN_BITS = 3.5  # bits per character; English words and paths score lower
_HEX_OR_UUID = re.compile(r"^[0-9a-fA-F-]+$")  # commit ids and uuids: high entropy, rarely secret


@dataclass(frozen=True, slots=True)
class _Finding:
    path: str
    secret: str
    name: str | None


def _secret_name(name: str) -> bool:
    """Whether a variable, header or flag name says its value is a secret (`GITHUB_TOKEN`, `apiKey`...)."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return any(word in _SECRET_WORDS for word in re.split(r"[^a-z0-9]+", words))


def _plain(text: str) -> bool:
    """Could be a token: no spaces, not a path, URL or e-mail address."""
    return (
        bool(text)
        and not any(char.isspace() for char in text)
        and not text.startswith(("/", "~", ".", "\\"))
        and not re.match(r"^[A-Za-z]:[\\/]", text)
        and "://" not in text
        and not re.match(r"^[^@\s]+@[^@\s]+\.[A-Za-z]+$", text)
    )


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _high_entropy(text: str) -> bool:
    return (
        len(text) >= _ENTROPY_MIN_CHARS
        and _plain(text)
        and not _HEX_OR_UUID.match(text)
        and any(c.isalpha() for c in text)
        and any(c.isdigit() for c in text)
        and _entropy(text) >= _ENTROPY_MIN_BITS
    )


def _named_literal(text: str) -> bool:
    """A value under a secret-sounding name that looks like a password rather than a setting."""
    return (
        len(text) >= 8 and _plain(text) and any(c.isalpha() for c in text) and any(c.isdigit() for c in text)
    )


def _literal_parts(value: str) -> list[str]:
    """What a value says literally: the text around `${VAR}` references, and their defaults."""
    parts = [_REFERENCE.sub(" ", value).strip()]
    parts += [match.group(2) for match in _REFERENCE.finditer(value) if match.group(2)]
    return [part for part in parts if part]


def _tokens(value: str) -> Iterator[str]:
    for part in _literal_parts(value):
        yield from (match.group() for match in _TOKEN.finditer(part))


def _check(value: Any, path: str, name: str | None, *, named: bool, entropy: bool) -> Iterator[_Finding]:
    """Findings in one string: known token shapes; a password-like literal if `named`; high entropy."""
    if not isinstance(value, str):
        return
    found = [_Finding(path, token, name) for token in _tokens(value)]
    if not found:
        for part in _literal_parts(value):
            scheme = _AUTH_SCHEME.match(part)
            candidate = scheme.group(1) if scheme else part
            if scheme or (named and _named_literal(part)) or (entropy and _high_entropy(candidate)):
                found.append(_Finding(path, candidate, name))
    yield from found


def _as_dict(value: Any) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _as_list(value: Any) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


def _scan_args(args: list[Any], where: str) -> Iterator[_Finding]:
    flag: str | None = None
    for index, arg in enumerate(args):
        path = f"{where}[{index}]"
        if not isinstance(arg, str):
            flag = None
            continue
        option, equals, inline = arg.partition("=")
        if arg.startswith("-") and equals and _secret_name(option.lstrip("-")):
            yield from _check(inline, path, option.lstrip("-"), named=True, entropy=True)
        elif flag is not None:
            yield from _check(arg, path, flag, named=True, entropy=True)
        else:
            yield from _check(arg, path, None, named=False, entropy=False)
        flag = (
            arg.lstrip("-") if arg.startswith("-") and not equals and _secret_name(arg.lstrip("-")) else None
        )


def _scan_url(url: Any, path: str) -> Iterator[_Finding]:
    if not isinstance(url, str):
        return
    yield from _check(url, path, None, named=False, entropy=False)
    for part in _literal_parts(url):
        if (password := _URL_PASSWORD.search(part)) is not None:
            yield _Finding(path, password.group(1), None)
        for parameter in _URL_PARAMETER.finditer(part):
            if _secret_name(parameter.group(1)):
                yield _Finding(path, parameter.group(2), parameter.group(1))


def _scan_server(entry: dict[str, Any], where: str) -> Iterator[_Finding]:
    for key, value in _as_dict(entry.get("env")).items():
        yield from _check(value, f"{where}.env.{key}", key, named=_secret_name(key), entropy=True)
    for key, value in _as_dict(entry.get("headers")).items():
        yield from _check(value, f"{where}.headers.{key}", key, named=_secret_name(key), entropy=True)
    yield from _scan_args(_as_list(entry.get("args")), f"{where}.args")
    yield from _scan_url(entry.get("url"), f"{where}.url")
    for key, value in entry.items():
        if key not in ("env", "headers", "args", "url"):
            yield from _scan_anywhere(value, f"{where}.{key}", skip=None)


def _scan_anywhere(value: Any, path: str, skip: str | None) -> Iterator[_Finding]:
    """Known token shapes in any string of the document outside `skip` (the server entries)."""
    if path == skip:
        return
    if isinstance(value, str):
        yield from _check(value, path, None, named=False, entropy=False)
    for key, item in _as_dict(value).items():
        yield from _scan_anywhere(item, f"{path}.{key}" if path else key, skip)
    for index, item in enumerate(_as_list(value)):
        yield from _scan_anywhere(item, f"{path}[{index}]", skip)


def _scan(data: Any) -> Iterator[_Finding]:
    servers = _as_dict(_as_dict(data).get("mcpServers"))
    for name, entry in servers.items():
        yield from _scan_server(_as_dict(entry), f"mcpServers.{name}")
    yield from _scan_anywhere(data, "", "mcpServers")


def find_literal_secrets(config_data: Any) -> list[str]:
    """Paths (`mcpServers.github.env.GITHUB_TOKEN`) of raw config values that look like literal secrets.

    Looks for known token shapes anywhere, and in server entries for `Bearer <token>` headers,
    password-like values under secret-sounding names (env, headers, `--token`-style flags, URL
    parameters), passwords in URLs and long high-entropy values in env and headers. `${VAR}`
    references are fine; a literal default inside one (`${T:-ghp_...}`) is not.
    """
    return list(dict.fromkeys(finding.path for finding in _scan(config_data)))


def literal_secret_warning(path: str) -> str:
    """The `check` command's line for one finding."""
    head, _, last = path.rpartition(".")
    fix = (
        f"${{{last}}}"
        if head.endswith(".env") and re.fullmatch(r"[A-Za-z_]\w*", last)
        else "a ${VAR} reference"
    )
    return f"warning: {path} looks like a literal secret; use {fix}"
