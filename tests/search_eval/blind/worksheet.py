"""Turn the blind writers' query files into a labelling worksheet, and check a labelled file.

    .venv/bin/python -m tests.search_eval.blind.worksheet /work/blind/writer-*.jsonl --out DIR
    .venv/bin/python -m tests.search_eval.blind.worksheet --check tests/search_eval/blind/queries.jsonl

The first writes DIR/worksheet.md (the whole catalog grouped by server, each tool's qualified name and
the first sentence of its description, then every query numbered) and DIR/queries.todo.jsonl (one
line per query with an empty `accept`, to fill in and save as queries.jsonl). Every query sees the
same full catalog on purpose: candidates picked by search would steer the labels toward what search
already finds. `--check` lists accept names the catalog does not have, with close ones.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from gateway.catalog import Catalog, CatalogEntry
from tests.search_eval.blind.blind_set import BlindQuery, blind_catalog, load_blind_queries

_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_MAX_SUMMARY = 200  # chars of a description kept; desktop-commander's run to 6.5k

_HEADER = """# Blind set labelling worksheet

For each query below, list every tool that does what it asks, as qualified names (`server.tool`)
from the catalog. A query that needs several steps accepts the tool of its main step (the one that
does what the user is after); a query no tool here can serve gets an empty list. Use the writer's
words only: do not run search to decide. Fill in `queries.todo.jsonl` (same order, same numbers)
and save it as `tests/search_eval/blind/queries.jsonl`.
"""


def summary(entry: CatalogEntry) -> str:
    """The first sentence of a tool's description, on one line, cut to a readable length."""
    text = " ".join(entry.description.split())  # a list after "including:" stays in the sentence
    first = _SENTENCE_END.split(text, maxsplit=1)[0] if text else "(no description)"
    return first if len(first) <= _MAX_SUMMARY else first[: _MAX_SUMMARY - 1] + "…"


def read_writer_file(path: Path) -> list[BlindQuery]:
    """A writer's queries (`{"query", "kind"}` a line); the writer is named by the file, writer-<id>."""
    writer = path.stem.removeprefix("writer-")
    queries: list[BlindQuery] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        raw = json.loads(line)
        if not isinstance(raw, dict) or "query" not in raw:
            raise ValueError(f"{path.name}:{number}: not an object with a 'query'")
        kind, named = raw.get("kind") or "general", raw.get("writer") or writer
        queries.append(BlindQuery(query=raw["query"], kind=kind, writer=named))
    return queries


def catalog_section(catalog: Catalog) -> list[str]:
    """The catalog as Markdown: a heading per server, a line per tool."""
    lines = [f"## Catalog: {len(catalog)} tools, {len(catalog.servers)} servers", ""]
    by_server: dict[str, list[CatalogEntry]] = {}
    for entry in catalog:
        by_server.setdefault(entry.server_name, []).append(entry)
    for server in sorted(by_server):
        lines += [f"### {server}", ""]
        tools = sorted(by_server[server], key=lambda e: e.qualified)
        lines += [f"- `{e.qualified}`: {summary(e)}" for e in tools]
        lines.append("")
    return lines


def query_section(queries: list[BlindQuery]) -> list[str]:
    """The queries as Markdown, numbered in the order of queries.todo.jsonl."""
    lines = [f"## Queries: {len(queries)}", ""]
    for number, query in enumerate(queries, start=1):
        lines.append(f"{number:03d}. [writer {query.writer}, {query.kind}] {query.query}")
    return [*lines, ""]


def write_worksheet(queries: list[BlindQuery], catalog: Catalog, out: Path) -> None:
    """worksheet.md and queries.todo.jsonl in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    text = "\n".join([_HEADER, *catalog_section(catalog), *query_section(queries)])
    (out / "worksheet.md").write_text(text, encoding="utf-8")
    todo = "".join(json.dumps(q.model_dump(exclude_none=True), ensure_ascii=False) + "\n" for q in queries)
    (out / "queries.todo.jsonl").write_text(todo, encoding="utf-8")


def unknown_names(queries: list[BlindQuery], catalog: Catalog) -> dict[str, list[str]]:
    """Accept names the catalog does not have, each with up to three close ones."""
    names = {name for query in queries for name in query.accept}
    return {name: catalog.suggest(name) for name in sorted(names) if name not in catalog}


def main(argv: list[str]) -> int:
    """Write the worksheet, or check a labelled file; exit 1 on unknown names."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("writers", nargs="*", type=Path, help="the writers' JSONL files")
    parser.add_argument("--out", type=Path, help="folder to write the worksheet into (outside the repo)")
    parser.add_argument("--check", type=Path, help="a labelled queries.jsonl to check against the catalog")
    args = parser.parse_args(argv)
    catalog = blind_catalog()
    if args.check:
        unknown = unknown_names(load_blind_queries(args.check), catalog)
        for name, close in unknown.items():
            print(f"unknown tool {name!r}; close: {', '.join(close) or 'none'}")
        return 1 if unknown else 0
    if not args.writers or args.out is None:
        parser.error("name the writers' files and --out, or --check a labelled file")
    queries = [query for path in args.writers for query in read_writer_file(path)]
    write_worksheet(queries, catalog, args.out)
    print(f"{len(queries)} queries, {len(catalog)} tools: {args.out / 'worksheet.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
