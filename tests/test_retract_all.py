"""Retracting several beliefs in one write keeps what one at a time would keep.

A triple stays in the knowledge while any belief of it is held, whichever
beliefs of it leave together; the write is one audit event that names each.
"""

from __future__ import annotations

import pyoxigraph as ox
from hypothesis import given, settings
from hypothesis import strategies as st

import oms_rdf as oms
from oms_rdf.rdf.vocab import OMS

NOW = 1_800_000_000_000
EX = "http://example.org/"

# (subject, object, namespace): a few of each, so that beliefs share triples.
claims = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 2), st.sampled_from("xyz")),
    min_size=1,
    max_size=12,
    unique=True,
)


def store_of(beliefs: list[tuple[int, int, str]]) -> tuple[oms.GrainStore, list[str]]:
    store = oms.GrainStore(clock=lambda: NOW)
    addresses = [
        store.put(
            oms.Belief(
                f"{EX}s{s}", f"{EX}likes", f"{EX}o{o}", 0.9, created_at=1, namespace=ns
            )
        )
        for s, o, ns in beliefs
    ]
    return store, addresses


def knowledge(store: oms.GrainStore) -> set[tuple[str, str]]:
    rows = store.query("SELECT ?s ?o WHERE { ?s ?p ?o }")
    return {(r["s"].value, r["o"].value) for r in rows}


@settings(max_examples=60, deadline=None)
@given(beliefs=claims, data=st.data())
def test_retract_all_keeps_the_knowledge_one_at_a_time_would_keep(
    beliefs: list[tuple[int, int, str]], data: st.DataObject
) -> None:
    leaving = data.draw(
        st.lists(st.integers(0, len(beliefs) - 1), min_size=1, unique=True)
    )
    together, addresses = store_of(beliefs)
    alone, _ = store_of(beliefs)
    events = together.verify_audit().events
    chosen = [addresses[i] for i in leaving]
    together.retract_all([*chosen, chosen[0]], reason="r")  # a repeat is one grain
    for address in chosen:
        alone.retract(address, reason="r")

    held = [b for i, b in enumerate(beliefs) if i not in leaving]
    expected = {(f"{EX}s{s}", f"{EX}o{o}") for s, o, _ns in held}
    assert knowledge(together) == expected == knowledge(alone)
    assert {g.address for g in together.beliefs()} == {
        a for i, a in enumerate(addresses) if i not in leaving
    }
    assert together.verify_audit().events == events + 1
    [event] = together.backend.quads(
        None, OMS.operation, ox.Literal("retract"), OMS.audit
    )
    named = together.backend.quads(event.subject, OMS.target, None, OMS.audit)
    assert {q.object.value for q in named} == {f"nih:sha-256;{a}" for a in chosen}
