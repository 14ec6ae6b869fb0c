"""The load run end to end with tiny parameters: every row measured and printed; figures never asserted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.bench import run_load
from tests.e2e.load_balancer import HAPROXY
from tests.state.redis_server import REDIS_SERVER


def table_rows(printed: str) -> list[list[str]]:
    """The body rows of the markdown table in `printed`, split into stripped cells."""
    lines = [line for line in printed.splitlines() if line.startswith("| ") and "Replicas" not in line]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_two_clients_making_a_few_calls_fill_a_row_per_configuration_without_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run_load.main(["--clients", "2", "--requests", "4", "--warmup", "1"]) == 0
    printed = capsys.readouterr().out
    rows = table_rows(printed)
    expected = [["1", "none (direct)"]]
    if HAPROXY is not None:
        expected += [["1", "HAProxy"], ["2", "HAProxy, round robin"]]
    if HAPROXY is not None and REDIS_SERVER is not None:
        expected += [["2", "HAProxy, round robin, rate"], ["2", "HAProxy, round robin, rate, state"]]
    assert [row[:2] for row in rows] == expected
    for row in rows:
        assert row[2:4] == ["2", "4"]  # clients, requests
        assert row[4].endswith(" req/s")
        assert float(row[4].split()[0]) > 0
        assert row[7] == "0"  # every call answered with its own text
    assert f"{os.cpu_count()} cores" in printed
    assert "2 replicas vs 1" in printed
    assert "State on vs off" in printed


SOAK = "<!-- soak -->\n## Soak\n\nsoak table\n"


def test_the_load_section_replaces_its_last_one_and_stays_before_the_soak(tmp_path: Path) -> None:
    document = tmp_path / "benchmarks.md"
    document.write_text("# Benchmarks\n\nbench table\n\n" + SOAK, encoding="utf-8")
    run_load.write_section(document, "<!-- load -->\n## Load\n\nfirst run\n")
    run_load.write_section(document, "<!-- load -->\n## Load\n\nsecond run\n")
    assert document.read_text(encoding="utf-8") == (
        "# Benchmarks\n\nbench table\n\n<!-- load -->\n## Load\n\nsecond run\n\n" + SOAK
    )


def test_the_load_section_goes_last_when_there_is_no_soak(tmp_path: Path) -> None:
    document = tmp_path / "benchmarks.md"
    document.write_text("# Benchmarks\n\nbench table\n", encoding="utf-8")
    run_load.write_section(document, "<!-- load -->\n## Load\n\nrun\n")
    run_load.write_section(document, "<!-- load -->\n## Load\n\nagain\n")
    assert (
        document.read_text(encoding="utf-8")
        == "# Benchmarks\n\nbench table\n\n<!-- load -->\n## Load\n\nagain\n"
    )
