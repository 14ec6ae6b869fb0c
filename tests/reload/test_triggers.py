"""The config file watched for changes: written in place, replaced by rename, still being written."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.calls._gateway import Gateway
from gateway.config import load_config
from gateway.reload._reloader import Reloader, ReloadResult, Trigger
from gateway.reload._triggers import _on_change  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.anyio

WAIT = 30  # the watcher reports within a fraction of a second; this bounds a hang


class Recorder(Reloader):
    """A Reloader that only notes what the file held each time it was asked to reload."""

    def __init__(self, gateway: Gateway) -> None:
        super().__init__(gateway)
        self.seen: list[str] = []
        self.changed = anyio.Event()

    async def reload(self, trigger: Trigger, requested_by: Mapping[str, Any] | None = None) -> ReloadResult:
        assert self.config_file is not None
        self.seen.append(self.config_file.read_text(encoding="utf-8"))
        self.changed.set()
        self.changed = anyio.Event()
        return ReloadResult(len(self.seen), trigger, "applied")


def write(path: Path, data: dict[str, Any]) -> str:
    text = json.dumps(data)
    path.write_text(text, encoding="utf-8")
    return text


async def watched(path: Path, body: Any) -> Recorder:
    recorder = Recorder(Gateway(load_config(path)))
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            await group.start(_on_change, recorder, path)
            await body(recorder)
            group.cancel_scope.cancel()
    return recorder


async def test_a_file_written_in_place_is_reloaded_with_its_new_content(tmp_path: Path) -> None:
    path = tmp_path / "team.json"
    write(path, {"mcpServers": {}})

    async def change(recorder: Recorder) -> None:
        changed = recorder.changed
        expected.append(write(path, {"mcpServers": {}, "expose": []}))
        await changed.wait()

    expected: list[str] = []
    recorder = await watched(path, change)
    assert recorder.seen == expected


async def test_a_file_an_editor_replaces_by_renaming_is_reloaded(tmp_path: Path) -> None:
    path = tmp_path / "team.json"
    write(path, {"mcpServers": {}})

    async def replace(recorder: Recorder) -> None:
        changed = recorder.changed
        fresh = tmp_path / ".team.json.swp"
        expected.append(write(fresh, {"mcpServers": {}, "policy": {"deny": ["x.y"]}}))
        os.replace(fresh, path)
        await changed.wait()

    expected: list[str] = []
    recorder = await watched(path, replace)
    assert recorder.seen == expected


async def test_a_file_still_being_written_is_reloaded_only_once_it_is_whole(tmp_path: Path) -> None:
    path = tmp_path / "team.json"
    write(path, {"mcpServers": {}})
    whole = json.dumps({"mcpServers": {}, "expose": []})

    async def write_in_two_parts(recorder: Recorder) -> None:
        changed = recorder.changed
        with path.open("w", encoding="utf-8") as file:
            file.write(whole[:10])
            file.flush()
            file.write(whole[10:])
        await changed.wait()

    recorder = await watched(path, write_in_two_parts)
    assert recorder.seen == [whole]


async def test_a_file_that_stays_invalid_is_reloaded_after_a_while_so_its_errors_are_logged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "team.json"
    write(path, {"mcpServers": {}})

    async def break_it(recorder: Recorder) -> None:
        changed = recorder.changed
        path.write_text('{"mcpServers": ', encoding="utf-8")
        await changed.wait()

    recorder = await watched(path, break_it)
    assert recorder.seen == ['{"mcpServers": ']
