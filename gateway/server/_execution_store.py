"""Where background executions are kept beyond one process's memory: the `ExecutionStore` seam, and its local
SQLite file.

Without `state`, a process writes each finished execution (record, status, result) to a SQLite file in
the cache directory, so `collect` and `tasks/result` answer after a restart; the file is the process's
user's alone. With `state`, the executions live in Redis instead (`_shared_executions.py`), where every
replica reads them. Either way the process that runs an execution keeps it in memory too, and the budgets
of `_background.py` decide what is kept: a store forgets what they drop. The stored names (the `runs`
table, the `runs-*.sqlite3` file) are kept from earlier versions, so their files still read.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio
from mcp import types
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.auth import Owner
from gateway.sandbox.component import default_cache_dir

__all__ = [
    "UNUSED_FILE_SECONDS",
    "ExecutionRecord",
    "ExecutionStore",
    "FileExecutions",
    "Status",
    "executions_file",
]

log = logging.getLogger("gateway.server.background")

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
FINISHED: frozenset[Status] = frozenset({"completed", "failed", "cancelled"})
UNUSED_FILE_SECONDS = 30 * 86_400
"""A results file no gateway has written for this long holds only expired results (`keep_seconds` is at
most 7 days): the next new results file in the directory removes it, as the sandbox's unused builds go."""


class ExecutionRecord(BaseModel):
    """A background run as a store keeps it: whose it is, how it stands, and once ended its result."""

    model_config = ConfigDict(frozen=True)

    id: str
    issuer: str
    principal: str
    created_at: datetime
    updated_at: datetime | None = None
    status: Status
    message: str | None = None
    error: str | None = None
    result: types.CallToolResult | None = None
    ended_at: float | None = Field(default=None, description="When it ended, in seconds since the epoch.")
    size: int = 0
    input_requests: dict[str, dict[str, Any]] = Field(default_factory=dict[str, dict[str, Any]])

    @property
    def owner(self) -> Owner:
        """Who started it."""
        return Owner(self.issuer, self.principal)

    @property
    def finished(self) -> bool:
        """Whether it has ended."""
        return self.status in FINISHED

    def to_json(self) -> str:
        """The record as stored."""
        return self.model_dump_json(by_alias=True, exclude_none=True)

    @classmethod
    def from_json(cls, data: str | bytes) -> ExecutionRecord | None:
        """A stored record, or None if it cannot be read (written by another version, or damaged)."""
        try:
            return cls.model_validate_json(data)
        except ValidationError:
            return None


class ExecutionStore(Protocol):
    """What `BackgroundExecutions` asks of a store beyond its own memory."""

    name: str
    """What the store is, as an error names it: which config key to check."""
    renew_seconds: float | None
    """How often the process running an execution renews its hold on it; None if no one else could take it."""

    async def kept(self) -> list[ExecutionRecord]:
        """The finished executions this process should count as its own at start, oldest first."""
        ...

    async def started(self, record: ExecutionRecord) -> None:
        """An execution began in this process."""
        ...

    async def renew(self, record: ExecutionRecord) -> bool:
        """Renew this process's hold on a running execution, storing how it stands; True if a cancel of it
        was asked elsewhere."""
        ...

    async def ended(self, record: ExecutionRecord) -> None:
        """An execution of this process ended: keep its record (`background.keep_seconds`)."""
        ...

    async def read(self, execution_id: str) -> ExecutionRecord | None:
        """The execution `execution_id`, if the store has it (another process's too)."""
        ...

    async def ask_cancel(self, execution_id: str) -> None:
        """Ask the process running `execution_id` to cancel it."""
        ...

    async def forget(self, execution_ids: Sequence[str]) -> None:
        """Drop these executions (expired, or dropped to keep within the budgets)."""
        ...

    def cancels(self) -> AsyncIterator[str]:
        """The ids of executions whose cancel another process asked for, as they come."""
        ...


