"""The API reference's table (docs/policy-api.md) names exactly the fields of the CRD's schema."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from policy_scheduler.policy.schema import openapi_schema

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "policy-api.md"


def field_paths(schema: Mapping[str, Any], path: str = "") -> Iterator[str]:
    """Every field below ``schema``: ``spec.priorities[].weight`` style."""
    for name, child in (schema.get("properties") or {}).items():
        here = f"{path}.{name}" if path else name
        yield here
        if child.get("type") == "array":
            yield from field_paths(child.get("items") or {}, f"{here}[]")
        else:
            yield from field_paths(child, here)


def test_the_api_table_lists_every_field_of_the_crd() -> None:
    section = REFERENCE.read_text().split("\nPlugins.", 1)[0]
    documented = re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)
    schema = {p for p in field_paths(openapi_schema()) if p.startswith(("spec.", "status."))}
    assert sorted(documented) == sorted(schema)
