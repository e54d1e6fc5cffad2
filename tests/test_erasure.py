"""Erasure really erases: every layer, every namespace, the bytes on disk too."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest

import oms_rdf as oms
from oms_rdf.store.erasure import REMAIN

NOW = 1_800_000_000_000
DAY = 86_400_000
NAME = "Zoë Quintanilla-Marsh"  # distinctive, non-ASCII: found only where it was put


def nquads(store: oms.GrainStore) -> bytes:
    buffer = io.BytesIO()
    store.export(buffer, format="nquads", grains=True)
    return buffer.getvalue()


def plain_dump(store: oms.GrainStore) -> str:
    """Every quad of every graph, exactly as the store holds them."""
    return "\n".join(str(q) for q in store.backend.quads())


def files_mention(path: Path, text: str) -> list[str]:
    needle = text.encode()
    return [str(f) for f in path.rglob("*") if f.is_file() and needle in f.read_bytes()]


def person_everywhere(store: oms.GrainStore) -> dict[str, str]:
    """A person as subject, as object, as user_id and inside a context map."""
    grains = {
        "subject": oms.Belief(NAME, "lives_in", "Lisbon", 0.9, created_at=1, namespace="home"),
        "object": oms.Belief("acme", "employs", NAME, 0.8, created_at=2, namespace="work"),
        "user_id": oms.Belief("theme", "is", "dark", 0.7, created_at=3, namespace="prefs",
                              user_id=NAME),
        "context": oms.Belief("meeting", "held_on", "Tuesday", 0.6, created_at=4,
                              context={"attendees": ["Bob", NAME]}),
    }  # fmt: skip
    return {where: store.put(grain) for where, grain in grains.items()}


def test_the_spec_conformance_case_a_grain_with_only_a_subject() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    grain = oms.Grain.from_dict({"type": "belief", "subject": NAME, "relation": "r",
                                 "object": "o", "confidence": 0.5, "created_at": 1})  # fmt: skip
    address = store.put(grain)
    assert [g["address"] for g in store.subject_report(NAME).grains] == [address]
    report = store.erase_subject(NAME, reason="GDPR Art. 17 request")
    assert report.erased == [address] and not report.held
    assert store.subject_report(NAME).grains == []
    assert address not in store and NAME not in plain_dump(store)
    with pytest.raises(oms.NotFoundError, match="erased"):
        store.erase(address, reason="again")


def test_a_person_everywhere_is_wholly_reported_and_erased(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = oms.GrainStore(path, clock=lambda: NOW)
    where = person_everywhere(store)
    other = store.put(oms.Belief("bob", "likes", "tea", 0.5, created_at=5))
    store.evidence(where["subject"], "supporting", 0.9)
    child = store.put(oms.Belief("lisbon", "has_resident_count", "1", 0.5, created_at=6,
                                 derived_from=[where["subject"]]))  # fmt: skip
    old_export = tmp_path / "before.trig"
    store.export(old_export)
    report = store.subject_report(NAME)
    assert sorted(g["address"] for g in report.grains) == sorted(where.values())
    assert report.complete and report.records()[0]["address"]
    assert NAME in report.to_json()

    erased = store.erase_subject(NAME, reason="GDPR Art. 17 request", by="did:web:dpo")
    assert sorted(erased.erased) == sorted(where.values())
    assert erased.derived == [child]
    assert not erased.complete and "vacuum" in erased.remaining[0]
    assert NAME not in plain_dump(store)  # every graph, the audit included
    assert NAME.encode() not in nquads(store)
    assert other in store and store.verify_audit().ok
    assert [g.address for g in store.beliefs("bob")] == [other]
    assert store.search(NAME) == []

    # An older export brings nothing back.
    result = store.import_(old_export)
    assert result.added == 0
    assert sorted(w for w, why in result.skipped if why == "erased, skipped") == sorted(
        f"grain {a[:12]}…" for a in where.values()
    )
    assert NAME not in plain_dump(store)
    with pytest.raises(oms.PolicyError, match="erased"):
        store.put(
            oms.Belief(NAME, "lives_in", "Lisbon", 0.9, created_at=1, namespace="home")
        )

    # The bytes are still in the files until the store is rewritten.
    store.flush()
    assert files_mention(path, NAME)
    store.vacuum()
    store.close()
    assert files_mention(path, NAME) == []
    again = oms.GrainStore(path)
    assert [g.address for g in again.beliefs("bob")] == [other]
    assert again.verify_audit().ok and NAME not in plain_dump(again)
    again.close()


def test_erase_subject_can_vacuum_in_the_same_call(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = oms.GrainStore(path, clock=lambda: NOW)
    person_everywhere(store)
    report = store.erase_subject(NAME, reason="request", vacuum=True)
    assert report.vacuumed and report.complete and report.remaining == []
    store.close()
    assert files_mention(path, NAME) == []


def test_a_call_asking_to_vacuum_again_finishes_one_that_was_stopped(
    tmp_path: Path,
) -> None:
    """Killed during its vacuum, erase_subject(..., vacuum=True) had erased: the
    same call again found nothing to erase and never vacuumed."""
    path = tmp_path / "store"
    clock = [NOW]
    store = oms.GrainStore(path, clock=lambda: clock[0])
    person_everywhere(store)
    store.erase_subject(NAME, reason="request")  # as if stopped before its vacuum
    clock[0] += 1000
    again = store.erase_subject(NAME, reason="request", vacuum=True)
    assert again.erased == [] and again.vacuumed
    clock[0] += 1000
    assert not store.erase_subject(NAME, reason="request", vacuum=True).vacuumed
    store.close()
    assert files_mention(path, NAME) == []


def test_vacuum_waits_for_answers_still_being_read(tmp_path: Path) -> None:
    """An answer not read to its end holds the engine's store open: swapping the
    folder under it would let the old engine write into the new store."""
    path = tmp_path / "store"
    store = oms.GrainStore(path, clock=lambda: NOW)
    person_everywhere(store)
    reading = store.query("SELECT ?s WHERE { ?s ?p ?o }")
    next(iter(reading))  # one row read, the rest not
    before = plain_dump(store)
    with pytest.raises(oms.StoreError) as info:
        store.vacuum()
    assert info.value.code == oms.ErrorCode.CONFLICT and "still being read" in str(
        info.value
    )
    assert plain_dump(store) == before
    done = store.query("SELECT ?s WHERE { ?s ?p ?o }")
    assert list(done) and list(reading)  # read to their ends: they let go
    store.erase_subject(NAME, reason="request", vacuum=True)
    store.close()
    again = oms.GrainStore(path)  # opens: the swap left a whole store
    assert again.verify_audit().ok and NAME not in plain_dump(again)
    again.close()
    assert files_mention(path, NAME) == []


def test_vacuum_beside_another_threads_reads_leaves_a_whole_store(
    tmp_path: Path,
) -> None:
    """Another thread asks a question whose answer it reads row by row, each
    row's grain from the cache, while the vacuum swaps the folder: the swap
    waits for it to let go of the old engine (which closes only then), its
    next question waits for the swap, and the store opens whole after."""
    path = tmp_path / "store"
    store = oms.GrainStore(path, clock=lambda: NOW)
    store.put_many(
        oms.Belief(f"s{i % 50}", "r", f"o{i}", 0.5, created_at=NOW - 10_000)
        for i in range(2_000)
    )
    stop, answers, errors = threading.Event(), [], []

    def reader() -> None:
        while not stop.is_set():
            try:
                answers.append(len(store.beliefs(relation="r")))
                assert len(store.backend) > 0  # the engine's own length too
            except oms.StoreError as exc:  # a swap it waited too long for
                errors.append(exc.code)

    thread = threading.Thread(target=reader)
    thread.start()
    while not answers:  # a question answered before, and one under way
        time.sleep(0.01)
    try:
        store.vacuum()
        store.put(oms.Belief("after", "r", "x", 0.5, created_at=NOW))
    finally:
        stop.set()
        thread.join()
    assert set(answers) <= {2_000, 2_001} and set(errors) <= {oms.ErrorCode.CONFLICT}
    store.close()
    again = oms.GrainStore(path, clock=lambda: NOW)
    assert len(again.beliefs(relation="r")) == 2_001 and again.verify_audit().ok
    again.close()


def test_a_vacuum_that_gives_up_on_a_reader_leaves_the_store_to_reopen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An engine iterator nobody lets go of keeps RocksDB open: the vacuum
    gives up (nothing changed), and once the iterator is gone and the store
    closed, it opens again in the same process, whole."""
    from oms_rdf.backends import vacuum

    monkeypatch.setattr(vacuum, "SWAP_WAIT", 0.5)
    path = tmp_path / "store"
    store = oms.GrainStore(path, clock=lambda: NOW)
    person_everywhere(store)
    before = plain_dump(store)
    held = store.backend.quads()
    next(held)
    with pytest.raises(oms.StoreError) as info:
        store.vacuum()
    assert info.value.code == oms.ErrorCode.CONFLICT
    del held
    store.close()
    again = oms.GrainStore(path, clock=lambda: NOW)
    assert plain_dump(again) == before and again.verify_audit().ok
    again.close()


