"""Commands for data protection: erasure, subject reports, vacuum, the audit chain.

Each opens the store the way the other commands do and prints one line per result.
"""

from __future__ import annotations

import click

from ..errors import ErrorCode, IntegrityError
from ..store import ErasureReport
from .opening import open_store
from .options import FiniteFloat, millis

REASON_HELP = "Why (goes in the audit log)."
NAMESPACE_HELP = "Only this namespace (default: every one)."
USER_ID_HELP = "Also the grains whose user_id is this."


@click.command("erase")
@click.argument("address")
@click.option("--reason", required=True, help=REASON_HELP)
@click.option("--by", help="DID of who asks for it.")
@click.pass_context
def erase_cmd(ctx: click.Context, address: str, reason: str, by: str | None) -> None:
    """Erase one grain, every layer of it (compliance only; checks hold).

    Example:

        oms-rdf --store mem.db erase 3288d0d4... --reason "GDPR Art. 17 request"
    """
    print_report(open_store(ctx).erase(address, reason=reason, by=by))


@click.command("erase-subject")
@click.argument("name")
@click.option("--reason", required=True, help=REASON_HELP)
@click.option("--namespace", help=NAMESPACE_HELP)
@click.option("--user-id", help=USER_ID_HELP)
@click.option("--by", help="DID of who asks for it.")
@click.option(
    "--vacuum", is_flag=True, help="Rewrite the store so the bytes leave its files."
)
@click.pass_context
def erase_subject_cmd(
    ctx: click.Context,
    name: str,
    reason: str,
    namespace: str | None,
    user_id: str | None,
    by: str | None,
    vacuum: bool,
) -> None:
    """Erase every grain in which a person appears.

    Example:

        oms-rdf --store mem.db erase-subject "Alice Smith" --reason "request 42" --vacuum
    """
    report = open_store(ctx).erase_subject(
        name, reason=reason, namespace=namespace, user_id=user_id, by=by, vacuum=vacuum
    )
    print_report(report)


@click.command("subject-report")
@click.argument("name")
@click.option("--namespace", help=NAMESPACE_HELP)
@click.option("--user-id", help=USER_ID_HELP)
@click.pass_context
def subject_report_cmd(
    ctx: click.Context, name: str, namespace: str | None, user_id: str | None
) -> None:
    """Print, as JSON, every grain in which a person appears (a DSAR).

    Example:

        oms-rdf --store mem.db subject-report "Alice Smith" > alice.json
    """
    report = open_store(ctx, read=True).subject_report(
        name, namespace=namespace, user_id=user_id
    )
    click.echo(report.to_json())


@click.command("process-erasures")
@click.option(
    "--now",
    callback=millis,
    help="The time to judge the SLA at, written as --valid-at takes it (default now).",
)
@click.option(
    "--sla-days",
    type=FiniteFloat(min=0, max=31),
    default=30,
    show_default=True,
    help="Days an erasure may wait after consent is withdrawn (at most 31).",
)
@click.pass_context
def process_erasures_cmd(ctx: click.Context, now: int | None, sla_days: float) -> None:
    """Erase what withdrawn consents left pending, once the SLA has passed.

    Example:

        oms-rdf --store mem.db process-erasures
    """
    print_report(open_store(ctx).process_erasures(now, sla_days=sla_days))


@click.command("vacuum")
@click.pass_context
def vacuum_cmd(ctx: click.Context) -> None:
    """Rewrite the store with only its live data (erased bytes leave its files).

    Example:

        oms-rdf --store mem.db vacuum
    """
    store = open_store(ctx)
    store.vacuum(progress=lambda n: click.echo(f"copied {n} quads", err=True))
    store.close()
    click.echo("vacuumed: the store was rewritten with its live data only")


@click.group("audit")
def audit_group() -> None:
    """The hash-chained audit log."""


@audit_group.command("verify")
@click.pass_context
def audit_verify_cmd(ctx: click.Context) -> None:
    """Check the audit log's hash chain; name the first bad event.

    Example:

        oms-rdf --store mem.db audit verify
    """
    report = open_store(ctx, read=True).verify_audit()
    if not report.ok:
        raise IntegrityError(
            f"the audit log fails its hash chain: {report.problem}",
            code=ErrorCode.INTEGRITY,
        )
    click.echo(f"audit ok: {report.events} events")
    for chain, head in report.heads.items():
        sequence, digest = head.split(" ")
        click.echo(f"  chain {chain}: {sequence} events, head {digest}")


def print_report(report: ErasureReport) -> None:
    """Print what an erasure erased, kept under a hold, and left to decide about."""
    for address in report.erased:
        click.echo(f"erased {address}")
    for address in report.held:
        click.echo(f"held   {address} (under a hold: kept)")
    for address in report.derived:
        click.echo(
            f"derived {address} (derived from an erased grain: kept, decide about it)"
        )
    if not report.erased and not report.held:
        click.echo("nothing to erase")
    for note in report.remaining:
        click.echo(f"note: {note}")


COMMANDS = [
    erase_cmd,
    erase_subject_cmd,
    subject_report_cmd,
    process_erasures_cmd,
    vacuum_cmd,
    audit_group,
]
