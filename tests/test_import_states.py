"""An import's index state is held to what the store's own operations write.

Each refused case is what no sequence of ``supersede``, ``retract`` and
``contradict`` leaves behind (design §3: an import fills the reserved graphs only
from an export "whose index agrees"); each is tried through JSON Lines and
``.mg`` (the manifest, spec §11.3), and the store is unchanged after it. The
accepted cases are our own exports and another writer's manifest, which gives a
retraction's time in ``svt`` alone.
"""

from __future__ import annotations

import base64
import io
import json
import re
from typing import Any

import pytest

import oms_rdf as oms
from oms_rdf.codec.signing import generate_key, sign
from oms_rdf.io.container import write_mg

T0 = 1_700_000_000_000
NOW = T0 + 10_000_000
E = oms.ErrorCode


def belief(obj: str, t: int, **kw: Any) -> dict[str, Any]:
    return {"type": "belief", "subject": "x", "relation": "rule", "object": obj,
            "confidence": 0.9, "created_at": t, **kw}  # fmt: skip


A = oms.Grain.from_dict(belief("1", T0))
B = oms.Grain.from_dict(belief("2", T0 + 1000, derived_from=[A.address]))
LOCKED = oms.Grain.from_dict(belief("L", T0, invalidation_policy={"mode": "locked"}))
HELD = oms.Grain.from_dict(belief("H", T0, invalidation_policy={"mode": "hold"}))
TWIN = oms.Grain.from_dict(belief("twin", T0))  # A's system start, for a circle


def jsonl(entries: list[tuple[oms.Grain, dict[str, Any] | None]]) -> io.BytesIO:
    lines = []
    for grain, entry in entries:
        fields = {k: v for k, v in oms.decode(grain.blob).items() if v is not None}
        if entry is not None:
            fields["$index"] = entry
        lines.append(json.dumps(fields))
    return io.BytesIO("\n".join(lines).encode())


def container(entries: list[tuple[oms.Grain, dict[str, Any] | None]]) -> io.BytesIO:
    out = io.BytesIO()
    manifest = {g.address: e for g, e in entries if e is not None}
    write_mg([g.blob for g, _e in entries], out, manifest=manifest or None)
    out.seek(0)
    return out


FORMATS = {"jsonl": jsonl, "mg": container}

# (why, the grains with their entries, the code)
REFUSED = [
    ("retracted without its time", [(A, {"vstatus": "retracted"})], E.CORRUPT),
    ("contested without its time", [(A, {"vstatus": "contested"})], E.CORRUPT),
    ("a successor and no system end",
     [(A, {"sb": B.address}), (B, None)], E.CORRUPT),
    ("a system end and no reason for it", [(A, {"svt": T0 + 5})], E.CORRUPT),
    ("superseded by itself", [(A, {"sb": A.address, "svt": T0 + 5})], E.CORRUPT),
    ("a successor held nowhere",
     [(A, {"sb": "cd" * 32, "svt": T0 + 5})], E.CORRUPT),
    ("a successor older than the grain",
     [(B, {"sb": A.address, "svt": T0 + 2000}), (A, None)], E.RANGE),
    ("a retraction before the grain entered",
     [(A, {"vstatus": "retracted", "svt": T0 - 1})], E.RANGE),
    ("a circle of successions",
     [(A, {"sb": TWIN.address, "svt": T0}), (TWIN, {"sb": A.address, "svt": T0})],
     E.CORRUPT),
    ("a locked grain superseded",
     [(LOCKED, {"sb": B.address, "svt": T0 + 1000}), (B, None)],
     E.INVALIDATION_DENIED),
    ("a locked grain retracted",
     [(LOCKED, {"vstatus": "retracted", "svt": T0 + 5})], E.INVALIDATION_DENIED),
    ("a held grain contradicted",
     [(HELD, {"vstatus": "contested", "svt": T0 + 5})], E.INVALIDATION_DENIED),
    ("a system end after the successor entered (both held)",
     [(A, {"sb": B.address, "svt": T0 + 5000}), (B, None)], E.RANGE),
    ("retracted at a time, and verified",
     [(A, {"vstatus": "verified", "svt": T0 + 5, "oms_rdf:voided": T0 + 5})], E.CORRUPT),
    ("svt as text", [(A, {"vstatus": "retracted", "svt": "soon"})], E.CORRUPT),
    ("vstatus as a number", [(A, {"vstatus": 7})], E.CORRUPT),
    ("a vstatus no writer uses", [(A, {"vstatus": "bogus"})], E.CORRUPT),
]  # fmt: skip


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize(
    ("why", "entries", "code"), REFUSED, ids=[r[0] for r in REFUSED]
)
def test_a_state_no_operation_writes_is_refused(
    fmt: str, why: str, entries: list[Any], code: E
) -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    store.put(oms.Belief("kept", "is", "here", 1.0, created_at=T0))
    before = {str(q) for q in store.backend.quads()}
    with pytest.raises(oms.OmsError) as info:
        store.import_(FORMATS[fmt](entries), format=fmt)
    assert info.value.code == code, why
    assert {str(q) for q in store.backend.quads()} == before


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_skip_invalid_leaves_out_the_grain_and_keeps_the_rest(fmt: str) -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    entries = [(LOCKED, {"vstatus": "retracted", "svt": T0 + 5}), (A, None)]
    report = store.import_(FORMATS[fmt](entries), format=fmt, skip_invalid=True)
    assert A.address in store and LOCKED.address not in store
    assert [why.split(":")[0] for _where, why in report.skipped] == [
        "ERR_INVALIDATION_DENIED"
    ]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_another_writers_retraction_takes_its_time_from_svt(fmt: str) -> None:
    """The spec's keys alone (sb, svt, vstatus): the grain is out of the
    knowledge from svt on, and was in it before."""
    store = oms.GrainStore(clock=lambda: NOW)
    at = T0 + 5000
    store.import_(FORMATS[fmt]([(A, {"vstatus": "retracted", "svt": at})]), format=fmt)
    state = store.status(A.address)
    assert state.status == "retracted" and state.voided_at == at
    assert store.beliefs("x") == []
    assert [g.address for g in store.beliefs("x", valid_at=at - 1, as_of=at - 1)] == [
        A.address
    ]
    assert not store.query("ASK { ?s ?p ?o }", held=True)


