"""Compile and run one snippet as a notebook cell: top-level await, last expression's value."""

import ast
import inspect
import linecache
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType, TracebackType
from typing import Any

from guest import _aio

__all__ = ["SNIPPET_FILENAME", "SnippetOutcome", "run_snippet"]

SNIPPET_FILENAME = "<snippet>"
_VALUE = "__codemode_value__"
_READY = "__codemode_ready__"
_DEFER = "__codemode_defer__"
# asyncio's functions that take awaitables: a call written as their argument, or awaited, is made as
# a coroutine (`__codemode_defer__(f)(...)`), so a tool call there runs side by side with others.
_TAKES_AWAITABLES = frozenset(
    {"gather", "create_task", "ensure_future", "wait", "wait_for", "shield", "as_completed", "run"}
)
_GUEST_DIR = os.path.dirname(__file__)
_NO_VALUE = object()


@dataclass
class SnippetOutcome:
    value: Any = _NO_VALUE
    error: BaseException | None = None
    traceback: str = ""

    @property
    def has_value(self) -> bool:
        return self.value is not _NO_VALUE and self.value is not None


class _AsyncCalls(ast.NodeTransformer):
    """`await x` becomes `await __codemode_ready__(x)`, so plain values (tool results) can be awaited;
    a call that is awaited, or handed to asyncio, goes through `__codemode_defer__`, which turns a tool
    proxy into its coroutine form and leaves any other callable as it is."""

    def visit_Await(self, node: ast.Await) -> ast.AST:
        if isinstance(node.value, ast.Call):
            _defer(node.value)
        self.generic_visit(node)
        call = ast.Call(func=ast.Name(_READY, ast.Load()), args=[node.value], keywords=[])
        return ast.copy_location(ast.Await(ast.copy_location(call, node)), node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        function = _deferred(node.func) or node.func
        name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)
        if name in _TAKES_AWAITABLES:
            for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
                for call in _calls_in(argument):
                    _defer(call)
        self.generic_visit(node)
        return node


def _calls_in(node: ast.expr) -> list[ast.Call]:
    """The calls an argument consists of: itself, or the items of a list, tuple, set or comprehension."""
    if isinstance(node, ast.Call):
        return [node]
    if isinstance(node, ast.Starred):
        return _calls_in(node.value)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [call for item in node.elts for call in _calls_in(item)]
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
        return _calls_in(node.elt)
    return []


def _deferred(function: ast.expr) -> ast.expr | None:
    """The callable `__codemode_defer__(f)` wraps, if `function` is such a wrapper."""
    if isinstance(function, ast.Call) and isinstance(function.func, ast.Name) and function.func.id == _DEFER:
        return function.args[0]
    return None


def _defer(call: ast.Call) -> None:
    function = call.func
    if _deferred(function) is not None:
        return
    wrapped = ast.Call(func=ast.Name(_DEFER, ast.Load()), args=[function], keywords=[])
    call.func = ast.copy_location(wrapped, function)


def _may_need_async_rewrite(code: str) -> bool:
    """Whether `_AsyncCalls` could change anything: it rewrites only `await` and calls by the names
    in `_TAKES_AWAITABLES`, which an ASCII source must spell out (a non-ASCII one may spell an
    identifier in other characters that Python folds into these)."""
    return not code.isascii() or "await" in code or any(name in code for name in _TAKES_AWAITABLES)


def _compile(code: str, precheck: Callable[[str, ast.Module], None]) -> CodeType:
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree: ast.Module = compile(code, SNIPPET_FILENAME, "exec", flags=flags, dont_inherit=True)
    precheck(code, tree)  # before any rewriting: it reads the calls as the snippet wrote them
    # Walking the tree in Python is most of a small snippet's cost in the sandbox: only when needed.
    rewritten = _may_need_async_rewrite(code)
    if rewritten:
        tree = _AsyncCalls().visit(tree)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        target = ast.copy_location(ast.Name(_VALUE, ast.Store()), last)
        tree.body[-1] = ast.copy_location(ast.Assign([target], last.value), last)
    if rewritten:
        ast.fix_missing_locations(tree)
    return compile(tree, SNIPPET_FILENAME, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


def _snippet_frames_only(tb: TracebackType | None) -> TracebackType | None:
    while tb is not None and tb.tb_frame.f_code.co_filename != SNIPPET_FILENAME:
        tb = tb.tb_next
    return tb


def _drop_guest_frames(te: traceback.TracebackException) -> None:
    seen: set[int] = set()
    todo: list[traceback.TracebackException | None] = [te]
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        kept = [f for f in item.stack if not f.filename.startswith(_GUEST_DIR)]
        item.stack = traceback.StackSummary.from_list(kept)
        todo += [item.__cause__, item.__context__]


def format_error(exc: BaseException) -> str:
    """The snippet's own traceback: its frames and line numbers, none of the guest's."""
    te = traceback.TracebackException(type(exc), exc, _snippet_frames_only(exc.__traceback__), compact=True)
    _drop_guest_frames(te)
    return "".join(te.format())


def _as_is(function: Any) -> Any:
    return function


def _nothing_to_check(_code: str, _tree: ast.Module) -> None:
    return None


def run_snippet(
    code: str,
    namespace: dict[str, Any],
    defer: Callable[[Any], Any] = _as_is,
    precheck: Callable[[str, ast.Module], None] = _nothing_to_check,
) -> SnippetOutcome:
    """Run `code` in `namespace`; return its last expression's value or the exception it raised.

    `defer(f)` is what a call of `f` that is awaited or handed to asyncio calls instead; `precheck`
    sees the snippet's source and its parsed tree before it runs, and may refuse it by raising."""
    linecache.cache[SNIPPET_FILENAME] = (len(code), None, code.splitlines(True), SNIPPET_FILENAME)
    namespace[_READY] = _aio.ready
    namespace[_DEFER] = defer
    try:
        compiled = _compile(code, precheck)
        result = eval(compiled, namespace)
        if inspect.iscoroutine(result):
            _aio.run(result)
    except SystemExit as exc:
        if exc.code in (None, 0):
            return SnippetOutcome(value=namespace.get(_VALUE, _NO_VALUE))
        return SnippetOutcome(error=exc, traceback=format_error(exc))
    except BaseException as exc:  # the snippet's own failure, reported to the model
        return SnippetOutcome(error=exc, traceback=format_error(exc))
    return SnippetOutcome(value=namespace.get(_VALUE, _NO_VALUE))
