"""The catalog searches see: a search in the gateway's first moments waits for children still starting."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from gateway.calls import _catalogs
from gateway.calls._gateway import Gateway
from gateway.config import GatewayConfig, parse_config
from tests.real_servers import TINY_SERVER

pytestmark = pytest.mark.anyio


def _gated_config(go: Path) -> GatewayConfig:
    """A config whose one child finishes starting only once the file `go` exists."""
    gate = (
        "import pathlib, runpy, sys, time\n"
        f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.01)\n"
        f"sys.argv = [{str(TINY_SERVER)!r}]\n"
        f"runpy.run_path({str(TINY_SERVER)!r}, run_name='__main__')\n"
    )
    return parse_config({"mcpServers": {"gated": {"command": sys.executable, "args": ["-c", gate]}}}, "test")


async def test_a_search_in_the_first_moments_waits_for_the_children_still_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_catalogs, "FIRST_SEARCH_SECONDS", 600.0)
    go = tmp_path / "go"
    answers: list[str] = []
    async with Gateway(_gated_config(go)) as gateway:

        async def search() -> None:
            answers.append(await gateway.search_docs("echo"))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(search)
                await anyio.wait_all_tasks_blocked()
                go.touch()  # the child can only be ready now, so an answer naming its tool waited for it
    assert "gated.echo" in answers[0]
    assert "Still starting" not in answers[0]


async def test_after_the_first_moments_a_search_answers_at_once_naming_the_children_still_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_catalogs, "FIRST_SEARCH_SECONDS", 0.0)
    async with Gateway(_gated_config(tmp_path / "never")) as gateway:
        with anyio.fail_after(60):
            answer = await gateway.search_docs("echo")
    assert answer.splitlines()[-1] == "Still starting: gated; search again in a moment."
