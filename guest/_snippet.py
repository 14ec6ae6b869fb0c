"""Compile and run one snippet as a notebook cell: top-level await, last expression's value."""

import ast
import inspect
import linecache
import os
import traceback
from dataclasses import dataclass
from types import CodeType, TracebackType
from typing import Any

from guest import _aio

__all__ = ["SNIPPET_FILENAME", "SnippetOutcome", "run_snippet"]

SNIPPET_FILENAME = "<snippet>"
_VALUE = "__codemode_value__"
_READY = "__codemode_ready__"
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


class _WrapAwaits(ast.NodeTransformer):
    """`await x` becomes `await __codemode_ready__(x)`, so plain values (tool results) can be awaited."""

    def visit_Await(self, node: ast.Await) -> ast.AST:
        self.generic_visit(node)
        call = ast.Call(func=ast.Name(_READY, ast.Load()), args=[node.value], keywords=[])
        return ast.copy_location(ast.Await(ast.copy_location(call, node)), node)


def _compile(code: str) -> CodeType:
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree: ast.Module = compile(code, SNIPPET_FILENAME, "exec", flags=flags, dont_inherit=True)
    tree = _WrapAwaits().visit(tree)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        tree.body[-1] = ast.copy_location(ast.Assign([ast.Name(_VALUE, ast.Store())], last.value), last)
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


def run_snippet(code: str, namespace: dict[str, Any]) -> SnippetOutcome:
    """Run `code` in `namespace`; return its last expression's value or the exception it raised."""
    linecache.cache[SNIPPET_FILENAME] = (len(code), None, code.splitlines(True), SNIPPET_FILENAME)
    namespace[_READY] = _aio.ready
    try:
        compiled = _compile(code)
        result = eval(compiled, namespace)
        if inspect.iscoroutine(result):
            _aio.drive(result)
    except SystemExit as exc:
        if exc.code in (None, 0):
            return SnippetOutcome(value=namespace.get(_VALUE, _NO_VALUE))
        return SnippetOutcome(error=exc, traceback=format_error(exc))
    except BaseException as exc:  # the snippet's own failure, reported to the model
        return SnippetOutcome(error=exc, traceback=format_error(exc))
    return SnippetOutcome(value=namespace.get(_VALUE, _NO_VALUE))
