"""The environment of a stdio child: the SDK's default, a few more variables, what its entry names."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import pytest
from mcp import types

from gateway.children import ChildPool
from gateway.children._env import BASE_ENV_VARS, PARENT_ENV_VAR, child_environment
from gateway.config import (
    parse_config,
)

WAIT = 60  # real child servers start in seconds; this bounds a hang, not a race


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
        "CODEMODE_GATEWAY_PARENT": str(os.getpid()),
    }


def test_every_child_is_told_the_gateways_pid_whatever_its_entry_or_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(PARENT_ENV_VAR, "1")  # a gateway that is itself some gateway's child
    assert PARENT_ENV_VAR == "CODEMODE_GATEWAY_PARENT"
    assert child_environment({})[PARENT_ENV_VAR] == str(os.getpid())
    assert child_environment({PARENT_ENV_VAR: "42"}, [PARENT_ENV_VAR])[PARENT_ENV_VAR] == str(os.getpid())
    assert PARENT_ENV_VAR not in BASE_ENV_VARS  # set, never inherited


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
    assert plain[PARENT_ENV_VAR] == named[PARENT_ENV_VAR] == str(os.getpid())
    assert "SECRET_TOKEN" not in named
    assert "gateway-only-secret" not in json.dumps(named)
