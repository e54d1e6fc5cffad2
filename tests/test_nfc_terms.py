"""IRIs that are not NFC are kept exactly in every position, not refused."""

from __future__ import annotations

import io
import unicodedata

import pyoxigraph as ox

import oms_rdf as oms

DECOMPOSED = "http://example.org/cafe\u0301"  # e + combining acute: not NFC
SOURCE = (
    f"<{DECOMPOSED}> <{DECOMPOSED}/p> <{DECOMPOSED}/o> .\n"
    f'<{DECOMPOSED}/s2> <http://example.org/name> "x" .\n'
).encode()


def test_a_non_nfc_subject_and_predicate_are_adopted_exactly() -> None:
    assert not unicodedata.is_normalized("NFC", DECOMPOSED)
    store = oms.GrainStore()
    report = store.import_(io.BytesIO(SOURCE), format="ntriples")
    assert report.added == 2
    rows = store.query(f"SELECT ?o WHERE {{ <{DECOMPOSED}> <{DECOMPOSED}/p> ?o }}")
    assert [r["o"] for r in rows] == [ox.NamedNode(DECOMPOSED + "/o")]
    out = io.BytesIO()
    store.export(out, format="ntriples")
    given = set(ox.parse(SOURCE, format=ox.RdfFormat.N_TRIPLES))
    assert set(ox.parse(out.getvalue(), format=ox.RdfFormat.N_TRIPLES)) == given
    again = oms.GrainStore()
    again.import_(io.BytesIO(out.getvalue()), format="ntriples")
    exported = io.BytesIO()
    again.export(exported, format="ntriples")
    assert set(ox.parse(exported.getvalue(), format=ox.RdfFormat.N_TRIPLES)) == given


def test_a_whole_store_export_keeps_them() -> None:
    store = oms.GrainStore()
    store.import_(io.BytesIO(SOURCE), format="ntriples")
    out = io.BytesIO()
    store.export(out, format="trig")
    restored = oms.GrainStore()
    restored.import_(io.BytesIO(out.getvalue()), format="trig")
    assert {g.address for g in restored.beliefs()} == {
        g.address for g in store.beliefs()
    }
