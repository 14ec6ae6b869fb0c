"""The training set's manifest and snapshots agree, and none of its servers is a tuning or blind one."""

from __future__ import annotations

from mcp.types import Tool

from gateway.catalog import Catalog
from tests.search_eval.blind.blind_set import BLIND_MANIFEST, blind_catalog
from tests.search_eval.eval_set import HERE as TUNING_DIR
from tests.search_eval.eval_set import eval_catalog
from tests.search_eval.train.train_set import TRAIN_CATALOG, train_manifest, train_queries, train_tools

TUNING_MANIFEST = TUNING_DIR / "servers.json"


def test_every_manifest_server_has_a_snapshot_and_every_snapshot_a_manifest_entry() -> None:
    listed = {server["name"] for server in train_manifest()}
    captured = {path.stem for path in TRAIN_CATALOG.glob("*.json")}
    assert listed == captured


def test_each_snapshot_holds_as_many_tools_as_its_manifest_entry_counts() -> None:
    tools = train_tools()
    counts = {server["name"]: server["tools"] for server in train_manifest()}
    assert {name: len(listed) for name, listed in tools.items()} == counts


def test_every_snapshot_parses_as_named_described_mcp_tools_without_duplicates() -> None:
    for server, tools in train_tools().items():
        assert tools, f"{server} lists no tools"
        assert all(isinstance(tool, Tool) and tool.name for tool in tools)
        assert all(tool.input_schema.get("type") == "object" for tool in tools), server
        assert len({tool.name for tool in tools}) == len(tools), f"{server} lists a tool twice"


def test_no_training_server_shares_a_name_with_a_tuning_or_blind_server() -> None:
    train = {server["name"] for server in train_manifest()}
    tuning = {server["name"] for server in train_manifest(TUNING_MANIFEST)}
    blind = {server["name"] for server in train_manifest(BLIND_MANIFEST)}
    assert not train & (tuning | blind)


def test_neither_the_tuning_nor_the_blind_catalog_loads_a_training_server() -> None:
    train = {server["name"] for server in train_manifest()}
    loaded = {server.name for catalog in (eval_catalog(), blind_catalog()) for server in catalog.servers}
    assert not loaded & train


def test_the_set_has_at_least_20_servers_and_250_tools() -> None:
    tools = train_tools()
    assert len(tools) >= 20
    assert sum(map(len, tools.values())) >= 250


def test_every_accepted_tool_of_the_training_requests_is_a_training_server_tool() -> None:
    catalog = Catalog(train_tools())
    queries = train_queries()
    unknown = sorted({name for query in queries for name in query.accept if name not in catalog})
    assert not unknown
    assert len(queries) >= 600
    assert {query.writer for query in queries} == {"k", "l", "m", "n"}