@pytest.mark.parametrize("fmt", ["jsonl", "mg", "trig", "nquads"])
def test_our_own_exports_of_every_change_come_back(fmt: str) -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    a = store.put(A)
    b = store.supersede(a, belief("2", T0 + 1000))
    store.retract(b, reason="cafe\u0301")  # a reason in NFD
    c = store.put(belief("3", T0 + 2000, subject="y"))
    store.contradict(c, reason="no")
    soft = store.put(
        belief("s", T0, subject="z", invalidation_policy={"mode": "soft_locked"})
    )
    t = store.supersede(soft, belief("t", T0 + 10, subject="z"), justification="why")
    out = io.BytesIO()
    store.export(out, format=fmt)
    for target in (oms.GrainStore(clock=lambda: NOW), store):  # fresh, and itself
        out.seek(0)
        target.import_(out, format=fmt)
        for address in (a, b, c, soft, t):
            assert target.status(address) == store.status(address)


def test_a_manifest_envelope_for_an_unsigned_grain_is_refused() -> None:
    """Spec §9.2: the signed flag and the envelope agree, in either direction."""
    key = generate_key(b"k" * 32)
    signed = oms.Grain.from_dict(A.fields, signed=True)
    out = io.BytesIO()
    envelope = {"oms_rdf:envelope": sign(signed.blob, key)}
    write_mg([A.blob], out, manifest={A.address: envelope})
    out.seek(0)
    store = oms.GrainStore()
    with pytest.raises(oms.SignatureError) as info:
        store.import_(out, format="mg")
    assert info.value.code == E.SIGNED_MISMATCH and len(store) == 0


def test_skip_invalid_reads_past_a_bad_grain_in_a_container() -> None:
    bad = bytearray(oms.Grain.from_dict(belief("bad", T0 + 1)).blob)
    bad[-1] ^= 0xFF  # the last byte of the payload: "bad" becomes another text
    out = io.BytesIO()
    blobs = [A.blob, bytes(bad), B.blob]
    write_mg(blobs, out)
    out.seek(0)
    store = oms.GrainStore()
    with pytest.raises(oms.OmsError):
        store.import_(io.BytesIO(out.getvalue()), format="mg")
    report = store.import_(out, format="mg", skip_invalid=True)
    assert A.address in store and B.address in store and report.added == 2
    assert [where for where, _why in report.skipped] == ["grain[1]"]


