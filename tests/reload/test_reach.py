"""Which children may reach the gateway's own files: under their cwd, a path-like argument, or a
path-like environment value; a warning names where, never the path from the child's entry."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.config import GatewayConfig, parse_config
from gateway.reload import reach_warnings

CONFIG_RISK = "a snippet could change what the gateway runs at its next start or operator reload"


@pytest.fixture(autouse=True)
def cache_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("CODEMODE_CACHE_DIR", str(cache))
    return cache


def config_in(project: Path, servers: dict[str, Any], **sections: Any) -> GatewayConfig:
    project.mkdir(exist_ok=True)
    file = project / "team.json"
    return parse_config(
        {"mcpServers": servers, **sections}, str(file), {}, config_dir=project, config_file=file
    )


def child(*args: str, **entry: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["server.py", *args], **entry}


def test_a_child_serving_the_directory_that_holds_the_config_is_named_with_the_argument(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    warnings = reach_warnings(config_in(project, {"fs": child(str(project))}))
    assert warnings[0] == (
        f"child 'fs' may write under a path (its argument 2) that holds the gateway's config "
        f"{project / 'team.json'}: {CONFIG_RISK}"
    )
    assert len(warnings) == 2  # and the lockfile beside it


def test_a_relative_argument_is_resolved_from_the_childs_cwd(tmp_path: Path) -> None:
    project = tmp_path / "project"
    warnings = reach_warnings(config_in(project, {"git": child("--repository=..", cwd=str(project / "src"))}))
    assert any("(its argument 2)" in line and "team.json" in line for line in warnings)


def test_a_path_in_the_environment_and_the_cwd_count_too(tmp_path: Path) -> None:
    project = tmp_path / "project"
    by_env = child(env={"ROOTS": f"/nonexistent{':'}{tmp_path}"})
    by_cwd = child(cwd=str(project))
    warnings = reach_warnings(config_in(project, {"env": by_env, "cwd": by_cwd}))
    assert any(line.startswith("child 'env' may write under a path (its env ROOTS)") for line in warnings)
    assert any(line.startswith("child 'cwd' may write under a path (its cwd)") for line in warnings)


def test_a_child_serving_a_sibling_directory_or_a_remote_one_is_not_named(tmp_path: Path) -> None:
    project = tmp_path / "project"
    servers = {
        "docs": child(str(tmp_path / "docs")),
        "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
    }
    assert reach_warnings(config_in(project, servers)) == []


def test_the_audit_log_the_pid_file_and_the_cache_of_the_sandbox_and_background_runs_are_the_gateways_own_too(
    tmp_path: Path, cache_elsewhere: Path
) -> None:
    project = tmp_path / "project"
    config = config_in(
        tmp_path / "conf", {"fs": child(str(project))}, audit={"path": str(project / "a.jsonl")}
    )
    cache_elsewhere.parent.mkdir(exist_ok=True)
    reached = [
        *reach_warnings(config, project / "gateway.pid"),
        *reach_warnings(config_in(project, {"all": child("/")})),
    ]
    assert any(
        f"the audit log {project / 'a.jsonl'}: a snippet could read or rewrite" in line for line in reached
    )
    assert any(f"the pid file {project / 'gateway.pid'}: a snippet could forge" in line for line in reached)
    cache = f"the gateway's cache {cache_elsewhere} (the compiled sandbox, background runs): a snippet could"
    assert any(
        line.endswith(
            f"{cache} plant native code the gateway loads at its next start, or read and "
            "forge every caller's kept background results"
        )
        for line in reached
    )


def test_a_child_given_the_gateways_state_store_is_named_with_where_it_was_given_it(tmp_path: Path) -> None:
    servers = {
        "cache": child("--url", "redis://127.0.0.1:6379/5"),  # the same server under another name and db
        "queue": child(env={"REDIS_URL": "rediss://localhost/0"}),  # the default port
        "other": child("redis://localhost:6380/0"),
        "remote": {"type": "http", "url": "https://redis.example.com/mcp"},
    }
    config = config_in(tmp_path, servers, state={"url": "redis://localhost:6379/0"})
    warnings = reach_warnings(config)
    store = "may reach the gateway's state store (state.url), by"
    assert [line.partition(":")[0] for line in warnings] == [
        f"child 'cache' {store} its argument 3",
        f"child 'queue' {store} its env REDIS_URL",
    ]
    assert all("6379" not in line and "127.0.0.1" not in line for line in warnings)  # nor the store's URL
    assert reach_warnings(config_in(tmp_path, servers)) == []  # no state section: nothing shared to reach
