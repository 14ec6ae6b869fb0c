"""The config sections only the server reads (`http`, `background`): a sub-face, since the server wing
sits above this one and cannot hold its own section models."""

from gateway.config._background import BackgroundConfig
from gateway.config._http import AUTHENTICATED, HEALTH_PATHS, METRICS_PATH, HttpConfig

__all__ = ("AUTHENTICATED", "HEALTH_PATHS", "METRICS_PATH", "BackgroundConfig", "HttpConfig")
