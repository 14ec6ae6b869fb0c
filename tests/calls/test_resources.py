"""Resources a snippet reads (`resources.<server>.list()` and `.read(uri)`), answered by the host over
real children on stdio: pages and templates, text and bytes, the policy, quota, audit and redaction."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway import PolicyDenied, QuotaExceeded, SecretInArguments, ToolCallError
from gateway.audit import AuditLog
from gateway.calls import _resources as resources_module
from gateway.calls._gateway import Gateway
from gateway.calls._pipeline import Execution
from gateway.calls._pool import child_pool, gateway_secrets
from gateway.calls._resources import MAX_PAGES, ResourceReads
from gateway.catalog import Catalog
from gateway.children import ChildPool
from gateway.config import GatewayConfig, parse_config
from gateway.policy import Policy, no_approver
from gateway.sandbox import MAX_URI_CHARS
from gateway.shared._redaction import Redactor
from guest._blob import BLOB_MARKER
from tests.e2e.gateway_process import python_child
from tests.real_servers import CATALOG_SERVER, RESOURCE_SERVER, TINY_SERVER

pytestmark = pytest.mark.anyio

TOKEN = "rsrc-Token-7f3a9c1e55"
WAIT = 60  # real children start in seconds; this bounds a hang, not a race
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def resource_server(**env: str) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(RESOURCE_SERVER)],
        "env": {"RESOURCE_TOKEN": "${RESOURCE_TOKEN}", **env},
    }


@dataclass
class Reads:
    pool: ChildPool
    catalog: Catalog
    reads: ResourceReads
    execution: Execution
    audit_path: Path

    async def ask(self, server: str, op: str = "list", **more: Any) -> Any:
        with anyio.fail_after(WAIT):
            return await self.reads.answer(self.execution, {"server": server, "op": op, **more})

    async def read(self, server: str, uri: str) -> Any:
        return await self.ask(server, "read", uri=uri)

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.audit_path.read_text().splitlines()]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one pool over the resource server serves the tests that need no other child."""
    return "asyncio"


@pytest.fixture(scope="module")
async def res_pool() -> AsyncIterator[ChildPool]:
    """A ready pool of `{"res": resource_server()}`, shared: the policy and the audit are each test's own."""
    config = parse_config({"mcpServers": {"res": resource_server()}}, "test", {"RESOURCE_TOKEN": TOKEN})
    async with child_pool(config, Redactor(gateway_secrets(config))) as pool:
        with anyio.fail_after(WAIT):
            await pool.wait_ready()
        yield pool


@asynccontextmanager
async def started_pool(
    config: GatewayConfig, redactor: Redactor, shared: ChildPool | None
) -> AsyncIterator[ChildPool]:
    """`shared` as it is, else a ready pool of `config`'s children for this test alone."""
    if shared is not None:
        yield shared
        return
    async with child_pool(config, redactor) as pool:
        with anyio.fail_after(WAIT):
            await pool.wait_ready()
        yield pool


@asynccontextmanager
async def reads_over(
    tmp_path: Path,
    servers: dict[str, Any],
    policy: dict[str, Any] | None = None,
    *,
    pool: ChildPool | None = None,
) -> AsyncIterator[Reads]:
    """ResourceReads over a real pool of `servers` (`pool`, when it already runs them), the catalog
    filtered as the gateway filters it."""
    config = parse_config({"mcpServers": servers, "policy": policy or {}}, "test", {"RESOURCE_TOKEN": TOKEN})
    redactor = Redactor(gateway_secrets(config))
    rules = Policy(config.policy)
    audit_path = tmp_path / "audit.jsonl"
    with AuditLog(audit_path, redactor=redactor) as audit:
        async with started_pool(config, redactor, pool) as pool:
            everything = Catalog(pool.tools(), pool.statuses())
            catalog = everything.filtered(
                rules.visible,
                rules.server_visible,
                blocked=rules.unmatched(everything),
                resources=rules.resources_visible,
            )
            execution = Execution("exec-1", catalog, rules, no_approver)
            yield Reads(pool, catalog, ResourceReads(pool, redactor, audit), execution, audit_path)


