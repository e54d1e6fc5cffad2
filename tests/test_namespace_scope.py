"""A token of namespace A learns nothing of namespace B: not its data, not that a
grain of it exists, not how many there are. Each case was a way through, found
by a probe; on a real uvicorn server on loopback, with tokens.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

import oms_rdf as oms
from oms_rdf.http.app import create_app
from oms_rdf.http.auth import Token
from oms_rdf.http.listing import Listing
from tests.helpers import running

A = {"authorization": "Bearer alpha"}
TOKENS = {
    "alpha": Token(namespaces=("A",), write=True, erase=True),
    "admin": Token(write=True, erase=True),
}
T0 = 1_700_000_000_000


def belief(subject: str, obj: str, namespace: str, t: int, **kw: Any) -> dict[str, Any]:
    return {"type": "belief", "subject": subject, "relation": "knows", "object": obj,
            "confidence": 0.9, "namespace": namespace, "created_at": t, **kw}  # fmt: skip


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, oms.GrainStore, dict[str, str]]]:
    store = oms.GrainStore(clock=lambda: T0 + 10_000)
    made = {"a1": store.put(belief("ann", "x", "A", T0))}
    for i in range(5):  # B's grains come first in the index's order, some of them
        made[f"b{i}"] = store.put(belief(f"secret{i}", "hunter2", "B", T0 + i))
    made["a2"] = store.put(belief("bo", "y", "A", T0 + 10))
    # An A grain that replaced a B grain (a write by a token of both).
    made["moved"] = store.supersede(made["b4"], belief("cy", "z", "A", T0 + 20))
    made["derived"] = store.put(
        belief("dee", "w", "B", T0 + 30, derived_from=[made["a2"]])
    )
    # And a B grain that replaced an A grain.
    made["left"] = store.put(belief("eve", "v", "A", T0 + 40))
    made["taken"] = store.supersede(made["left"], belief("eve", "u", "B", T0 + 41))
    store.import_(io.BytesIO(b"@prefix projectx: <http://acquisition.example/x/> .\n"
                             b"projectx:deal projectx:with projectx:target ."),
                  format="turtle", namespace="B")  # fmt: skip
    with running(create_app(store, tokens=TOKENS)) as base:
        yield base, store, made


def test_a_grain_of_another_namespace_is_missing_in_the_same_words(
    served: tuple[str, oms.GrainStore, dict[str, str]],
) -> None:
    base, _store, made = served
    foreign, nothing = made["b0"][:8], "0123abcd"
    assert not made["b0"].startswith(nothing)
    for path in ("", "/ancestors"):
        there = httpx.get(f"{base}/v1/facts/{foreign}{path}", headers=A)
        absent = httpx.get(f"{base}/v1/facts/{nothing}{path}", headers=A)
        assert there.status_code == absent.status_code == 404
        assert (
            there.json()["message"].replace(foreign, nothing)
            == absent.json()["message"]
        )
    whole = httpx.get(f"{base}/v1/facts/{made['b0']}", headers=A)
    assert whole.status_code == 404 and "hunter2" not in whole.text


def test_a_listing_counts_and_marks_only_the_tokens_grains(
    served: tuple[str, oms.GrainStore, dict[str, str]],
) -> None:
    base, _store, made = served
    first = httpx.get(f"{base}/v1/facts", params={"limit": 1}, headers=A).json()
    cursor = Listing.read(first["next_cursor"])
    mine = sum(1 for k in made if k.startswith(("a", "moved", "left")))
    assert cursor.position <= mine  # A's candidates only: nothing of B passed over
    pages = {}
    for mark in (made["b0"], made["b2"], "ab" * 32):  # B's, B's, nobody's
        forged = replace(cursor, after=mark, upcoming=mark).cursor()
        page = httpx.get(f"{base}/v1/facts", params={"cursor": forged}, headers=A)
        pages[mark] = [f["id"] for f in page.json()["facts"]]
    assert len(set(map(tuple, pages.values()))) == 1  # no mark tells of B


def test_versions_and_derivations_in_another_namespace_are_not_shown(
    served: tuple[str, oms.GrainStore, dict[str, str]],
) -> None:
    base, store, made = served
    versions = httpx.get(f"{base}/v1/facts/{made['moved']}/ancestors", headers=A)
    assert versions.status_code == 200 and versions.json()["facts"] == []
    assert "hunter2" not in versions.text
    erased = httpx.post(f"{base}/v1/facts/{made['a2']}/erase", headers=A,
                        json={"reason": "asked"})  # fmt: skip
    assert erased.status_code == 200 and erased.json()["derived"] == []
    assert made["derived"] in store  # derived grains are reported, never touched


def test_another_namespaces_prefixes_are_not_declared(
    served: tuple[str, oms.GrainStore, dict[str, str]],
) -> None:
    base, store, _made = served
    mine = httpx.get(f"{base}/explorer/prefixes", headers=A)
    assert mine.status_code == 200 and "projectx" not in mine.text
    everyone = httpx.get(
        f"{base}/explorer/prefixes", headers={"authorization": "Bearer admin"}
    )
    assert "projectx" in everyone.text
    out = io.BytesIO()
    store.export(out, format="turtle", namespace="A")
    assert b"projectx" not in out.getvalue()


def test_a_transactions_refusal_names_its_operation(
    served: tuple[str, oms.GrainStore, dict[str, str]],
) -> None:
    base, _store, _made = served
    operations = [{"op": "put", "fact": belief("e", "1", "A", T0 + 40)},
                  {"op": "put", "fact": belief("f", "2", "A", T0 + 41)},
                  {"op": "put", "fact": belief("g", "3", "B", T0 + 42)}]  # fmt: skip
    got = httpx.post(
        f"{base}/v1/transactions", headers=A, json={"operations": operations}
    )
    assert got.status_code == 403
    assert got.json()["path"].startswith("$.operations[2]")
    assert got.json()["message"].startswith("operation 2")


def test_a_reserved_graph_in_from_is_refused_at_any_point() -> None:
    store = oms.GrainStore()
    store.put(belief("ann", "x", "A", T0))
    query = "SELECT * FROM <https://w3id.org/oms-rdf/ns#audit> WHERE { ?s ?p ?o }"
    for point in ({}, {"namespace": "A"}, {"valid_at": "2999"}, {"held": True}):
        with pytest.raises(oms.QueryError):
            store.query(query, **point)


def test_a_successor_in_another_namespace_is_not_named(
    served: tuple[str, oms.GrainStore, dict[str, str]],
) -> None:
    base, _store, made = served
    fact = httpx.get(f"{base}/v1/facts/{made['left']}", headers=A).json()
    assert fact["status"] == "superseded" and fact["superseded_by"] is None
    assert made["taken"] not in str(fact)
