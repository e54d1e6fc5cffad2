"""The ``oms-rdf demo`` story: sample grains through the codec."""

from __future__ import annotations

from collections.abc import Callable

from .codec import content_address, decode, verify
from .grain import Belief

DID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"


def run_demo(echo: Callable[[str], object]) -> None:
    """Encode, address, decode and verify a few sample beliefs, printing each step."""
    samples = [
        Belief(
            "user",
            "prefers",
            "dark mode",
            0.9,
            source_type="user_explicit",
            created_at=1768471200000,
            namespace="shared",
            author_did=DID,
        ),
        Belief(
            "Alice",
            "works_at",
            "Acme Corp",
            0.95,
            source_type="user_explicit",
            created_at=1737000000000,
            valid_from=1735689600000,
            valid_to=1767225600000,
            system_valid_from=1737000000000,
        ),
        Belief(
            "agent-007",
            "constraint",
            "never delete user files without confirmation",
            1,
            source_type="user_explicit",
            created_at=1768471200000,
            namespace="safety",
            invalidation_policy={"mode": "locked"},
        ),
    ]
    for grain in samples:
        fields = grain.fields
        echo(f"{fields['subject']} {fields['relation']} {fields['object']!r}")
        echo(f"  blob     {len(grain.blob)} bytes  {grain.blob[:9].hex(' ')} | ...")
        echo(f"  address  {content_address(grain.blob)}")
        verify(grain.blob, grain.address)
        assert decode(grain.blob) == dict(fields)
        echo("  decoded and verified")
