"""The guest finds a snippet's literal tool calls before it runs, and nothing else."""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest

from guest._precheck import MAX_CALLS, MAX_LITERAL_COST, MAX_NAME_CHARS, literal_calls, may_name_tools


def calls_in(code: str) -> list[dict[str, Any]]:
    """The records of `code`, parsed as the guest compiles a snippet (top-level await allowed)."""
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree: ast.Module = compile(code, "<snippet>", "exec", flags=flags, dont_inherit=True)
    return literal_calls(tree)


def tools_of(code: str) -> list[str]:
    return [record["tool"] for record in calls_in(code)]


def test_a_proxy_call_is_reported_with_its_line_keywords_and_literal_values() -> None:
    code = "x = 1\ntools.git.git_log(repo_path='.', max_count=3, since=x)\n"
    assert calls_in(code) == [
        {
            "line": 2,
            "tool": "git.git_log",
            "positional": 0,
            "star_args": False,
            "keywords": ["repo_path", "max_count", "since"],
            "star_kwargs": False,
            "literals": {"repo_path": ".", "max_count": 3},
        }
    ]


def test_call_tool_with_a_literal_name_is_reported_without_the_name_as_a_positional() -> None:
    [record] = calls_in("call_tool('memory.read_graph', 1, *rest, **more)")
    assert record["tool"] == "memory.read_graph"
    assert (record["positional"], record["star_args"], record["star_kwargs"]) == (1, True, True)
    assert record["keywords"] == []


@pytest.mark.parametrize(
    "code",
    [
        "await tools.a.b(x=1)",
        "async def f():\n    return await tools.a.b(x=1)",
        "def f():\n    return [tools.a.b(x=i) for i in range(3)]",
        "import asyncio\nawait asyncio.gather(tools.a.b(x=1), call_tool('c.d'))",
        "print(len(tools.a.b(x=1)))",
        "f = lambda: tools.a.b(x=1)",
        "class A:\n    def m(self):\n        with open('x') as f:\n            tools.a.b(x=1)",
        "{k: tools.a.b(x=k) for k in 'ab'}",
    ],
)
def test_calls_are_found_wherever_they_are_written(code: str) -> None:
    assert "a.b" in tools_of(code)


@pytest.mark.parametrize(
    "code",
    [
        "name = 'git.git_status'\ncall_tool(name, repo_path='.')",
        "call_tool(f'git.{tool}', repo_path='.')",
        "call_tool('git.' + 'git_status', repo_path='.')",
        "server = tools.git\nserver.git_status(repo_path='.')",
        "getattr(tools.git, 'git_status')(repo_path='.')",
        "call_tool(*names)",
        "call_tool()",
        "call_tool('@docs', server='git')",
        "call_tool('')",
        "tools.git._server()",
        "tools.__class__.mro()",
        "other.git.git_status(repo_path='.')",
        "tools.git.git_status(self='.')",
    ],
)
def test_names_built_at_run_time_or_not_tool_names_are_left_to_run_time(code: str) -> None:
    assert calls_in(code) == []


@pytest.mark.parametrize(
    "rebinding",
    [
        "tools = object()",
        "tools: Any = None",
        "tools += 1",
        "del tools",
        "for tools in []: pass",
        "with open('x') as call_tool: pass",
        "import tools",
        "import mytools as tools",
        "import tools.sub",
        "from m import call_tool",
        "from m import thing as tools",
        "from m import *",
        "def tools(): pass",
        "async def call_tool(): pass",
        "class tools: pass",
        "def f(tools): pass",
        "def f(*, call_tool=None): pass",
        "def f(*tools): pass",
        "def f(**tools): pass",
        "lambda tools: 1",
        "def f():\n    global tools\n    tools = 1",
        "def f():\n    def g():\n        nonlocal call_tool",
        "try:\n    pass\nexcept Exception as tools:\n    pass",
        "(tools := 1)",
        "[1 for tools in range(2)]",
        "match x:\n    case tools: pass",
        "match x:\n    case [*tools]: pass",
        "match x:\n    case {**tools}: pass",
        "globals()['tools'] = None",
        "exec('tools = None')",
        "call_tool.__code__ = None",
        "tools.git.x = 1",
    ],
)
def test_a_snippet_that_rebinds_tools_or_call_tool_anywhere_reports_no_calls(rebinding: str) -> None:
    code = f"tools.git.git_status(repo_path='.')\n{rebinding}\ncall_tool('git.git_log')\n"
    assert calls_in(code) == []


