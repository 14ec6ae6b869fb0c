"""The `middleware` config key: each entry imported as the config loads, a bad one a config error."""

from __future__ import annotations

import pytest

from gateway.config import parse_config
from gateway.errors import ConfigError
from gateway.middleware import Chain

HOOKS = "tests.middleware.team_hooks"


def test_importable_async_callables_load_in_the_order_listed() -> None:
    config = parse_config({"middleware": [f"{HOOKS}:require_ticket", f"{HOOKS}:shout"]}, "<test>", {})
    chain = Chain.load(config.middleware, config.middleware_timeout_seconds)
    assert [layer.name for layer in chain.layers] == [f"{HOOKS}:require_ticket", f"{HOOKS}:shout"]
    assert chain.layers[0].on_search is None
    assert chain.layers[1].on_search is not None
    assert chain.searches


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("no_such_team_module:hook", "cannot import 'no_such_team_module'"),
        (f"{HOOKS}:missing", "has no attribute 'missing'"),
        (f"{HOOKS}:not_callable", "names a int, which is not callable"),
        (f"{HOOKS}:not_async", "is not async"),
        (HOOKS, "is not an import path"),
    ],
)
def test_a_bad_entry_is_a_config_error_naming_it_and_what_is_wrong(entry: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config({"middleware": [f"{HOOKS}:require_ticket", entry]}, "<test>", {})
    message = str(refused.value)
    assert "middleware[1]" in message
    assert repr(entry) in message
    assert says in message


def test_no_middleware_is_an_empty_chain() -> None:
    config = parse_config({}, "<test>", {})
    assert not Chain.load(config.middleware)
