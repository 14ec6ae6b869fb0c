"""A snippet's literal tool calls judged against the catalog before it runs, with run time's own words."""

from __future__ import annotations

import ast
from typing import Any

import pytest
from mcp.types import Tool

from gateway.catalog import Catalog, CatalogEntry, precheck_calls, prepare_arguments, unknown_tool_message
from gateway.catalog._precheck import MAX_FINDINGS, Finding
from gateway.children import ChildState, ChildStatus
from gateway.errors import ToolCallError
from guest._precheck import literal_calls, positional_arguments_message
from tests.real_servers import snapshot_catalog, snapshot_tools


@pytest.fixture(scope="module")
def real() -> Catalog:
    """The five real child servers' 50 tools, as captured in tests/data/tools."""
    return snapshot_catalog()


def records(code: str) -> list[dict[str, Any]]:
    """What the guest sends for `code`: its literal calls, found as the sandbox finds them."""
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    return literal_calls(compile(code, "<snippet>", "exec", flags=flags, dont_inherit=True))


def findings(catalog: Catalog, code: str) -> list[Finding]:
    return precheck_calls(catalog, records(code))


def messages(catalog: Catalog, code: str) -> list[str]:
    return [finding.message for finding in findings(catalog, code)]


def run_time_message(catalog: Catalog, name: str, positional: int = 0, **arguments: Any) -> str | None:
    """The refusal the same call meets at run time: the guest's positional check, then the host's
    resolution and argument checks (the functions the pipeline calls), or None if it passes them."""
    if positional:
        return positional_arguments_message(name)
    entry = catalog.get(name)
    if entry is None:
        return unknown_tool_message(catalog, name)
    try:
        prepare_arguments(entry, arguments)
    except ToolCallError as exc:
        return str(exc)
    return None


def test_a_misspelt_tool_is_refused_with_the_did_you_mean_of_run_time(real: Catalog) -> None:
    code = "tools.memory.create_entities(entities=[])\nawait tools.git.git_staus(repo_path='.')\n"
    assert findings(real, code) == [Finding(2, unknown_tool_message(real, "git.git_staus"))]
    assert "did you mean git.git_status" in findings(real, code)[0].message


def test_an_unknown_server_is_refused_as_at_run_time(real: Catalog) -> None:
    [message] = messages(real, "call_tool('gti.git_status', repo_path='.')")
    assert message == run_time_message(real, "gti.git_status", repo_path=".")
    assert message.startswith("unknown tool 'gti.git_status'; did you mean git.git_status")


def test_a_missing_required_keyword_is_refused_naming_it(real: Catalog) -> None:
    [message] = messages(real, "tools.filesystem.write_file(path='/tmp/a')")
    assert message == run_time_message(real, "filesystem.write_file", path="/tmp/a")
    assert "'content' is a required property" in message


def test_a_missing_required_keyword_is_found_even_when_the_other_values_are_not_literals(
    real: Catalog,
) -> None:
    [message] = messages(real, "tools.filesystem.write_file(path=p)")
    assert message == run_time_message(real, "filesystem.write_file", path="/any/valid/path")


def test_an_unknown_keyword_is_refused_with_what_the_tool_takes(real: Catalog) -> None:
    [message] = messages(real, "tools.filesystem.write_file(path=p, contents=text)")
    assert message == run_time_message(real, "filesystem.write_file", path="/a", contents="x")
    assert message == "filesystem.write_file got unknown argument(s) contents; it takes: content, path"


def test_a_literal_of_the_wrong_type_is_refused_naming_the_parameter_and_rule(real: Catalog) -> None:
    [message] = messages(real, "tools.git.git_log(repo_path=repo, max_count='3')")
    assert message == run_time_message(real, "git.git_log", repo_path="/r", max_count="3")
    assert message.endswith("max_count: '3' is not of type 'integer' (schema rule: type)")


def test_positional_arguments_are_refused_first_with_the_guests_message(real: Catalog) -> None:
    [message] = messages(real, "tools.nope.nothing('UTC')")
    assert message == positional_arguments_message("nope.nothing")
    assert message.startswith("tools take keyword arguments only: tools.nope.nothing(name=value, ...)")


@pytest.mark.parametrize(
    "code",
    [
        "tools.filesystem.write_file(**arguments)",
        "tools.filesystem.write_file(**arguments, colour='red')",
        "tools.filesystem.write_file(path='/a', **{'content': 'x'})",
    ],
)
def test_a_double_star_splat_leaves_missing_and_unknown_keywords_to_run_time(
    real: Catalog, code: str
) -> None:
    assert findings(real, code) == []


