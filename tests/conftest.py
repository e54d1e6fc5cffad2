from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("default")

GOLDEN = Path(__file__).parent / "golden"
DID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"


def load_vectors() -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = json.loads((GOLDEN / "vectors.json").read_text())[
        "vectors"
    ]
    return vectors


@pytest.fixture
def belief_fields() -> dict[str, Any]:
    return {
        "type": "belief",
        "subject": "user",
        "relation": "prefers",
        "object": "dark mode",
        "confidence": 0.9,
        "source_type": "user_explicit",
        "created_at": 1768471200000,
        "namespace": "shared",
        "author_did": DID,
    }
