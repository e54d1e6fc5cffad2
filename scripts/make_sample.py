"""Generate the notebooks' sample belief history (fixed seed, deterministic bytes).

Run from the repository root:  python scripts/make_sample.py
Writes notebooks/data/sample.mg: a few thousand beliefs about people in two
namespaces, with job changes (supersession), corrections, retractions,
contradictions, disputed beliefs and derived summaries.
"""

from __future__ import annotations

import random
import sys
from datetime import UTC, datetime
from pathlib import Path

import oms_rdf as oms

SEED = 20261130
OUT = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "sample.mg"
START = int(datetime(2022, 1, 1, tzinfo=UTC).timestamp() * 1000)
END = int(datetime(2026, 6, 1, tzinfo=UTC).timestamp() * 1000)
DAY = 86_400_000
AGENT = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
FIRST = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
         "mallory", "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor", "walter", "yara"]  # fmt: skip
VALUES = {
    "works_at": ["Acme", "Initech", "Globex", "Umbrella", "Hooli", "Stark Industries", "Wayne Enterprises"],
    "lives_in": ["Berlin", "Paris", "Lyon", "Madrid", "Lisbon", "Vienna", "Prague", "Oslo"],
    "prefers": ["tea", "coffee", "dark mode", "light mode", "email", "phone calls"],
    "speaks": ["English", "German", "French", "Spanish", "Portuguese", "Czech"],
    "manages": ["Project Alpha", "Project Beta", "Project Gamma", "the data team", "nothing"],
}  # fmt: skip
SOURCES = ["user_explicit", "agent_inferred", "llm_generated", "consolidated"]


def build(rng: random.Random) -> oms.GrainStore:
    clock = {"now": END}
    store = oms.GrainStore(clock=lambda: clock["now"])
    people = [f"{name}-{i}" for i in range(12) for name in FIRST]
    for person in people:
        namespace = rng.choice(["work", "personal"])
        for relation, values in VALUES.items():
            t = START + rng.randrange(0, 300) * DAY
            grain = oms.Belief(person, relation, rng.choice(values), round(rng.uniform(0.55, 0.99), 2),
                               created_at=t, valid_from=t - rng.randrange(0, 400) * DAY,
                               namespace=namespace, source_type=rng.choice(SOURCES), author_did=AGENT)  # fmt: skip
            address = store.put(grain)
            for _ in range(rng.randrange(0, 4)):
                t += rng.randrange(30, 400) * DAY
                if t >= END:
                    break
                correction = rng.random() < 0.3
                previous = store.get(address)
                fields = {
                    "type": "belief", "subject": person, "relation": relation,
                    "object": rng.choice([v for v in values if v != previous["object"]]),
                    "confidence": round(rng.uniform(0.6, 0.99), 2), "created_at": t,
                    "valid_from": previous["valid_from"] if correction else t - rng.randrange(0, 20) * DAY,
                    "namespace": namespace, "source_type": rng.choice(SOURCES), "author_did": AGENT,
                }  # fmt: skip
                address = store.supersede(address, fields, by=AGENT)
            fate = rng.random()
            at = min(END - DAY, t + rng.randrange(10, 200) * DAY)
            if fate < 0.05:
                store.retract(address, reason="the user said this was never true", by=AGENT, at=at)
            elif fate < 0.08:
                store.contradict(address, reason="a newer source disagrees", by=AGENT, at=at)
            elif fate < 0.11:
                store.set_verification(address, "disputed", by=AGENT, at=at)
            elif fate < 0.25 and relation == "works_at":
                job = store.get(address)
                store.put(oms.Belief(person, "commutes_to", f"{job['object']} office", 0.7,
                                     created_at=t + DAY, valid_from=job["valid_from"], namespace=namespace,
                                     source_type="agent_inferred", derived_from=[address]))  # fmt: skip
    return store


def main() -> None:
    store = build(random.Random(SEED))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    count = store.export(OUT, format="mg")
    print(f"wrote {count} grains to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
