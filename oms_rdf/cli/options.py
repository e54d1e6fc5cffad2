"""Option sets more than one command takes, written once as decorators.

A time option is read by the one rule of :mod:`oms_rdf.times` as click parses it
(ISO 8601, UTC when no zone is given; epoch ms as ``ms:N`` or 11+ digits), so a
command is given epoch ms (or None) and a malformed time is refused with
ERR_SCHEMA before any store opens.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..times import span_millis, to_millis

F = TypeVar("F", bound=Callable[..., Any])
MAX_LIMIT = 1_000_000  # the most beliefs one search prints
TIME_HELP = (
    "ISO 8601 (2024, 2024-06, 2024-06-01, 2024-06-01T12:00:00Z; no zone: UTC) or "
    "epoch ms (ms:1717243200000, or 11+ digits)"
)


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


def millis(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """A time option's value as epoch ms (see the module docstring)."""
    return None if value is None else to_millis(value, param.opts[0])


def time_option(name: str, what: str) -> Callable[[F], F]:
    """An option that takes a time, default now (see the module docstring)."""
    return click.option(name, callback=millis, help=f"{what}{TIME_HELP} (default now).")


def spans(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[int | None, int | None] | None:
    """A range option's value, ``START/END``, as epoch ms (None: open)."""
    return None if value is None else span_millis(value, param.opts[0])


def range_options(fn: F) -> F:
    """A range question, ``--valid-during`` and ``--system-during`` (START/END)."""
    ends = f"START/END, each {TIME_HELP}; .. for an open end"
    fn = click.option(
        "--system-during",
        callback=spans,
        help=f"System time: the range of what the store knew, {ends}.",
    )(fn)
    return click.option(
        "--valid-during",
        callback=spans,
        help=f"Valid time: the range of when it was true, {ends}; each row then "
        "binds ?validFrom ?validTo ?systemFrom ?systemTo.",
    )(fn)


def time_options(fn: F) -> F:
    """The bi-temporal point, ``--valid-at`` and ``--as-of`` (each default now)."""
    fn = time_option("--as-of", "System time: what the store knew then; ")(fn)
    return time_option("--valid-at", "Valid time: when it was true; ")(fn)


def invalidation_options(fn: F) -> F:
    """The ADDRESS of a grain to invalidate, who asks (``--by``) and when (``--at``)."""
    fn = time_option("--at", "When: ")(fn)
    fn = click.option("--by", help="DID of who asks for it.")(fn)
    return click.argument("address")(fn)


def server_options(port: int, host_help: str) -> Callable[[F], F]:
    """The options of a command that serves: its own --store, --host and --port."""

    def decorate(fn: F) -> F:
        fn = click.option(
            "--port", default=port, show_default=True, type=click.IntRange(1, 65535)
        )(fn)
        fn = click.option(
            "--host", default="127.0.0.1", show_default=True, help=host_help
        )(fn)
        return click.option(
            "--store",
            "store_path",
            type=click.Path(),  # a file there is refused as the global --store is
            help="Directory of the on-disk store (or the global --store).",
        )(fn)

    return decorate
