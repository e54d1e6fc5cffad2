"""The ``oms-rdf demo`` story: a small belief history in an in-memory store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..codec.grain import Belief, Grain, system_from
from ..errors import PolicyError
from ..store import GrainStore, Solutions
from ..times import moment, to_millis

AGENT = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
Echo = Callable[[str], object]
WORKS_AT = (
    "SELECT ?who ?where WHERE "
    "{ ?who <https://w3id.org/oms-rdf/id/rel/works_at> ?where }"
)


@click.command("demo")
def demo_cmd() -> None:
    """Tell a small belief story on an in-memory store and ask it the temporal questions.

    Example:

        oms-rdf demo
    """
    run_demo(click.echo)


def run_demo(echo: Echo) -> None:
    """Build the story, then ask the temporal questions and print the answers."""
    store = GrainStore()
    initech = tell_story(store, echo)
    ask(store, echo, initech)


def belief(
    s: str, r: str, o: str, c: float, recorded: str, valid: str, **fields: Any
) -> Grain:
    """A belief the agent recorded on ``recorded``, true from ``valid`` on."""
    return Belief(
        s,
        r,
        o,
        c,
        created_at=to_millis(recorded),
        valid_from=to_millis(valid),
        author_did=AGENT,
        **fields,
    )


def tell_story(store: GrainStore, echo: Echo) -> str:
    """Put the story's beliefs, saying each; return the address of alice's job now."""
    echo("The story")
    initech = alice_story(store, echo)
    bob_story(store, echo)
    refuse_relaxing(store, echo)
    return initech


def alice_story(store: GrainStore, echo: Echo) -> str:
    """Alice's job, changed once, and what the agent derived from it."""
    told = "user_explicit"
    acme = store.put(
        belief(
            "alice",
            "works_at",
            "Acme",
            0.9,
            "2019-03-02",
            "2019-03-01",
            source_type=told,
        )
    )
    echo("  2019-03-02  alice tells us she works at Acme")
    initech = store.supersede(
        acme,
        belief(
            "alice",
            "works_at",
            "Initech",
            0.95,
            "2023-09-05",
            "2023-09-01",
            source_type=told,
            derived_from=[acme],
        ),
    )
    echo("  2023-09-05  she changed jobs: Initech since 2023-09-01 (supersedes Acme)")
    store.put(
        belief(
            "alice",
            "commutes_to",
            "Initech office",
            0.8,
            "2023-09-06",
            "2023-09-01",
            source_type="agent_inferred",
            derived_from=[initech],
        )
    )
    echo("  2023-09-06  the agent derives that alice commutes to the Initech office")
    return initech


def bob_story(store: GrainStore, echo: Echo) -> None:
    """Bob's home, inferred wrongly, then corrected over all its valid time."""
    paris = store.put(
        belief(
            "bob",
            "lives_in",
            "Paris",
            0.7,
            "2024-01-10",
            "2024-01-01",
            source_type="llm_generated",
        )
    )
    echo("  2024-01-10  the agent infers bob lives in Paris")
    store.supersede(
        paris,
        belief(
            "bob",
            "lives_in",
            "Lyon",
            0.9,
            "2024-02-01",
            "2024-01-01",
            source_type="user_explicit",
            derived_from=[paris],
        ),
    )
    echo("  2024-02-01  bob corrects it: Lyon, all along (a correction)")


def refuse_relaxing(store: GrainStore, echo: Echo) -> None:
    """Set a locked safety rule, then show that superseding it is refused."""
    rule = belief(
        "agent-007",
        "constraint",
        "never delete user files without confirmation",
        1.0,
        "2024-03-01",
        "2024-03-01",
        namespace="safety",
        source_type="user_explicit",
        invalidation_policy={"mode": "locked"},
    )
    locked = store.put(rule)
    echo("  2024-03-01  the user sets a locked safety rule")
    relaxed = belief(
        "agent-007",
        "constraint",
        "delete freely",
        1.0,
        "2025-01-01",
        "2025-01-01",
        namespace="safety",
    )
    try:
        store.supersede(locked, relaxed)
    except PolicyError as exc:
        echo(
            f"  2025-01-01  the agent tries to relax it and is refused:\n              {exc}"
        )


def ask(store: GrainStore, echo: Echo, initech: str) -> None:
    """Ask the store the temporal questions about the story; print the answers."""
    echo("\nWhat is believed now?")
    for g in store.beliefs():
        echo(line(g))
    echo("\nWhat was true on 2022-06-01 (as we know it now)?")
    for g in store.beliefs(valid_at=to_millis("2022-06-01")):
        echo(line(g))
    echo("\nWhat did we believe on 2024-01-15?")
    then = to_millis("2024-01-15")
    for g in store.beliefs(valid_at=then, as_of=then):
        echo(line(g))
    echo("\nHow did alice's job belief evolve?")
    for g in store.history(initech):
        state = store.status(g)
        echo(f"  {g.address[:12]}  {g['object']!r:10} {state.status}")
    echo("\nWhat was derived from her Initech belief?")
    for g in store.derived(initech):
        echo(line(g))
    echo(
        "\nAny SPARQL, at any point: who worked where on 2022-06-01, as known on 2023-01-01?"
    )
    echo(f"  {WORKS_AT}")
    rows = store.query(WORKS_AT, valid_at="2022-06-01", as_of="2023-01-01")
    assert isinstance(rows, Solutions)  # a SELECT query
    for row in rows:
        echo(f"  -> {row['who'].value.rsplit('/', 1)[-1]} {row['where'].value}")


def line(g: Grain) -> str:
    """One belief as the story prints it: the triple, confidence and valid time."""
    f = g.fields
    start = f.get("valid_from", system_from(g))
    since = moment(start).date()
    return f"  {f['subject']} {f['relation']} {f['object']!r}  (conf {f['confidence']}, since {since})"


COMMANDS = [demo_cmd]