def executions_file(config_file: Path | None, cache_dir: Path | None = None) -> Path:
    """The SQLite file of the executions of the gateway serving `config_file`: one per config, so that two
    gateways on different configs sharing the cache directory keep their executions apart."""
    name = str(config_file) if config_file is not None else "built-in default"
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return (cache_dir or default_cache_dir()) / "background" / f"runs-{digest}.sqlite3"


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, ended_at REAL NOT NULL, record TEXT NOT NULL)"
)


def _remove_unused_files(directory: Path, now: float) -> None:
    # A file per config path: configs in passing (a temporary directory, a checkout since removed)
    # would otherwise leave theirs behind for good.
    for path in directory.glob("runs-*.sqlite3"):
        parts = [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]
        try:
            written = max(part.lstat().st_mtime for part in parts if part.is_symlink() or part.exists())
            if now - written > UNUSED_FILE_SECONDS:
                log.info("removed an unused background results file", extra={"file": path.name})
                for part in parts:
                    part.unlink(missing_ok=True)
        except (OSError, ValueError):  # removed by another process meanwhile
            continue


def _create_owner_only(path: Path) -> None:
    """Create `path` (and its directory) for the gateway's user only, never through a symlink: executions'
    results may hold whatever the children answered."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
    finally:
        os.close(fd)


class FileExecutions:
    """Finished executions in a SQLite file (WAL): one process's, kept across its restarts. The file is
    made when the first run ends, so a gateway that runs nothing in the background leaves none."""

    name = "the local results file (background.keep_on_disk)"
    renew_seconds: float | None = None

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one connection, used from worker threads one at a time
        if path.exists() or path.is_symlink():
            self._open()

    def _open(self) -> sqlite3.Connection:
        if self._db is not None and not self.path.exists():
            # Removed as unused while this process kept it open: results from now on go to a new file.
            self._db.close()
            self._db = None
        if self._db is None:
            if not (self.path.exists() or self.path.is_symlink()):
                _remove_unused_files(self.path.parent, time.time())
            _create_owner_only(self.path)
            db = sqlite3.connect(self.path, timeout=5.0, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            # Durable across a crash of the process (what a restart needs), without a sync per execution.
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_SCHEMA)
            self._db = db
        return self._db

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    async def _run(self, sql: str, *parameters: Any, create: bool = False) -> list[tuple[Any, ...]]:
        def run() -> list[tuple[Any, ...]]:
            with self._lock:
                if self._db is None and not create:
                    return []  # no file yet: nothing kept
                return self._open().execute(sql, parameters).fetchall()

        return await anyio.to_thread.run_sync(run)

    async def kept(self) -> list[ExecutionRecord]:
        rows = await self._run("SELECT id, record FROM runs ORDER BY ended_at")
        records = [(execution_id, ExecutionRecord.from_json(data)) for execution_id, data in rows]
        unreadable = [execution_id for execution_id, record in records if record is None]
        if unreadable:
            log.warning(
                "background executions left out: unreadable records", extra={"count": len(unreadable)}
            )
            await self.forget(unreadable)
        return [record for _, record in records if record is not None]

    async def started(self, record: ExecutionRecord) -> None:
        return None  # only ended executions outlive the process

    async def renew(self, record: ExecutionRecord) -> bool:
        return False

    async def ended(self, record: ExecutionRecord) -> None:
        await self._run(
            "INSERT OR REPLACE INTO runs (id, ended_at, record) VALUES (?, ?, ?)",
            record.id,
            record.ended_at or 0.0,
            record.to_json(),
            create=True,
        )

    async def read(self, execution_id: str) -> ExecutionRecord | None:
        rows = await self._run("SELECT record FROM runs WHERE id = ?", execution_id)
        return ExecutionRecord.from_json(rows[0][0]) if rows else None

    async def ask_cancel(self, execution_id: str) -> None:
        return None  # an execution of this file is running in this process, or not at all

    async def forget(self, execution_ids: Sequence[str]) -> None:
        for execution_id in execution_ids:
            await self._run("DELETE FROM runs WHERE id = ?", execution_id)

    async def cancels(self) -> AsyncIterator[str]:
        await anyio.sleep_forever()
        yield ""  # pragma: no cover  (never reached: makes this an async generator)