def test_a_hold_blocks_erasure() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    held = store.put(oms.Belief(NAME, "owes", "tax", 0.9, created_at=1,
                                invalidation_policy={"mode": "hold"}))  # fmt: skip
    free = store.put(oms.Belief(NAME, "likes", "tea", 0.9, created_at=1))
    before = plain_dump(store)
    with pytest.raises(oms.PolicyError) as info:
        store.erase(held, reason="request")
    assert info.value.code == oms.ErrorCode.INVALIDATION_DENIED
    assert plain_dump(store) == before
    report = store.erase_subject(NAME, reason="request")
    assert report.erased == [free] and report.held == [held] and not report.complete
    assert held in store


def test_a_consent_withdrawal_is_carried_out_after_its_sla() -> None:
    clock = [NOW]
    store = oms.GrainStore(clock=lambda: clock[0])
    person, company = (
        "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
        "did:web:acme",
    )
    consent_address = store.put({"type": "consent", "subject_did": person, "grantee_did": company,
                                 "scope": ["marketing"], "is_withdrawal": False, "created_at": 1})  # fmt: skip
    dependent = store.put(oms.Belief(NAME, "prefers", "email", 0.8, created_at=2,
                                     invalidation_policy={"mode": "consent_cascade"},
                                     processing_basis=consent_address))  # fmt: skip
    store.put({"type": "consent", "subject_did": person, "grantee_did": company,
               "scope": ["marketing"], "is_withdrawal": True, "prior_consent": consent_address,
               "created_at": 3})  # fmt: skip
    assert store.pending_erasure() == [dependent]
    clock[0] = NOW + 29 * DAY
    assert store.process_erasures().erased == []
    clock[0] = NOW + 31 * DAY
    report = store.process_erasures()
    assert report.erased == [dependent] and dependent not in store
    assert store.pending_erasure() == []


