"""The built sandbox component and where its compiled form is cached: a sub-face, since it is what
installing, checking and reporting the version need, apart from running snippets."""

from gateway.sandbox._files import COMPONENT_PATH, WASMTIME_VERSION, component_sha256, default_cache_dir

__all__ = ("COMPONENT_PATH", "WASMTIME_VERSION", "component_sha256", "default_cache_dir")
