"""The config file: found, read, `${VAR}`-expanded, validated; the built-in default; its JSON Schema."""

from gateway.config._load import (
    find_config_file,
    format_validation_error,
    load_config,
    parse_config,
    read_config_data,
)
from gateway.config._model import GatewayConfig, config_json_schema
from gateway.config._reference import config_reference
from gateway.config._secrets import config_secrets, find_literal_secrets, literal_secret_warning

__all__ = (
    "GatewayConfig",
    "config_json_schema",
    "config_reference",
    "config_secrets",
    "find_config_file",
    "find_literal_secrets",
    "format_validation_error",
    "literal_secret_warning",
    "load_config",
    "parse_config",
    "read_config_data",
)
