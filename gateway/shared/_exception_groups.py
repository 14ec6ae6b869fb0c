"""Looking inside the exception groups that anyio task groups (and so the SDK's transports) raise."""

from __future__ import annotations

from typing import cast

__all__ = ["leaf_error"]


def leaf_error(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups: an Exception if there is one."""
    while isinstance(exc, BaseExceptionGroup):
        inner = cast("BaseExceptionGroup[BaseException]", exc).exceptions
        exc = next((e for e in inner if isinstance(e, Exception)), inner[0])
    return exc
