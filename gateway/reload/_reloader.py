"""One config reload: the file read and validated as at start, compared with the config in force,
then applied, or refused with the old config serving on; audited, logged and counted either way."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.to_thread

from gateway.calls import Gateway, new_sandbox
from gateway.catalog import Catalog
from gateway.catalog.lockfile import CatalogLock
from gateway.children import PoolChanges
from gateway.config import GatewayConfig, load_config
from gateway.errors import ConfigError, SandboxUnavailable
from gateway.middleware import Chain
from gateway.policy import Policies
from gateway.reload._diff import ConfigDiff, applicable, diff_configs
from gateway.reload._privileged import lock_widenings, privileged_changes
from gateway.shared import NOTICE

if TYPE_CHECKING:
    from gateway.sandbox import Sandbox

__all__ = ["UNATTENDED_TRIGGERS", "Outcome", "ReloadResult", "Reloader", "Trigger"]

log = logging.getLogger("gateway.reload")

IDLE_CHECK_SECONDS = 1.0
"""How often a sandbox replaced by a reload is looked at; it is closed once no execution has been
in it at two looks in a row (an execution takes its sandbox and a slot in it without pausing between)."""

Trigger = Literal["signal", "file", "cli"]
Outcome = Literal["applied", "unchanged", "refused"]

UNATTENDED_TRIGGERS: frozenset[Trigger] = frozenset({"file"})
"""Triggers anything that can write the config file can pull (a child, a `git checkout`): they apply
no privileged change (`_privileged.py`). A SIGHUP, and `codemode-gateway reload` which sends one,
come from the gateway's own OS user or root: an operator."""


@dataclass(frozen=True, slots=True)
class ReloadResult:
    """What one reload did. `attempt` counts every reload since start, refused and unchanged ones
    too; `reload` is the number of the applied reload it made (as search_docs names it), else None."""

    attempt: int
    trigger: Trigger
    outcome: Outcome
    diff: ConfigDiff = field(default_factory=ConfigDiff)
    errors: list[str] = field(default_factory=list[str])
    changes: PoolChanges | None = None
    requested_by: Mapping[str, Any] | None = None
    privileged: list[str] = field(default_factory=list[str])
    """The changes only an operator may apply: applied by an operator's reload, else the refusal's cause."""
    reload: int | None = None
    at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def summary(self) -> dict[str, Any]:
        """The result as JSON (the status file `codemode-gateway reload` reads, the log line's fields)."""
        return {
            "attempt": self.attempt,
            "reload": self.reload,
            "trigger": self.trigger,
            "outcome": self.outcome,
            "time": self.at.isoformat(timespec="seconds").replace("+00:00", "Z"),
            "servers": self.diff.servers,
            "sections": self.diff.sections,
            "restart_needed": self.diff.restart_needed,
            "privileged": self.privileged,
            # Failed for good before (an unchanged entry too): a reload starts them again.
            "restarted": list(self.changes.restarted) if self.changes is not None else [],
            "errors": self.errors,
        }


