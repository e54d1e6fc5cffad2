"""Trust and revision: signature policies, evidence, entrenchment, conflicts, consent."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf.codec import signing
from oms_rdf.errors import ConflictWarning, ErrorCode
from oms_rdf.store import GrainStore
from oms_rdf.store.revision import LOWER, UPPER, SprtState, Tier

T0 = 1_700_000_000_000
DAY = 86_400_000
ALICE, BOB, CAROL, MALLORY = (
    signing.generate_key(seed=bytes([i]) * 32) for i in range(1, 5)
)


def snapshot(store: GrainStore) -> set[str]:
    return {str(q) for q in store.backend.quads()}


def refused(
    store: GrainStore, action: Callable[[], object], fragment: str | None = None
) -> oms.OmsError:
    before = snapshot(store)
    with pytest.raises(oms.OmsError, match=fragment) as info:
        action()
    assert snapshot(store) == before
    return info.value


def belief(obj: str, t: int = T0, **kw: Any) -> dict[str, Any]:
    return {"type": "belief", "subject": "agent", "relation": "rule", "object": obj,
            "confidence": 0.8, "created_at": t, **kw}  # fmt: skip


# --- delegated and quorum -----------------------------------------------------------


def test_delegated_accepts_the_authorized_signer_only() -> None:
    store = GrainStore(clock=lambda: T0 + 10 * DAY)
    old = store.put(
        belief(
            "a", invalidation_policy={"mode": "delegated", "authorized": [ALICE.did]}
        )
    )
    error = refused(
        store, lambda: store.supersede(old, belief("b", T0 + DAY)), "COSE-signed"
    )
    assert error.code == ErrorCode.INVALIDATION_DENIED
    refused(
        store, lambda: store.supersede(old, belief("b", T0 + DAY), signer=BOB), BOB.did
    )
    new = store.supersede(old, belief("b", T0 + DAY), signer=ALICE)
    assert store.status(new).signed_by == ALICE.did
    assert store.get(new).signed and store.status(old).superseded_by == new


def test_delegated_accepts_a_signed_envelope() -> None:
    store = GrainStore(clock=lambda: T0 + 10 * DAY)
    old = store.put(
        belief(
            "a", invalidation_policy={"mode": "delegated", "authorized": [ALICE.did]}
        )
    )
    grain = oms.Grain.from_dict(
        {**belief("b", T0 + DAY), "derived_from": [old]}, signed=True
    )
    new = store.supersede(old, signing.sign(grain.blob, ALICE))
    assert new == grain.address


def test_delegated_refuses_retraction_and_contradiction() -> None:
    store = GrainStore(clock=lambda: T0 + 10 * DAY)
    old = store.put(
        belief(
            "a", invalidation_policy={"mode": "delegated", "authorized": [ALICE.did]}
        )
    )
    refused(store, lambda: store.retract(old, reason="x", by=ALICE.did))
    refused(store, lambda: store.contradict(old, by=ALICE.did))


def quorum_store(threshold: int = 2) -> tuple[GrainStore, str]:
    store = GrainStore(clock=lambda: T0 + 10 * DAY)
    policy = {
        "mode": "quorum",
        "authorized": [ALICE.did, BOB.did, CAROL.did],
        "threshold": threshold,
    }
    old = store.put(belief("a", invalidation_policy=policy, author_did=CAROL.did))
    return store, old


def test_quorum_needs_threshold_distinct_authorized_signers() -> None:
    store, old = quorum_store()
    new = belief("b", T0 + DAY)
    new_full = {**new, "derived_from": [old]}

    def auth(*keys: signing.SigningKey) -> list[bytes]:
        return [signing.sign_supersession(old, new_full, k) for k in keys]

    refused(
        store, lambda: store.supersede(old, new, auth=auth(ALICE)), "needs 2 signatures"
    )
    refused(
        store, lambda: store.supersede(old, new, auth=auth(ALICE, ALICE)), "1 valid"
    )
    refused(
        store, lambda: store.supersede(old, new, auth=auth(ALICE, MALLORY)), "1 valid"
    )
    # A signature over another supersession does not count.
    other = signing.sign_supersession(old, {**new_full, "object": "c"}, BOB)
    refused(
        store, lambda: store.supersede(old, new, auth=[*auth(ALICE), other]), "1 valid"
    )
    refused(
        store,
        lambda: store.supersede(old, new, auth=[*auth(ALICE), b"junk"]),
        "1 valid",
    )
    address = store.supersede(old, new, auth=auth(ALICE, BOB))
    assert len(store.get(address)["supersession_auth"]) == 2


def test_quorum_key_separation() -> None:
    # Carol wrote the protected grain: her own signature does not count (spec §8.7).
    store, old = quorum_store()
    new = belief("b", T0 + DAY)
    full = {**new, "derived_from": [old]}
    auth = [signing.sign_supersession(old, full, k) for k in (ALICE, CAROL)]
    refused(store, lambda: store.supersede(old, new, auth=auth), "key separation")


def test_locked_names_key_separation() -> None:
    store = GrainStore()
    old = store.put(
        belief("a", invalidation_policy={"mode": "locked"}, author_did=ALICE.did)
    )
    refused(
        store,
        lambda: store.supersede(old, belief("b", T0 + DAY), by=ALICE.did),
        "own author",
    )


# --- evidence ------------------------------------------------------------------------


def test_sprt_worked_example_exactly() -> None:
    store = GrainStore(clock=lambda: T0 + DAY)
    g = store.put(oms.Belief("x", "is", "y", 0.7, created_at=T0))
    results = [store.evidence(g, "refuting", 0.85, note=f"check {i}") for i in range(3)]
    assert [r.status for r in results] == ["accumulating", "demoted", "demoted"]
    assert [r.changed for r in results] == [False, True, False]
    assert round(results[-1].log_ratio, 4) == -5.2038
    assert results[1].effective_confidence == pytest.approx(0.5)  # 0.7 - 0.20, once
    assert results[2].effective_confidence == pytest.approx(0.5)  # no double demotion
    assert (round(UPPER, 4), round(LOWER, 4)) == (2.8904, -2.2513)
    assert store.get(g)["confidence"] == 0.7  # the blob never changes
    events = list(store.query(
        "PREFIX oms: <https://w3id.org/oms-rdf/ns#> SELECT ?g ?e ?n WHERE { GRAPH oms:index { ?e oms:evidenceFor ?g ; oms:note ?n } }",
        g=oms.rdf.mapping.grain_iri(g), grains=True,
    ))  # fmt: skip
    assert sorted(e["n"].value for e in events) == ["check 0", "check 1", "check 2"]


def test_promotion_boundary_and_cap() -> None:
    state = SprtState()
    # ln(0.9/0.1) = 2.1972 per supporting 0.9: promoted on the second (4.39 >= 2.89).
    first, second = (
        state.observe("supporting", 0.9),
        state.observe("supporting", 0.9).observe("supporting", 0.9),
    )
    assert first.status == "accumulating" and second.status == "promoted"
    assert second.effective(0.9) == 0.95 and second.effective(0.5) == pytest.approx(0.6)
    assert SprtState().observe("refuting", 1.0).log_ratio == pytest.approx(
        -math.log(9)
    )  # clamped to 0.9


def test_promoted_then_demoted_enters_each_state_once() -> None:
    state = SprtState()
    for _ in range(2):
        state = state.observe("supporting", 0.9)
    assert state.status == "promoted"
    for _ in range(5):
        state = state.observe("refuting", 0.9)
    assert state.status == "demoted" and state.entered == {"promoted", "demoted"}
    for _ in range(10):
        state = state.observe("supporting", 0.9)
    assert state.status == "demoted"  # promoted was entered already


@pytest.mark.parametrize(
    ("kind", "strength"),
    [("supporting", 0.3), ("refuting", 0.49), ("supporting", 1.5), ("maybe", 0.8)],
)
def test_weak_or_bad_evidence_is_refused(kind: str, strength: float) -> None:
    store = GrainStore()
    g = store.put(oms.Belief("x", "is", "y", 0.7, created_at=T0))
    refused(store, lambda: store.evidence(g, kind, strength))


def test_evidence_on_superseded_or_retracted_is_refused() -> None:
    store = GrainStore(clock=lambda: T0 + 10 * DAY)
    old = store.put(oms.Belief("x", "is", "y", 0.7, created_at=T0))
    store.supersede(old, belief("z", T0 + DAY, subject="x", relation="is"))
    error = refused(store, lambda: store.evidence(old, "supporting", 0.9), "superseded")
    assert error.code == ErrorCode.CONFLICT
    gone = store.put(oms.Belief("q", "is", "r", 0.7, created_at=T0))
    store.retract(gone, reason="wrong")
    refused(store, lambda: store.evidence(gone, "supporting", 0.9), "retracted")
    # What no test weighs is told so first, whatever the grain's state.
    bad = refused(store, lambda: store.evidence(old, "maybe", 0.9), "'maybe'")
    assert bad.code == ErrorCode.SCHEMA


def test_beliefs_rank_by_effective_confidence() -> None:
    store = GrainStore(clock=lambda: T0 + DAY)
    high = store.put(oms.Belief("s", "likes", "tea", 0.8, created_at=T0))
    low = store.put(oms.Belief("s", "likes", "coffee", 0.7, created_at=T0))
    assert [g.address for g in store.beliefs("s")] == [high, low]
    for _ in range(2):
        store.evidence(high, "refuting", 0.9)
    assert store.effective_confidence(high) == pytest.approx(0.6)
    assert [g.address for g in store.beliefs("s")] == [low, high]


# --- entrenchment ----------------------------------------------------------------------

SOURCES = {
    Tier.AXIOM: "axiomatic",
    Tier.USER_STATED: "user_explicit",
    Tier.SYSTEM_INFERRED: "agent_inferred",
}


@pytest.mark.parametrize("old_tier", list(Tier))
@pytest.mark.parametrize("new_tier", list(Tier))
def test_entrenchment_matrix(old_tier: Tier, new_tier: Tier) -> None:
    store = GrainStore(clock=lambda: T0 + 10 * DAY)
    old = store.put(belief("a", source_type=SOURCES[old_tier]))
    new = belief("b", T0 + DAY, source_type=SOURCES[new_tier])
    if new_tier >= old_tier:
        assert store.status(store.revise(old, new)).status == "active"
        assert store.status(old).status == "superseded"
    else:
        error = refused(
            store, lambda: store.revise(old, new), "lower tier never replaces"
        )
        assert error.code == ErrorCode.INVALIDATION_DENIED


def test_locked_policy_counts_as_axiom_and_other_sources_are_configurable() -> None:
    store = GrainStore()
    assert (
        store.entrenchment.tier({"invalidation_policy": {"mode": "locked"}})
        == Tier.AXIOM
    )
    assert store.entrenchment.tier({"source_type": "sensor"}) == Tier.SYSTEM_INFERRED
    custom = oms.store.revision.Entrenchment(tiers={"sensor": Tier.USER_STATED})
    assert custom.tier({"source_type": "sensor"}) == Tier.USER_STATED


def test_force_by_an_authorized_did_is_audited() -> None:
    store = GrainStore(clock=lambda: T0 + 10 * DAY, authorized=[ALICE.did])
    old = store.put(belief("a", source_type="user_explicit"))
    new = belief("b", T0 + DAY, source_type="llm_generated")
    refused(store, lambda: store.revise(old, new, force=True, by=BOB.did), "authorized")
    address = store.revise(old, new, force=True, by=ALICE.did)
    rows = list(store.query(
        "PREFIX oms: <https://w3id.org/oms-rdf/ns#> SELECT ?r WHERE { GRAPH oms:audit { ?e oms:operation \"revise(force)\" ; oms:needsReview ?r } }",
        grains=True,
    ))  # fmt: skip
    assert len(rows) == 1 and "USER_STATED -> SYSTEM_INFERRED" in rows[0]["r"].value
    assert store.status(old).superseded_by == address
    # The supersession and its audit are one write: one event, naming both.
    events = store.query("PREFIX oms: <https://w3id.org/oms-rdf/ns#> SELECT ?e WHERE "
                         "{ GRAPH oms:audit { ?e oms:result ?r } }", grains=True)  # fmt: skip
    assert len(list(events)) == 1


# --- functional relations ----------------------------------------------------------------


def job(
    company: str, t: int, source: str = "user_explicit", **kw: Any
) -> dict[str, Any]:
    return {"type": "belief", "subject": "alice", "relation": "works_at", "object": company,
            "confidence": 0.9, "created_at": t, "source_type": source, **kw}  # fmt: skip


def test_conflicts_are_disputed_and_reported() -> None:
    store = GrainStore(clock=lambda: T0 + 10 * DAY, functional_relations=["works_at"])
    a = store.put(job("Acme", T0))
    with pytest.warns(ConflictWarning, match="Initech"):
        b = store.put(job("Initech", T0 + DAY))
    assert {store.status(a).verification, store.status(b).verification} == {"disputed"}
    assert store.status(a).conflicts_with == (b,) and store.conflicts() == [
        tuple(sorted((a, b)))
    ]
    assert sorted(g["object"] for g in store.beliefs("alice")) == ["Acme", "Initech"]


def test_auto_revise_supersedes_when_entrenchment_allows() -> None:
    store = GrainStore(
        clock=lambda: T0 + 10 * DAY, functional_relations=["works_at"], auto_revise=True
    )
    a = store.put(job("Acme", T0, "agent_inferred"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = store.put(job("Initech", T0 + DAY, "user_explicit"))
    assert store.status(a).superseded_by == b
    assert [g["object"] for g in store.beliefs("alice")] == ["Initech"]


@pytest.mark.parametrize("auto_revise", [False, True])
def test_a_grain_of_another_type_is_no_rival_of_a_belief(auto_revise: bool) -> None:
    """An event with the same subject and relation says what happened, not
    what is held: a belief neither disputes nor supersedes it."""
    store = GrainStore(clock=lambda: T0 + 10 * DAY, functional_relations=["works_at"],
                       auto_revise=auto_revise)  # fmt: skip
    event = store.put({"type": "event", "content": "chat log", "subject": "alice",
                       "relation": "works_at", "object": "Evil Corp", "created_at": T0})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConflictWarning
        b = store.put(job("Acme", T0 + DAY))
        (c,) = store.put_many([{**job("Acme", T0 + 2 * DAY), "subject": "bob"}])
        store.put({"type": "event", "content": "chat", "subject": "bob",
                   "relation": "works_at", "object": "Hooli", "created_at": T0})  # fmt: skip
    assert store.status(event).status == "active" and store.conflicts() == []
    assert store.status(event).verification == "unverified"
    assert [g.address for g in store.history(b)] == [b]
    assert store.status(c).verification == "unverified"


def test_auto_revise_disputes_a_lower_tier() -> None:
    store = GrainStore(
        clock=lambda: T0 + 10 * DAY, functional_relations=["works_at"], auto_revise=True
    )
    a = store.put(job("Acme", T0, "user_explicit"))
    with pytest.warns(
        ConflictWarning, match="auto-revision refused: entrenchment tier"
    ):
        b = store.put(job("Initech", T0 + DAY, "llm_generated"))
    assert (
        store.status(a).status == "active"
        and store.status(b).verification == "disputed"
    )
    assert "auto-revision refused: entrenchment tier" in conflict_reason(store, b)


def conflict_reason(store: GrainStore, address: str) -> str:
    """The reason of the audit event that recorded a dispute about ``address``."""
    [reason] = [
        str(row["reason"].value)
        for row in store.query(
            "PREFIX oms: <https://w3id.org/oms-rdf/ns#> SELECT ?t ?reason WHERE { GRAPH "
            "oms:audit { ?e oms:operation 'conflict' ; oms:target ?t ; oms:reason ?reason } }",
            grains=True,
        )
        if row["t"] == ox.NamedNode(f"nih:sha-256;{address}")
    ]
    return reason


def test_auto_revise_records_why_a_protected_rival_stays() -> None:
    store = GrainStore(
        clock=lambda: T0 + 10 * DAY, functional_relations=["works_at"], auto_revise=True
    )
    # Same tier, but under a hold: supersede refuses, so the dispute says why.
    hold = {"mode": "hold", "authorized_by": "legal"}
    a = store.put(job("Acme", T0, "user_explicit", invalidation_policy=hold))
    with pytest.warns(ConflictWarning, match="ERR_INVALIDATION_DENIED"):
        b = store.put(job("Initech", T0 + DAY, "user_explicit"))
    assert store.status(a).is_current and store.status(b).verification == "disputed"
    assert "auto-revision refused: ERR_INVALIDATION_DENIED" in conflict_reason(store, b)


def test_auto_revise_needs_the_callers_justification_for_a_soft_locked_rival() -> None:
    store = GrainStore(
        clock=lambda: T0 + 10 * DAY, functional_relations=["works_at"], auto_revise=True
    )
    soft = {"mode": "soft_locked"}
    a = store.put(job("Acme", T0, "user_explicit", invalidation_policy=soft))
    with pytest.warns(ConflictWarning, match="soft_locked"):
        b = store.put(job("Initech", T0 + DAY, "user_explicit"))
    assert store.status(a).is_current and store.status(b).verification == "disputed"
    assert "auto-revision refused: ERR_INVALIDATION_DENIED" in conflict_reason(store, b)
    # The caller's justification lets the revision through, recorded for review.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hr = {"namespace": "hr", "invalidation_policy": soft}
        c = store.put(job("Globex", T0 + 2 * DAY, "user_explicit", **hr))
        d = store.put(job("Hooli", T0 + 3 * DAY, "user_explicit", namespace="hr"),
                      justification="Alice told us she moved")  # fmt: skip
    assert store.status(c).superseded_by == d
    assert store.status(c).reason == "Alice told us she moved"
    # So does a justification the new grain carries itself.
    e = store.put(job("Umbrella", T0 + 4 * DAY, "user_explicit", namespace="ops",
                      invalidation_policy=soft))  # fmt: skip
    f = store.put(job("Wayne", T0 + 5 * DAY, "user_explicit", namespace="ops",
                      supersession_justification="the contract changed"))  # fmt: skip
    assert store.status(e).superseded_by == f


def test_forced_revision_does_not_justify_a_soft_locked_grain() -> None:
    store = GrainStore(clock=lambda: T0 + 10 * DAY, authorized=[ALICE.did])
    old = store.put(belief("a", invalidation_policy={"mode": "soft_locked"}))
    new = belief("b", T0 + DAY)
    error = refused(
        store, lambda: store.revise(old, new, force=True, by=ALICE.did), "soft_locked"
    )
    assert error.code == ErrorCode.INVALIDATION_DENIED
    address = store.revise(old, new, force=True, by=ALICE.did, justification="checked")
    assert store.get(address)["supersession_justification"] == "checked"


def test_past_jobs_do_not_conflict() -> None:
    store = GrainStore(clock=lambda: T0 + 10 * DAY, functional_relations=["works_at"])
    store.put(job("Acme", T0, valid_from=T0 - 100 * DAY, valid_to=T0 - DAY))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store.put(job("Initech", T0, valid_from=T0))
    assert store.conflicts() == []


def test_put_many_marks_conflicts_in_the_batch() -> None:
    store = GrainStore(clock=lambda: T0 + 10 * DAY, functional_relations=["works_at"])
    with pytest.warns(ConflictWarning):
        a, b = store.put_many([job("Acme", T0), job("Initech", T0 + 1)])
    assert store.status(a).verification == store.status(b).verification == "disputed"


# --- consent cascade, lineage, listing ----------------------------------------------------


def test_consent_withdrawal_marks_cascading_dependents() -> None:
    store = GrainStore(clock=lambda: T0 + 10 * DAY)
    consent = store.put({"type": "consent", "subject_did": ALICE.did, "grantee_did": BOB.did,
                         "scope": ["store"], "is_withdrawal": False, "created_at": T0})  # fmt: skip
    cascading = store.put(
        belief(
            "a",
            processing_basis=consent,
            invalidation_policy={"mode": "consent_cascade"},
        )
    )
    held = store.put(
        belief("b", processing_basis=consent, invalidation_policy={"mode": "hold"})
    )
    plain = store.put(belief("c", processing_basis=consent))
    assert store.pending_erasure() == []
    store.put({"type": "consent", "subject_did": ALICE.did, "grantee_did": BOB.did, "scope": ["store"],
               "is_withdrawal": True, "prior_consent": consent, "created_at": T0 + DAY})  # fmt: skip
    assert store.pending_erasure() == [cascading]
    assert store.status(cascading).pending_erasure == T0 + 10 * DAY
    assert (
        store.status(held).pending_erasure is None
        and store.status(plain).pending_erasure is None
    )


def test_ancestors_and_status_listing() -> None:
    store = GrainStore(clock=lambda: T0 + 10 * DAY)
    a = store.put(belief("v1"))
    b = store.supersede(a, belief("v2", T0 + DAY))
    c = store.supersede(b, belief("v3", T0 + 2 * DAY))
    gone = store.put(belief("x", subject="other"))
    store.retract(gone, reason="no")
    assert [g.address for g in store.ancestors(c)] == [a, b]
    assert store.ancestors(a) == []
    assert [g.address for g in store.beliefs_by_status("active")] == [c]
    assert sorted(
        g.address for g in store.beliefs_by_status("superseded", "agent")
    ) == sorted([a, b])
    assert [g.address for g in store.beliefs_by_status("retracted")] == [gone]
    assert [g.address for g in store.beliefs_by_status("retracted", "agent")] == []
    with pytest.raises(oms.SchemaError) as info:  # a bad argument: also a ValueError
        store.beliefs_by_status("archived")
    assert (
        isinstance(info.value, ValueError) and info.value.code == oms.ErrorCode.SCHEMA
    )
    assert info.value.path == "status" and "'archived'" in str(info.value)


def test_ancestors_of_a_merge_hold_every_predecessor() -> None:
    store = GrainStore(clock=lambda: T0 + 10 * DAY)
    a1 = store.put(belief("a1"))
    a2 = store.supersede(a1, belief("a2", T0 + DAY))
    b = store.put(belief("b", T0 + 2 * DAY, subject="other"))
    merged = store.supersede(a2, belief("m", T0 + 3 * DAY, derived_from=[a2, b]))
    store.supersede(b, store.get(merged))
    last = store.supersede(merged, belief("n", T0 + 4 * DAY))
    assert [g.address for g in store.ancestors(merged)] == [a1, a2, b]
    assert [g.address for g in store.ancestors(last)] == [a1, a2, b, merged]
    assert store.status(b).superseded_by == merged


def test_disclosed_views_are_not_stored() -> None:
    grain = oms.Belief("alice", "r", "o", 0.5, created_at=0, user_id="u")
    view = signing.disclose(grain.fields, grain.address, ["user_id"])
    with pytest.raises(oms.SchemaError):
        GrainStore().put(view)


def test_evidence_is_recorded_but_moves_no_locked_grain() -> None:
    """An axiom keeps its stated confidence; the observations stay on record."""
    store = GrainStore(clock=lambda: T0)
    locked = store.put(job("Acme", T0, invalidation_policy={"mode": "locked"}))
    free = store.put({**job("Acme", T0), "subject": "bob"})
    for address in (locked, free):
        for _ in range(6):
            store.evidence(address, "refuting", 0.9, at=T0)
    assert store.status(free).sprt_status == "demoted"
    assert store.status(free).effective_confidence < 0.9
    state = store.status(locked)
    assert state.sprt_status == "demoted" and len(store.evidence_log(locked)) == 6
    assert state.effective_confidence == 0.9  # its stated confidence
    assert [g.address for g in store.beliefs("alice")] == [locked]


# --- what the probes of the documented promises found --------------------------------


@pytest.mark.parametrize("closed", ["superseded", "retracted"])
def test_a_stored_successor_must_be_current(closed: str) -> None:
    """A closed grain as a successor would leave nothing current, or close a
    circle of supersessions (history then has no first version)."""
    store = GrainStore(clock=lambda: T0 + DAY)
    a = store.put(belief("a", T0))
    b = store.supersede(a, belief("b", T0 + 1))
    if closed == "superseded":  # a is superseded by b: b by a would be a circle
        error = refused(store, lambda: store.supersede(b, store.get(a)), "successor")
    else:
        c = store.put(belief("c", T0 + 2, subject="other"))
        store.retract(c, reason="wrong")
        error = refused(store, lambda: store.supersede(b, store.get(c)), "successor")
    assert error.code == ErrorCode.CONFLICT
    assert [g.address for g in store.history(a)][:2] == [a, b]


def test_the_evidence_log_orders_one_millisecond_as_it_was_recorded() -> None:
    """With the clock still: support, support, then four refutations. After the
    second support the test has promoted the grain; a refutation, from the same
    ratio a support reached, must not be put there."""
    store = GrainStore(clock=lambda: T0 + DAY)
    a = store.put(belief("a", T0))
    kinds = ["supporting"] * 2 + ["refuting"] * 4
    answered = [store.evidence(a, kind, 0.9).status for kind in kinds]
    logged = store.evidence_log(a)
    assert [e.kind for e in logged] == kinds
    assert [e.status for e in logged] == answered


def test_the_evidence_log_keeps_an_axioms_confidence() -> None:
    store = GrainStore(clock=lambda: T0 + DAY)
    a = store.put(belief("a", T0, invalidation_policy={"mode": "locked"}))
    for _ in range(3):
        store.evidence(a, "supporting", 0.9)
    assert store.effective_confidence(a) == 0.8
    assert [e.effective_confidence for e in store.evidence_log(a)] == [0.8] * 3


def test_a_grain_stating_no_confidence_starts_from_zero_everywhere() -> None:
    """Spec §2.1: an absent number's nominal default is 0."""
    store = GrainStore(clock=lambda: T0 + DAY)
    e = store.put({"type": "event", "content": "hi", "created_at": T0})
    assert store.effective_confidence(e) == 0.0
    store.evidence(e, "supporting", 0.9)
    promoted = store.evidence(e, "supporting", 0.9)
    assert promoted.status == "promoted"
    assert promoted.effective_confidence == store.effective_confidence(e) == 0.1
    assert store.evidence_log(e)[-1].effective_confidence == 0.1


