"""Secrets: redaction of outputs and logs, the environment a child gets, literal secrets in a config."""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anyio
import pytest
from mcp import types

from gateway import ConfigError
from gateway._config import load_config, parse_config
from gateway._literal_secrets import find_literal_secrets, literal_secret_warning
from gateway._logging import JsonFormatter
from gateway._secrets import Redactor, redact_logs
from gateway.children._env import BASE_ENV_VARS, child_environment
from gateway.children._pool import ChildPool
from gateway.sandbox.result import ErrorInfo, ExecutionResult, ToolCallRecord
from tests.real_servers import REPO

TOKEN = "ghp_Zq8vN3kLp0Xw7Rt2Yb5Hc9Jd4Mf6Gs1Ae"
WAIT = 60  # real child servers start in seconds; this bounds a hang, not a race


@pytest.fixture
def redactor() -> Redactor:
    return Redactor({TOKEN: "GITHUB_TOKEN", 'pa ss/wo+rd"\\é': "DB_PASSWORD"})


# ---- redaction ----------------------------------------------------------------------------------


def test_a_secret_and_its_url_json_and_base64_encodings_are_replaced_by_its_variable_name(
    redactor: Redactor,
) -> None:
    password = 'pa ss/wo+rd"\\é'
    forms = [
        password,
        quote(password),
        quote(password, safe=""),
        quote_plus(password),
        json.dumps(password)[1:-1],
        json.dumps(password, ensure_ascii=False)[1:-1],
        json.dumps(json.dumps(password)[1:-1])[1:-1],  # inside JSON text inside a JSON string
        base64.b64encode(password.encode()).decode(),
        base64.urlsafe_b64encode(password.encode()).decode().rstrip("="),
    ]
    for form in forms:
        assert redactor.redact(f"<{form}>") == "<[REDACTED:DB_PASSWORD]>", form
    assert redactor.redact(f"token {TOKEN}.") == "token [REDACTED:GITHUB_TOKEN]."


def test_a_secret_base64_encoded_inside_a_longer_text_is_redacted(redactor: Redactor) -> None:
    for user in ("u", "us", "usr"):  # every byte offset modulo 3
        basic = base64.b64encode(f"{user}:{TOKEN}".encode()).decode()
        redacted = redactor.redact(f"Authorization: Basic {basic}")
        assert "[REDACTED:GITHUB_TOKEN]" in redacted
        assert len(redacted.split("[REDACTED:GITHUB_TOKEN]")[0]) < len("Authorization: Basic ") + 8


def test_values_shorter_than_four_characters_are_never_redacted() -> None:
    redactor = Redactor({"abc": "SHORT", "abcd": "FOUR"})
    assert redactor.redact("abc abcd") == "abc [REDACTED:FOUR]"
    assert not Redactor({"ab": "X"})


def test_a_secret_whose_variable_is_unknown_gets_a_bare_label() -> None:
    assert Redactor(["s3cr3t-value"]).redact("x=s3cr3t-value") == "x=[REDACTED]"


def test_the_longest_of_two_overlapping_secrets_wins() -> None:
    redactor = Redactor({"token-1234": "SHORT", "token-1234-extended": "LONG"})
    assert redactor.redact("token-1234-extended token-1234") == "[REDACTED:LONG] [REDACTED:SHORT]"


def test_json_values_are_redacted_in_strings_and_keys_and_keep_their_shape(redactor: Redactor) -> None:
    value = {"items": [TOKEN, 1, 2.5, None, True, (f"a{TOKEN}b",)], TOKEN: {"clean": "text"}}
    assert redactor.redact_json(value) == {
        "items": ["[REDACTED:GITHUB_TOKEN]", 1, 2.5, None, True, ("a[REDACTED:GITHUB_TOKEN]b",)],
        "[REDACTED:GITHUB_TOKEN]": {"clean": "text"},
    }
    clean = {"a": ["b", {"c": 1}]}
    assert redactor.redact_json(clean) is clean  # nothing to redact: no copy


def test_an_execution_result_is_redacted_everywhere_a_client_reads_it(redactor: Redactor) -> None:
    result = ExecutionResult(
        ok=False,
        stdout=f"out {TOKEN}\n",
        stderr=f"err {TOKEN}\n",
        value={"token": TOKEN},
        value_repr=repr({"token": TOKEN}),
        error=ErrorInfo(
            type="ToolError", category="snippet", message=f"bad {TOKEN}", traceback=f"Traceback...{TOKEN}"
        ),
        tool_calls=[
            ToolCallRecord(tool="github.search", ms=1.0, ok=False, error=f"refused {TOKEN}"),
            ToolCallRecord(tool="time.now", ms=1.0, ok=True),
        ],
        fuel=10,
        ms=2.0,
    )
    redacted = redactor.redact_result(result)
    assert TOKEN not in redacted.model_dump_json()
    assert TOKEN in result.model_dump_json()  # the original is untouched
    assert redacted.stdout == "out [REDACTED:GITHUB_TOKEN]\n"
    assert redacted.value == {"token": "[REDACTED:GITHUB_TOKEN]"}
    assert redacted.error is not None
    assert redacted.error.message == "bad [REDACTED:GITHUB_TOKEN]"
    assert redacted.tool_calls[1] == result.tool_calls[1]
    assert (redacted.fuel, redacted.ms, redacted.ok) == (10, 2.0, False)


