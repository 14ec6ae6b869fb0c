"""The config file: found, read, `${VAR}`-expanded, validated; the built-in default; its JSON Schema."""

from gateway.config._background import BackgroundConfig
from gateway.config._defaults import NPM_SERVER_PINS, PYPI_SERVER_PINS, default_config
from gateway.config._http import AUTHENTICATED, HEALTH_PATHS, METRICS_PATH, HttpConfig
from gateway.config._load import (
    CONFIG_ENV,
    find_config_file,
    format_validation_error,
    load_config,
    parse_config,
    read_config_data,
)
from gateway.config._model import GatewayConfig, config_json_schema
from gateway.config._reference import config_reference
from gateway.config._secrets import (
    NOT_SECRET_VARS,
    config_secrets,
    find_literal_secrets,
    literal_secret_warning,
)

__all__ = (
    "AUTHENTICATED",
    "CONFIG_ENV",
    "HEALTH_PATHS",
    "METRICS_PATH",
    "NOT_SECRET_VARS",
    "NPM_SERVER_PINS",
    "PYPI_SERVER_PINS",
    "BackgroundConfig",
    "GatewayConfig",
    "HttpConfig",
    "config_json_schema",
    "config_reference",
    "config_secrets",
    "default_config",
    "find_config_file",
    "find_literal_secrets",
    "format_validation_error",
    "literal_secret_warning",
    "load_config",
    "parse_config",
    "read_config_data",
)
