"""`codemode-gateway schema`: the config file's JSON Schema, or its reference as Markdown."""

from __future__ import annotations

import argparse
import json
import sys

from gateway.cli._exit_codes import EXIT_OK
from gateway.config import config_json_schema, config_reference

__all__ = ["schema_command"]


def schema_command(args: argparse.Namespace) -> int:
    """Print the schema (or, with --markdown, the reference)."""
    if args.markdown:
        sys.stdout.write(config_reference())
        return EXIT_OK
    print(json.dumps(config_json_schema(), indent=2, ensure_ascii=False))
    return EXIT_OK
