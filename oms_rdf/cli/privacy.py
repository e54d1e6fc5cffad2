"""Commands for data protection: erasure, subject reports, vacuum, the audit chain.

Registered on the ``oms-rdf`` group by :func:`register`; each opens the store the
way the other commands do (``open_store``) and prints one line per result.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import click

from ..errors import ErrorCode, IntegrityError
from ..store import ErasureReport, GrainStore
from ..times import to_millis


class FiniteFloat(click.FloatRange):
    """A float option within its range that is a number: click's FloatRange lets NaN
    through (no comparison with NaN is true), and an infinite time is no limit."""

    name = "finite float"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> Any:
        """Convert as FloatRange does, then refuse NaN and infinities."""
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def register(
    group: click.Group, open_store: Callable[[click.Context], GrainStore]
) -> None:
    """Add erase, erase-subject, subject-report, process-erasures, vacuum and audit."""

    @group.command("erase")
    @click.argument("address")
    @click.option("--reason", required=True, help="Why (goes in the audit log).")
    @click.option("--by", help="DID of who asks for it.")
    @click.pass_context
    def erase_cmd(
        ctx: click.Context, address: str, reason: str, by: str | None
    ) -> None:
        """Erase one grain, every layer of it (compliance only; checks hold).

        Example:

            oms-rdf --store mem.db erase 3288d0d4... --reason "GDPR Art. 17 request"
        """
        _print_report(open_store(ctx).erase(address, reason=reason, by=by))

    @group.command("erase-subject")
    @click.argument("name")
    @click.option("--reason", required=True, help="Why (goes in the audit log).")
    @click.option("--namespace", help="Only this namespace (default: every one).")
    @click.option("--user-id", help="Also the grains whose user_id is this.")
    @click.option("--by", help="DID of who asks for it.")
    @click.option(
        "--vacuum", is_flag=True, help="Rewrite the store so the bytes leave its files."
    )
    @click.pass_context
    def erase_subject_cmd(ctx: click.Context, name: str, reason: str, namespace: str | None,
                          user_id: str | None, by: str | None, vacuum: bool) -> None:  # fmt: skip
        """Erase every grain in which a person appears.

        Example:

            oms-rdf --store mem.db erase-subject "Alice Smith" --reason "request 42" --vacuum
        """
        store = open_store(ctx)
        report = store.erase_subject(name, reason=reason, namespace=namespace, user_id=user_id,
                                     by=by, vacuum=vacuum)  # fmt: skip
        _print_report(report)

    @group.command("subject-report")
    @click.argument("name")
    @click.option("--namespace", help="Only this namespace (default: every one).")
    @click.option("--user-id", help="Also the grains whose user_id is this.")
    @click.pass_context
    def subject_report_cmd(ctx: click.Context, name: str, namespace: str | None,
                           user_id: str | None) -> None:  # fmt: skip
        """Print, as JSON, every grain in which a person appears (a DSAR).

        Example:

            oms-rdf --store mem.db subject-report "Alice Smith" > alice.json
        """
        report = open_store(ctx).subject_report(
            name, namespace=namespace, user_id=user_id
        )
        click.echo(report.to_json())

    @group.command("process-erasures")
    @click.option("--now", help="The time to judge the SLA at, written as --valid-at "
                  "takes it (default now).")  # fmt: skip
    @click.option("--sla-days", type=FiniteFloat(min=0), default=30, show_default=True,
                  help="Days an erasure may wait after consent is withdrawn.")  # fmt: skip
    @click.pass_context
    def process_erasures_cmd(
        ctx: click.Context, now: str | None, sla_days: float
    ) -> None:
        """Erase what withdrawn consents left pending, once the SLA has passed.

        Example:

            oms-rdf --store mem.db process-erasures
        """
        when = None if now is None else to_millis(now, "--now")
        _print_report(open_store(ctx).process_erasures(when, sla_days=sla_days))

    @group.command("vacuum")
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

    @group.group("audit")
    def audit_group() -> None:
        """The hash-chained audit log."""

    @audit_group.command("verify")
    @click.pass_context
    def audit_verify_cmd(ctx: click.Context) -> None:
        """Check the audit log's hash chain; name the first bad event.

        Example:

            oms-rdf --store mem.db audit verify
        """
        report = open_store(ctx).verify_audit()
        if not report.ok:
            raise IntegrityError(f"the audit log fails its hash chain: {report.problem}",
                                 code=ErrorCode.INTEGRITY)  # fmt: skip
        click.echo(f"audit ok: {report.events} events")
        for chain, head in report.heads.items():
            sequence, digest = head.split(" ")
            click.echo(f"  chain {chain}: {sequence} events, head {digest}")


def _print_report(report: ErasureReport) -> None:
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
