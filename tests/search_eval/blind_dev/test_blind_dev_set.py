"""The development set written blind loads whole, its labels name tools of the tuning catalog, and
enough of it asks for what no tool does; its quality is reported by score.py, not asserted."""

from __future__ import annotations

from gateway.catalog import Catalog
from tests.search_eval.blind.worksheet import unknown_names
from tests.search_eval.blind_dev.dev_set import blind_dev_queries
from tests.search_eval.eval_set import eval_catalog


def test_every_accepted_tool_is_in_the_tuning_catalog_and_no_writer_asks_twice() -> None:
    catalog: Catalog = eval_catalog()
    queries = blind_dev_queries()
    assert unknown_names(queries, catalog) == {}
    # Two writers may write the same words ("helm ls -A"): each is kept, as each writer's.
    assert len({(query.writer, query.query.lower()) for query in queries}) == len(queries)


def test_at_least_300_queries_from_three_writers_and_15_percent_served_by_no_tool() -> None:
    queries = blind_dev_queries()
    assert len(queries) >= 300
    assert {query.writer for query in queries} >= {"d", "e", "f"}
    assert sum(1 for query in queries if not query.accept) >= 0.15 * len(queries)
