"""The shape of index state in a `.mg` manifest and a JSON line's ``$index`` (spec §11.3)."""

from __future__ import annotations

_VERIFICATION_OUT = {
    "verified": "verified",
    "disputed": "disputed",
    "contradicted": "contested",
}


_VERIFICATION_IN = {"verified": "verified", "disputed": "disputed", "contested": "contradicted",
                    "contradicted": "contradicted", "unverified": "unverified"}  # fmt: skip


VOIDED_KEY = (
    "oms_rdf:voided"  # our extension: when a grain was retracted or contradicted
)
