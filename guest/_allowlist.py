"""What a snippet may import: pure-computation stdlib modules preloaded at build time.

Pure data, importable on the host too (the gateway documents it, the tests compare it).
"""

__all__ = ["ALLOWED_MODULES", "DENIED_CAPABILITIES", "WARM_ONLY_MODULES"]

# Imported at build time and so snapshotted into the component. Anything else does not exist
# at run time: there is no filesystem to load it from.
ALLOWED_MODULES: tuple[str, ...] = (
    "abc", "array", "ast", "asyncio", "base64", "binascii", "bisect", "calendar", "cmath",
    "codecs", "collections", "collections.abc", "colorsys", "contextlib", "copy", "csv",
    "dataclasses", "datetime", "decimal", "difflib", "enum", "errno", "fnmatch", "fractions",
    "functools", "graphlib", "gzip", "hashlib", "heapq", "hmac", "html", "html.parser", "io",
    "ipaddress", "itertools", "json", "keyword", "math", "numbers", "operator", "os", "pprint",
    "quopri", "random", "re", "reprlib", "secrets", "shlex", "statistics", "string", "struct",
    "sys", "textwrap", "time", "tomllib", "traceback", "types", "typing", "unicodedata",
    "urllib", "urllib.parse", "uuid", "warnings", "weakref", "xml", "xml.etree",
    "xml.etree.ElementTree", "zlib",
)

# Lazily imported by allowlisted modules at run time, so they must be in the snapshot too.
WARM_ONLY_MODULES: tuple[str, ...] = (
    "_strptime", "encodings.idna", "encodings.punycode", "encodings.latin_1", "encodings.ascii", "encodings.utf_16",
    "encodings.utf_32", "encodings.cp1252", "encodings.unicode_escape", "encodings.raw_unicode_escape",
    "encodings.hex_codec", "encodings.base64_codec", "stringprep", "linecache", "tokenize",
)

# Modules that would reach a capability the sandbox does not have: importing one raises a
# ModuleNotFoundError that says which capability is missing and what to do instead.
DENIED_CAPABILITIES: dict[str, str] = {
    "socket": "network", "_socket": "network", "ssl": "network", "_ssl": "network",
    "select": "network", "selectors": "network", "http": "network", "urllib.request": "network",
    "ftplib": "network", "smtplib": "network", "asyncio.subprocess": "processes",
    "subprocess": "processes", "_posixsubprocess": "processes", "multiprocessing": "processes",
    "signal": "processes",
    "ctypes": "native code", "_ctypes": "native code", "mmap": "native code",
    "pathlib": "filesystem", "shutil": "filesystem", "tempfile": "filesystem", "glob": "filesystem",
    "sqlite3": "filesystem", "zipfile": "filesystem", "tarfile": "filesystem",
}
