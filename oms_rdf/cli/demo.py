"""The ``oms-rdf demo`` story: a small belief history in an in-memory store."""

from __future__ import annotations

from collections.abc import Callable

from ..codec.grain import Belief, Grain
from ..errors import PolicyError
from ..store import GrainStore
from ..times import moment, to_millis

AGENT = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"


def _ms(text: str) -> int:
    return to_millis(text)


def _line(g: Grain) -> str:
    f = g.fields
    start = f.get("valid_from", f.get("system_valid_from", g.created_at))
    since = moment(start).date()
    return f"  {f['subject']} {f['relation']} {f['object']!r}  (conf {f['confidence']}, since {since})"


def run_demo(echo: Callable[[str], object]) -> None:
    """Build the story, then ask the four temporal questions and print the answers."""
    store = GrainStore()

    def belief(
        s: str, r: str, o: str, c: float, recorded: str, valid: str, **kw: object
    ) -> Grain:
        return Belief(s, r, o, c, created_at=_ms(recorded), valid_from=_ms(valid),
                      author_did=AGENT, **kw)  # type: ignore[arg-type]  # fmt: skip

    echo("The story")
    acme = store.put(belief("alice", "works_at", "Acme", 0.9, "2019-03-02", "2019-03-01",
                            source_type="user_explicit"))  # fmt: skip
    echo("  2019-03-02  alice tells us she works at Acme")
    initech = store.supersede(acme, belief("alice", "works_at", "Initech", 0.95, "2023-09-05",
                                           "2023-09-01", source_type="user_explicit",
                                           derived_from=[acme]))  # fmt: skip
    echo("  2023-09-05  she changed jobs: Initech since 2023-09-01 (supersedes Acme)")
    store.put(belief("alice", "commutes_to", "Initech office", 0.8, "2023-09-06",
                     "2023-09-01", source_type="agent_inferred", derived_from=[initech]))  # fmt: skip
    echo("  2023-09-06  the agent derives that alice commutes to the Initech office")
    paris = store.put(belief("bob", "lives_in", "Paris", 0.7, "2024-01-10", "2024-01-01",
                             source_type="llm_generated"))  # fmt: skip
    echo("  2024-01-10  the agent infers bob lives in Paris")
    store.supersede(paris, belief("bob", "lives_in", "Lyon", 0.9, "2024-02-01", "2024-01-01",
                                  source_type="user_explicit", derived_from=[paris]))  # fmt: skip
    echo("  2024-02-01  bob corrects it: Lyon, all along (a correction)")
    rule = store.put(belief("agent-007", "constraint", "never delete user files without "
                            "confirmation", 1.0, "2024-03-01", "2024-03-01",
                            namespace="safety", source_type="user_explicit",
                            invalidation_policy={"mode": "locked"}))  # fmt: skip
    echo("  2024-03-01  the user sets a locked safety rule")
    try:
        store.supersede(rule, belief("agent-007", "constraint", "delete freely", 1.0,
                                     "2025-01-01", "2025-01-01", namespace="safety"))  # fmt: skip
    except PolicyError as exc:
        echo(
            f"  2025-01-01  the agent tries to relax it and is refused:\n              {exc}"
        )

    echo("\nWhat is believed now?")
    for g in store.beliefs():
        echo(_line(g))
    echo("\nWhat was true on 2022-06-01 (as we know it now)?")
    for g in store.beliefs(valid_at=_ms("2022-06-01")):
        echo(_line(g))
    echo("\nWhat did we believe on 2024-01-15?")
    for g in store.beliefs(valid_at=_ms("2024-01-15"), as_of=_ms("2024-01-15")):
        echo(_line(g))
    echo("\nHow did alice's job belief evolve?")
    for g in store.history(initech):
        state = store.status(g)
        echo(f"  {g.address[:12]}  {g['object']!r:10} {state.status}")
    echo("\nWhat was derived from her Initech belief?")
    for g in store.derived(initech):
        echo(_line(g))
    echo(
        "\nAny SPARQL, at any point: who worked where on 2022-06-01, as known on 2023-01-01?"
    )
    sparql = "SELECT ?who ?where WHERE { ?who <https://w3id.org/oms-rdf/id/rel/works_at> ?where }"
    echo(f"  {sparql}")
    for row in store.query(sparql, valid_at="2022-06-01", as_of="2023-01-01"):  # type: ignore[union-attr]
        echo(f"  -> {row['who'].value.rsplit('/', 1)[-1]} {row['where'].value}")
