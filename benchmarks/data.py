"""Deterministic benchmark data: beliefs over realistic subjects and relations."""

from __future__ import annotations

import random
from typing import Any

RELATIONS = ["works_at", "lives_in", "prefers", "knows", "manages", "speaks", "owns"]
OBJECTS = [
    "Acme Corp",
    "Berlin",
    "dark mode",
    "Bob",
    "Project Alpha",
    "German",
    "a bike",
]
SOURCES = ["user_explicit", "agent_inferred", "llm_generated", "imported"]
BASE_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z


def beliefs(n: int, *, seed: int = 7) -> list[dict[str, Any]]:
    """Return n belief field dicts (full names), the same for the same seed."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        created = BASE_MS + i * 60_000
        fields: dict[str, Any] = {
            "type": "belief",
            "subject": f"person-{rng.randrange(max(1, n // 10))}",
            "relation": rng.choice(RELATIONS),
            "object": rng.choice(OBJECTS),
            "confidence": round(rng.uniform(0.5, 1.0), 3),
            "source_type": rng.choice(SOURCES),
            "created_at": created,
            "valid_from": created - rng.randrange(0, 10**9),
            "namespace": "personal" if i % 2 else "work",
            "author_did": "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
        }
        out.append(fields)
    return out
