"""Importing past the allowlist, native code, and the prelude's audit hook."""

from __future__ import annotations

from gateway.escape.cases._model import (
    ALLOWLIST,
    AUDIT_OFF,
    FIND_CLASS,
    LOAD_BUILTIN,
    NATIVE,
    NO_FS,
    NO_NET,
    NO_PROC,
    REFUSE_OFF,
    EscapeCase,
    case_maker,
    refused,
    value_is,
)

__all__ = ["CASES"]

_case = case_maker("imports")
_native = case_maker("native-code")
_audit = case_maker("audit-hooks")
_NOT_ALLOWED = refused("ModuleNotFoundError", ALLOWLIST)
_FS_STUB = refused("CapabilityDenied", "filesystem")
_PATH_FINDER_FIRST = (
    "import importlib.machinery as m, sys\n"
    "sys.path_hooks.append(m.FileFinder.path_hook((m.SourceFileLoader, m.SOURCE_SUFFIXES)))\n"
    "sys.path[:] = ['/usr/lib/python3.14']\n"
    "sys.meta_path.insert(0, m.PathFinder)\n"
)

CASES: tuple[EscapeCase, ...] = (
    _case("import-numpy", "import numpy", _NOT_ALLOWED),
    _case("import-email-by-importlib", "import importlib; importlib.import_module('email')", _NOT_ALLOWED),
    _case("import-pickle", "import pickle", _NOT_ALLOWED),
    _case("import-importlib-util", "import importlib.util", _NOT_ALLOWED),
    _case(
        "import-with-meta-path-cleared",
        "import sys\ndel sys.meta_path[:]\nimport email",
        refused("ModuleNotFoundError", "email"),
    ),
    _case("import-path-finder-first", _PATH_FINDER_FIRST + "import email", _FS_STUB),
    _case(
        "import-zipimport-path-hook",
        "import sys, zipimport, importlib.machinery as m\nsys.path_hooks.append(zipimport.zipimporter)\n"
        "sys.path[:] = ['/tmp/evil.zip']\nsys.meta_path.insert(0, m.PathFinder)\nimport evil",
        _FS_STUB,
    ),
    _case(
        "import-dunder-import-override",
        "import builtins\nreal = builtins.__import__\n"
        "builtins.__import__ = lambda *a, **k: real(*a, **k)\nimport email",
        _NOT_ALLOWED,
    ),
    _case(
        "import-sys-modules-alias",
        "import sys\nsys.modules['socket'] = sys.modules['os']\nimport socket\nsocket.listdir('/')",
        refused("SandboxRestriction", NO_FS),
    ),
    _case("import-reload-os", "import importlib, os\nimportlib.reload(os)", _NOT_ALLOWED),
    _case(
        "import-builtin-_pickle",
        LOAD_BUILTIN + "load_builtin('_pickle')",
        _NOT_ALLOWED,
    ),
    _case(
        "import-create-builtin-_socket",
        "import _imp\nspec = type('Spec', (), {'name': '_socket'})()\n"
        "m = _imp.create_builtin(spec)\n_imp.exec_builtin(m)\nm.socket()",
        refused("SandboxRestriction", NO_NET),
    ),
    _native("native-import-ctypes", "import ctypes", refused("ModuleNotFoundError", NATIVE)),
    _native("native-import-_ctypes", "import _ctypes", refused("ModuleNotFoundError", NATIVE)),
    _native("native-import-cffi", "import cffi", _NOT_ALLOWED),
    _native("native-import-mmap", "import mmap", refused("ModuleNotFoundError", NATIVE)),
    _native(
        "native-no-builtin-_ctypes",
        FIND_CLASS + "find_class('BuiltinImporter').find_spec('_ctypes') is None",
        value_is(True),
    ),
    _native(
        "native-import-sqlite3",
        "import sqlite3",
        refused("ModuleNotFoundError", NO_FS),
    ),
    _audit(
        "audit-permissive-hook-added",
        "import sys\nsys.addaudithook(lambda event, args: None)\nsys.modules['posix'].listdir('/')",
        refused("SandboxRestriction", NO_FS),
    ),
    _audit(
        "audit-hook-raising-systemexit",
        "import sys\ndef hook(event, args):\n    raise SystemExit\n"
        "sys.addaudithook(hook)\nopen('/etc/passwd')",
        refused("CapabilityDenied", "processes"),
    ),
    _audit(
        "audit-hook-code-swapped",
        AUDIT_OFF + "import _io\n_io.FileIO('/etc/passwd').read()",
        _FS_STUB,
    ),
    _audit("audit-refusals-neutered", REFUSE_OFF + "sys.modules['posix'].listdir('/')", _FS_STUB),
    _audit(
        "audit-capability-map-cleared",
        "import sys\ncaps = sys.modules['guest._capabilities']\ncaps._AUDIT_CAPABILITY.clear()\n"
        "import asyncio.base_events as stash\nstash.socket.socket().connect(('127.0.0.1', 22))",
        refused("CapabilityDenied", "network"),
    ),
    _audit(
        "audit-settrace",
        "import sys\nsys.settrace(lambda *a: None)\nsys.modules['posix'].listdir('/')",
        refused("SandboxRestriction", NO_FS),
    ),
    _audit(
        "audit-setprofile",
        "import sys\nsys.setprofile(lambda *a: None)\nopen('/etc/passwd')",
        refused("SandboxRestriction", NO_FS),
    ),
    _audit(
        "audit-spoofed-event",
        "import sys\nsys.audit('os.system', b'id')",
        refused("SandboxRestriction", NO_PROC),
    ),
)
