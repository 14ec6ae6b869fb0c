"""Literal secrets in a config file: values that look like tokens or passwords instead of `${VAR}` references.

`find_literal_secrets` is what the `check` command warns about (`literal_secret_warning` words each
warning); `literal_secret_values` gives the same findings' values to the Redactor, so a secret written
into the config is redacted like one taken from the environment. The scan is heuristic: known token
shapes anywhere, and in server entries auth headers, password-like values under secret-sounding names,
passwords in URLs and long high-entropy values.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

__all__ = ["find_literal_secrets", "literal_secret_values", "literal_secret_warning"]

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


def literal_secret_values(config_data: Any) -> Iterator[tuple[str, str | None]]:
    """Each literal secret of a config as (value, the name it is under or None), in scan order."""
    for finding in _scan(config_data):
        yield finding.secret, finding.name


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
