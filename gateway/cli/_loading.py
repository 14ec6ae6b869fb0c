"""Loading the config for a command: its secrets are redacted from the logs before anything else runs."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from gateway.calls import gateway_secrets
from gateway.config import GatewayConfig, load_config
from gateway.shared import Redactor, redact_logs

__all__ = ["load_config_for_cli"]

log = logging.getLogger("gateway.config")


def load_config_for_cli(
    path: str | os.PathLike[str] | None,
    command_line: Mapping[str, Any] | None = None,
    say: Callable[[str], None] | None = None,
) -> GatewayConfig:
    """The config (`--config`, else `$CODEMODE_CONFIG`, else built-in) with the children given on the
    command line, and log redaction in place; its notes (other clients' keys, entries left out) go to
    `say` (a command that talks to a person), else to the log."""
    config = load_config(path, command_line=command_line)
    redact_logs(Redactor(gateway_secrets(config)))
    for note in config.notes:
        if say is not None:
            say(note)
        else:
            log.warning("config note", extra={"note": note})
    return config
