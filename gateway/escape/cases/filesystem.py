"""Reading or writing files: through open(), os, posix, importlib's loaders and stashed references."""

from __future__ import annotations

from gateway.escape.cases._model import (
    AUDIT_OFF,
    FIND_CLASS,
    LOAD_BUILTIN,
    NO_FS,
    REFUSE_OFF,
    EscapeCase,
    case_maker,
    refused,
    succeeds,
    value_is,
)

__all__ = ["CASES"]

_case = case_maker("filesystem")
_DENIED = refused("SandboxRestriction", NO_FS)  # the prelude's refusal, catchable in the snippet
_STUB = refused("CapabilityDenied", "filesystem")  # past the prelude: a WASI stub trapped
_NOT_THERE = refused("ModuleNotFoundError", NO_FS)

CASES: tuple[EscapeCase, ...] = (
    _case("fs-open-read", "open('/etc/passwd').read()", _DENIED),
    _case("fs-open-write", "open('/tmp/x', 'w').write('x')", _DENIED),
    _case("fs-io-open", "import io; io.open('/etc/hostname')", _DENIED),
    _case("fs-_io-open", "import _io; _io.open('/etc/hostname')", _DENIED),
    _case("fs-open-code", "import _io; _io.open_code('/etc/passwd')", _DENIED),
    _case("fs-fileio", "import io; io.FileIO('/etc/hostname')", _DENIED),
    _case("fs-fileio-by-subclass-walk", FIND_CLASS + "find_class('FileIO')('/etc/passwd')", _DENIED),
    _case("fs-listdir", "import os; os.listdir('/')", _DENIED),
    _case("fs-stat", "import os; os.stat('/etc')", _DENIED),
    _case("fs-getcwd", "import os; os.getcwd()", _DENIED),
    _case("fs-chdir", "import os; os.chdir('/')", _DENIED),
    _case("fs-posix-listdir", "import sys; sys.modules['posix'].listdir('/')", _DENIED),
    _case("fs-posix-scandir", "import sys; sys.modules['posix'].scandir('/')", _DENIED),
    _case("fs-posix-mkdir", "import sys; sys.modules['posix'].mkdir('/tmp/x')", _DENIED),
    _case("fs-posix-open", "import sys; sys.modules['posix'].open('/etc/passwd', 0)", _DENIED),
    # posix.stat raises no audit event: the call reaches the WASI stub, which traps.
    _case("fs-posix-stat-reaches-stub", "import sys; sys.modules['posix'].stat('/')", _STUB),
    _case(
        "fs-builtin-posix-reloaded",
        LOAD_BUILTIN + "load_builtin('posix').listdir('/')",
        _DENIED,
    ),
    _case("fs-audit-hook-neutered", AUDIT_OFF + "sys.modules['posix'].open('/etc/passwd', 0)", _STUB),
    _case("fs-refusals-neutered", REFUSE_OFF + "import _io; _io.FileIO('/etc/passwd').read()", _STUB),
    _case("fs-stashed-open-in-tokenize", "import tokenize; tokenize.open('/etc/passwd')", _DENIED),
    _case("fs-gzip-open", "import gzip; gzip.open('/etc/x.gz').read()", _DENIED),
    _case("fs-xml-parse-file", "import xml.etree.ElementTree as ET; ET.parse('/etc/passwd')", _DENIED),
    _case(
        "fs-xml-external-entity",
        "import xml.etree.ElementTree as ET\n"
        "ET.fromstring('<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>')",
        refused("ParseError", "undefined entity"),
    ),
    _case(
        "fs-source-loader-get-data",
        "import importlib._bootstrap_external as e\n"
        "e.SourceFileLoader('x', '/etc/passwd').get_data('/etc/passwd')",
        _DENIED,
    ),
    _case(
        "fs-spec-from-file-location",
        "import importlib._bootstrap_external as e, types\n"
        "spec = e.spec_from_file_location('x', '/usr/lib/python3/os.py')\n"
        "spec.loader.exec_module(types.ModuleType('x'))",
        _STUB,
    ),
    _case(
        "fs-pathfinder-with-file-finder",
        "import importlib.machinery as m, sys\n"
        "sys.path_hooks.append(m.FileFinder.path_hook((m.SourceFileLoader, m.SOURCE_SUFFIXES)))\n"
        "m.PathFinder.find_spec('email', ['/usr/lib/python3.14'])",
        _STUB,
    ),
    _case("fs-zipimporter", "import zipimport; zipimport.zipimporter('/tmp/x.zip')", _STUB),
    _case(
        "fs-linecache-reads-nothing",
        "import linecache; linecache.getlines('/etc/passwd')",
        value_is([]),
    ),
    _case(
        "fs-license-printer-files",
        FIND_CLASS + "find_class('_Printer')('license', 'fallback', files=['/etc/passwd'], dirs=['/'])()",
        succeeds(lambda r, _: r.stdout == "fallback\n", "printed its fallback, read no file"),
    ),
    _case(
        "fs-sqlite-builtin",
        LOAD_BUILTIN + "load_builtin('_sqlite3').connect('/tmp/x.db')",
        refused("SandboxRestriction", "sqlite3.connect"),
    ),
    _case(
        "fs-sqlite-builtin-refusals-neutered",
        LOAD_BUILTIN + REFUSE_OFF + "load_builtin('_sqlite3').connect('/tmp/x.db').execute('select 1')",
        _STUB,
    ),
    _case("fs-import-pathlib", "import pathlib", _NOT_THERE),
    _case("fs-import-shutil", "import shutil", _NOT_THERE),
    _case("fs-import-tempfile", "import tempfile", _NOT_THERE),
    _case("fs-exists-is-false", "import os; os.path.exists('/etc/passwd')", value_is(False)),
)