def test_a_name_with_quotes_is_found_inside_context() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    name = 'Dwayne "The Rock" O\\Neil'
    address = store.put(oms.Belief("party", "guest", "list", 0.5, created_at=1,
                                   context={"guests": [name]}))  # fmt: skip
    assert [g["address"] for g in store.subject_report(name).grains] == [address]
    assert store.erase_subject(name, reason="request").erased == [address]


def test_a_read_only_view_does_not_claim_a_complete_report(tmp_path: Path) -> None:
    path = tmp_path / "store"
    writer = oms.GrainStore(path)
    writer.put(oms.Belief(NAME, "likes", "tea", 0.5, created_at=1))
    writer.flush()
    report = oms.GrainStore(path, read_only=True).subject_report(NAME)
    assert len(report.grains) == 1 and not report.complete
    assert "read-only" in report.notes[-1]
    assert writer.subject_report(NAME).complete


def test_erasing_a_version_keeps_the_rest_of_its_chain() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    first = store.put(oms.Belief("acme", "ceo", "Someone Else", 0.9, created_at=1))
    middle = store.supersede(first, oms.Belief("acme", "ceo", NAME, 0.9, created_at=2))
    last = store.supersede(middle, {"type": "belief", "subject": "acme", "relation": "ceo",
                                    "object": "A Third", "confidence": 0.9, "created_at": 3})  # fmt: skip
    assert store.get(last)["derived_from"] == [middle]  # the supersession shape
    report = store.erase_subject(NAME, reason="request")
    assert report.erased == [middle] and report.derived == [last]
    # The chain is cut where the erased version was: only addresses point at it.
    assert [g.address for g in store.history(last)] == [last]
    assert [g.address for g in store.history(first)] == [first]
    assert [g["object"] for g in store.beliefs("acme")] == ["A Third"]
    assert store.status(first).superseded_by == middle  # the address only is left


