"""The onion: order, rewrites, refusals, crashes, time bounds and results, without a gateway or a child."""

from __future__ import annotations

import logging
import math
from typing import Any

import anyio
import pytest

from gateway.errors import MiddlewareFailed, ToolCallError
from gateway.middleware import Call, CallNext, Chain, Layer, Passage, Refused, Search, SearchEntry
from gateway.testing import FakeChild, make_call, run_middleware

pytestmark = pytest.mark.anyio

WAIT = 10


def tagging(tag: str, seen: list[str]) -> Any:
    async def middleware(call: Call, call_next: CallNext) -> Any:
        seen.append(f"{tag} in")
        value = await call_next(
            call.replace(arguments={**call.arguments, "path": [*call.arguments["path"], tag]})
        )
        seen.append(f"{tag} out")
        return value

    return middleware


async def test_the_first_listed_middleware_is_the_outermost() -> None:
    seen: list[str] = []
    child = FakeChild("done")
    with anyio.fail_after(WAIT):
        value = await run_middleware(
            [tagging("a", seen), tagging("b", seen)], make_call("s.t", {"path": []}), child
        )
    assert seen == ["a in", "b in", "b out", "a out"]
    assert child.calls[0].arguments == {"path": ["a", "b"]}
    assert value == "done"


async def test_a_middleware_rewrites_the_arguments_the_child_gets_and_the_chain_notes_who() -> None:
    async def add_source(call: Call, call_next: CallNext) -> Any:
        return await call_next(call.replace(arguments={**call.arguments, "source": "gateway"}))

    async def passes(call: Call, call_next: CallNext) -> Any:
        return await call_next(call)

    chain = Chain((Layer("hooks:add_source", add_source), Layer("hooks:passes", passes)))
    child = FakeChild("ok")
    passage = Passage()
    with anyio.fail_after(WAIT):
        await chain.run(make_call("s.t", {"x": 1}), lambda call, _: child(call), passage)
    assert child.calls[0].arguments == {"x": 1, "source": "gateway"}
    assert passage.changed_by == "hooks:add_source"


async def test_changing_the_arguments_in_place_leaves_the_callers_copy_alone() -> None:
    async def meddles(call: Call, call_next: CallNext) -> Any:
        call.arguments["x"] = 2
        return await call_next(call)

    original = make_call("s.t", {"x": 1})
    child = FakeChild("ok")
    passage = Passage()
    chain = Chain((Layer("hooks:meddles", meddles),))
    with anyio.fail_after(WAIT):
        await chain.run(original, lambda call, _: child(call), passage)
    assert original.arguments == {"x": 1}
    assert child.calls[0].arguments == {"x": 2}
    assert passage.changed_by == "hooks:meddles"  # so the gateway checks them again


async def test_a_refusal_reaches_the_snippet_as_a_tool_error_and_the_child_is_never_called() -> None:
    async def require_ticket(call: Call, call_next: CallNext) -> Any:
        if "ticket" not in call.arguments:
            raise Refused("github calls need a ticket argument")
        return await call_next(call)

    child = FakeChild("made")
    with anyio.fail_after(WAIT), pytest.raises(ToolCallError) as refused:
        await run_middleware(require_ticket, make_call("github.create_issue", {}), child)
    assert type(refused.value) is ToolCallError
    assert refused.value.kind == "ToolError"
    assert str(refused.value) == "github calls need a ticket argument"
    assert child.calls == []


async def test_a_middleware_that_raises_fails_the_call_closed_naming_it_but_not_its_message(
    middleware_log: list[logging.LogRecord],
) -> None:
    async def buggy(call: Call, call_next: CallNext) -> Any:
        raise KeyError("internal detail the snippet must not read")

    child = FakeChild("made")
    chain = Chain((Layer("team_hooks:buggy", buggy),))
    with anyio.fail_after(WAIT), pytest.raises(MiddlewareFailed) as failed:
        await chain.run(make_call("s.t"), lambda call, _: child(call))
    assert failed.value.middleware == "team_hooks:buggy"
    assert "team_hooks:buggy" in str(failed.value)
    assert "KeyError" in str(failed.value)
    assert "internal detail" not in str(failed.value)
    assert child.calls == []
    [record] = [r for r in middleware_log if r.levelno >= logging.ERROR]
    assert record.exc_info is not None  # the traceback goes to the host's log
    assert record.__dict__["middleware"] == "team_hooks:buggy"


async def test_a_middleware_past_its_own_time_fails_the_call_closed() -> None:
    async def hangs(call: Call, call_next: CallNext) -> Any:
        await anyio.sleep_forever()

    with anyio.fail_after(WAIT), pytest.raises(MiddlewareFailed, match=r"did not finish within 0\.2 s"):
        await run_middleware(hangs, make_call(), timeout=0.2)


async def test_a_middleware_that_swallows_its_cancellation_still_fails_closed() -> None:
    async def stubborn(call: Call, call_next: CallNext) -> Any:
        try:
            await anyio.sleep_forever()
        except BaseException:
            return "swallowed"

    with anyio.fail_after(WAIT), pytest.raises(MiddlewareFailed, match="did not finish"):
        await run_middleware(stubborn, make_call(), timeout=0.2)