def test_a_redactor_without_secrets_returns_the_result_unchanged() -> None:
    result = ExecutionResult(ok=True, stdout="hello")
    assert Redactor().redact_result(result) is result


# ---- logs ---------------------------------------------------------------------------------------


@pytest.fixture
def json_log() -> Iterator[tuple[logging.Logger, io.StringIO, logging.Handler]]:
    """A logger under `gateway` with its own JSON handler, as configure_logging sets one up."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("gateway.test_secrets")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield logger, stream, handler
    finally:
        logger.removeHandler(handler)


def test_the_log_filter_redacts_message_arguments_extras_and_exception_text(
    redactor: Redactor, json_log: tuple[logging.Logger, io.StringIO, logging.Handler]
) -> None:
    logger, stream, _ = json_log
    redact_logs(redactor, loggers=[logger.name])
    logger.info("calling with %s", TOKEN, extra={"headers": {"Authorization": f"Bearer {TOKEN}"}, "n": 3})
    try:
        raise RuntimeError(f"child said {TOKEN}")
    except RuntimeError:
        logger.exception("failed", extra={"line": f"stderr {TOKEN}"})
    text = stream.getvalue()
    assert TOKEN not in text
    first, second = (json.loads(line) for line in text.splitlines())
    assert first["msg"] == "calling with [REDACTED:GITHUB_TOKEN]"
    assert first["headers"] == {"Authorization": "Bearer [REDACTED:GITHUB_TOKEN]"}
    assert first["n"] == 3
    assert second["line"] == "stderr [REDACTED:GITHUB_TOKEN]"
    assert "RuntimeError: child said [REDACTED:GITHUB_TOKEN]" in second["exc"]


def test_the_log_filter_on_a_handler_also_redacts_records_of_child_loggers(
    redactor: Redactor, json_log: tuple[logging.Logger, io.StringIO, logging.Handler]
) -> None:
    logger, stream, handler = json_log
    redact_logs(redactor, loggers=[logger.name])
    assert len(handler.filters) == 1
    logging.getLogger(f"{logger.name}.child").warning("child stderr", extra={"line": TOKEN})
    assert json.loads(stream.getvalue())["line"] == "[REDACTED:GITHUB_TOKEN]"


# ---- secrets of a config ------------------------------------------------------------------------


def test_a_config_maps_each_secret_value_to_the_variable_it_came_from() -> None:
    data = {
        "mcpServers": {
            "gh": {"command": "gh", "env": {"TOKEN": "${GITHUB_TOKEN}", "ALSO": "${SAME_TOKEN}"}},
            "api": {"type": "http", "url": "https://x/mcp", "headers": {"X-Key": "${API_KEY:-unused}"}},
        }
    }
    environ = {"GITHUB_TOKEN": "ghp_value", "SAME_TOKEN": "ghp_value", "API_KEY": "sk-value"}
    config = parse_config(data, "team.json", environ)
    assert dict(config.secret_names) == {"ghp_value": "GITHUB_TOKEN", "sk-value": "API_KEY"}
    assert config.secret_values == frozenset({"ghp_value", "sk-value"})
    assert "ghp_value" not in repr(config)


def test_the_redactor_of_a_config_covers_variables_passthrough_and_literal_secrets_but_not_home() -> None:
    literal = "sk-ant-" + "a1B2c3D4e5F6g7H8i9J0"
    data = {
        "mcpServers": {
            "gh": {
                "command": "gh",
                "env": {"TOKEN": "${GITHUB_TOKEN}", "CACHE": "${HOME}/.cache", "ANTHROPIC_API_KEY": literal},
                "env_passthrough": ["AWS_SECRET_ACCESS_KEY", "NOT_SET_ANYWHERE"],
            }
        }
    }
    environ = {"GITHUB_TOKEN": TOKEN, "HOME": "/home/me", "AWS_SECRET_ACCESS_KEY": "aws/secret+value"}
    redactor = Redactor.from_config(parse_config(data, "team.json", environ), environ)
    assert redactor.redact(f"{TOKEN} /home/me/x aws/secret+value {literal}") == (
        "[REDACTED:GITHUB_TOKEN] /home/me/x [REDACTED:AWS_SECRET_ACCESS_KEY] [REDACTED:ANTHROPIC_API_KEY]"
    )


def test_env_passthrough_takes_variable_names_only() -> None:
    with pytest.raises(ConfigError, match=r"mcpServers\.s\.env_passthrough\[0\]: String should match"):
        parse_config({"mcpServers": {"s": {"command": "x", "env_passthrough": ["NOT-A-NAME"]}}}, "t", {})
    remote = {"type": "http", "url": "https://x/mcp", "env_passthrough": ["A"]}
    with pytest.raises(ConfigError, match="env_passthrough"):
        parse_config({"mcpServers": {"r": remote}}, "t", {})


def test_a_loaded_config_knows_its_directory_for_relative_paths(tmp_path: Path) -> None:
    file = tmp_path / "team" / "gateway.json"
    file.parent.mkdir()
    file.write_text(json.dumps({"mcpServers": {}, "audit": {"path": "logs/audit.jsonl"}}), encoding="utf-8")
    config = load_config(file, {})
    assert config.base_dir == file.parent.resolve()
    assert config.audit is not None
    assert config.audit.resolve_path(config.base_dir) == file.parent.resolve() / "logs" / "audit.jsonl"


# ---- the environment of a child -----------------------------------------------------------------


def test_a_child_environment_is_the_base_then_named_variables_then_the_entry_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "HTTPS_PROXY": "http://proxy:3128",
        "SSL_CERT_FILE": "/etc/ca.pem",
        "SECRET_TOKEN": "must-not-leak",
        "NAMED_TOKEN": "named",
        "OVERRIDDEN": "from-gateway",
        "SHELL": "() { echo exported function; }",
    }
    for name in list(os.environ):
        monkeypatch.delenv(name)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    env = child_environment({"OVERRIDDEN": "from-entry", "EXTRA": "1"}, ["NAMED_TOKEN", "OVERRIDDEN"])
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "HTTPS_PROXY": "http://proxy:3128",
        "SSL_CERT_FILE": "/etc/ca.pem",
        "NAMED_TOKEN": "named",
        "OVERRIDDEN": "from-entry",
        "EXTRA": "1",
    }


def test_the_base_environment_covers_locale_temp_proxies_and_ca_bundles() -> None:
    expected = {"PATH", "TEMP", "TMP", "HTTP_PROXY", "https_proxy", "NO_PROXY", "NODE_EXTRA_CA_CERTS"}
    expected |= {"SYSTEMROOT"} if sys.platform == "win32" else {"HOME", "LANG", "LC_ALL", "TMPDIR"}
    assert expected <= set(BASE_ENV_VARS)
    assert len(BASE_ENV_VARS) == len(set(BASE_ENV_VARS))


async def _child_env(entry: dict[str, Any]) -> dict[str, str]:
    config = parse_config({"mcpServers": {"tiny": entry}}, "test")
    with anyio.fail_after(WAIT):
        async with ChildPool(config.mcp_servers) as pool:
            assert await pool.wait_ready()
            result = await pool.call_tool("tiny", "env", {})
    text = "".join(block.text for block in result.content if isinstance(block, types.TextContent))
    return json.loads(text)


@pytest.mark.anyio
async def test_a_real_child_gets_a_gateway_secret_only_when_its_entry_names_it(
    tiny_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "gateway-only-secret")
    monkeypatch.setenv("NAMED_TOKEN", "meant-for-tiny")
    plain = await _child_env(tiny_server)
    assert "SECRET_TOKEN" not in plain
    assert "NAMED_TOKEN" not in plain
    assert plain["PATH"] == os.environ["PATH"]
    named = await _child_env(
        {**tiny_server, "env_passthrough": ["NAMED_TOKEN"], "env": {"FROM_ENTRY": "yes"}}
    )
    assert named["NAMED_TOKEN"] == "meant-for-tiny"
    assert named["FROM_ENTRY"] == "yes"
    assert "SECRET_TOKEN" not in named
    assert "gateway-only-secret" not in json.dumps(named)


# ---- literal secrets in a config ----------------------------------------------------------------


def _servers(**entries: Any) -> dict[str, Any]:
    return {"mcpServers": entries}


@pytest.mark.parametrize(
    "value",
    [
        "ghp_" + "A1b2" * 9,
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "gho_" + "x9" * 18,
        "xoxb-1234567890-abcdefghij",
        "xoxp-1234567890-abcdefghij",
        "sk-" + "Ab3" * 10,
        "sk-ant-api03-" + "Zy9" * 8,
        "AKIAIOSFODNN7EXAMPLE",
        "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
        "glpat-" + "a1B2c3D4e5F6g7H8i9J0",
        "npm_" + "a1B2c3D4e5" * 3 + "f6G7h8",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ],
)
def test_a_known_token_shape_is_a_literal_secret_wherever_it_is(value: str) -> None:
    data = _servers(s={"command": "srv", "args": ["--org", "acme", value], "env": {"X": value}})
    data["note"] = {"deep": [value]}
    assert find_literal_secrets(data) == ["mcpServers.s.env.X", "mcpServers.s.args[2]", "note.deep[0]"]


def test_variable_references_are_not_literal_secrets_but_a_literal_default_is() -> None:
    data = _servers(
        gh={"command": "gh", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "B": "${B:-ghp_" + "A1b2" * 9 + "}"}},
        api={"type": "http", "url": "https://x/mcp", "headers": {"Authorization": "Bearer ${API_KEY}"}},
    )
    assert find_literal_secrets(data) == ["mcpServers.gh.env.B"]


def test_the_shipped_example_configs_hold_no_literal_secret() -> None:
    example = json.loads((REPO / "examples" / "team-config.json").read_text(encoding="utf-8"))
    assert find_literal_secrets(example) == []


def test_a_bearer_token_in_a_header_and_a_password_like_value_under_a_secret_name_are_found() -> None:
    data = _servers(
        api={
            "type": "http",
            "url": "https://x/mcp",
            "headers": {
                "Authorization": "Bearer abcdefghijklmnop",
                "X-Api-Key": "k3y-value-123",
                "Accept": "application/json",
            },
        },
        db={"command": "db", "env": {"DB_PASSWORD": "hunter2hunter2", "MODE": "production", "LEVEL": "info"}},
    )
    assert find_literal_secrets(data) == [
        "mcpServers.api.headers.Authorization",
        "mcpServers.api.headers.X-Api-Key",
        "mcpServers.db.env.DB_PASSWORD",
    ]


def test_values_after_secret_flags_and_in_urls_are_found_but_paths_and_plain_words_are_not() -> None:
    data = _servers(
        cli={
            "command": "srv",
            "args": [
                "--token",
                "t0k3n-value-99",
                "--api-key=zzz999zzz999",
                "--repository",
                "/srv/repo",
                "-v",
            ],
        },
        remote={"type": "http", "url": "https://bot:pw12345@h.example/mcp?api_key=abc123def456&page=2"},
    )
    assert find_literal_secrets(data) == [
        "mcpServers.cli.args[1]",
        "mcpServers.cli.args[2]",
        "mcpServers.remote.url",
    ]


def test_long_random_env_values_are_found_but_commit_ids_uuids_and_paths_are_not() -> None:
    env = {
        "SIGNING": "Xk9fQ2mZ7pL0aB4cD8eF1gH5",
        "COMMIT": "3f2a9c1b7d4e6f80a1b2c3d4e5f60718293a4b5c",
        "RUN_ID": "123e4567-e89b-12d3-a456-426614174000",
        "DATA": "/var/lib/data/Xk9fQ2mZ7pL0aB4cD8eF1gH5",
    }
    assert find_literal_secrets(_servers(s={"command": "x", "env": env})) == ["mcpServers.s.env.SIGNING"]


def test_the_warning_names_the_path_and_the_variable_to_use() -> None:
    assert literal_secret_warning("mcpServers.github.env.GITHUB_TOKEN") == (
        "warning: mcpServers.github.env.GITHUB_TOKEN looks like a literal secret; use ${GITHUB_TOKEN}"
    )
    assert literal_secret_warning("mcpServers.api.headers.Authorization") == (
        "warning: mcpServers.api.headers.Authorization looks like a literal secret; use a ${VAR} reference"
    )


@pytest.mark.anyio
async def test_check_prints_a_warning_line_per_literal_secret(
    tmp_path: Path, tiny_server: dict[str, Any]
) -> None:
    config = tmp_path / "gateway.json"
    entry = {**tiny_server, "env": {"GITHUB_TOKEN": TOKEN, "OK": "${HOME}"}}
    config.write_text(json.dumps({"mcpServers": {"tiny": entry}}), encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if k != "CODEMODE_CONFIG"}
    with anyio.fail_after(WAIT):
        done = await anyio.run_process(
            [sys.executable, "-m", "gateway", "check", "--config", str(config)], env=environ, check=False
        )
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert (
        "warning: mcpServers.tiny.env.GITHUB_TOKEN looks like a literal secret; use ${GITHUB_TOKEN}"
        in stderr.splitlines()
    )
    assert done.stdout.decode().splitlines()[1].split()[:3] == ["tiny", "stdio", "ready"]
