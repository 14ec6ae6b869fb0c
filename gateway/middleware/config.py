"""The `middleware` config keys: import paths of the team's middleware, checked as the config loads."""

from __future__ import annotations

import importlib
import inspect
from typing import Annotated, Any, cast

from pydantic import AfterValidator, ValidationInfo

__all__ = [
    "DEFAULT_MIDDLEWARE_TIMEOUT_SECONDS",
    "DEFER_IMPORT",
    "MAX_MIDDLEWARE_TIMEOUT_SECONDS",
    "MiddlewarePath",
    "import_middleware",
]

DEFER_IMPORT = "defer_middleware_import"
"""Validation context key: when true, the paths are not imported as the config is validated (a reload
decides first whether a new path may be imported at all: importing runs the module's code)."""

DEFAULT_MIDDLEWARE_TIMEOUT_SECONDS = 10.0
MAX_MIDDLEWARE_TIMEOUT_SECONDS = 600.0


def import_middleware(path: str) -> Any:
    """The async callable at `module:attribute` (dots reach inside the module); ValueError says what is
    wrong with the path, the module or what it names."""
    module_name, colon, attribute = path.partition(":")
    if not colon or not module_name.strip() or not attribute.strip():
        raise ValueError(
            f"{path!r} is not an import path: write it as module:callable (team_hooks:redact_pii)"
        )
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(
            f"{path!r}: cannot import {module_name!r} ({exc}); install it in the gateway's environment "
            "or put its directory on PYTHONPATH"
        ) from None
    except Exception as exc:  # the module's own code failed as it was imported
        raise ValueError(f"{path!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}") from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"{path!r}: {module_name!r} has no attribute {attribute!r}")
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"{path!r} names a {type(target).__name__}, which is not callable")
    if not _is_async(target):
        raise ValueError(f"{path!r} is not async: a middleware is `async def name(call, call_next)`")
    on_search = getattr(target, "on_search", None)
    if on_search is not None and not (callable(on_search) and _is_async(on_search)):
        raise ValueError(f"{path!r}: its on_search is not async: `async def on_search(entries, search)`")
    return target


def _is_async(target: Any) -> bool:
    """Whether calling `target` returns a coroutine (a function, a bound method, or an object's __call__)."""
    # An instance with `async def __call__` is async too, though it is no function itself.
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(type(target).__call__)


def _importable(path: str, info: ValidationInfo) -> str:
    context: object = info.context
    if not (isinstance(context, dict) and cast("dict[str, object]", context).get(DEFER_IMPORT)):
        import_middleware(path)
    return path


MiddlewarePath = Annotated[str, AfterValidator(_importable)]
"""`module:callable`, imported as the config is validated: an unimportable path is a config error."""