async def test_time_spent_inside_call_next_is_not_the_middlewares_own() -> None:
    async def passes(call: Call, call_next: CallNext) -> Any:
        return await call_next(call)

    async def slow_child(call: Call) -> str:
        await anyio.sleep(0.6)
        return "slow but fine"

    with anyio.fail_after(WAIT):
        value = await run_middleware(passes, make_call(), FakeChild(answer=slow_child), timeout=0.3)
    assert value == "slow but fine"


async def test_a_middleware_may_return_another_value() -> None:
    async def redact_emails(call: Call, call_next: CallNext) -> Any:
        value = await call_next(call)
        return {key: "[email]" if "@" in str(item) else item for key, item in value.items()}

    child = FakeChild({"name": "Ada", "email": "ada@example.com"})
    with anyio.fail_after(WAIT):
        value = await run_middleware(redact_emails, make_call(), child)
    assert value == {"name": "Ada", "email": "[email]"}


@pytest.mark.parametrize(
    ("returned", "why"),
    [
        ({1, 2}, "holds a set"),
        ([math.nan], "nan"),
        ({1: "a"}, "key is not text"),
        (object(), "holds a object"),
    ],
)
async def test_a_value_that_is_not_json_fails_the_call_closed(returned: object, why: str) -> None:
    async def odd(call: Call, call_next: CallNext) -> Any:
        await call_next(call)
        return returned

    with anyio.fail_after(WAIT), pytest.raises(MiddlewareFailed, match=why):
        await run_middleware(odd, make_call(), FakeChild("fine"))


async def test_calling_call_next_twice_fails_and_the_child_is_called_once() -> None:
    async def retries(call: Call, call_next: CallNext) -> Any:
        await call_next(call)
        return await call_next(call)

    child = FakeChild("once")
    with anyio.fail_after(WAIT), pytest.raises(MiddlewareFailed, match="twice"):
        await run_middleware(retries, make_call(), child)
    assert len(child.calls) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"tool": "s.delete_all"},
        {"server": "other"},
        {"principal": "admin"},
        {"issuer": "https://idp.example.com"},
    ],
)
async def test_a_middleware_may_change_only_the_arguments(change: dict[str, Any]) -> None:
    async def redirects(call: Call, call_next: CallNext) -> Any:
        return await call_next(call.replace(**change))

    child = FakeChild("made")
    with anyio.fail_after(WAIT), pytest.raises(MiddlewareFailed, match="may change only its arguments"):
        await run_middleware(redirects, make_call("s.read"), child)
    assert child.calls == []


async def test_an_error_from_the_child_passes_through_a_middleware_untouched() -> None:
    refusal = ToolCallError("the child said no")

    def refuse(call: Call) -> None:
        raise refusal

    async def passes(call: Call, call_next: CallNext) -> Any:
        return await call_next(call)

    with anyio.fail_after(WAIT), pytest.raises(ToolCallError) as raised:
        await run_middleware([passes, passes], make_call(), FakeChild(answer=refuse))
    assert raised.value is refusal


async def test_a_middleware_that_is_not_async_fails_closed() -> None:
    def sync(call: Call, call_next: CallNext) -> Any:
        return "not awaited"

    with anyio.fail_after(WAIT), pytest.raises(MiddlewareFailed, match="TypeError"):
        await run_middleware(sync, make_call())  # pyright: ignore[reportArgumentType]


def entries() -> list[SearchEntry]:
    return [
        SearchEntry("github.create_issue", "github", "Create an issue."),
        SearchEntry("github.delete_repo", "github", "Delete a repository."),
    ]


SEARCH = Search("", None, None, ())


class Hides:
    """A middleware whose on_search hides delete tools and marks the rest."""

    async def __call__(self, call: Call, call_next: CallNext) -> Any:
        return await call_next(call)

    async def on_search(self, found: list[SearchEntry], search: Search) -> list[SearchEntry]:
        return [
            e.replace(description="[needs a ticket] " + e.description)
            for e in found
            if "delete" not in e.tool
        ]


async def test_on_search_filters_and_annotates_what_search_docs_shows() -> None:
    hides = Hides()
    chain = Chain((Layer("hooks:hides", hides, hides.on_search),))
    with anyio.fail_after(WAIT):
        shown = await chain.on_search(entries(), SEARCH)
    assert shown == [SearchEntry("github.create_issue", "github", "[needs a ticket] Create an issue.")]


async def test_a_failing_on_search_hides_everything_rather_than_show_what_it_would_hide() -> None:
    async def broken(found: list[SearchEntry], search: Search) -> list[SearchEntry]:
        raise RuntimeError("bug")

    async def adds(found: list[SearchEntry], search: Search) -> list[SearchEntry]:
        return [*found, SearchEntry("github.secret_tool", "github", "Not listed.")]

    for hook in (broken, adds):
        chain = Chain((Layer("hooks:search", Hides(), hook),))
        with anyio.fail_after(WAIT):
            assert await chain.on_search(entries(), SEARCH) == []