def test_a_forced_revision_is_one_write() -> None:
    alice = signing.generate_key(b"a" * 32)
    store = GrainStore(clock=lambda: T0 + 10 * DAY, authorized=[alice.did])
    old = store.put(belief("a", source_type="user_explicit"))
    core, writes = store.core, []
    write = core.write

    def counted(*args: Any, **kwargs: Any) -> None:
        writes.append(core.pending is None)  # a write of its own, not a transaction's
        write(*args, **kwargs)

    core.write = counted  # type: ignore[method-assign]
    store.revise(old, belief("b", T0 + DAY, source_type="llm_generated"),
                 force=True, by=alice.did)  # fmt: skip
    assert writes.count(True) == 1


def test_a_signed_put_auto_revises_its_rival_and_stays_signed() -> None:
    """put verified the envelope, then handed auto-revision the bare grain, which
    supersede refused as signed without its envelope: nothing was stored."""
    key = signing.generate_key()
    store = oms.GrainStore(clock=lambda: 1_700_000_010_000, auto_revise=True,
                           functional_relations={"works_at"})  # fmt: skip
    old = store.put(
        oms.Belief("ann", "works_at", "Acme", 0.9, created_at=1_700_000_000_000)
    )
    signed = oms.Belief("ann", "works_at", "Initech", 0.9, created_at=1_700_000_001_000,
                        signed=True)  # fmt: skip
    new = store.put(signing.sign(signed.blob, key))
    assert store.status(old).superseded_by == new
    assert store.status(new).signed_by == key.did


