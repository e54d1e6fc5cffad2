"""Commands that move a store to and from files: export and import (``-``: stdio)."""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from ..errors import SchemaError
from ..io import FORMATS, PLAIN_FORMATS, format_for
from .opening import open_store
from .options import FiniteFloat, time_options
from .progress import Bars
from .reading import refuse_empty_path

FORMAT_CHOICE = click.Choice(list(FORMATS))
FORMAT_HELP = "Default: from the file suffix."


@click.command("export")
@click.argument("dest")
@click.option("--format", "fmt", type=FORMAT_CHOICE, help=FORMAT_HELP)
@click.option(
    "--grains/--plain",
    default=None,
    help="Carry the grains and their index state, or only the plain knowledge "
    "(default: plain for turtle, ntriples and rdfxml).",
)
@time_options
@click.option("--namespace", help="Plain knowledge of this namespace only.")
@click.pass_context
def export_cmd(
    ctx: click.Context,
    dest: str,
    fmt: str | None,
    grains: bool | None,
    valid_at: int | None,
    as_of: int | None,
    namespace: str | None,
) -> None:
    """Write the store (grains) or its knowledge (plain triples) to DEST (- for stdout).

    Example:

    \b
        oms-rdf --store mem.db export backup.trig
        oms-rdf --store mem.db export then.ttl --valid-at 2024-01-01
    """
    stdout = dest == "-" or _is_stdout(dest)
    out: Any = sys.stdout.buffer if stdout else dest
    named = "x" if dest == "-" else dest
    fmt = format_for(named, fmt or ("trig" if stdout and dest == "-" else None))
    count = open_store(ctx, read=True).export(
        out,
        format=fmt,
        grains=grains,
        namespace=namespace,
        valid_at=valid_at,
        as_of=as_of,
    )
    plain = fmt in PLAIN_FORMATS if grains is None else not grains
    click.echo(f"exported {count} {'triples' if plain else 'grains'}", err=stdout)


def _is_stdout(path: str) -> bool:
    """Whether ``path`` names this process's standard output (``/dev/stdout``,
    ``/dev/fd/1``): written through it, with the summary on stderr, never
    replaced by a file of its own (the file stdout goes to would lose what the
    shell wrote around the export)."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, io.UnsupportedOperation):
        return False


@click.command("import")
@click.argument("source")
@click.option("--format", "fmt", type=FORMAT_CHOICE, help=FORMAT_HELP)
@click.option("--skip-invalid", is_flag=True, help="Skip bad records and report them.")
@click.option("--namespace", help="Namespace of beliefs adopted from a foreign graph.")
@click.option(
    "--confidence",
    type=FiniteFloat(0.0, 1.0),
    default=1.0,
    show_default=True,
    help="Confidence of beliefs adopted from a foreign graph.",
)
@click.option("--base-iri", help="Resolves relative IRIs (default: the file's URI).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.pass_context
def import_cmd(
    ctx: click.Context,
    source: str,
    fmt: str | None,
    skip_invalid: bool,
    namespace: str | None,
    confidence: float,
    base_iri: str | None,
    quiet: bool,
) -> None:
    """Import SOURCE (- for stdin, with --format) into the store: all or nothing unless --skip-invalid.

    RDF that is not an oms_rdf export (Turtle, N-Triples, TriG, N-Quads, JSON-LD,
    RDF/XML) is adopted: each triple becomes a belief, named graphs kept; triples
    already believed in the namespace are counted, not added. Example:

        oms-rdf --store mem.db import people.ttl --namespace crm --confidence 0.8
    """
    refuse_empty_path(source)
    stdin = source == "-"
    if stdin and fmt is None:  # no name to tell the format by
        raise SchemaError(
            f"reading stdin needs --format: one of {', '.join(FORMATS)}",
            path="--format",
        )
    size = 0 if stdin else Path(source).stat().st_size  # before a store is made
    if not stdin and Path(source).is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), source)
    store = open_store(ctx, create=True)
    with reading_bar(size if not quiet else 0) as read, Bars() as stages:
        report = store.import_(
            sys.stdin.buffer if stdin else source,
            format=fmt,
            progress=read,
            skip_invalid=skip_invalid,
            namespace=namespace,
            confidence=confidence,
            base_iri=base_iri,
            stage=None if quiet else stages,
        )
    for where, why in report.skipped:
        click.echo(f"skipped {where}: {why}", err=True)
    held = f", already held {report.held}" if report.held else ""
    click.echo(
        f"imported {report.added} grains ({report.quads} quads){held}, already "
        f"believed {report.believed}, skipped {len(report.skipped)}"
    )


@contextmanager
def reading_bar(size: int) -> Iterator[Callable[[int], object] | None]:
    """A bar of the bytes read on stderr, if it is a terminal and there is a size."""
    if size <= 0 or not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=size, label="reading", file=sys.stderr) as bar:
        yield bar.update


COMMANDS = [export_cmd, import_cmd]