@pytest.mark.parametrize("policy", [None, {"mode": "soft_locked"}])
def test_a_successors_own_justification_is_erased_with_it(policy: object) -> None:
    """The store recorded a grain's supersession_justification as the change's
    reason, in the old grain's index, the audit event and (soft_locked) its
    review note: copies of the grain's content that outlived its erasure."""
    store = oms.GrainStore(clock=lambda: NOW)
    fields = {"type": "belief", "subject": "acme", "relation": "ceo", "object": "X",
              "confidence": 0.9, "created_at": 1}  # fmt: skip
    old = store.put(
        fields | ({} if policy is None else {"invalidation_policy": policy})
    )
    new = store.supersede(old, fields | {"object": "Y", "created_at": 2,
                                         "supersession_justification": NAME})  # fmt: skip
    assert store.get(new)["supersession_justification"] == NAME
    store.erase(new, reason="request")
    assert NAME not in plain_dump(store)
    assert store.verify_audit().problem is None


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_name_is_refused_not_reported_as_done(name: str) -> None:
    """It erased nothing and said so as a finished erasure, and the report of
    it called itself complete: a script with an empty variable was told done."""
    store = oms.GrainStore(clock=lambda: NOW)
    store.put(oms.Belief(NAME, "lives_in", "Lisbon", 0.9, created_at=1))
    before = plain_dump(store)
    for ask in (lambda: store.erase_subject(name, reason="request"),
                lambda: store.subject_report(name)):  # fmt: skip
        with pytest.raises(oms.SchemaError) as info:
            ask()
        assert info.value.code == "ERR_EMPTY"
    assert plain_dump(store) == before
    assert store.subject_report("", user_id=NAME).complete  # a user_id alone is asked


def test_a_tombstone_travels_and_keeps_an_old_export_out_elsewhere() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    gone = store.put(oms.Belief(NAME, "likes", "tea", 0.5, created_at=1))
    kept = store.put(oms.Belief("bob", "likes", "tea", 0.5, created_at=1))
    old = io.BytesIO()
    store.export(old, format="trig")
    store.erase(gone, reason="request")
    after = io.BytesIO()
    store.export(after, format="trig")
    assert NAME.encode() not in after.getvalue()
    replica = oms.GrainStore(clock=lambda: NOW)
    replica.import_(io.BytesIO(after.getvalue()), format="trig")
    assert kept in replica and gone not in replica and replica.verify_audit().ok
    result = replica.import_(io.BytesIO(old.getvalue()), format="trig")
    assert result.skipped == [(f"grain {gone[:12]}…", "erased, skipped")]
    assert gone not in replica and NAME not in plain_dump(replica)


@pytest.mark.parametrize("fmt", ["mg", "jsonl", "nquads"])
def test_an_old_export_with_state_for_an_erased_grain_skips_it(fmt: str) -> None:
    """The erased grain's index state (it was superseded) comes with it in the
    export; the import skips both, and keeps the rest."""
    store = oms.GrainStore(clock=lambda: NOW)
    gone = store.put(oms.Belief(NAME, "likes", "tea", 0.5, created_at=1))
    later = store.supersede(
        gone, {"type": "belief", "subject": NAME, "relation": "likes",
               "object": "coffee", "confidence": 0.6, "created_at": 2},
    )  # fmt: skip
    old = io.BytesIO()
    store.export(old, format=fmt)
    store.erase(gone, reason="request")
    result = store.import_(io.BytesIO(old.getvalue()), format=fmt)
    assert (f"grain {gone[:12]}…", "erased, skipped") in result.skipped
    assert result.added == 0 and gone not in store and later in store
    assert store.status(later).is_current and store.verify_audit().ok


def test_the_edges_of_erasure_are_refused_or_reported() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    home = store.put(
        oms.Belief(NAME, "lives_in", "Lisbon", 0.9, created_at=1, namespace="home")
    )
    held = store.put(
        oms.Belief(
            NAME,
            "owes",
            "tax",
            0.9,
            created_at=2,
            namespace="work",
            invalidation_policy={"mode": "hold"},
        )
    )
    work = store.put(
        oms.Belief(
            "acme",
            "employs",
            "bo",
            0.8,
            created_at=3,
            namespace="work",
            context={"team": [NAME]},
            provenance_chain=[{"source": NAME, "weight": 1.0}],
        )
    )
    # A selector keeps to its namespace; a name inside a list of a map counts.
    in_home = store.subject_report(NAME, namespace="home").grains
    assert [g["address"] for g in in_home] == [home]
    assert {g["address"] for g in store.subject_report(NAME).grains} == {
        home,
        held,
        work,
    }
    for reason in ("", "   "):
        with pytest.raises(oms.SchemaError) as caught:
            store.erase_subject(NAME, reason=reason)
        assert caught.value.path == "reason"
    report = store.erase_subject(NAME, reason="request", namespace="work")
    assert report.erased == [work] and report.held == [held]
    assert not report.complete
    assert report.remaining == [
        REMAIN,
        "1 grains are under a hold and were kept",
    ]
    with pytest.raises(oms.NotFoundError, match="was erased"):
        store.erase(work, reason="again")
    with pytest.raises(oms.NotFoundError):
        store.erase("ab" * 32, reason="never stored")