@pytest.mark.parametrize("how", ["supersede", "revise"])
def test_revise_takes_a_grain_to_sign_as_supersede_does(how: str) -> None:
    key = signing.generate_key()
    store = oms.GrainStore(clock=lambda: 1_700_000_010_000)
    old = store.put(oms.Belief("ann", "works_at", "Acme", 0.9, created_at=1_700_000_000_000,
                               invalidation_policy={"mode": "delegated",
                                                    "authorized": [key.did]}))  # fmt: skip
    new = oms.Belief("ann", "works_at", "Initech", 0.9, created_at=1_700_000_001_000,
                     derived_from=[old], signed=True)  # fmt: skip
    address = getattr(store, how)(old, new, signer=key)
    assert store.status(old).superseded_by == address == new.address
    with pytest.raises(oms.SchemaError):
        getattr(store, how)(address, 123)


def test_a_conflict_event_names_its_rivals_by_address() -> None:
    """The order a backend read the rivals in set the audit event's text, so
    the same writes made different events (and hashes) on a server."""
    store = GrainStore(clock=lambda: 10_000_000, functional_relations=["lives_in"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConflictWarning)
        for i, city in enumerate(["Paris", "Rome", "Oslo", "Lima", "Kyiv", "Pune"]):
            store.put(oms.Belief("bob", "lives_in", city, 0.7, created_at=1000 + i))
    reason = ox.NamedNode("https://w3id.org/oms-rdf/ns#reason")
    audit = ox.NamedNode("https://w3id.org/oms-rdf/ns#audit")
    named = [
        q.object.value.removeprefix("conflicts with ").split(", ")
        for q in store.backend.quads(None, reason, None, audit)
        if q.object.value.startswith("conflicts with")
    ]
    assert [len(n) for n in sorted(named, key=len)] == [1, 2, 3, 4, 5]
    assert all(n == sorted(n) for n in named)
