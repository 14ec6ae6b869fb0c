"""`codemode-gateway check` and `schema`, run as the real command in a process of its own."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.cli.command import Commands, run_command
from tests.real_servers import REPO, fresh_git_repo, npm_entry_point

TOKEN = "ghp_Zq8vN3kLp0Xw7Rt2Yb5Hc9Jd4Mf6Gs1Ae"

pytestmark = pytest.mark.anyio


def write_config(tmp_path: Path, servers: dict[str, Any]) -> str:
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return str(path)


def table(stdout: str) -> dict[str, list[str]]:
    header, *rows = stdout.splitlines()
    assert header.split()[:5] == ["child", "transport", "status", "tools", "startup"]
    return {row.split()[0]: row.split(None, 5) for row in rows}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one `check` run serves the tests that read it."""
    return "asyncio"


Run = tuple[int, str, str]


def everything() -> dict[str, Any]:
    """server-everything under node: a child that connects, for the checks where any child will do (a
    Node child starts for a fraction of a Python one's CPU)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH; the npm child servers need Node 20")
    return {"command": node, "args": [str(npm_entry_point("@modelcontextprotocol/server-everything"))]}


@pytest.fixture(scope="module")
def team_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh git repository with one untracked file, holding the team's config."""
    return fresh_git_repo(tmp_path_factory.mktemp("team"))


@pytest.fixture(scope="module")
async def team_check(team_repo: Path, commands: Commands) -> Run:
    """One `check` of a config whose children all connect: time, and git (serving the repository that
    holds the config, the lockfile's place and the audit log) with a literal secret in its env; and
    the gateway's own entry, as `claude mcp add --scope project` writes it into a `.mcp.json`."""
    config = team_repo / ".mcp.json"
    servers = {
        "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
        "git": {
            "command": sys.executable,
            "args": ["-m", "mcp_server_git", "--repository", str(team_repo)],
            "env": {"GITHUB_TOKEN": TOKEN, "OK": "${CODEMODE_TEST_REGION}"},
        },
        "codemode": {"type": "stdio", "command": "codemode-gateway", "args": ["serve"]},
    }
    config.write_text(
        json.dumps({"mcpServers": servers, "audit": {"path": "logs/audit.jsonl"}}), encoding="utf-8"
    )
    return await commands.run("check", "--config", str(config), env={"CODEMODE_TEST_REGION": "eu-west-1"})


async def test_check_prints_a_row_per_child_and_exits_0_when_all_connect(team_check: Run) -> None:
    code, out, err = team_check
    assert code == 0, err
    rows = table(out)
    assert rows["time"][1:4] == ["stdio", "ready", "2"]
    assert rows["git"][1:3] == ["stdio", "ready"]
    assert int(rows["git"][3]) > 5
    assert float(rows["time"][4]) > 0
    # The gateway's own entry is left out, with its reason, and fails nothing; the note is a line for a
    # person on stderr, as the warnings are, not a JSON log record.
    assert rows["codemode"][1:4] == ["-", "left", "out"]
    assert "note: mcpServers.codemode: left out: it runs codemode-gateway" in err
    assert '"config note"' not in err
    assert out.splitlines()[-1].endswith(
        "mcpServers.codemode.command: runs codemode-gateway, which would start itself again"
    )


@pytest.fixture(scope="module")
async def failing_check(tmp_path_factory: pytest.TempPathFactory, commands: Commands) -> Run:
    """One `check` of a config, named by $CODEMODE_CONFIG, where everything connects and broken cannot
    start."""
    config = write_config(
        tmp_path_factory.mktemp("failing"),
        {"everything": everything(), "broken": {"command": "/nonexistent/codemode-server"}},
    )
    return await commands.run("check", env={"CODEMODE_CONFIG": config})


async def test_check_exits_1_and_shows_the_error_of_a_child_that_failed(failing_check: Run) -> None:
    code, out, err = failing_check
    assert code == 1, err
    rows = table(out)
    assert rows["everything"][2] == "ready"
    assert rows["broken"][1:4] == ["stdio", "failed", "-"]
    assert rows["broken"][5] == "cannot start '/nonexistent/codemode-server': No such file or directory"
    # Logs are JSON lines on stderr; stdout holds only the table.
    assert all(json.loads(line)["logger"].startswith("gateway") for line in err.splitlines())