@pytest.mark.parametrize("empty", [True, False])  # the fast restore, the general path
def test_an_rdf_export_that_closes_a_locked_grain_is_refused(empty: bool) -> None:
    source = oms.GrainStore(clock=lambda: NOW)
    source.put(LOCKED)
    out = io.BytesIO()
    source.export(out, format="nquads")
    node, idx = f"<nih:sha-256;{LOCKED.address}>", "<https://w3id.org/oms-rdf/ns#index>"
    when = '"2023-11-14T22:13:25Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>'
    forged = out.getvalue() + "".join(
        f"{node} <https://w3id.org/oms-rdf/ns#{p}> {o} {idx} .\n"
        for p, o in [("status", "<https://w3id.org/oms-rdf/ns#retracted>"),
                     ("voidedAt", when), ("systemTo", when)]
    ).encode()  # fmt: skip
    store = oms.GrainStore(clock=lambda: NOW)
    if not empty:
        store.put(oms.Belief("kept", "is", "here", 1.0, created_at=T0))
    before = {str(q) for q in store.backend.quads()}
    with pytest.raises(oms.PolicyError) as info:
        store.import_(io.BytesIO(forged), format="nquads")
    assert info.value.code == E.INVALIDATION_DENIED
    assert {str(q) for q in store.backend.quads()} == before


@pytest.mark.parametrize(
    ("predicate", "term"),
    [("systemTo", '"soon"'), ("systemTo", "<http://x/t>"), ("voidedAt", '"1"^^<http://x/d>'),
     ("supersededBy", '"a grain"'), ("supersededBy", "<http://x/g>")],
)  # fmt: skip
def test_an_rdf_index_term_of_the_wrong_kind_is_refused(
    predicate: str, term: str
) -> None:
    """Found by the fuzzer: such a term raised a bare ValueError."""
    source = oms.GrainStore(clock=lambda: NOW)
    source.put(A)
    out = io.BytesIO()
    source.export(out, format="nquads")
    node, idx = f"<nih:sha-256;{A.address}>", "<https://w3id.org/oms-rdf/ns#index>"
    extra = f"{node} <https://w3id.org/oms-rdf/ns#{predicate}> {term} {idx} .\n"
    if predicate == "voidedAt":
        extra += f"{node} <https://w3id.org/oms-rdf/ns#status> <https://w3id.org/oms-rdf/ns#retracted> {idx} .\n"
    for empty in (True, False):
        store = oms.GrainStore(clock=lambda: NOW)
        if not empty:
            store.put(B)
        with pytest.raises(oms.OmsError):
            store.import_(io.BytesIO(out.getvalue() + extra.encode()), format="nquads")
        assert A.address not in store


def signed_export() -> tuple[str, str, str]:
    """An N-Quads export of a signed grain and an unsigned one, and their addresses."""
    source = oms.GrainStore(clock=lambda: NOW)
    signed = source.put(sign(oms.Grain.from_dict(belief("S", T0), signed=True).blob,
                             generate_key(seed=bytes(32))))  # fmt: skip
    plain = source.put(A)
    out = io.BytesIO()
    source.export(out, format="nquads")
    return out.getvalue().decode(), signed, plain


def _flip_signature(text: str) -> str:
    line = next(x for x in text.splitlines() if "ns#envelope>" in x)
    envelope = line.split('"')[1]
    data = bytearray(base64.b64decode(envelope))
    data[-3] ^= 0xFF
    return text.replace(envelope, base64.b64encode(bytes(data)).decode())


OTHER_DID = generate_key(seed=bytes(range(32))).did
INDEX = "<https://w3id.org/oms-rdf/ns#index>"
FORGED = {
    "a signature that does not verify": (_flip_signature, E.SIGNATURE),
    "a signed grain without its envelope": (
        lambda t: "".join(x + "\n" for x in t.splitlines() if "ns#envelope>" not in x),
        E.SIGNED_MISMATCH,
    ),
    "another signer in the index": (
        lambda t: re.sub(r'ns#signedBy> "[^"]+"', f'ns#signedBy> "{OTHER_DID}"', t),
        E.SIGNATURE,
    ),
}


@pytest.mark.parametrize("empty", [True, False])  # the fast restore, the general path
@pytest.mark.parametrize("why", [*FORGED, "a signer for an unsigned grain"])
def test_an_rdf_export_with_a_forged_signature_is_refused(
    why: str, empty: bool
) -> None:
    """As put refuses it (spec §9.2): an envelope must verify and sign the
    grain's bytes, the signer the index names is the envelope's, and an
    unsigned grain has neither."""
    text, _signed, plain = signed_export()
    if why in FORGED:
        forge, code = FORGED[why]
        forged = forge(text)
    else:
        signer = f'"{OTHER_DID}"'
        forged = (
            text
            + f"<nih:sha-256;{plain}> <https://w3id.org/oms-rdf/ns#signedBy> {signer} {INDEX} .\n"
        )
        code = E.SIGNED_MISMATCH
    assert forged != text
    store = oms.GrainStore(clock=lambda: NOW)
    if not empty:
        store.put(oms.Belief("kept", "is", "here", 1.0, created_at=T0))
    before = {str(q) for q in store.backend.quads()}
    with pytest.raises(oms.OmsError) as info:
        store.import_(io.BytesIO(forged.encode()), format="nquads")
    assert info.value.code == code
    assert {str(q) for q in store.backend.quads()} == before
    store.import_(io.BytesIO(text.encode()), format="nquads")  # the export itself
    assert store.status(_signed).signed_by == generate_key(seed=bytes(32)).did


