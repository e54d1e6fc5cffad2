"""Commands that change what is believed: put, supersede, revise, retract, contradict,
evidence and SPARQL Update. Each is one atomic write through the store's policies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from ..codec.grain import Grain
from ..errors import DecodeError, OmsError
from .opening import open_store
from .options import FiniteFloat, invalidation_options
from .reading import one_grain, placed_grains, sparql_text


@click.command("put")
@click.argument("sources", nargs=-1, required=True)
@click.pass_context
def put_cmd(ctx: click.Context, sources: tuple[str, ...]) -> None:
    """Store grains from files (blob, JSON, JSON array or JSON Lines; - for stdin).

    All grains of one call are stored in one atomic write. Example:

        oms-rdf --store mem.db put beliefs.jsonl
    """
    items = [
        checked(where, item)
        for source in sources
        for where, item in placed_grains(source)
    ]
    if not items:
        raise DecodeError(f"no grain in {', '.join(sources)}: nothing was stored")
    store = open_store(ctx, create=True)
    for address in store.put_many(items):
        grain = store.get(address)
        said = " ".join(
            str(grain.get(k)) if k != "object" else repr(grain.get(k))
            for k in ("subject", "relation", "object")
            if k in grain.fields
        )
        click.echo(f"{address}  {grain.type} {said}".rstrip())


def checked(where: str, item: Any) -> Any:
    """A JSON grain as a Grain, refused with its file and line (not its place in
    the batch, which counts from 0); a blob or envelope is checked by ``put``."""
    if not isinstance(item, Mapping):
        return item
    try:
        return Grain.from_dict(item)
    except OmsError as exc:
        raise type(exc)(
            f"{where}: {exc.message}", code=exc.code, path=f"{where}: {exc.path or '$'}"
        ) from None


@click.command("supersede")
@click.argument("old")
@click.argument("grain", metavar="SOURCE", callback=one_grain)
@click.option("--justification", help="Why; required to override soft_locked grains.")
@click.option("--by", help="DID of who supersedes.")
@click.pass_context
def supersede_cmd(
    ctx: click.Context, old: str, grain: Any, justification: str | None, by: str | None
) -> None:
    """Replace grain OLD by the grain in SOURCE; print the new address.

    Example:

        oms-rdf --store mem.db supersede 3288d0d4... new.json --justification "moved"
    """
    store = open_store(ctx)
    click.echo(store.supersede(old, grain, justification=justification, by=by))


@click.command("revise")
@click.argument("old")
@click.argument("grain", metavar="SOURCE", callback=one_grain)
@click.option(
    "--force",
    is_flag=True,
    help="Override entrenchment (needs --by an authorized DID).",
)
@click.option("--by", help="DID of who revises.")
@click.option(
    "--authorized", multiple=True, help="DIDs this store lets force a revision."
)
@click.option("--justification")
@click.pass_context
def revise_cmd(
    ctx: click.Context,
    old: str,
    grain: Any,
    force: bool,
    by: str | None,
    authorized: tuple[str, ...],
    justification: str | None,
) -> None:
    """Supersede OLD by the grain in SOURCE if its entrenchment tier allows.

    Example:

        oms-rdf --store mem.db revise 3288d0d4... new.json
    """
    store = open_store(ctx, authorized=authorized)
    new = store.revise(old, grain, force=force, by=by, justification=justification)
    click.echo(new)


@click.command("retract")
@invalidation_options
@click.option("--reason", required=True)
@click.pass_context
def retract_cmd(
    ctx: click.Context, address: str, reason: str, by: str | None, at: int | None
) -> None:
    """Retract a grain without replacement.

    Example:

        oms-rdf --store mem.db retract 3288d0d4... --reason "never said"
    """
    open_store(ctx).retract(address, reason=reason, by=by, at=at)
    click.echo(f"retracted {address}")


@click.command("contradict")
@invalidation_options
@click.option("--reason")
@click.pass_context
def contradict_cmd(
    ctx: click.Context, address: str, reason: str | None, by: str | None, at: int | None
) -> None:
    """Mark a grain contradicted.

    Example:

        oms-rdf --store mem.db contradict 3288d0d4... --reason "sensor fault"
    """
    open_store(ctx).contradict(address, reason=reason, by=by, at=at)
    click.echo(f"contradicted {address}")


@click.command("evidence")
@click.argument("address")
@click.option("--kind", type=click.Choice(["supporting", "refuting"]), required=True)
@click.option("--strength", type=float, default=0.8, show_default=True)
@click.option("--note")
@click.pass_context
def evidence_cmd(
    ctx: click.Context, address: str, kind: str, strength: float, note: str | None
) -> None:
    """Record evidence for or against a grain (sequential test); print its new state.

    Example:

        oms-rdf --store mem.db evidence 3288d0d4... --kind refuting --strength 0.85
    """
    result = open_store(ctx).evidence(address, kind, strength, note)
    click.echo(
        f"{result.status}  log ratio {result.log_ratio:.4f}  "
        f"effective confidence {result.effective_confidence:.2f}"
    )


@click.command("update")
@click.argument("sparql", callback=sparql_text)
@click.option("--namespace", help="The namespace of the beliefs INSERT DATA adds.")
@click.option(
    "--confidence",
    type=FiniteFloat(0.0, 1.0),
    default=1.0,
    show_default=True,
    help="Their confidence.",
)
@click.option("--by", help="DID of who retracts (DELETE DATA).")
@click.option("--reason", help="Why DELETE DATA retracts (needed for soft_locked).")
@click.pass_context
def update_cmd(
    ctx: click.Context,
    sparql: str,
    namespace: str | None,
    confidence: float,
    by: str | None,
    reason: str | None,
) -> None:
    """Apply SPARQL Update (text, or @FILE) as belief operations.

    INSERT DATA adds its triples as beliefs; DELETE DATA retracts the current
    beliefs that assert its triples. The request is one atomic write: a refused
    one writes nothing.

    Example:

        oms-rdf --store mem.db update "INSERT DATA { <urn:a> <urn:knows> <urn:b> }"
    """
    report = open_store(ctx, create=True).update(
        sparql, namespace=namespace, confidence=confidence, by=by, reason=reason
    )
    click.echo(
        f"added {report.added}, already believed {report.believed}, "
        f"retracted {len(report.retracted)}, superseded {len(report.superseded)}, "
        f"not believed {report.not_believed}"
    )
    for address in report.retracted:
        click.echo(f"retracted {address}")
    for address in report.superseded:
        click.echo(f"superseded {address}")


COMMANDS = [
    put_cmd,
    supersede_cmd,
    revise_cmd,
    retract_cmd,
    contradict_cmd,
    evidence_cmd,
    update_cmd,
]