async def test_check_exits_2_naming_every_bad_key_without_a_traceback(
    tmp_path: Path, commands: Commands
) -> None:
    config = write_config(
        tmp_path,
        {
            "github": {
                "command": "gh",
                "args": ["a", "b", 3],
                "env": {"GITHUB_TOKEN": "${CODEMODE_TEST_UNSET}"},
            }
        },
    )
    code, out, err = await commands.run("check", "--config", config)
    assert (code, out) == (2, "")
    assert "mcpServers.github.args[2]: Input should be a valid string" in err
    assert "mcpServers.github.env.GITHUB_TOKEN: ${CODEMODE_TEST_UNSET} is not set" in err
    assert "Traceback" not in err


async def test_check_reads_the_config_named_by_the_environment(failing_check: Run) -> None:
    code, out, _ = failing_check
    assert code == 1
    assert list(table(out)) == ["everything", "broken"]


async def test_schema_prints_exactly_the_shipped_schema_file(commands: Commands) -> None:
    code, out, err = await commands.run("schema")
    assert code == 0, err
    assert out == (REPO / "codemode-gateway.schema.json").read_text(encoding="utf-8")
    assert json.loads(out)["title"] == "codemode-gateway config"


async def test_check_fails_on_a_policy_rule_that_matches_no_tool_of_its_server(
    tmp_path: Path, commands: Commands
) -> None:
    config = {"mcpServers": {"everything": everything()}, "policy": {"deny": ["everything.ech"]}}
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    code, stdout, stderr = await commands.run("check", "--config", str(path))
    assert code == 1
    assert table(stdout)["everything"][2] == "ready"
    assert (
        'error: server everything is blocked: policy.deny[0] "everything.ech" matches none of its tools '
        "(did you mean everything.echo?)"
    ) in stderr


async def test_check_prints_a_warning_line_per_literal_secret(team_check: Run) -> None:
    code, out, err = team_check
    assert code == 0, err
    assert (
        "warning: mcpServers.git.env.GITHUB_TOKEN looks like a literal secret; use ${GITHUB_TOKEN}"
        in err.splitlines()
    )
    assert table(out)["git"][:3] == ["git", "stdio", "ready"]  # a warning, not a refusal


async def test_semantic_search_required_without_its_runtime_is_a_config_error_naming_what_to_install(
    tmp_path: Path,
) -> None:
    # A site hook that makes onnxruntime unimportable in the command's process, as where it has no wheel.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\nsys.modules['onnxruntime'] = None\n", encoding="utf-8"
    )
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcpServers": {}, "search": {"semantic": "on"}}))
    # A fresh interpreter, whose site hook runs before anything is imported.
    code, _, err = await run_command("check", "--config", str(config), env={"PYTHONPATH": str(site)})
    assert code == 2
    assert "search.semantic is 'on' but the search model's runtime is not installed" in err
    assert "pip install 'onnxruntime>=1.32' 'tokenizers>=0.23' 'numpy>=2'" in err
    assert "missing: onnxruntime" in err


async def test_check_warns_when_a_child_may_write_where_the_gateways_own_files_are(
    team_check: Run, team_repo: Path
) -> None:
    # The team's config in the repository its git child serves: a checkout can rewrite it.
    code, _, err = team_check
    warnings = [line for line in err.splitlines() if line.startswith("warning: child")]
    resolved = await anyio.Path(team_repo).resolve()
    assert code == 0, err  # a heuristic warns; it does not fail the check
    assert warnings == [
        f"warning: child 'git' may write under a path (its argument 4) that holds the gateway's config "
        f"{resolved / '.mcp.json'}: a snippet could change what the gateway runs at its next start or "
        "operator reload",
        f"warning: child 'git' may write under a path (its argument 4) that holds the lockfile "
        f"{resolved / '.mcp.lock.json'}: a snippet could admit unreviewed tools at the next start",
        f"warning: child 'git' may write under a path (its argument 4) that holds the audit log "
        f"{resolved / 'logs' / 'audit.jsonl'}: a snippet could read or rewrite the audit log",
    ]