def test_a_subject_report_carries_bytes_as_base64_and_makes_a_frame() -> None:
    import json

    pandas = pytest.importorskip("pandas")
    store = oms.GrainStore(clock=lambda: NOW)
    address = store.put(
        oms.Belief(
            NAME, "signed", "form", 0.9, created_at=1, context={"scan": b"\x00\x01"}
        )
    )
    report = store.subject_report(NAME)
    (grain,) = json.loads(report.to_json())["grains"]
    assert grain["address"] == address
    assert grain["fields"]["context"]["scan"] == {"$base64": "AAE="}
    frame = report.frame()
    assert isinstance(frame, pandas.DataFrame) and list(frame["address"]) == [address]


def test_a_triple_another_held_belief_asserts_stays_in_the_knowledge() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    ann, works, acme = "http://e/ann", "http://e/worksAt", "http://e/acme"

    def belief(namespace: str, at: int) -> str:
        return store.put(oms.Belief(ann, works, acme, 0.9, created_at=at,
                                    namespace=namespace))  # fmt: skip

    ask = f"ASK {{ <{ann}> <{works}> <{acme}> }}"
    one, two, closed = (
        belief("one", NOW - 3),
        belief("two", NOW - 2),
        belief("x", NOW - 1),
    )
    store.retract(closed, reason="wrong")  # closed: keeps nothing in the knowledge
    store.erase(one, reason="asked")
    assert store.query(ask) is True  # "two" still asserts it
    store.erase(two, reason="asked")
    assert store.query(ask) is False  # the closed one does not bring it back
    # Two believers erased in one write: the triple leaves with them.
    both = [belief("a", NOW - 5), belief("b", NOW - 4)]
    assert store.query(ask) is True
    from oms_rdf.store.erasure import erase

    erase(store, both, reason="asked")
    assert store.query(ask) is False
    assert store.rebuild_current() is None and store.query(ask) is False


# --- what a probe of erasure's promises found -----------------------------------------

PERSON, COMPANY = (
    "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
    "did:web:acme",
)


def consent(withdrawn_from: str | None = None, t: int = 1) -> dict[str, object]:
    fields: dict[str, object] = {"type": "consent", "subject_did": PERSON,
                                 "grantee_did": COMPANY, "scope": ["marketing"],
                                 "is_withdrawal": withdrawn_from is not None, "created_at": t}  # fmt: skip
    if withdrawn_from is not None:
        fields["prior_consent"] = withdrawn_from
    return fields


def dependent(basis: str, t: int = 2, obj: str = "email") -> oms.Belief:
    return oms.Belief(NAME, "prefers", obj, 0.8, created_at=t, processing_basis=basis,
                      invalidation_policy={"mode": "consent_cascade"})  # fmt: skip


@pytest.mark.parametrize("fmt", ["jsonl", "mg", "trig"])
def test_an_imported_withdrawal_is_honoured(fmt: str) -> None:
    """Spec §5 Consent: a withdrawal is honoured at once, however it arrives: here
    from another store that holds the withdrawal alone."""
    target = oms.GrainStore(clock=lambda: NOW)
    grant = target.put(consent())
    pending = target.put(dependent(grant))
    source = oms.GrainStore(clock=lambda: NOW)
    source.put(consent(withdrawn_from=grant, t=3))
    out = io.BytesIO()
    source.export(out, format=fmt)
    out.seek(0)
    target.import_(out, format=fmt)
    assert target.pending_erasure() == [pending]


def test_a_dependent_put_after_the_withdrawal_is_pending_from_the_start() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    grant = store.put(consent())
    store.put(consent(withdrawn_from=grant, t=3))
    late = store.put(dependent(grant, t=4))
    many = store.put_many([dependent(grant, t=5, obj="post")])
    assert sorted(store.pending_erasure()) == sorted([late, *many])
    other = store.put(dependent(store.put(consent(t=6)), t=7, obj="phone"))
    assert other not in store.pending_erasure()  # another basis, not withdrawn


