"""Commands that ask the store: get, beliefs, search, history, diff and SPARQL queries.

Each opens the store for reading (a read-only view when another process holds
it) and asks at the bi-temporal point of ``--valid-at`` and ``--as-of``.
"""

from __future__ import annotations

import json

import click

from ..errors import QueryError
from ..io import dumps_turtle
from ..rdf.mapping import TIME_FIELDS
from ..store import Solutions
from .opening import open_store
from .options import MAX_LIMIT, millis, range_options, time_options
from .output import (
    TABLE_LIMIT,
    belief_row,
    dump_json,
    fitted_table,
    iso,
    print_grains,
    print_rows,
)
from .reading import sparql_text

LIMIT_HELP = (
    f"At most this many beliefs (the table: default {TABLE_LIMIT}; JSON: default all)."
)


@click.command("get")
@click.argument("address")
@click.pass_context
def get_cmd(ctx: click.Context, address: str) -> None:
    """Print a stored grain as JSON, with its index state (times in ISO 8601 UTC).

    Example:

        oms-rdf --store mem.db get 3288d0d4...
    """
    store = open_store(ctx, read=True)
    grain = store.get(address)
    state = store.status(address)
    fields = {
        k: iso(v) if k in TIME_FIELDS and type(v) is int else v
        for k, v in grain.fields.items()
    }
    index = {k: getattr(state, k) for k in state.__slots__ if k != "address"}
    for k in ("system_to", "voided_at", "pending_erasure"):
        index[k] = iso(index[k])
    click.echo(dump_json({"address": grain.address, "fields": fields, "index": index}))


@click.command("beliefs")
@click.option("--subject")
@click.option("--relation")
@click.option("--namespace")
@time_options
@click.option("--limit", type=click.IntRange(1, MAX_LIMIT), help=LIMIT_HELP)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON array of the full rows instead of a table.",
)
@click.option(
    "--jsonl",
    "as_jsonl",
    is_flag=True,
    help="Print JSON Lines, one full row a line, instead of a table.",
)
@click.pass_context
def beliefs_cmd(
    ctx: click.Context,
    subject: str | None,
    relation: str | None,
    namespace: str | None,
    valid_at: int | None,
    as_of: int | None,
    limit: int | None,
    as_json: bool,
    as_jsonl: bool,
) -> None:
    """List the beliefs true at --valid-at as known at --as-of.

    The table shows the first --limit beliefs (50 by default; a note on stderr
    says how many more there are), each column cut to fit the terminal's width
    with an ellipsis; --json and --jsonl print the full rows.

    Example:

        oms-rdf --store mem.db beliefs --subject alice --as-of 2024-01-01
    """
    if as_json and as_jsonl:
        raise click.UsageError("--json and --jsonl: choose one")
    store = open_store(ctx, read=True)
    grains = list(
        store.beliefs(
            subject, relation, namespace=namespace, valid_at=valid_at, as_of=as_of
        )
    )
    if limit is None and not (as_json or as_jsonl):
        limit = TABLE_LIMIT
    shown = grains if limit is None else grains[:limit]
    if as_jsonl:
        for grain in shown:
            click.echo(json.dumps(belief_row(grain), ensure_ascii=False))
    else:
        print_grains(shown, as_json=as_json)
    if len(grains) > len(shown):
        more = len(grains) - len(shown)
        click.echo(
            f"note: {more:,} more belief{'s' if more != 1 else ''} not shown "
            f"({len(grains):,} in all); use --limit N, or --json/--jsonl",
            err=True,
        )


@click.command("search")
@click.argument("text")
@click.option("--namespace")
@click.option(
    "--limit",
    default=10,
    show_default=True,
    type=click.IntRange(1, MAX_LIMIT),
    help=f"At most {MAX_LIMIT:,} beliefs.",
)
@time_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_context
def search_cmd(
    ctx: click.Context,
    text: str,
    namespace: str | None,
    limit: int,
    valid_at: int | None,
    as_of: int | None,
    as_json: bool,
) -> None:
    """Find the beliefs whose subject, relation or object match TEXT, best first.

    Example:

        oms-rdf --store mem.db search "rate limiter"
    """
    grains = open_store(ctx, read=True).search(
        text, namespace=namespace, limit=limit, valid_at=valid_at, as_of=as_of
    )
    print_grains(grains, as_json=as_json)


