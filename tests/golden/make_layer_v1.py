"""Write ``layer-v1.nq``: an export whose grain layer holds ``oms:createdAt`` beside an
equal ``oms:systemFrom`` (the layout before createdAt moved to the blob).

Run once, deliberately, with the code whose layout the golden keeps:
``python -m tests.golden.make_layer_v1``. The file was written by commit 3bf4bce.
"""

from __future__ import annotations

from pathlib import Path

import oms_rdf as oms

T0 = 1_768_471_200_000
HERE = Path(__file__).parent


def main() -> None:
    store = oms.GrainStore()
    store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=T0))
    store.put(
        oms.Grain.from_dict(
            {"type": "belief", "subject": "http://example.org/bob",
             "relation": "http://example.org/knows", "object": "http://example.org/carol",
             "confidence": 1.0, "source_type": "imported", "created_at": T0 + 1000}
        )
    )  # fmt: skip
    store.put(
        oms.Grain.from_dict(
            {"type": "belief", "subject": "dana", "relation": "likes", "object": "tea",
             "confidence": 0.5, "created_at": T0 + 2000,
             "system_valid_from": T0 + 3000}
        )
    )  # fmt: skip
    store.export(HERE / "layer-v1.nq")


if __name__ == "__main__":
    main()
