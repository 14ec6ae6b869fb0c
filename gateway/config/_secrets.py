"""Which values of a config are secret: `${VAR}` expansions, passed-through variables, literal secrets.

`config_secrets` gives the Redactor every secret value of a loaded config with the name it came
from. `find_literal_secrets` is what the `check` command warns about (`literal_secret_warning`
words each warning); the same findings are secrets too, so a secret written into the config is
redacted like one taken from the environment. The literal scan is heuristic: known token shapes
anywhere, and in server entries auth headers, password-like values under secret-sounding names,
passwords in URLs and long high-entropy values.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gateway.children.config import StdioServer
from gateway.config._model import GatewayConfig
from gateway.config._variables import VARIABLE_REFERENCE
from gateway.shared import as_array, as_object

__all__ = ["NOT_SECRET_VARS", "config_secrets", "find_literal_secrets", "literal_secret_warning"]

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
    parts = [VARIABLE_REFERENCE.sub(" ", value).strip()]
    parts += [match.group(2) for match in VARIABLE_REFERENCE.finditer(value) if match.group(2)]
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


def _object(value: Any) -> dict[str, Any]:
    return as_object(value) or {}


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
    for key, value in _object(entry.get("env")).items():
        yield from _check(value, f"{where}.env.{key}", key, named=_secret_name(key), entropy=True)
    for key, value in _object(entry.get("headers")).items():
        yield from _check(value, f"{where}.headers.{key}", key, named=_secret_name(key), entropy=True)
    yield from _scan_args(as_array(entry.get("args")), f"{where}.args")
    yield from _scan_url(entry.get("url"), f"{where}.url")
    yield from _scan_url(entry.get("serverUrl"), f"{where}.serverUrl")  # Windsurf's name for url
    for key, value in entry.items():
        if key not in ("env", "headers", "args", "url", "serverUrl"):
            yield from _scan_anywhere(value, f"{where}.{key}", skip=None)


def _scan_anywhere(value: Any, path: str, skip: str | None) -> Iterator[_Finding]:
    """Known token shapes in any string of the document outside `skip` (the server entries)."""
    if path == skip:
        return
    if isinstance(value, str):
        yield from _check(value, path, None, named=False, entropy=False)
    for key, item in _object(value).items():
        yield from _scan_anywhere(item, f"{path}.{key}" if path else key, skip)
    for index, item in enumerate(as_array(value)):
        yield from _scan_anywhere(item, f"{path}[{index}]", skip)


def _scan(data: Any) -> Iterator[_Finding]:
    servers = _object(_object(data).get("mcpServers"))
    for name, entry in servers.items():
        yield from _scan_server(_object(entry), f"mcpServers.{name}")
    yield from _scan_anywhere(data, "", "mcpServers")


def config_secrets(config: GatewayConfig) -> dict[str, str | None]:
    """Every secret value of a loaded config, with the variable or key it came from (None if unknown).

    The values `${VAR}` took from the environment, the variables stdio children pass through, and
    literal secrets written into the config; never the NOT_SECRET_VARS.
    """
    secrets: dict[str, str | None] = {}
    for value, name in config.secret_names.items():
        if name not in NOT_SECRET_VARS:
            secrets.setdefault(value, name)
    for server in config.mcp_servers.values():
        if isinstance(server, StdioServer):
            for name in server.env_passthrough:
                value = os.environ.get(name)
                if value and name not in NOT_SECRET_VARS:
                    secrets.setdefault(value, name)
    for finding in _scan(config.model_dump(mode="json", by_alias=True)):
        secrets.setdefault(finding.secret, finding.name)
    return secrets


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
