"""Recall: ranked search over the beliefs in force, consistent with every write."""

from __future__ import annotations

import io

import pytest

import oms_rdf as oms
from oms_rdf import GrainStore
from oms_rdf.store.search import SearchIndex

T0 = 1_700_000_000_000
DAY = 86_400_000


def subjects(grains: list[oms.Grain]) -> list[str]:
    return [g["subject"] for g in grains]


def test_ranking_prefers_rarer_and_denser_matches() -> None:
    index = SearchIndex()
    index.add("a", ["rate limiter", "uses", "token bucket"])
    index.add("b", ["rate", "of", "exchange"])
    index.add("c", ["limiter", "limits", "rate limiter rate"])
    ranked = [address for address, _ in index.ranked("rate limiter")]
    assert ranked[0] in {"a", "c"} and ranked[-1] == "b"
    assert [a for a, _ in index.ranked("nothing here")] == []
    assert len(index) == 3 and "a" in index


def test_search_follows_supersession_retraction_and_time() -> None:
    clock = [T0 + 10 * DAY]
    store = GrainStore(clock=lambda: clock[0])
    old = store.put(
        oms.Belief("rate limiter", "uses", "leaky bucket", 0.9, created_at=T0)
    )
    assert subjects(store.search("rate limiter")) == [
        "rate limiter"
    ]  # index built here
    new = store.supersede(old, {"type": "belief", "subject": "rate limiter", "relation": "uses",
                                "object": "token bucket", "confidence": 0.9,
                                "created_at": T0 + DAY})  # fmt: skip
    assert [g.address for g in store.search("rate limiter bucket")] == [new]
    assert store.search("leaky") == []  # a superseded wording never comes back
    assert [g.address for g in store.search("leaky", as_of=T0 + 1)] == [
        old
    ]  # ...unless asked
    store.retract(new, reason="wrong")
    assert store.search("token bucket") == []
    other = store.put(oms.Belief("cache", "uses", "token bucket", 0.5, created_at=T0 + 2,
                                 namespace="infra"))  # fmt: skip
    assert [g.address for g in store.search("token")] == [other]
    assert store.search("token", namespace="shared") == []
    assert [g.address for g in store.search("token", namespace=["infra"])] == [other]
    with pytest.raises(oms.SchemaError):
        store.search("token", limit=0)


def test_search_sees_imports_and_rebuilds_from_the_graph() -> None:
    store = GrainStore(clock=lambda: T0)
    store.put(oms.Belief("a", "b", "c", 0.5, created_at=T0))
    store.search("a")  # the index exists before the import
    source = GrainStore(clock=lambda: T0)
    source.put(oms.Belief("rate limiter", "uses", "token bucket", 0.9, created_at=T0))
    dump = io.BytesIO()
    source.export(dump, format="nquads")
    dump.seek(0)
    store.import_(dump, format="nquads")  # quads restored directly
    assert subjects(store.search("limiter")) == ["rate limiter"]
    store.import_(
        io.BytesIO(b'<http://e/alpha> <http://e/says> "limiter" .'), format="ntriples"
    )
    assert len(store.search("limiter")) == 2
    store.reindex()
    assert len(store.search("limiter")) == 2


def test_tied_hits_come_by_address_whatever_order_they_were_indexed_in() -> None:
    """The order used to follow the index's building, which a server's reads set."""
    docs = [(f"{i:x}" * 8, ["same words"]) for i in range(10, 16)]
    orders = []
    for built in (docs, docs[::-1]):
        index = SearchIndex()
        for address, texts in built:
            index.add(address, texts)
        orders.append([address for address, _ in index.ranked("words")])
    assert orders[0] == orders[1] == sorted(address for address, _ in docs)


def test_limit_and_order() -> None:
    # The clock after every grain's system time: a grain from the future is not
    # believed now, so search would not find it.
    store = GrainStore(clock=lambda: T0 + 100)
    for i in range(30):
        store.put(oms.Belief(f"service {i}", "uses", "rate limiter" if i % 3 else "cache", 0.5,
                             created_at=T0 + i))  # fmt: skip
    hits = store.search("rate limiter", limit=5)
    assert len(hits) == 5 and all(h["object"] == "rate limiter" for h in hits)
    assert len(store.search("rate limiter", limit=100)) == 20


def test_search_folds_accents_and_unicode_forms() -> None:
    store = oms.GrainStore()
    cafe = store.put(oms.Belief("alice", "likes", "Café Noir", 0.9, created_at=1))
    decomposed = store.put(
        oms.Belief("bob", "likes", "cre\u0300me bru\u0302le\u0301e", 0.9, created_at=2)
    )
    assert [g.address for g in store.search("cafe")] == [cafe]
    assert [g.address for g in store.search("CAFÉ")] == [cafe]
    assert [g.address for g in store.search("crème brûlée")] == [decomposed]
    assert [g.address for g in store.search("creme brulee")] == [decomposed]