async def test_a_list_pages_through_every_resource_and_lists_the_templates(
    tmp_path: Path, res_pool: ChildPool
) -> None:
    async with reads_over(tmp_path, {"res": resource_server()}, pool=res_pool) as reads:
        listing = await reads.ask("res")
    uris = [entry["uri"] for entry in listing["resources"]]
    # 5 fixed resources and 7 pages of documents, 3 to a page: every page was asked for, in order.
    assert uris[:5] == [
        "note://readme",
        "image://pixel.png",
        "secret://token",
        "broken://store",
        "file:///dir",
    ]
    assert uris[5:] == [f"docs://page/{n}" for n in range(7)]
    assert listing["resources"][0] == {
        "uri": "note://readme",
        "name": "readme",
        "title": "Read me",
        "mime_type": "text/plain",
    }  # fields the child left out are not there as None
    assert listing["resources"][1]["size"] == len(PIXEL_PNG)
    assert listing["templates"] == [
        {
            "uri_template": "docs://page/{n}",
            "name": "page",
            "description": "Any page by number",
            "mime_type": "text/plain",
        }
    ]
    assert "truncated" not in listing


async def test_text_reads_as_text_and_bytes_as_a_blob_marker_with_base64_data(
    tmp_path: Path, res_pool: ChildPool
) -> None:
    async with reads_over(tmp_path, {"res": resource_server()}, pool=res_pool) as reads:
        text = await reads.read("res", "note://readme")
        image = await reads.read("res", "image://pixel.png")
        templated = await reads.read("res", "docs://page/42")  # not listed: the template serves it
    assert text == {
        "uri": "note://readme",
        "contents": [{"uri": "note://readme", "mime_type": "text/plain", "text": "Read me first."}],
    }
    [blob] = image["contents"]
    assert blob[BLOB_MARKER] is True
    assert (blob["kind"], blob["mime_type"], blob["size"], blob["uri"]) == (
        "resource",
        "image/png",
        len(PIXEL_PNG),
        "image://pixel.png",
    )
    assert base64.b64decode(blob["data"]) == PIXEL_PNG
    assert templated["contents"][0]["text"] == "page 42"


async def test_an_unknown_resource_and_a_hidden_one_are_refused_in_the_same_words(
    tmp_path: Path, res_pool: ChildPool
) -> None:
    async with reads_over(
        tmp_path, {"res": resource_server()}, {"hidden": ["res:secret://*"]}, pool=res_pool
    ) as reads:
        listing = await reads.ask("res")
        with pytest.raises(ToolCallError) as hidden:
            await reads.read("res", "secret://token")
        with pytest.raises(ToolCallError) as absent:
            await reads.read("res", "secrets://token")
        calls = reads.execution.quota.calls
    assert "secret://token" not in [entry["uri"] for entry in listing["resources"]]
    assert str(hidden.value) == (
        "no resource 'secret://token' on res; resources.res.list() lists its resources and URI templates"
    )
    assert str(absent.value) == str(hidden.value).replace("secret://", "secrets://")
    assert type(hidden.value) is type(absent.value) is ToolCallError
    assert calls == 2  # the list and the read that reached the child; the hidden one counted nothing


async def test_a_denied_read_names_the_rule_and_the_list_marks_the_resource(
    tmp_path: Path, res_pool: ChildPool
) -> None:
    policy = {"allow": ["res.*", "res:note://*", "res:image://*", "res:docs://*"], "deny": ["res:image://*"]}
    async with reads_over(tmp_path, {"res": resource_server()}, policy, pool=res_pool) as reads:
        listing = await reads.ask("res")
        with pytest.raises(PolicyDenied) as denied:
            await reads.read("res", "image://pixel.png")
        with pytest.raises(PolicyDenied) as not_allowed:
            await reads.read("res", "secret://token")
        assert (await reads.read("res", "note://readme"))["contents"][0]["text"] == "Read me first."
    access = {entry["uri"]: entry.get("access") for entry in listing["resources"]}
    assert access["image://pixel.png"] == "denied by policy"
    assert access["secret://token"] == "denied by policy"  # allow matches it not
    assert access["note://readme"] is None
    assert str(denied.value) == 'res:image://pixel.png is denied by policy (deny: "res:image://*")'
    assert str(not_allowed.value) == "res:secret://token is denied by policy (allow: no pattern matches it)"


