"""The config reference in docs/, written from the JSON Schema."""

from __future__ import annotations

from gateway.config import GatewayConfig, config_reference
from tests.real_servers import REPO


def test_the_shipped_reference_is_what_the_schema_says_today() -> None:
    shipped = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert shipped == config_reference(), (
        "regenerate it: codemode-gateway schema --markdown > docs/configuration.md"
    )


def test_every_top_level_key_and_section_has_its_place_in_the_reference() -> None:
    reference = config_reference()
    for name, info in GatewayConfig.model_fields.items():
        assert f"| `{info.alias or name}` |" in reference
    for section in ("SandboxLimits", "PolicyConfig", "StdioServer", "HttpServer", "AuditConfig", "RateLimit"):
        assert f"\n## {section}\n" in reference