class Reloader:
    """Reloads `gateway`'s config from the file it was loaded from, one reload at a time."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.config_file: Path | None = gateway.config.config_file  # None: the built-in default
        self.pid_file: Path | None = None  # named in the refusal of a privileged change, if served with one
        self.attempts = 0
        self.listeners: list[Callable[[ReloadResult], None]] = []  # told of every result, in order
        self._lock = anyio.Lock()
        self._retired, self._retiring = anyio.create_memory_object_stream["Sandbox"](16)

    async def close_replaced_sandboxes(self) -> None:
        """Close each sandbox a reload replaced once the executions in it have ended; until cancelled,
        when the ones left are closed at once (the gateway is stopping)."""
        async with anyio.create_task_group() as group:
            async for sandbox in self._retiring:
                group.start_soon(_close_when_idle, sandbox)

    async def reload(self, trigger: Trigger, requested_by: Mapping[str, Any] | None = None) -> ReloadResult:
        """Read the config again and apply it, or refuse it (the errors logged); never raises."""
        async with self._lock:
            self.attempts += 1
            try:
                result = await self._reload(trigger, requested_by)
            except Exception as exc:  # a bug here must never take the gateway down
                log.exception("config reload failed")
                errors = [f"the reload failed: {type(exc).__name__}: {exc}"]
                result = ReloadResult(
                    self.attempts, trigger, "refused", errors=errors, requested_by=requested_by
                )
            self._report(result)
            return result

    async def _reload(self, trigger: Trigger, requested_by: Mapping[str, Any] | None) -> ReloadResult:
        old = self.gateway.config
        try:
            new, lock = await anyio.to_thread.run_sync(self._read)
            diff = diff_configs(old, new)
            problems, unblocked = self._policy_problems(new, diff)
            if problems:
                raise ConfigError(
                    "\n".join([f"{self.config_file}: {len(problems)} policy problem(s)", *problems])
                )
            current = self.gateway.catalog_lock
            privileged = [
                *privileged_changes(old, new, diff),
                *unblocked,
                *lock_widenings(current.lock if current else None, lock.lock if lock else None),
            ]
            if privileged and trigger in UNATTENDED_TRIGGERS:
                errors = self._unattended_refusal(trigger, privileged)
                return ReloadResult(
                    self.attempts,
                    trigger,
                    "refused",
                    diff,
                    errors,
                    requested_by=requested_by,
                    privileged=privileged,
                )
            if new.middleware != old.middleware:  # imported only now that it may apply: importing runs it
                await anyio.to_thread.run_sync(Chain.load, new.middleware, new.middleware_timeout_seconds)
        except ConfigError as exc:
            errors = [line.strip() for line in str(exc).splitlines() if line.strip()]
            return ReloadResult(self.attempts, trigger, "refused", errors=errors, requested_by=requested_by)
        try:
            sandbox = await self._sandbox_for(new, diff)
        except ConfigError as exc:
            errors = [line.strip() for line in str(exc).splitlines() if line.strip()]
            return ReloadResult(self.attempts, trigger, "refused", errors=errors, requested_by=requested_by)
        for note in new.notes:
            log.warning("config note", extra={"note": note})
        # From here to the end nothing waits: new executions see the whole new config or none of it.
        if sandbox is not None:
            replaced = self.gateway.swap_sandbox(sandbox)
            if replaced is not None:
                self._retired.send_nowait(replaced)
        # Sections that need a restart keep their old values, so the config in force says what runs.
        changes = self.gateway.apply_config(applicable(old, new, diff), lock)
        applied = bool(diff or privileged)  # else unchanged: nothing new for the model to hear of
        return ReloadResult(
            self.attempts,
            trigger,
            "applied" if applied else "unchanged",
            diff,
            changes=changes,
            requested_by=requested_by,
            privileged=privileged,
            reload=self.gateway.count_reload() if applied else None,
        )

    def _unattended_refusal(self, trigger: Trigger, privileged: list[str]) -> list[str]:
        """The refusal's lines: what only an operator may apply, and how the operator applies it."""
        how = (
            f"`codemode-gateway reload --pid-file {self.pid_file}`"
            if self.pid_file is not None
            else "SIGHUP to the gateway"
        )
        return [
            f"{self.config_file}: {len(privileged)} change(s) that only an operator may apply, and the "
            f"{'file watch' if trigger == 'file' else trigger} applies none of them:",
            *privileged,
            f"if you made these changes, review them and apply them with {how}, or restart the gateway",
        ]

    async def _sandbox_for(self, new: GatewayConfig, diff: ConfigDiff) -> Sandbox | None:
        """A sandbox under the new limits when they changed (ConfigError if it cannot load): the
        engines and prewarmed instances are made for them; the component comes from the cache."""
        if "sandbox" not in diff.sections:
            return None
        with contextlib.suppress(SandboxUnavailable):
            await self.gateway.sandbox()  # the load at start first: it must not replace this one later
        try:
            return await anyio.to_thread.run_sync(new_sandbox, new.sandbox)
        except Exception as exc:
            raise ConfigError(f"sandbox: the sandbox does not load under the new limits: {exc}") from exc

    def _read(self) -> tuple[GatewayConfig, CatalogLock | None]:
        """The config and its lockfile, loaded and checked as at start (ConfigError otherwise), but for
        the middleware, which is imported only once the reload may apply it."""
        config = load_config(
            self.config_file, command_line=self.gateway.config.command_line, import_middleware=False
        )
        lock = CatalogLock.beside(config.config_file)
        return config, lock

    def _policy_problems(self, new: GatewayConfig, diff: ConfigDiff) -> tuple[list[str], list[str]]:
        """Rules of the new policy that match none of the tools a ready server lists now, and did not
        already under the policy in force. At start such a rule blocks its server; a reload, whose
        author is at hand, is refused instead. Servers added or changed are not known yet: a rule
        matching none of their tools blocks them, as at start. Second, the servers blocked now that
        the new policy would unblock: a privileged change, since their tools become reachable."""
        if new.policy == self.gateway.config.policy:
            return [], []
        pool = self.gateway.pool
        everything = Catalog(pool.tools(), pool.statuses())
        before = self.gateway.policy.unmatched(everything)
        after = Policies(new.policy).base.unmatched(everything)
        fresh = {*diff.added, *diff.changed}
        problems: list[str] = []
        for identifier, reason in after.items():
            server = everything.server(identifier)
            if server is None or server.name in fresh or before.get(identifier) == reason:
                continue
            problems.append(f"policy: server {server.name!r} would be blocked: {reason}")
        unblocked = [
            f"policy: server {server.name!r} would no longer be blocked"
            for identifier in before
            if identifier not in after
            and (server := everything.server(identifier)) is not None
            and server.name not in diff.removed  # a server going away reaches nothing
        ]
        return problems, unblocked

    def _report(self, result: ReloadResult) -> None:
        """The log line, the audit record, the metric, and the listeners."""
        gateway = self.gateway
        fields = {key: value for key, value in result.summary().items() if key != "time"}
        if result.requested_by is not None:
            fields["requested_by"] = dict(result.requested_by)
        if result.outcome == "refused":
            log.error("config reload refused: the config in force serves on", extra=fields)
        else:
            message = "config reloaded" if result.outcome == "applied" else "config reload changed nothing"
            log.log(NOTICE, message, extra=fields)
            if result.diff.restart_needed:
                log.warning(
                    "config changes that apply only after a restart",
                    extra={
                        "sections": result.diff.restart_needed,
                        "attempt": result.attempt,
                        "reload": result.reload,
                    },
                )
        gateway.telemetry.config_reloaded(result.outcome)
        audit = gateway.audit
        if audit is not None:
            audit.record(
                lambda log_: log_.config_reload(
                    trigger=result.trigger,
                    attempt=result.attempt,
                    reload=result.reload,
                    outcome=result.outcome,
                    config_file=self.config_file,
                    servers=result.diff.servers,
                    sections=result.diff.sections,
                    restart_needed=result.diff.restart_needed,
                    privileged=result.privileged,
                    errors=result.errors,
                    requested_by=result.requested_by,
                )
            )
        for listener in self.listeners:
            try:
                listener(result)
            except Exception:  # a status file that cannot be written must not stop the reload
                log.exception("a reload listener failed")


async def _close_when_idle(sandbox: Sandbox) -> None:
    try:
        idle = 0
        while idle < 2:
            await anyio.sleep(IDLE_CHECK_SECONDS)
            usage = sandbox.slot_usage()
            idle = idle + 1 if usage.busy == 0 and usage.queued == 0 else 0
    finally:
        sandbox.close()
        log.info("sandbox replaced by a reload closed", extra={"slots": sandbox.slot_usage().slots})
