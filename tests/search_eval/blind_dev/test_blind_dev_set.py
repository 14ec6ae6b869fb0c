"""The development set written blind loads whole, its labels name tools of the tuning catalog, and
enough of it asks for what no tool does; its quality is reported by score.py, not asserted."""

from __future__ import annotations

from collections import Counter

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


def test_seven_writers_of_110_queries_each_and_15_percent_served_by_no_tool() -> None:
    queries = blind_dev_queries()
    per_writer = Counter(query.writer for query in queries)
    assert per_writer == dict.fromkeys("defghij", 110)
    assert sum(1 for query in queries if not query.accept) >= 0.15 * len(queries)


def test_every_writer_wrote_each_kind_of_request_the_brief_asked_for() -> None:
    kinds = {"task", "cli", "jargon", "typo", "indirect", "question", "multistep", "none"}
    for writer in "defghij":
        written = {query.kind for query in blind_dev_queries() if query.writer == writer}
        assert written == kinds, writer
