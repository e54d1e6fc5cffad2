"""The policy rules beyond the modes (spec §8.3-§8.7): a goal's own transitions and
its evidence, what a goal inherits, Consent's default, chain injection over many
hops, ownership grains, holds over a scope at erasure, and a transaction's own
grains.

Each case is derived from the spec's text, quoted beside it; after every refusal
the store is exactly as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import oms_rdf as oms
from oms_rdf.codec.signing import generate_key, sign
from oms_rdf.store import GrainStore

T0 = 1_700_000_000_000
DAY = 86_400_000
LOCKED = {"mode": "locked"}


@pytest.fixture
def store() -> GrainStore:
    return GrainStore(clock=lambda: T0 + 100 * DAY)


def snapshot(store: GrainStore) -> set[str]:
    return {str(q) for q in store.backend.quads()}


def refused(
    store: GrainStore,
    action: Callable[[], object],
    code: oms.ErrorCode = oms.ErrorCode.INVALIDATION_DENIED,
    fragment: str | None = None,
) -> oms.OmsError:
    before = snapshot(store)
    with pytest.raises(oms.OmsError, match=fragment) as info:
        action()
    assert info.value.code == code
    assert snapshot(store) == before
    return info.value


def goal(state: str, t: int, **kw: Any) -> dict[str, Any]:
    return {"type": "goal", "description": "ship the release", "goal_state": state,
            "created_at": t, **kw}  # fmt: skip


def belief(subject: str, obj: str, t: int, **kw: Any) -> dict[str, Any]:
    return {"type": "belief", "subject": subject, "relation": "rule", "object": obj,
            "confidence": 1.0, "created_at": t, **kw}  # fmt: skip


# --- goals (§8.6) -------------------------------------------------------------
# "A protected goal (mode ≠ open) may list transitions the agent may make on its
# own, e.g. ["satisfied","failed"]. Transitions not listed go through the full
# policy. If the list is absent, every transition is subject to the policy."


@pytest.mark.parametrize("mode", ["locked", "soft_locked", "quorum", "delegated"])
def test_a_protected_goal_makes_its_listed_transitions_on_its_own(
    store: GrainStore, mode: str
) -> None:
    policy = {"mode": mode, "authorized": ["did:key:z6MkOther"], "threshold": 1}
    g = store.put(goal("active", T0, invalidation_policy=policy,
                       allowed_transitions=["satisfied", "failed"]))  # fmt: skip
    refused(store, lambda: store.supersede(g, goal("suspended", T0 + 1)))
    done = store.supersede(g, goal("failed", T0 + 2))
    assert store.status(g).superseded_by == done


def test_without_the_list_every_transition_meets_the_policy(store: GrainStore) -> None:
    g = store.put(goal("active", T0, invalidation_policy=LOCKED))
    refused(
        store, lambda: store.supersede(g, goal("satisfied", T0 + 1)), fragment="locked"
    )


def test_a_listed_transition_does_not_pass_a_hold(store: GrainStore) -> None:
    g = store.put(goal("active", T0, invalidation_policy={"mode": "hold"},
                       allowed_transitions=["satisfied"]))  # fmt: skip
    refused(
        store, lambda: store.supersede(g, goal("satisfied", T0 + 1)), fragment="hold"
    )


def test_an_unknown_mode_stays_closed_to_listed_transitions(store: GrainStore) -> None:
    g = store.put(goal("active", T0, invalidation_policy={"mode": "sealed"},
                       allowed_transitions=["satisfied"]))  # fmt: skip
    refused(store, lambda: store.supersede(g, goal("satisfied", T0 + 1)))


# "Stores MAY enforce this when evidence_required > 0 → ERR_EVIDENCE_REQUIRED";
# §13: "a protected goal's satisfied transition lacks evidence".
def test_a_protected_goal_satisfied_cites_its_evidence(store: GrainStore) -> None:
    g = store.put(goal("active", T0, invalidation_policy=LOCKED, evidence_required=2,
                       allowed_transitions=["satisfied"]))  # fmt: skip
    one = ["ab" * 32]
    error = refused(
        store,
        lambda: store.supersede(
            g, goal("satisfied", T0 + 1, satisfaction_evidence=one)
        ),
        oms.ErrorCode.EVIDENCE_REQUIRED,
    )
    assert "needs 2" in str(error) and "cites 1" in str(error)
    assert error.path == "$.satisfaction_evidence"
    two = ["ab" * 32, "cd" * 32]
    store.supersede(g, goal("satisfied", T0 + 1, satisfaction_evidence=two))


def test_an_open_goal_needs_no_evidence(store: GrainStore) -> None:
    g = store.put(goal("active", T0, evidence_required=1))
    store.supersede(g, goal("satisfied", T0 + 1))


# Goal laundering: "A grain that supersedes a protected goal inherits its
# invalidation_policy unless the supersession was authorized under that policy."
def test_a_goal_moved_on_its_own_keeps_the_old_goals_protection(
    store: GrainStore,
) -> None:
    g = store.put(goal("active", T0, invalidation_policy=LOCKED,
                       allowed_transitions=["satisfied", "failed"]))  # fmt: skip
    done = store.supersede(g, goal("satisfied", T0 + 1))  # no policy of its own
    # The weaker goal cannot be reopened, nor replaced, without the old policy...
    refused(
        store,
        lambda: store.supersede(done, goal("active", T0 + 2)),
        fragment="replaced",
    )
    refused(store, lambda: store.retract(done, reason="x"))
    # ...and still moves as the old goal allowed.
    store.supersede(done, goal("failed", T0 + 3))


def test_a_goal_authorized_under_the_policy_inherits_nothing(
    store: GrainStore,
) -> None:
    g = store.put(goal("active", T0, invalidation_policy={"mode": "soft_locked"},
                       allowed_transitions=["satisfied"]))  # fmt: skip
    paused = store.supersede(g, goal("suspended", T0 + 1), justification="user asked")
    store.supersede(paused, goal("active", T0 + 2))  # no justification needed


# --- Consent (§8.3 "Consent grains default to soft_locked"; §5 rule 4) ----------


def consent(t: int, **kw: Any) -> dict[str, Any]:
    return {"type": "consent", "subject_did": "did:key:z6MkUser",
            "grantee_did": "did:key:z6MkAgent", "scope": ["store"],
            "is_withdrawal": False, "created_at": t, **kw}  # fmt: skip


def test_a_consent_without_a_policy_is_soft_locked(store: GrainStore) -> None:
    c = store.put(consent(T0))
    refused(
        store,
        lambda: store.supersede(c, consent(T0 + 1, scope=["share"])),
        fragment="soft_locked",
    )
    refused(store, lambda: store.contradict(c), fragment="soft_locked")
    store.supersede(
        c, consent(T0 + 1, scope=["share"]), justification="user widened it"
    )


def test_a_consent_keeps_the_policy_it_states(store: GrainStore) -> None:
    c = store.put(consent(T0, invalidation_policy={"mode": "open"}))
    store.supersede(c, consent(T0 + 1, scope=["share"]))


def test_a_withdrawal_needs_no_justification(store: GrainStore) -> None:
    c = store.put(consent(T0))
    store.put(consent(T0 + 1, is_withdrawal=True, prior_consent=c))


# --- chain injection (§8.5.3) --------------------------------------------------
# "Superseding a derived grain A' does not escape A's protection. Walk
# derived_from up to 16 hops and reject if any ancestor is protected."


@pytest.mark.parametrize("hops", [2, 5, 16])
def test_a_copy_of_a_protected_claim_further_down_the_derivations_is_refused(
    store: GrainStore, hops: int
) -> None:
    a = store.put(belief("s", "truth", T0, invalidation_policy=LOCKED))
    parent = a
    for i in range(1, hops):
        parent = store.put(belief(f"note{i}", "x", T0 + i, derived_from=[parent]))
    error = refused(
        store, lambda: store.put(belief("s", "lie", T0 + 99, derived_from=[parent]))
    )
    assert f"{hops} hops" in str(error) and a[:12] in str(error)


def test_the_walk_ends_at_sixteen_hops(store: GrainStore) -> None:
    a = store.put(belief("s", "truth", T0, invalidation_policy=LOCKED))
    parent = a
    for i in range(1, 17):
        parent = store.put(belief(f"note{i}", "x", T0 + i, derived_from=[parent]))
    store.put(belief("s", "lie", T0 + 99, derived_from=[parent]))  # 17 hops away


def test_a_protected_claim_no_longer_current_is_no_obstacle(store: GrainStore) -> None:
    a = store.put(belief("s", "truth", T0, invalidation_policy={"mode": "soft_locked"}))
    b = store.supersede(a, belief("s", "better", T0 + 1), justification="new data")
    note = store.put(belief("note", "x", T0 + 2, derived_from=[b]))
    # b is open and current, a is protected but superseded: nothing to inject into.
    store.put(belief("other", "y", T0 + 3, derived_from=[note]))


# --- ownership (§8.7 "Ownership grains MUST NOT be written by the agent's own
# DID"; §15.8: mg:owned_by in agent:identity, subject = the agent DID) -----------


def test_the_agent_cannot_write_its_own_ownership_grain(store: GrainStore) -> None:
    agent, operator = generate_key(b"a" * 32), generate_key(b"o" * 32)

    def ownership(**kw: Any) -> oms.Belief:
        return oms.Belief(agent.did, "mg:owned_by", "Acme Ltd", 1.0,
                          namespace="agent:identity", created_at=T0, **kw)  # fmt: skip

    refused(
        store, lambda: store.put(ownership(author_did=agent.did)), fragment="author_did"
    )
    signed = oms.Grain.from_dict(ownership(author_did=None).fields, signed=True)
    refused(store, lambda: store.put(sign(signed.blob, agent)), fragment="signer")
    store.put(sign(signed.blob, operator))
    # Another relation, or another namespace, is not an ownership grain.
    store.put(oms.Belief(agent.did, "mg:prefers", "tea", 1.0, author_did=agent.did,
                         namespace="agent:identity", created_at=T0))  # fmt: skip


# --- holds over a scope at erasure (§8.3 hold: "reject every invalidation and
# erasure"; §8.4 scopes) ---------------------------------------------------------


def test_a_subtree_hold_keeps_the_grains_derived_from_it(store: GrainStore) -> None:
    held = store.put(
        belief("h", "x", T0, invalidation_policy={"mode": "hold", "scope": "subtree"})
    )
    child = store.put(belief("c", "y", T0 + 1, derived_from=[held]))
    refused(store, lambda: store.erase(child, reason="request"), fragment="hold")
    report = store.erase_subject("c", reason="request")
    assert report.held == [child] and child in store


def test_a_lineage_hold_keeps_the_chain_it_covers(store: GrainStore) -> None:
    first = store.put(belief("h", "x", T0))
    store.supersede(first, belief("h", "y", T0 + 1,
                                  invalidation_policy={"mode": "hold", "scope": "lineage"}))  # fmt: skip
    refused(store, lambda: store.erase(first, reason="request"), fragment="hold")


def test_a_grain_scope_hold_does_not_reach_derived_grains(store: GrainStore) -> None:
    held = store.put(belief("h", "x", T0, invalidation_policy={"mode": "hold"}))
    child = store.put(belief("c", "y", T0 + 1, derived_from=[held]))
    store.erase(child, reason="request")
    assert child not in store


# --- messages ------------------------------------------------------------------


def test_a_timed_lock_past_its_time_names_the_fallback_in_force(
    store: GrainStore,
) -> None:
    policy = {"mode": "timed", "locked_until": 1, "fallback_mode": "locked"}
    g = store.put(belief("s", "x", T0, invalidation_policy=policy))
    error = refused(store, lambda: store.retract(g, reason="x"))
    assert "unlocked at 1" in str(error) and "fallback_mode 'locked'" in str(error)


# --- a transaction's own grains (README: "An operation on a grain that an earlier
# one of the same transaction created or changed is refused (ERR_CONFLICT)") ----


@pytest.mark.parametrize("by_prefix", [False, True])
def test_a_grain_a_transaction_made_is_a_conflict_within_it(
    store: GrainStore, by_prefix: bool
) -> None:
    old = store.put(belief("s", "1", T0))

    def publication() -> None:
        with store.transaction() as tx:
            new = tx.supersede(old, belief("s", "2", T0 + 1))
            tx.retract(new[:12] if by_prefix else new, reason="x")

    refused(store, publication, oms.ErrorCode.CONFLICT, "earlier operation")