def test_a_wrong_literal_beside_a_double_star_splat_is_still_refused(real: Catalog) -> None:
    [message] = messages(real, "tools.git.git_log(**common, max_count='3')")
    assert message == run_time_message(real, "git.git_log", repo_path="/r", max_count="3")


def test_a_star_splat_is_taken_as_empty(real: Catalog) -> None:
    assert findings(real, "tools.git.git_status(*nothing, repo_path='.')") == []
    [message] = messages(real, "tools.git.git_status(*nothing)")
    assert message == run_time_message(real, "git.git_status")


@pytest.mark.parametrize(
    "code",
    [
        "name = 'git.git_staus'\ncall_tool(name, colour=1)",
        "call_tool(f'git.{which}', colour=1)",
        "server = tools.git\nserver.git_staus(colour=1)",
    ],
)
def test_a_name_built_at_run_time_is_left_to_run_time(real: Catalog, code: str) -> None:
    assert findings(real, code) == []


def test_values_that_are_not_literals_are_taken_as_valid(real: Catalog) -> None:
    code = "tools.git.git_log(repo_path=repo, max_count=n, start_timestamp=f'{day}')"
    assert findings(real, code) == []


def test_none_for_an_optional_parameter_is_not_a_mistake_since_run_time_drops_it(real: Catalog) -> None:
    assert findings(real, "tools.git.git_log(repo_path='.', max_count=None)") == []


@pytest.mark.parametrize("state", [ChildState.IDLE, ChildState.CONNECTING, ChildState.RECONNECTING])
def test_the_tools_of_a_server_that_is_not_ready_are_left_to_run_time(state: ChildState) -> None:
    tools = snapshot_tools()
    listed = Catalog(tools, [ChildStatus("git", "stdio", state)])
    assert findings(listed, "tools.git.git_log(repo_path='.', max_count='3')") == []
    assert findings(listed, "tools.git.git_staus(repo_path='.')") == []
    unlisted = Catalog({k: v for k, v in tools.items() if k != "git"}, [ChildStatus("git", "stdio", state)])
    assert findings(unlisted, "tools.git.git_status(repo_path='.')") == []


def test_a_ready_servers_tools_are_judged_beside_one_that_is_not(real: Catalog) -> None:
    tools = snapshot_tools()
    catalog = Catalog(tools, [ChildStatus("git", "stdio", ChildState.CONNECTING)])
    code = "tools.git.git_staus(repo_path='.')\ntools.time.get_current_time(timezone=1)"
    [finding] = findings(catalog, code)
    assert finding.line == 2


def test_a_hidden_tool_is_unknown_exactly_as_at_run_time(real: Catalog) -> None:
    visible = real.filtered(lambda entry: entry.qualified != "git.git_commit")
    [message] = messages(visible, "tools.git.git_commit(repo_path='.', mesage='x')")
    assert message == run_time_message(visible, "git.git_commit", repo_path=".", mesage="x")
    assert message.startswith("unknown tool 'git.git_commit'")


def test_a_blocked_server_is_refused_as_at_run_time(real: Catalog) -> None:
    blocked = real.filtered(lambda entry: True, blocked={"git": "a rule names no tool of it"})
    [message] = messages(blocked, "tools.git.git_status(repo_path='.')")
    assert message == run_time_message(blocked, "git.git_status", repo_path=".")
    assert "is blocked" in message


def test_a_tool_the_policy_refuses_is_left_to_run_time_with_its_arguments_unjudged(
    real: Catalog,
) -> None:
    def access(entry: CatalogEntry) -> str | None:
        return f"{entry.qualified} is denied" if entry.server_id == "git" else None

    code = "tools.git.git_log(colour=1)\ntools.time.get_current_time(timezone=1)"
    found = precheck_calls(real, records(code), access=access)
    assert [f.line for f in found] == [2]  # the denial is the snippet's to catch as it runs
    assert found[0].message.startswith("invalid arguments for time.get_current_time")


def _mapped_catalog(schema: dict[str, Any]) -> Catalog:
    return Catalog({"repo": [Tool(name="get-file", input_schema=schema)]})


MAPPED: dict[str, Any] = {
    "type": "object",
    "properties": {"repo-path": {"type": "string"}, "class": {"type": "integer"}},
    "required": ["repo-path"],
}


def test_python_names_map_to_the_childs_names_as_at_run_time() -> None:
    catalog = _mapped_catalog(MAPPED)
    assert findings(catalog, "tools.repo.get_file(repo_path='.', class_=2)") == []
    [message] = messages(catalog, "tools.repo.get_file(repo_path=5, class_=p)")
    assert message == run_time_message(catalog, "repo.get_file", repo_path=5, class_=2)
    assert "repo-path: 5 is not of type 'string'" in message