@pytest.mark.parametrize("fmt", ["jsonl", "mg", "trig", "nquads"])
def test_an_imported_dependent_of_a_withdrawn_consent_is_pending(fmt: str) -> None:
    """The other way round: the store holds the withdrawal, and the import
    brings a grain that depends on the withdrawn consent, as a put would."""
    source = oms.GrainStore(clock=lambda: NOW)
    grant = source.put(consent())
    late = source.put(dependent(grant, t=4))
    out = io.BytesIO()
    source.export(out, format=fmt)
    target = oms.GrainStore(clock=lambda: NOW)
    target.put(consent())
    target.put(consent(withdrawn_from=grant, t=3))
    target.import_(io.BytesIO(out.getvalue()), format=fmt)
    assert target.pending_erasure() == [late]
    assert target.process_erasures(now=NOW + 10**12, sla_days=0).erased == [late]


def test_a_withdrawal_and_its_dependent_in_one_import_mark_it_once() -> None:
    granted, withdrawn = (
        oms.GrainStore(clock=lambda: NOW),
        oms.GrainStore(clock=lambda: NOW),
    )
    grant = granted.put(consent())
    late = granted.put(dependent(grant, t=4))
    withdrawn.put(consent(withdrawn_from=grant, t=3))
    both = b""
    for source in (granted, withdrawn):
        out = io.BytesIO()
        source.export(out, format="jsonl")
        both += out.getvalue()
    ticks = iter(range(NOW, NOW + 10**6))  # each mark would have its own time
    target = oms.GrainStore(clock=lambda: next(ticks))
    target.import_(io.BytesIO(both), format="jsonl")
    assert target.pending_erasure() == [late]
    marks = target.query(
        "SELECT ?t WHERE { GRAPH oms:index { ?g oms:pendingErasure ?t } }", grains=True
    )
    assert len(list(marks)) == 1


@pytest.mark.parametrize("sla", [float("nan"), float("inf"), -1, 45])
def test_an_sla_past_a_month_is_refused(sla: float) -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    with pytest.raises(oms.SchemaError) as info:
        store.process_erasures(sla_days=sla)
    assert info.value.code == oms.ErrorCode.RANGE


def test_session_and_run_ids_name_a_person_in_any_unicode_form() -> None:
    import unicodedata

    store = oms.GrainStore(clock=lambda: NOW)
    session = store.put(
        {"type": "event", "content": "hi", "created_at": 1, "session_id": NAME}
    )
    run = store.put(
        {"type": "event", "content": "bye", "created_at": 2, "run_id": NAME}
    )
    named = store.put(oms.Belief(NAME, "likes", "tea", 0.9, created_at=3))
    decomposed = unicodedata.normalize("NFD", NAME)
    assert decomposed != NAME
    found = sorted(g["address"] for g in store.subject_report(decomposed).grains)
    assert found == sorted([session, run, named])
    assert sorted(store.erase_subject(decomposed, reason="request").erased) == found
    assert NAME not in plain_dump(store)


def test_an_old_backup_with_a_dispute_of_an_erased_grain_imports() -> None:
    store = oms.GrainStore(clock=lambda: NOW, functional_relations={"ceo"})
    erased = store.put(oms.Belief("acme", "ceo", NAME, 0.9, created_at=1))
    with pytest.warns(oms.ConflictWarning):
        kept = store.put(oms.Belief("acme", "ceo", "Bob", 0.9, created_at=2))
    backup = io.BytesIO()
    store.export(backup, format="jsonl")
    store.erase(erased, reason="request")
    backup.seek(0)
    report = store.import_(backup, format="jsonl")
    assert report.added == 0 and erased not in store and kept in store


@pytest.mark.parametrize("others", [False, True])
def test_adopting_an_erased_belief_again_skips_it(others: bool) -> None:
    """The same file adopted again after an erasure (the same second: the same
    grain) brings nothing back, into a store without grains (adopted in one
    read) or with some."""
    now = 1_700_000_000_000
    store = oms.GrainStore(clock=lambda: now)
    if others:
        store.put(oms.Belief("bob", "likes", "tea", 0.9, created_at=now - 5))
    source = b'<http://e/a> <http://e/p> "x" .\n'
    store.import_(io.BytesIO(source), format="turtle")
    (adopted,) = store.beliefs("http://e/a")
    store.erase(adopted.address, reason="asked")
    report = store.import_(io.BytesIO(source), format="turtle")
    assert report.added == 0
    assert report.skipped == [(f"grain {adopted.address[:12]}…", "erased, skipped")]
    assert store.beliefs("http://e/a") == []
    assert adopted.address not in store
    with pytest.raises(oms.PolicyError):  # as a put of the same grain is refused
        store.put(adopted)