async def test_tool_rules_allow_no_resources_and_a_whole_server_hidden_takes_them_too(
    tmp_path: Path, res_pool: ChildPool
) -> None:
    # Hiding the whole server (res.*) hides its resources too (fail closed): it is unknown.
    async with reads_over(
        tmp_path, {"res": resource_server()}, {"hidden": ["res.*"]}, pool=res_pool
    ) as reads:
        with pytest.raises(ToolCallError, match="unknown server 'res'"):
            await reads.read("res", "note://readme")
    # Allowing every tool of the server allows none of its resources: allow needs a resource rule.
    async with reads_over(tmp_path, {"res": resource_server()}, {"allow": ["res.*"]}, pool=res_pool) as reads:
        with pytest.raises(PolicyDenied, match="allow: no pattern matches it"):
            await reads.read("res", "note://readme")


async def test_a_policy_typo_that_blocks_a_server_blocks_its_resources_too(
    tmp_path: Path, res_pool: ChildPool
) -> None:
    async with reads_over(
        tmp_path, {"res": resource_server()}, {"deny": ["res.forgt"]}, pool=res_pool
    ) as reads:
        with pytest.raises(ToolCallError, match=r"server 'res' is blocked: .*res\.forgt"):
            await reads.ask("res")


async def test_a_server_without_the_resources_capability_says_it_has_none(tmp_path: Path) -> None:
    catalog_file = tmp_path / "tools.json"
    catalog_file.write_text("[]", encoding="utf-8")
    servers = {
        "plain": {
            "command": sys.executable,
            "args": [str(CATALOG_SERVER)],
            "env": {"CATALOG_FILE": str(catalog_file)},
        },
        # An MCPServer declares the capability whether or not it has resources: it lists none.
        "tiny": python_child(TINY_SERVER),
    }
    async with reads_over(tmp_path, servers) as reads:
        with pytest.raises(ToolCallError) as refused:
            await reads.ask("plain")
        with pytest.raises(ToolCallError) as read_refused:
            await reads.read("plain", "note://readme")
        assert await reads.ask("tiny") == {"resources": [], "templates": []}
        with pytest.raises(ToolCallError, match="no resource 'note://readme' on tiny"):
            await reads.read("tiny", "note://readme")
        offering = {s.identifier: s.resources for s in reads.catalog.servers}
    assert str(refused.value) == "server 'plain' has no resources (it does not offer MCP resources)"
    assert str(read_refused.value) == str(refused.value)
    assert offering == {"plain": False, "tiny": False}


async def test_an_unknown_server_is_refused_with_a_did_you_mean(tmp_path: Path, res_pool: ChildPool) -> None:
    async with reads_over(tmp_path, {"res": resource_server()}, pool=res_pool) as reads:
        with pytest.raises(ToolCallError) as refused:
            await reads.ask("rse")
    assert str(refused.value) == "unknown server 'rse'; did you mean res? Servers with resources: res."


async def test_each_request_counts_toward_the_runs_quota_and_is_audited(
    tmp_path: Path, res_pool: ChildPool
) -> None:
    async with reads_over(
        tmp_path, {"res": resource_server()}, {"max_tool_calls": 2}, pool=res_pool
    ) as reads:
        await reads.ask("res")
        await reads.read("res", "note://readme")
        with pytest.raises(QuotaExceeded, match=r"policy\.max_tool_calls"):
            await reads.read("res", "docs://page/1")
        with pytest.raises(ToolCallError):
            await reads.ask("nowhere")
        records = reads.records()
        calls = reads.execution.calls
    assert [(r["kind"], r["tool"], r.get("arguments"), r["ok"], r["error"]) for r in records] == [
        ("tool_call", "res:resources/list", {}, True, None),
        ("tool_call", "res:note://readme", {"uri": "note://readme"}, True, None),
        ("tool_call", "res:docs://page/1", {"uri": "docs://page/1"}, False, "QuotaExceeded"),
        ("tool_call", "nowhere:resources/list", {}, False, "ToolError"),
    ]
    assert {r["execution_id"] for r in records} == {"exec-1"}
    assert calls == 4  # every request, refused or not, as the execution's record counts tool calls


async def test_secrets_are_redacted_from_contents_listings_errors_and_the_audit_log(
    tmp_path: Path, res_pool: ChildPool
) -> None:
    async with reads_over(tmp_path, {"res": resource_server()}, pool=res_pool) as reads:
        listing = await reads.ask("res")
        secret = await reads.read("res", "secret://token")
        with pytest.raises(ToolCallError) as failed:
            await reads.read("res", "broken://store")
        log = reads.audit_path.read_text()
    described = {entry["uri"]: entry.get("description") for entry in listing["resources"]}
    assert described["secret://token"] == "holds [REDACTED:RESOURCE_TOKEN]"
    assert secret["contents"][0]["text"] == "token=[REDACTED:RESOURCE_TOKEN]"
    assert (
        str(failed.value)
        == "res: resources/read broken://store: the store refused token [REDACTED:RESOURCE_TOKEN]"
    )
    assert TOKEN not in log
    assert TOKEN not in json.dumps([listing, secret])


