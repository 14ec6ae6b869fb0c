"""What the gateway cases run against: the probe MCP server's config, the suite's policy, its secrets.

The runner puts PROBE_HOST_ENV into the host's environment while a Gateway over the probe server
runs: the config expands the probe's secrets from there (so the gateway knows them as secrets),
and the proxy variable reaches the probe the way any inherited variable does.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "APPROVAL_ROUNDS",
    "CONTRACTOR",
    "CONTRACTOR_SCOPE",
    "ON_CALL_GROUP",
    "PROBE_APPROVALS",
    "PROBE_CHILD_ENV",
    "PROBE_HOST_ENV",
    "PROBE_MAX_CONCURRENT_CALLS",
    "PROBE_MIDDLEWARE",
    "PROBE_MIDDLEWARE_TIMEOUT_SECONDS",
    "PROBE_PIN",
    "PROBE_PIN_VAR",
    "PROBE_POLICY",
    "PROBE_PROXY_PASSWORD",
    "PROBE_SECRET",
    "PROBE_SECRET_VAR",
    "QUOTA",
    "RATE",
    "ROLE_QUOTA",
    "ROLE_RATE",
    "STATE_BYTES",
    "TOOL_QUOTA",
]

QUOTA = 10  # policy.max_tool_calls
TOOL_QUOTA = 3  # policy.tools["probe.read_note"].max_calls
RATE = 5  # calls of probe.count per hour, gateway-wide
PROBE_MAX_CONCURRENT_CALLS = 3  # the probe's max_concurrent_calls: calls in flight to it at once

CONTRACTOR = "probe-contractor"  # a principal `policy.roles["contractor"]` names
CONTRACTOR_SCOPE = "contractor"  # a scope that role names too
ON_CALL_GROUP = "oncall"  # a group `policy.roles["oncall"]` names
ROLE_QUOTA = 4  # policy.roles["contractor"].max_tool_calls
ROLE_RATE = 2  # calls of probe.tick per hour for each caller the contractor role names

PROBE_POLICY: dict[str, Any] = {
    # The naming cases: URIs the SDK's template percent-decodes, and a rule a tool list change could move.
    "deny": ["probe.delete_all", "probe:secret://*", "probe:repo://acme/private/*", "shift.drop_all"],
    "hidden": ["probe.internal_admin", "probe:hidden://*", "probe:repo://acme/secrets/*"],
    "approve": ["probe.write_note", "probe.write_file", "probe.create_entities"],
    "max_tool_calls": QUOTA,
    "tools": {
        "probe.read_note": {
            "args": {"properties": {"name": {"enum": ["alpha", "beta"]}}},
            "max_calls": TOOL_QUOTA,
        },
        "probe.count": {"rate": {"calls": RATE, "per_seconds": 3600}},
        # The validation cases: a prefix allow-list on a path (ECMA-262 `.` matches no line terminator)...
        "probe.read_file": {"args": {"properties": {"path": {"pattern": "^/srv/safe/.*$"}}}},
        # ...a deny-list on a path, which only holds on paths written plainly...
        "probe.read_path": {"args": {"properties": {"path": {"not": {"pattern": "^/srv/secrets"}}}}},
        # ...and tags of one line each, holding a key:value pair (unanchored, as teams often write it).
        "probe.tag_count": {
            "args": {
                "properties": {
                    "tags": {"items": {"allOf": [{"pattern": "^.+$"}, {"pattern": "[a-z]+:[a-z0-9]+"}]}}
                }
            }
        },
        # ...and the same rule on a list without uniqueItems, so that thousands of tags reach it.
        "probe.label_count": {"args": {"properties": {"labels": {"items": {"pattern": "[a-z]+:[a-z0-9]+"}}}}},
    },
    # The roles cases: callers named by principal, scope or group get less reach than the policy.
    "roles": {
        "contractor": {
            "principals": [CONTRACTOR],
            "scopes": [CONTRACTOR_SCOPE],
            "deny": ["probe.read_note"],
            "hidden": ["probe.reveal"],
            "read_only": True,
            "max_tool_calls": ROLE_QUOTA,
            "tools": {"probe.tick": {"rate": {"calls": ROLE_RATE, "per_seconds": 3600, "per": "principal"}}},
        },
        "oncall": {"groups": [ON_CALL_GROUP], "approve": ["probe.echo"]},
    },
}
"""The synthetic policy the gateway cases run under (the team's own policy is not involved)."""

PROBE_MIDDLEWARE = ["gateway.escape.probe_middleware:misbehave"]
"""The `middleware` the gateway cases run under: it misbehaves only for the middleware cases' callers."""
PROBE_MIDDLEWARE_TIMEOUT_SECONDS = 0.3
"""Below the suite's per-call timeout, so that a middleware that hangs is the one named."""

# Below the defaults, so that going past them fits in the policy's quota (each approval is a call)
# and in a fraction of a second (each round replays the run so far).
APPROVAL_ROUNDS = 4  # approvals.max_rounds
STATE_BYTES = 16 * 1024  # approvals.max_state_bytes

PROBE_APPROVALS: dict[str, Any] = {"max_rounds": APPROVAL_ROUNDS, "max_state_bytes": STATE_BYTES}
"""The `approvals` section the gateway cases run under: how many rounds a run may pause for, and
what it may carry from one to the next."""

PROBE_SECRET_VAR = "CODEMODE_PROBE_TOKEN"
PROBE_SECRET = "probe-secret-5d2c8e71a9b3f046"
"""Expanded into the probe's environment as PROBE_TOKEN from `${CODEMODE_PROBE_TOKEN}`."""

PROBE_PIN_VAR = "CODEMODE_PROBE_PIN"
PROBE_PIN = "4821"
"""A short, numeric secret, expanded into the probe's environment as PROBE_PIN."""

PROBE_PROXY_PASSWORD = "Pr0xyPassw0rd"
"""The password inside HTTPS_PROXY, which children inherit without any entry naming it."""

PROBE_HOST_ENV: dict[str, str] = {
    PROBE_SECRET_VAR: PROBE_SECRET,
    PROBE_PIN_VAR: PROBE_PIN,
    "HTTPS_PROXY": f"http://alice:{PROBE_PROXY_PASSWORD}@127.0.0.1:9",
}
"""Set in the gateway's own environment for the duration of the gateway cases."""

PROBE_CHILD_ENV: dict[str, str] = {
    "PROBE_TOKEN": f"${{{PROBE_SECRET_VAR}}}",
    "PROBE_PIN": f"${{{PROBE_PIN_VAR}}}",
}
"""The probe entry's `env`, as a team would write it."""
