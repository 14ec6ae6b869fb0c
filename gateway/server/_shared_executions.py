"""Background executions in the store replicas share (`state`): any replica answers for any execution.

Each execution is a record under `<prefix>run:<id>` (JSON), written by the replica running it when it
starts, every renewal, and when it ends. The running replica also holds `<prefix>run:<id>:lease`,
which expires `background.lease_seconds` after its last renewal: an execution whose record says it runs but
whose lease is gone lost its replica, and the first replica to read it records it as ended so. A
cancel asked on another replica sets `<prefix>run:<id>:cancel` (read at the next renewal) and is
published on `<prefix>runs:cancel` (heard at once). Records expire `background.keep_seconds` after
the execution ends, or after the lease lapses. The keys keep the names earlier versions wrote.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import anyio

from gateway.config import GatewayConfig
from gateway.config.server import BackgroundConfig
from gateway.server._execution_store import ExecutionRecord, ExecutionStore, FileExecutions, executions_file
from gateway.state import SharedState

__all__ = ["SharedExecutions", "open_execution_store", "replica_stopped"]

log = logging.getLogger("gateway.server.background")

CANCEL_CHANNEL = "runs:cancel"
LISTEN_SECONDS = 0.5  # how long one read of the cancel channel waits: below the command timeout
RECONNECT_SECONDS = (0.5, 1.0, 2.0, 5.0)  # backoff between attempts to listen again

# The record becomes ended only if it is still the one read and no lease came back meanwhile: the
# execution's replica may have written its real end, or renewed late.
_END_IF_UNLEASED = """
if redis.call('GET', KEYS[1]) == ARGV[1] and redis.call('EXISTS', KEYS[2]) == 0 then
  return redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return false
