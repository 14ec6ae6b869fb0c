"""What a snippet may import is exactly what the snapshot holds."""

from __future__ import annotations

import anyio
import pytest

from gateway import Sandbox
from guest._allowlist import ALLOWED_MODULES, DENIED_CAPABILITIES

pytestmark = pytest.mark.anyio


async def test_every_allowlisted_module_imports_in_the_sandbox(sandbox: Sandbox) -> None:
    code = "import importlib\n[m for m in MODULES if importlib.import_module(m) is None]".replace(
        "MODULES", repr(list(ALLOWED_MODULES))
    )
    with anyio.fail_after(30):
        result = await sandbox.execute(code)
    assert result.ok, result.error
    assert result.value == []


async def test_a_module_outside_the_allowlist_names_the_allowlist(sandbox: Sandbox) -> None:
    with anyio.fail_after(30):
        result = await sandbox.execute("import sqlite3")
    assert result.error is not None
    assert result.error.type == "ModuleNotFoundError"
    assert "filesystem" in result.error.message


def test_no_module_is_both_allowed_and_denied() -> None:
    assert not set(ALLOWED_MODULES) & set(DENIED_CAPABILITIES)


async def test_datetime_strptime_and_idna_work_after_the_imports_are_sealed(sandbox: Sandbox) -> None:
    code = (
        "import datetime\n"
        "[datetime.datetime.strptime('2024-05-06', '%Y-%m-%d').day, 'bücher.de'.encode('idna').decode()]"
    )
    with anyio.fail_after(30):
        result = await sandbox.execute(code)
    assert result.ok, result.error
    assert result.value == [6, "xn--bcher-kva.de"]