def test_a_schema_whose_root_reads_the_values_is_judged_only_when_every_value_is_seen() -> None:
    either = {**MAPPED, "anyOf": [{"required": ["class"]}, {"properties": {"repo-path": {"const": "."}}}]}
    catalog = _mapped_catalog(either)
    assert findings(catalog, "tools.repo.get_file(repo_path=p)") == []
    [message] = messages(catalog, "tools.repo.get_file(repo_path='/r')")
    assert message == run_time_message(catalog, "repo.get_file", repo_path="/r")


@pytest.mark.parametrize(
    ("code", "name", "arguments"),
    [
        ("tools.git.git_staus(repo_path='.')", "git.git_staus", {"repo_path": "."}),
        ("tools.nowhere.thing()", "nowhere.thing", {}),
        ("call_tool('tools.git.git_status', repo='.')", "tools.git.git_status", {"repo": "."}),
        (
            "tools.time.convert_time(source_timezone='UTC', time='10:00')",
            "time.convert_time",
            {"source_timezone": "UTC", "time": "10:00"},
        ),
        (
            "tools.memory.create_entities(entities=[{'name': 1}])",
            "memory.create_entities",
            {"entities": [{"name": 1}]},
        ),
        ("tools.filesystem.read_multiple_files(paths='a')", "filesystem.read_multiple_files", {"paths": "a"}),
        ("tools.everything.get_sum(a=1, b='2', c=3)", "everything.get_sum", {"a": 1, "b": "2", "c": 3}),
    ],
)
def test_a_finding_is_word_for_word_what_the_call_raises_at_run_time(
    real: Catalog, code: str, name: str, arguments: dict[str, Any]
) -> None:
    expected = run_time_message(real, name, **arguments)
    assert expected is not None
    assert messages(real, code) == [expected]


def test_findings_are_by_line_one_per_call_and_at_most_max_findings(real: Catalog) -> None:
    code = "\n".join(f"tools.git.git_log(max_count='{i}', colour=1)" for i in range(MAX_FINDINGS + 5))
    found = findings(real, "x = 1\n" + code)
    assert [f.line for f in found] == list(range(2, MAX_FINDINGS + 2))
    assert all("unknown argument(s) colour" in f.message for f in found)


def test_records_out_of_order_are_judged_by_line(real: Catalog) -> None:
    calls = records("tools.a.b()\ntools.c.d()")
    found = precheck_calls(real, list(reversed(calls)))
    assert [f.line for f in found] == [1, 2]


def test_a_literal_for_a_keyword_the_record_does_not_name_is_ignored(real: Catalog) -> None:
    [call] = records("tools.git.git_status(repo_path='.')")
    call["literals"]["colour"] = 1
    assert precheck_calls(real, [call]) == []


def good_record(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "line": 1,
        "tool": "git.git_status",
        "positional": 0,
        "star_args": False,
        "keywords": ["repo_path"],
        "star_kwargs": False,
        "literals": {"repo_path": "."},
    }
    return {**record, **changes}


@pytest.mark.parametrize(
    "calls",
    [
        None,
        "tools.git.git_status",
        {"line": 1},
        [1, 2],
        [{k: v for k, v in good_record().items() if k != "keywords"}],
        [good_record(extra=1)],
        [good_record(line="1")],
        [good_record(line=0)],
        [good_record(line=True)],
        [good_record(positional=-1)],
        [good_record(positional=1.0)],
        [good_record(star_args="no")],
        [good_record(tool="")],
        [good_record(tool="a." + "b" * 300)],
        [good_record(keywords="repo_path")],
        [good_record(keywords=[1])],
        [good_record(keywords=["k" * 300])],
        [good_record(keywords=[f"k{i}" for i in range(500)])],
        [good_record(literals=[])],
        [good_record(literals={"repo_path": {1, 2}})],
        [good_record(literals={"repo_path": object()})],
        [good_record()] * 201,
    ],
)
def test_malformed_records_are_a_clear_value_error(real: Catalog, calls: object) -> None:
    with pytest.raises(ValueError, match=r"^the snippet's tool calls could not be read: ") as raised:
        precheck_calls(real, calls)
    assert "{1, 2}" not in str(raised.value)


def test_well_formed_records_from_any_sender_are_judged(real: Catalog) -> None:
    assert precheck_calls(real, []) == []
    assert precheck_calls(real, [good_record()]) == []
    assert precheck_calls(real, [good_record(tool="@docs", positional=3)]) == []
    [finding] = precheck_calls(real, [good_record(literals={"repo_path": 7}, line=9)])
    assert finding == Finding(9, run_time_message(real, "git.git_status", repo_path=7) or "")