@pytest.mark.parametrize("fmt", ["nquads", "trig", "jsonld"])
def test_a_backup_merged_with_a_later_one_keeps_the_erased_grain_out(fmt: str) -> None:
    """Two exports joined line by line (``sort -u``), the later one carrying the
    tombstone: the file holds the grain and its tombstone, and the tombstone wins."""
    store = oms.GrainStore(clock=lambda: NOW)
    kept = store.put(oms.Belief("bob", "likes", "tea", 0.5, created_at=1))
    gone = store.put(oms.Belief(NAME, "likes", "tea", 0.5, created_at=1))
    before = nquads(store)
    store.erase(gone, reason="request")
    lines = dict.fromkeys([*before.splitlines(True), *nquads(store).splitlines(True)])
    merged = oms.GrainStore(clock=lambda: NOW)
    merged.import_(io.BytesIO(b"".join(lines)), format="nquads")
    out = io.BytesIO()
    merged.export(out, format=fmt)  # and it travels on in every grain format
    replica = oms.GrainStore(clock=lambda: NOW)
    result = replica.import_(io.BytesIO(out.getvalue()), format=fmt)
    for target in (merged, replica):
        assert kept in target and gone not in target and NAME not in plain_dump(target)
        assert target.verify_audit().ok
    assert result.skipped == [] and replica.import_(
        io.BytesIO(before), format="nquads"
    ).skipped == [(f"grain {gone[:12]}…", "erased, skipped")]


_ERASED_AT = "<https://w3id.org/oms-rdf/ns#erasedAt>"
_INDEX = "<https://w3id.org/oms-rdf/ns#index>"
_XSD = "http://www.w3.org/2001/XMLSchema#"


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ('"hello"', "ERR_CORRUPT"),
        ("<http://example.org/x>", "ERR_CORRUPT"),
        (f'"20000000000000000000000"^^<{_XSD}integer>', "ERR_CORRUPT"),
        (f'"99999-01-01T00:00:00Z"^^<{_XSD}dateTime>', "ERR_RANGE"),
    ],
)
def test_a_tombstone_of_another_kind_is_refused_with_its_line(
    value: str, code: str
) -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    store.put(oms.Belief("bob", "likes", "tea", 0.5, created_at=1))
    absent = oms.Belief(NAME, "likes", "tea", 0.5, created_at=1).address
    tomb = f"<nih:sha-256;{absent}> {_ERASED_AT} {value} {_INDEX} .\n".encode()
    source = nquads(store) + tomb
    target = oms.GrainStore(clock=lambda: NOW)
    with pytest.raises(oms.OmsError) as info:
        target.import_(io.BytesIO(source), format="nquads")
    lines = source.count(b"\n")
    assert info.value.code == code and info.value.path == f"line {lines}"
    assert len(target) == 0


def test_a_tombstone_past_year_9999_is_refused_in_json_lines() -> None:
    late = 253_402_300_800_000  # 10000-01-01
    line = b'{"$erased": "' + b"c" * 64 + b'", "at": ' + str(late).encode() + b"}\n"
    with pytest.raises(oms.OmsError) as info:
        oms.GrainStore().import_(io.BytesIO(line), format="jsonl")
    assert info.value.code == "ERR_RANGE"


def test_only_a_consent_grain_withdraws_a_consent() -> None:
    """A withdrawal is a Consent grain's (spec §5 Consent): a plain triple in
    the knowledge, or a belief's unknown keys of the same names, withdraw
    nothing, whatever namespace wrote them."""
    store = oms.GrainStore(clock=lambda: NOW)
    grant = store.put(consent())
    field = "https://w3id.org/oms-rdf/field/"
    store.update(
        f'INSERT DATA {{ <urn:x> <{field}prior_consent> "{grant}" . '
        f"<urn:x> <{field}is_withdrawal> true }}",
        namespace="elsewhere",
    )
    store.put({"type": "belief", "subject": "x", "relation": "r", "object": "o",
               "confidence": 0.5, "created_at": 2, "prior_consent": grant,
               "is_withdrawal": True})  # fmt: skip
    late = store.put(dependent(grant, t=4))
    many = store.put_many([dependent(grant, t=5, obj="post")])
    assert store.pending_erasure() == []
    assert store.process_erasures(now=NOW + 10**12, sla_days=0).erased == []
    assert late in store and many[0] in store
    store.put(consent(withdrawn_from=grant, t=6))  # the real one
    assert sorted(store.pending_erasure()) == sorted([late, *many])