@pytest.mark.parametrize(
    "code",
    [
        "dict(tools=1)",
        "x.tools = 1",
        "from m import tools as toolbox",
        "import tools_extra",
        "data = {'tools': 1}",
        "def f(*, tool=None): pass",
    ],
)
def test_the_names_used_as_keywords_attributes_or_other_bindings_are_not_rebindings(code: str) -> None:
    assert tools_of(f"{code}\ntools.git.git_status(repo_path='.')") == ["git.git_status"]


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("'text'", "text"),
        ("-3", -3),
        ("+2.5", 2.5),
        ("True", True),
        ("None", None),
        ("(1, 'a')", [1, "a"]),
        ("[{'a': [1, {'b': None}]}]", [{"a": [1, {"b": None}]}]),
        ("{'a': (1, 2)}", {"a": [1, 2]}),
        ("'a' 'b'", "ab"),
    ],
)
def test_json_able_literals_are_reported_with_tuples_as_lists(source: str, value: Any) -> None:
    [record] = calls_in(f"tools.a.b(v={source})")
    assert record["literals"] == {"v": value}


@pytest.mark.parametrize(
    "source",
    [
        "x",
        "f()",
        "f'{x}'",
        "{1, 2}",
        "b'bytes'",
        "1j",
        "...",
        "1e999",
        "-True",
        "{1: 'a'}",
        "{**d}",
        "[1, x]",
        "[*xs]",
        "1 + 2",
        "10 ** 400",
        "'x' * 3",
        "'x' * 10",
        "[" * 40 + "]" * 40,
        "'" + "y" * MAX_LITERAL_COST + "'",
        str(2**1100),
    ],
)
def test_values_that_are_not_small_json_literals_are_not_reported(source: str) -> None:
    [record] = calls_in(f"tools.a.b(v={source})")
    assert record["keywords"] == ["v"]
    assert record["literals"] == {}


def test_records_are_json_and_ordered_by_line() -> None:
    code = "tools.a.late(x=[1])\n" * 2 + "print(tools.b.outer(y=tools.c.inner(z=(1,))))\n"
    records = calls_in("\n" + code)
    assert [(r["line"], r["tool"]) for r in records] == [
        (2, "a.late"),
        (3, "a.late"),
        (4, "b.outer"),
        (4, "c.inner"),
    ]
    assert json.loads(json.dumps(records, allow_nan=False)) == records


def test_at_most_max_calls_are_reported() -> None:
    code = "\n".join(f"tools.a.t{i}(x={i})" for i in range(MAX_CALLS + 50))
    assert len(calls_in(code)) == MAX_CALLS


def test_a_rebinding_after_more_than_max_calls_still_reports_none() -> None:
    code = "\n".join(f"tools.a.t{i}(x={i})" for i in range(MAX_CALLS + 5)) + "\ntools = None"
    assert calls_in(code) == []


def test_a_call_with_an_overlong_name_is_not_reported() -> None:
    long = "t" * (MAX_NAME_CHARS + 1)
    assert calls_in(f"tools.a.{long}(x=1)\ncall_tool('a.b', {long}=1)") == []


def test_the_total_size_of_literal_values_is_bounded() -> None:
    big = "'" + "z" * (MAX_LITERAL_COST - 10) + "'"
    records = calls_in("\n".join(f"tools.a.b(v={big})" for i in range(100)))
    reported = sum(len(r["literals"].get("v", "")) for r in records)
    assert 0 < reported <= 65_536


@pytest.mark.parametrize(
    "code",
    [
        "tools.git.git_log(repo_path='.')",
        "call_tool('git.git_log', repo_path='.')",
        # Python folds fullwidth letters into ASCII ones in identifiers: this is `tools.git.git_log`.
        "\uff54\uff4f\uff4f\uff4c\uff53.git.git_log(repo_path='.')",
    ],
)
def test_a_source_with_a_literal_call_may_name_tools(code: str) -> None:
    assert tools_of(code) == ["git.git_log"]
    assert may_name_tools(code)


@pytest.mark.parametrize("code", ["print(1)", "x = [i * 2 for i in range(3)]\nsum(x)", "import json"])
def test_an_ascii_source_that_never_spells_tool_has_no_literal_calls(code: str) -> None:
    assert not may_name_tools(code)
    assert calls_in(code) == []