"""


def _text(data: Any) -> str:
    return data.decode() if isinstance(data, bytes) else str(data)


def replica_stopped(lease_seconds: float) -> str:
    """Why an execution whose replica died ended, as a caller reads it."""
    return (
        "the background execution ended: its replica stopped before it finished (its lease of "
        f"{lease_seconds:g} s, background.lease_seconds, lapsed). Start the snippet again"
    )


class SharedExecutions:
    """Background executions in Redis, each held by the replica running it under a lease."""

    name = "the state store (state.url)"

    def __init__(self, state: SharedState, config: BackgroundConfig) -> None:
        self._state = state
        self._redis = state.client
        self._untyped: Any = state.client  # for the calls redis-py leaves untyped (eval, pubsub, publish)
        self._lease_ms = round(config.lease_seconds * 1000)
        self._keep_ms = round(config.keep_seconds * 1000)
        self._lease_seconds = config.lease_seconds
        self.renew_seconds: float | None = config.lease_seconds / 3
        self._replica = secrets.token_hex(8)  # whose lease it is, for an operator reading the store

    def _record_key(self, execution_id: str) -> str:
        return self._state.key("run", execution_id)

    def _lease_key(self, execution_id: str) -> str:
        return self._state.key("run", execution_id, "lease")

    def _cancel_key(self, execution_id: str) -> str:
        return self._state.key("run", execution_id, "cancel")

    async def kept(self) -> list[ExecutionRecord]:
        return []  # every replica reads them from the store as asked

    async def _hold(self, record: ExecutionRecord) -> list[Any]:
        """Write a running record with its lease, in one transaction; the cancel flag's state."""
        async with self._redis.pipeline(transaction=True) as pipe:
            # The record outlives a lapsed lease by keep_seconds, so a dead replica's run reads ended.
            pipe.set(self._record_key(record.id), record.to_json(), px=self._lease_ms + self._keep_ms)
            pipe.set(self._lease_key(record.id), self._replica, px=self._lease_ms)
            pipe.exists(self._cancel_key(record.id))
            return await pipe.execute()

    async def started(self, record: ExecutionRecord) -> None:
        await self._hold(record)

    async def renew(self, record: ExecutionRecord) -> bool:
        *_, cancel_asked = await self._hold(record)
        return bool(cancel_asked)

    async def ended(self, record: ExecutionRecord) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(self._record_key(record.id), record.to_json(), px=self._keep_ms)
            pipe.delete(self._lease_key(record.id), self._cancel_key(record.id))
            await pipe.execute()

    async def read(self, execution_id: str) -> ExecutionRecord | None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.get(self._record_key(execution_id))
            pipe.exists(self._lease_key(execution_id))
            data, leased = await pipe.execute()
        if data is None:
            return None
        record = ExecutionRecord.from_json(data)
        if record is None or record.finished or leased:
            return record
        return await self._ended_with_its_replica(record, data)

    async def _ended_with_its_replica(self, record: ExecutionRecord, read: bytes) -> ExecutionRecord:
        """Record an execution whose lease lapsed as ended: its replica stopped."""
        why = replica_stopped(self._lease_seconds)
        now = datetime.now(UTC)
        ended = record.model_copy(
            update={
                "status": "failed",
                "message": why,
                "error": why,
                "updated_at": now,
                "ended_at": time.time(),
                "input_requests": {},
            }
        )
        keys = (self._record_key(record.id), self._lease_key(record.id))
        await self._untyped.eval(_END_IF_UNLEASED, len(keys), *keys, read, ended.to_json(), self._keep_ms)
        log.info("a background execution's replica stopped", extra={"execution_id": record.id})
        return await self._reread(record.id, ended)

    async def _reread(self, execution_id: str, fallback: ExecutionRecord) -> ExecutionRecord:
        data = await self._redis.get(self._record_key(execution_id))
        record = None if data is None else ExecutionRecord.from_json(data)
        return record if record is not None and record.finished else fallback

    async def ask_cancel(self, execution_id: str) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(self._cancel_key(execution_id), "1", px=self._lease_ms + self._keep_ms)
            await pipe.execute()
        await self._untyped.publish(self._state.key(CANCEL_CHANNEL), execution_id)

    async def forget(self, execution_ids: Sequence[str]) -> None:
        if execution_ids:
            await self._redis.delete(*(self._record_key(execution_id) for execution_id in execution_ids))

    async def cancels(self) -> AsyncIterator[str]:
        from redis.exceptions import RedisError  # redis-py is imported only by a gateway with `state`

        attempt = 0
        while True:
            try:
                async with self._untyped.pubsub() as pubsub:
                    await pubsub.subscribe(self._state.key(CANCEL_CHANNEL))
                    attempt = 0
                    while True:
                        message = await pubsub.get_message(
                            ignore_subscribe_messages=True, timeout=LISTEN_SECONDS
                        )
                        if message is not None and message.get("type") == "message":
                            yield _text(message["data"])
            except (RedisError, OSError) as exc:
                delay = RECONNECT_SECONDS[min(attempt, len(RECONNECT_SECONDS) - 1)]
                attempt += 1
                log.warning(
                    "the state store's cancel channel failed; listening again",
                    extra={"error": type(exc).__name__, "retry_in_seconds": delay},
                )
                await anyio.sleep(delay)


@asynccontextmanager
async def open_execution_store(
    config: GatewayConfig, shared: SharedState | None, *, lasting: bool
) -> AsyncGenerator[ExecutionStore | None]:
    """The store background executions are kept in beyond memory: the shared one with `state`; else, if
    `lasting` (a served process, not a test's) and `background.keep_on_disk`, the local file; else none."""
    if shared is not None:
        yield SharedExecutions(shared, config.background)
        return
    if not (lasting and config.background.keep_on_disk):
        yield None
        return
    try:
        runs = FileExecutions(executions_file(config.config_file))
    except OSError as exc:  # results are then kept in memory, as without the file
        log.warning("background results will not outlive the process", extra={"error": str(exc)})
        yield None
        return
    try:
        yield runs
    finally:
        runs.close()
