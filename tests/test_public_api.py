"""The public surface is chosen on purpose: the package's names, and each wing's face, pinned here."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import gateway

WINGS = (
    "audit",
    "auth",
    "calls",
    "catalog",
    "children",
    "cli",
    "config",
    "escape",
    "middleware",
    "policy",
    "sandbox",
    "server",
    "state",
    "shared",
    "telemetry",
)

# A wing's second surface, a public module that only re-exports, held to the same rules as a face.
SUB_FACES = (
    "catalog.docs",
    "catalog.lockfile",
    "config.server",
    "policy.elicitation",
    "sandbox.component",
    "sandbox.journal",
)

PUBLIC = (
    # serve
    "Gateway",
    "GatewayConfig",
    "load_config",
    "serve_stdio",
    "serve_http",
    # approvals in rounds (MCP 2026-07-28): a paused execution, and what resumes it
    "ApprovalNeeded",
    "Resume",
    # run code without the server
    "ErrorInfo",
    "ExecutionResult",
    "Sandbox",
    "SandboxLimits",
    "ToolCallRecord",
    "ToolCaller",
    # record and redact
    "AuditLog",
    "Redactor",
    # errors (their tree is drawn in gateway/errors.py)
    "ApprovalLimitExceeded",
    "ApprovalRequired",
    "BackgroundRefused",
    "CapabilityDenied",
    "ChildUnavailable",
    "CodeTooLarge",
    "ConfigError",
    "EndedByShutdown",
    "ExecutionCancelled",
    "ExecutionFailed",
    "FuelExhausted",
    "GatewayBusy",
    "GatewayError",
    "GuestCrashed",
    "LimitExceeded",
    "MemoryLimitExceeded",
    "MiddlewareFailed",
    "PolicyDenied",
    "QuotaExceeded",
    "ResumeRefused",
    "SandboxUnavailable",
    "SecretInArguments",
    "StateUnavailable",
    "ShownTooLarge",
    "ShownTooMany",
    "SnippetError",
    "StackExhausted",
    "TokenRefused",
    "ToolCallError",
    "ToolCallLimitExceeded",
    "ToolPayloadTooLarge",
    "WallTimeExceeded",
)


def test_the_package_exports_exactly_the_chosen_names() -> None:
    assert sorted(gateway.__all__) == sorted(PUBLIC)


def test_every_public_attribute_of_the_package_is_in_all() -> None:
    public = {
        name
        for name in dir(gateway)
        if not name.startswith("_") and not isinstance(getattr(gateway, name), ModuleType)
    }
    assert public == set(gateway.__all__)
    assert isinstance(gateway.__version__, str)


def test_an_unknown_name_of_the_package_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Gatway'"):
        _ = gateway.Gatway  # pyright: ignore[reportAttributeAccessIssue]


def test_importing_the_package_imports_no_wing_until_a_name_is_asked_for() -> None:
    # A command (or a library user) pays only for what it touches: the SDK is the heaviest of it.
    check = (
        "import sys, gateway; before = 'mcp' in sys.modules or 'gateway.sandbox' in sys.modules\n"
        "from gateway import Gateway, Sandbox\n"
        "print(before, 'mcp' in sys.modules, Gateway.__module__, Sandbox.__module__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=60, check=True
    )
    before, after, *homes = done.stdout.split()
    assert (before, after) == ("False", "True")
    assert homes == ["gateway.calls._gateway", "gateway.sandbox._sandbox"]


@pytest.mark.parametrize("collecting", [True, False])
def test_importing_the_package_leaves_garbage_collection_as_it_found_it(collecting: bool) -> None:
    # A library must not tune its embedder's heap: collection stays as the caller set it, nothing frozen.
    check = (
        f"import gc; gc.enable() if {collecting} else gc.disable(); before = gc.get_freeze_count(); "
        "import gateway; print(gc.isenabled(), before, gc.get_freeze_count())"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=60, check=True
    )
    enabled, before, after = done.stdout.split()
    assert enabled == str(collecting)
    assert int(after) == int(before) == 0


def test_the_command_line_freezes_what_the_import_built_so_no_collection_walks_it_again() -> None:
    # The process's tuning belongs to the CLI's entry point: `schema` is a command that starts nothing.
    check = (
        "import gc, sys; from gateway.cli import main\n"
        "try:\n    main(['schema'])\nexcept SystemExit:\n    pass\n"
        "print(gc.get_freeze_count(), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=60, check=True
    )
    assert int(done.stderr.strip().splitlines()[-1]) > 50_000


def test_every_error_in_the_tree_is_exported_from_the_package() -> None:
    errors = importlib.import_module("gateway.errors")
    assert set(errors.__all__) <= set(gateway.__all__)
    for name in errors.__all__:
        assert issubclass(getattr(gateway, name), gateway.GatewayError)


@pytest.mark.parametrize("wing", [*WINGS, *SUB_FACES])
def test_each_wing_has_a_face_that_only_re_exports(wing: str) -> None:
    module = importlib.import_module(f"gateway.{wing}")
    assert isinstance(module.__all__, tuple)
    for name in module.__all__:
        assert hasattr(module, name), f"gateway.{wing}.__all__ names {name}, which it lacks"
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    body = [
        node
        for node in tree.body
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
    ]
    for node in body:
        is_all = isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [
            "__all__"
        ]
        assert isinstance(node, ast.ImportFrom) or is_all or is_lazy_part(node), (
            f"gateway.{wing} defines more than a face"
        )


def is_lazy_part(node: ast.stmt) -> bool:
    """Whether `node` is part of a lazy face (PEP 562): `import typing`, an `if typing.TYPE_CHECKING:`
    block of imports (the names resolved on first use), or the `__getattr__` that resolves them."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names] == ["typing"]
    if isinstance(node, ast.FunctionDef):
        return node.name == "__getattr__"
    return (
        isinstance(node, ast.If)
        and ast.unparse(node.test) == "typing.TYPE_CHECKING"
        and not node.orelse
        and all(isinstance(inner, ast.ImportFrom) for inner in node.body)
    )


def face_imports(tree: ast.Module) -> set[str]:
    """The names a face imports: at its top, and in its TYPE_CHECKING block (the lazy ones)."""
    nodes = [*tree.body, *(inner for node in tree.body if isinstance(node, ast.If) for inner in node.body)]
    return {
        alias.asname or alias.name
        for node in nodes
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


@pytest.mark.parametrize("wing", [*WINGS, *SUB_FACES])
def test_everything_a_face_imports_it_also_exports(wing: str) -> None:
    module = importlib.import_module(f"gateway.{wing}")
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    assert face_imports(tree) == set(module.__all__)