async def test_a_uri_holding_a_secret_ends_the_run_before_the_child_sees_it(
    tmp_path: Path, res_pool: ChildPool
) -> None:
    async with reads_over(tmp_path, {"res": resource_server()}, pool=res_pool) as reads:
        with pytest.raises(SecretInArguments) as ended:
            await reads.read("res", f"docs://page/{TOKEN}")
        calls = reads.execution.quota.calls
    assert TOKEN not in str(ended.value)
    assert "RESOURCE_TOKEN" in str(ended.value)
    assert calls == 0


async def test_contents_answered_for_other_uris_follow_the_policy_too(
    tmp_path: Path, res_pool: ChildPool
) -> None:
    policy = {"hidden": ["res:file:///dir/private*"]}
    async with reads_over(tmp_path, {"res": resource_server()}, policy, pool=res_pool) as reads:
        read = await reads.read("res", "file:///dir")
    assert [item["uri"] for item in read["contents"]] == ["file:///dir/a.txt"]


async def test_a_list_stops_at_its_page_cap_and_says_so(tmp_path: Path) -> None:
    async with reads_over(tmp_path, {"res": resource_server(RESOURCE_ENDLESS="1")}) as reads:
        listing = await reads.ask("res")
    assert len(listing["resources"]) == 12  # past them, the endless pages are empty
    assert listing["truncated"] == (
        f"only the resources on the first {MAX_PAGES} pages the server gave are listed "
        f"(the gateway asks for at most {MAX_PAGES})"
    )


async def test_a_list_stops_at_its_entry_cap_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, res_pool: ChildPool
) -> None:
    monkeypatch.setattr(resources_module, "MAX_ENTRIES", 4)
    async with reads_over(tmp_path, {"res": resource_server()}, pool=res_pool) as reads:
        listing = await reads.ask("res")
    assert [entry["uri"] for entry in listing["resources"]] == [
        "note://readme",
        "image://pixel.png",
        "secret://token",
        "broken://store",
    ]
    assert listing["truncated"] == "only the first 4 resources are listed (the gateway lists at most 4)"


async def test_a_uri_past_the_one_limit_is_refused_naming_it_by_the_gateway_and_by_the_sandbox(
    tmp_path: Path, res_pool: ChildPool
) -> None:
    uri = "note://" + "x" * (MAX_URI_CHARS - len("note://") + 1)
    async with reads_over(tmp_path, {"res": resource_server()}, pool=res_pool) as reads:
        with pytest.raises(ToolCallError, match=f"at most {MAX_URI_CHARS:,}"), anyio.fail_after(WAIT):
            await reads.read("res", uri)
    config = parse_config({"mcpServers": {"res": resource_server()}}, "test", {"RESOURCE_TOKEN": TOKEN})
    async with Gateway(config) as gateway:
        with anyio.fail_after(WAIT):
            refused = await gateway.execute_code(f"resources.res.read({uri!r})")
            served = await gateway.execute_code("resources.res.read('note://readme')")
    assert refused.error is not None
    assert f"at most {MAX_URI_CHARS:,} characters" in refused.error.message
    assert served.ok, served.error  # the gateway still serves


@pytest.mark.parametrize(
    ("payload", "complaint"),
    [
        ({"op": "list"}, "names its server"),
        ({"server": "res", "op": "write", "uri": "note://readme"}, '"op": "read", "uri"'),
        ({"server": "res", "op": "read"}, '"op": "read", "uri"'),
        ({"server": "res", "op": "read", "uri": "x" * 9000}, "at most 2,048"),
    ],
)
async def test_a_malformed_request_is_refused_and_recorded(
    tmp_path: Path, payload: dict[str, Any], complaint: str, res_pool: ChildPool
) -> None:
    async with reads_over(tmp_path, {"res": resource_server()}, pool=res_pool) as reads:
        with pytest.raises(ToolCallError, match=complaint), anyio.fail_after(WAIT):
            await reads.reads.answer(reads.execution, payload)
        records = reads.records()
    assert [record["ok"] for record in records] == [False]