def test_a_withdrawal_is_the_consents_own() -> None:
    """Honouring a withdrawal erases, in every namespace, what the consent
    allowed: only its data subject may take back what it gave its grantee.
    Another party's is refused by put, put_many and imports, and withdraws
    nothing."""
    store = oms.GrainStore(clock=lambda: NOW)
    grant = store.put(consent())
    pending = store.put(dependent(grant))
    before = nquads(store)
    for party in ("subject_did", "grantee_did"):
        forged = {**consent(withdrawn_from=grant, t=3), party: "did:key:z6Mkmallory",
                  "namespace": "elsewhere"}  # fmt: skip
        for write in (store.put, lambda g: store.put_many([g])):
            with pytest.raises(oms.PolicyError, match="its consent's own") as caught:
                write(forged)
            assert caught.value.code == "ERR_INVALIDATION_DENIED"
        source = oms.GrainStore(clock=lambda: NOW)
        source.put(forged)
        out = io.BytesIO()
        source.export(out, format="jsonl")
        with pytest.raises(oms.PolicyError, match="its consent's own"):
            store.import_(io.BytesIO(out.getvalue()), format="jsonl")
    assert nquads(store) == before and store.pending_erasure() == []
    # The subject's own, from any namespace, is honoured at once.
    store.put({**consent(withdrawn_from=grant, t=3), "namespace": "elsewhere"})
    assert store.pending_erasure() == [pending]


def test_a_consent_its_withdrawal_and_a_dependent_in_one_put_many() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    grant = oms.Grain.from_dict(consent())
    late = dependent(grant.address, t=4)
    store.put_many([grant, oms.Grain.from_dict(consent(withdrawn_from=grant.address,
                                                       t=3)), late])  # fmt: skip
    assert store.pending_erasure() == [late.address]


@pytest.mark.parametrize("way", ["put", "import"])
def test_a_withdrawal_that_came_before_its_consent_is_honoured_when_it_comes(
    way: str,
) -> None:
    """Whatever the order they arrive in, a consent's own withdrawal marks
    every grain that names the consent, those stored before it too."""
    grant = oms.Grain.from_dict(consent())
    store = oms.GrainStore(clock=lambda: NOW)
    early = store.put(dependent(grant.address, t=2))
    store.put(consent(withdrawn_from=grant.address, t=3))
    assert store.pending_erasure() == []  # whose consent it is, nothing says yet
    if way == "put":
        store.put(grant)
    else:
        source = oms.GrainStore(clock=lambda: NOW)
        source.put(grant)
        out = io.BytesIO()
        source.export(out, format="jsonl")
        store.import_(io.BytesIO(out.getvalue()), format="jsonl")
    late = store.put(dependent(grant.address, t=4, obj="post"))
    assert sorted(store.pending_erasure()) == sorted([early, late])


def test_another_partys_withdrawal_before_the_consent_withdraws_nothing() -> None:
    """Stored before the consent it names, it could not be refused; it then
    withdraws nothing, and the store's own backup restores."""
    grant = oms.Grain.from_dict(consent())
    store = oms.GrainStore(clock=lambda: NOW)
    pending = store.put(dependent(grant.address, t=2))
    store.put({**consent(withdrawn_from=grant.address, t=3),
               "subject_did": "did:key:z6Mkmallory"})  # fmt: skip
    store.put(grant)
    assert store.pending_erasure() == [] and pending in store
    for fmt in ("jsonl", "mg", "trig", "nquads"):
        out = io.BytesIO()
        store.export(out, format=fmt)
        restored = oms.GrainStore(clock=lambda: NOW)
        restored.import_(io.BytesIO(out.getvalue()), format=fmt)
        assert len(restored) == len(store) and restored.pending_erasure() == []


def test_a_transaction_holds_withdrawals_to_the_consent_it_made() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    grant = oms.Grain.from_dict(consent())
    early = store.put(dependent(grant.address, t=2))
    with pytest.raises(oms.PolicyError, match="its consent's own"):
        with store.transaction() as tx:
            tx.put(grant)
            tx.put({**consent(withdrawn_from=grant.address, t=3),
                    "grantee_did": "did:key:z6Mkmallory"})  # fmt: skip
    assert grant.address not in store
    with store.transaction() as tx:
        tx.put(grant)
        tx.put(consent(withdrawn_from=grant.address, t=3))
    assert store.pending_erasure() == [early]