@click.command("history")
@click.argument("address")
@click.pass_context
def history_cmd(ctx: click.Context, address: str) -> None:
    """Show the supersession chain through a grain, oldest first.

    Example:

        oms-rdf --store mem.db history 3288d0d4...
    """
    store = open_store(ctx, read=True)
    rows = [
        {**belief_row(g), "status": store.status(g).status}
        for g in store.history(address)
    ]
    columns = ["address", "status", "object", "confidence", "valid_from"]
    click.echo(fitted_table(rows, columns))


@click.command("diff")
@click.argument("since", callback=millis)
@click.argument("until", callback=millis, required=False)
@click.option(
    "--axis",
    type=click.Choice(["both", "valid", "system"]),
    default="both",
    show_default=True,
    help="both: believed true at SINCE then vs at UNTIL; valid: how the world "
    "changed, as known at UNTIL; system: what the store learnt about UNTIL.",
)
@click.option("--namespace")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_context
def diff_cmd(
    ctx: click.Context,
    since: int,
    until: int | None,
    axis: str,
    namespace: str | None,
    as_json: bool,
) -> None:
    """Show the beliefs that entered and left between SINCE and UNTIL (default now).

    Times are ISO 8601 (UTC when no zone is given) or epoch ms as ms:N. Each
    row says whether its belief entered or left; --json prints
    {"entered": [...], "left": [...]}.

    Example:

        oms-rdf --store mem.db diff 2024-01-01 2024-06-01 --axis valid
    """
    store = open_store(ctx, read=True)
    delta = store.changes(since, until, namespace=namespace, axis=axis)  # type: ignore[arg-type]
    if as_json:
        entered = [belief_row(g) for g in delta.entered]
        left = [belief_row(g) for g in delta.left]
        click.echo(dump_json({"entered": entered, "left": left}))
        return
    rows = [
        {"change": change, **belief_row(g)}
        for change, grains in (("entered", delta.entered), ("left", delta.left))
        for g in grains
    ]
    columns = ["change", "address", "subject", "relation", "object", "valid_from"]
    click.echo(fitted_table(rows, columns))


@click.command("query")
@click.argument("sparql", callback=sparql_text)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv", "tsv"]),
    default="table",
    show_default=True,
    help="How SELECT rows print (CONSTRUCT and DESCRIBE print Turtle).",
)
@time_options
@range_options
@click.option("--namespace", help="Only the knowledge of this namespace.")
@click.option(
    "--grains", is_flag=True, help="Query the store as laid out (grain layer, index)."
)
@click.pass_context
def query_cmd(
    ctx: click.Context,
    sparql: str,
    fmt: str,
    valid_at: int | None,
    as_of: int | None,
    valid_during: tuple[int | None, int | None] | None,
    system_during: tuple[int | None, int | None] | None,
    namespace: str | None,
    grains: bool,
) -> None:
    """Run SPARQL (text, or @FILE) over the knowledge, now or at a bi-temporal point.

    SELECT prints rows, ASK prints true or false, CONSTRUCT and DESCRIBE print Turtle.

    Example:

        oms-rdf --store mem.db query "SELECT ?s ?o WHERE { ?s ?p ?o }" --valid-at 2024-01-01

    A range (--valid-during, --system-during) gives every triple in force at some
    time of it, with the extent it held in (?validFrom ?validTo ?systemFrom ?systemTo):

        oms-rdf --store mem.db query "SELECT * WHERE { ?s ?p ?o }" --valid-during 2024/..
    """
    store = open_store(ctx, read=True)
    try:
        result = store.query(
            sparql,
            namespace=namespace,
            grains=grains,
            valid_at=valid_at,
            as_of=as_of,
            valid_during=valid_during,
            system_during=system_during,
        )
    except QueryError as exc:
        if is_update(sparql):
            raise QueryError(
                "expected a query (SELECT, ASK, CONSTRUCT or DESCRIBE); found a SPARQL "
                "Update: this is an update, use `oms-rdf update`",
                path="SPARQL",
            ) from exc
        raise
    if isinstance(result, bool):
        click.echo("true" if result else "false")
    elif isinstance(result, Solutions):
        print_rows(result, fmt)
    else:
        click.echo(dumps_turtle(result), nl=False)


def is_update(text: str) -> bool:
    """Whether a text that is no query parses as SPARQL Update (only read)."""
    from pyparsing import ParseException
    from rdflib.plugins.sparql.parser import parseUpdate

    try:
        parsed = parseUpdate(text)
    except (ParseException, ValueError, TypeError):
        return False
    return "request" in parsed  # an empty text parses, as no operation


COMMANDS = [get_cmd, beliefs_cmd, search_cmd, history_cmd, diff_cmd, query_cmd]
