"""An argument of the wrong kind is refused with our error, naming it, and changes
nothing: none escapes as a TypeError or AttributeError from deep inside, and no
text is taken a character at a time."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest

import oms_rdf as oms

T0 = 1_700_000_000_000
NEW = {"type": "belief", "subject": "ann", "relation": "works_at", "object": "X",
       "confidence": 0.9, "created_at": T0 + 5}  # fmt: skip

Call = Callable[[oms.GrainStore, str], Any]

CALLS: dict[str, tuple[Call, str]] = {
    "revise(a, 123)": (lambda s, a: s.revise(a, 123), "ERR_SCHEMA"),
    "revise(a, None)": (lambda s, a: s.revise(a, None), "ERR_SCHEMA"),
    "revise(by=5)": (lambda s, a: s.revise(a, NEW, by=5), "ERR_SCHEMA"),
    "retract(reason=5)": (lambda s, a: s.retract(a, reason=5), "ERR_SCHEMA"),
    "contradict(reason=5)": (lambda s, a: s.contradict(a, reason=5), "ERR_SCHEMA"),
    "supersede(by=5)": (lambda s, a: s.supersede(a, NEW, by=5), "ERR_SCHEMA"),
    "supersede(justification=b'x')": (
        lambda s, a: s.supersede(a, NEW, justification=b"x"), "ERR_SCHEMA"),
    "supersede(signer='k')": (lambda s, a: s.supersede(a, NEW, signer="k"), "ERR_SCHEMA"),
    "supersede(auth='abc')": (lambda s, a: s.supersede(a, NEW, auth="abc"), "ERR_SCHEMA"),
    "supersede(auth=['abc'])": (lambda s, a: s.supersede(a, NEW, auth=["abc"]), "ERR_SCHEMA"),
    "supersede(123, NEW)": (lambda s, a: s.supersede(123, NEW), "ERR_HASH_FORMAT"),
    "status(None)": (lambda s, a: s.status(None), "ERR_HASH_FORMAT"),
    "evidence(by=5)": (lambda s, a: s.evidence(a, "supporting", 0.9, by=5), "ERR_SCHEMA"),
    "set_verification(a, ['x'])": (lambda s, a: s.set_verification(a, ["x"]), "ERR_SCHEMA"),
    "retract_all(None)": (lambda s, a: s.retract_all(None, reason="r"), "ERR_SCHEMA"),
    "retract_all(a)": (lambda s, a: s.retract_all(a, reason="r"), "ERR_SCHEMA"),
    "put_many(None)": (lambda s, a: s.put_many(None), "ERR_SCHEMA"),
    "put(justification=5)": (lambda s, a: s.put(NEW, justification=5), "ERR_SCHEMA"),
    "update(namespace=5)": (
        lambda s, a: s.update("INSERT DATA { <http://a> <http://b> <http://c> }",
                              namespace=5), "ERR_SCHEMA"),
    "beliefs(5)": (lambda s, a: s.beliefs(5), "ERR_SCHEMA"),
    "erase(123)": (lambda s, a: s.erase(123, reason="r"), "ERR_HASH_FORMAT"),
    "erase(reason=123)": (lambda s, a: s.erase(a, reason=123), "ERR_SCHEMA"),
    "erase(reason=b'x')": (lambda s, a: s.erase(a, reason=b"x"), "ERR_SCHEMA"),
    "erase(by=5)": (lambda s, a: s.erase(a, reason="r", by=5), "ERR_SCHEMA"),
    "erase_subject(5)": (lambda s, a: s.erase_subject(5, reason="r"), "ERR_SCHEMA"),
    "subject_report(5)": (lambda s, a: s.subject_report(5), "ERR_SCHEMA"),
    "export(StringIO)": (lambda s, a: s.export(io.StringIO(), format="trig"), "ERR_SCHEMA"),
    "import_(StringIO)": (lambda s, a: s.import_(io.StringIO("x"), format="trig"),
                          "ERR_SCHEMA"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CALLS))
def test_an_argument_of_the_wrong_kind_is_our_error_and_changes_nothing(
    name: str,
) -> None:
    call, code = CALLS[name]
    store = oms.GrainStore(clock=lambda: T0 + 10_000)
    held = store.put(oms.Belief("ann", "works_at", "Acme", 0.9, created_at=T0))
    before = sorted(str(q) for q in store.backend.quads())
    with pytest.raises(oms.OmsError) as info:
        call(store, held)
    assert info.value.code == code, info.value
    assert sorted(str(q) for q in store.backend.quads()) == before


def test_a_grain_is_named_by_its_node_iri_as_sparql_answers_give_it() -> None:
    store = oms.GrainStore(clock=lambda: T0 + 10_000)
    held = store.put(oms.Belief("ann", "works_at", "Acme", 0.9, created_at=T0))
    [row] = store.query("SELECT ?g WHERE { ?g a oms:Belief }", grains=True)
    node = row["g"].value
    assert node == f"nih:sha-256;{held}"
    assert store.get(node).address == store.get(node[:20]).address == held
    assert store.status(node).is_current
    with pytest.raises(oms.OmsError) as info:
        store.get("nih:sha-256;" + "Z" * 64)
    assert info.value.code == "ERR_HASH_FORMAT"