XSD = "http://www.w3.org/2001/XMLSchema#"


def retracted_with_evidence() -> tuple[oms.Grain, str]:
    """An export (N-Quads) of a belief with earned confidence, retracted."""
    source = oms.GrainStore(clock=lambda: NOW)
    source.put(A)
    source.evidence(A.address, "supporting", 0.9)
    source.retract(A.address, reason="gone")
    out = io.BytesIO()
    source.export(out, format="nquads")
    return A, out.getvalue().decode()


@pytest.mark.parametrize(
    ("predicate", "lexical", "refused"),
    [
        (
            "systemTo|voidedAt",
            '"2100-01-01T00:00:00"^^<{XSD}dateTime>',
            True,
        ),  # no zone
        ("systemTo|voidedAt", '"2023-11-14T22:13:25.0105Z"^^<{XSD}dateTime>', True),
        (
            "systemTo|voidedAt",
            '"2023-11-15T12:13:25.010+14:00"^^<{XSD}dateTime>',
            False,
        ),
        ("effectiveConfidence", '"0.8"^^<{XSD}decimal>', True),
        ("effectiveConfidence", '"0.8"^^<{XSD}float>', True),
        ("effectiveConfidence", '"NaN"^^<{XSD}double>', True),
        ("effectiveConfidence", '"1.5"^^<{XSD}double>', True),
        ("effectiveConfidence", '"high"', True),
        ("effectiveConfidence", '"8.0E-1"^^<{XSD}double>', False),
        # What Python's readers take and the XSD grammars do not.
        ("systemTo|voidedAt", '"2023-W46-2T22:13:25Z"^^<{XSD}dateTime>', True),
        ("systemTo|voidedAt", '"20231114T22:13:25Z"^^<{XSD}dateTime>', True),
        ("systemTo|voidedAt", '" 2023-11-14T22:13:25Z"^^<{XSD}dateTime>', True),
        ("effectiveConfidence", '"\uff10.\uff11"^^<{XSD}double>', True),
        ("effectiveConfidence", '" 0.99 "^^<{XSD}double>', True),
        ("effectiveConfidence", '"0_9"^^<{XSD}double>', True),
    ],
)
def test_index_literals_the_lookups_would_order_apart_are_refused(
    predicate: str, lexical: str, refused: bool
) -> None:
    """A time without a zone, or finer than a millisecond, or an earned
    confidence that is no double in [0, 1]: SPARQL and the store's lookups
    compare such a literal differently, so their answers would part."""
    grain, text = retracted_with_evidence()
    term = lexical.format(XSD=XSD)
    edited = re.sub(
        rf'(ns#(?:{predicate})> )"[^"]*"\^\^<[^>]*>', lambda m: m.group(1) + term, text
    )
    assert edited != text
    store = oms.GrainStore(clock=lambda: NOW)
    if refused:
        with pytest.raises(oms.DecodeError) as info:
            store.import_(io.BytesIO(edited.encode()), format="nquads")
        assert info.value.code == E.CORRUPT and grain.address[:12] in str(info.value)
        assert grain.address not in store
    else:
        store.import_(io.BytesIO(edited.encode()), format="nquads")
        assert store.status(grain.address).status == "retracted"


@pytest.mark.parametrize("fmt", ["trig", "nquads", "jsonl", "mg"])
def test_a_later_backup_whose_grain_changed_restores_only_into_an_empty_store(
    fmt: str, tmp_path: Any
) -> None:
    """What the README says: a later backup restores over the earlier one where
    it only adds; a grain superseded since refuses it, and nothing is written."""
    source = oms.GrainStore(clock=lambda: NOW)
    source.put(A)
    early, late = tmp_path / f"early.{fmt}", tmp_path / f"late.{fmt}"
    source.export(early)
    source.supersede(A, B)
    source.export(late)
    restored = oms.GrainStore(clock=lambda: NOW)
    restored.import_(early)
    before = sorted(map(str, restored.backend.quads()))
    with pytest.raises(oms.StoreError) as refused:
        restored.import_(late)
    assert refused.value.code == E.CONFLICT and "empty store" in str(refused.value)
    assert sorted(map(str, restored.backend.quads())) == before
    fresh = oms.GrainStore(clock=lambda: NOW)
    fresh.import_(late)
    assert fresh.status(A.address).superseded_by == B.address
