"""The ``oms-rdf`` command line: thin commands over the library's public API.

The group (here) takes the options that say where the store is and turns every
refusal into one line, ``error: ERR_X: …``, with exit status 1. The commands live
one module per group: :mod:`.grains` (grain files: encode, decode, sign…),
:mod:`.writes` (put, supersede, retract, update…), :mod:`.questions` (get,
beliefs, search, history, query), :mod:`.files` (import, export),
:mod:`.serving` (serve, mcp), :mod:`.privacy` (erasure, audit) and :mod:`.demo`;
they share :mod:`.opening` (the store), :mod:`.reading` (input files),
:mod:`.output` (tables, JSON), :mod:`.options` and :mod:`.progress` (bars).

The CLI is the top layer: it may import any layer below it (codec, rdf, the
store, io, http), their public names only; nothing imports it.
"""

from __future__ import annotations

import dataclasses
import os
import stat
import sys
from typing import Any

import click

from ..errors import ErrorCode, OmsError, SchemaError
from . import demo, files, grains, privacy, questions, serving, writes
from .opening import Where, undo_new_store

_ARGUMENTS = "oms_rdf.arguments"  # ctx.meta: the command line as given


class OneLineErrors(click.Group):
    """Turns every OmsError, and every file the system cannot open or write, into one
    line ``error: …`` and exit 1."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ARGUMENTS] = list(args)  # checked in invoke, where errors are lines
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        """Invoke the command; print a refusal as one line (or its stack, --traceback)."""
        try:
            refuse_undecodable(ctx.meta.get(_ARGUMENTS, []))
            refuse_repeated(self, ctx.meta.get(_ARGUMENTS, []))
            done = super().invoke(ctx)
            # A write that recorded nothing (a DELETE DATA of what nobody
            # believes) leaves no new store behind either; an import records
            # itself, even of nothing, and keeps it.
            undo_new_store(ctx)
            return done
        except (OmsError, OSError) as exc:
            undo_new_store(ctx)  # the command closed its store on the way out
            if isinstance(exc, BrokenPipeError) and _reader_gone(exc):
                ctx.exit(141)  # as a tool killed by SIGPIPE: `| head` read enough
            if ctx.params.get("traceback"):
                raise
            click.echo(f"error: {said(exc)}", err=True)
            ctx.exit(1)
        except KeyboardInterrupt:  # Ctrl-C: every write is whole or not made
            undo_new_store(ctx)
            click.echo(
                "error: ERR_STORE: interrupted: the write under way was not made "
                "(each is whole or nothing); what was written before it stays",
                err=True,
            )
            ctx.exit(130)  # as a shell reports a command stopped by SIGINT


def refuse_repeated(group: click.Group, args: list[str]) -> None:
    """Refuse an option given twice where it takes one value: click keeps the
    last, so ``--valid-at 2024 --valid-at 2030`` asked 2030, and ``--store A
    erase ... --store B`` erased in B. ``--grains``/``--plain`` are one option.

    Raises:
        SchemaError: ERR_SCHEMA naming the option.
    """
    params, seen = list(group.params), set()
    command: click.Command = group
    at = 0
    while at < len(args) and args[at] != "--":
        arg = args[at]
        option = _option(params, arg.split("=", 1)[0]) if arg.startswith("--") else None
        if option is not None:
            names = frozenset((*option.opts, *option.secondary_opts))
            if names in seen and not (option.multiple or option.count):
                raise SchemaError(
                    f"{arg.split('=', 1)[0]} is given twice; give it once"
                )
            seen.add(names)
            at += 0 if option.is_flag or "=" in arg else 1  # its value
        elif isinstance(command, click.Group) and arg in command.commands:
            command = command.commands[arg]
            params += command.params
        at += 1


def _option(params: list[click.Parameter], name: str) -> click.Option | None:
    for param in params:
        if isinstance(param, click.Option) and name in (
            *param.opts,
            *param.secondary_opts,
        ):
            return param
    return None


def refuse_undecodable(args: list[str]) -> None:
    """Refuse an argument that is not UTF-8 (Python keeps its bytes as lone
    surrogates, which no grain, IRI or literal may hold) before anything runs.

    Raises:
        SchemaError: ERR_SCHEMA naming the argument.
    """
    for arg in args:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape")
            raise SchemaError(
                f"expected UTF-8 text in every argument; found {shown!r} (set the "
                "terminal or the script to UTF-8)"
            ) from None


def _reader_gone(exc: BrokenPipeError) -> bool:
    """Whether the pipe that broke is standard output's, whose reader left (not a
    file's, nor a server's socket): then nothing more is said."""
    try:
        piped = stat.S_ISFIFO(os.fstat(sys.stdout.fileno()).st_mode)
    except (OSError, ValueError):  # no stdout, or one without a descriptor
        return False
    if not piped or exc.filename is not None:
        return False
    # Python flushes stdout again at exit: point it at nothing first.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return True


def said(exc: Exception) -> str:
    """The one line of a refusal: an OmsError as it is (a message of several
    lines, such as a parser's list of what it expected, joined), an OSError with
    its code."""
    if not isinstance(exc, OSError):
        return " ".join(line.strip() for line in str(exc).splitlines())
    name = (
        exc.filename2 if exc.filename2 is not None else exc.filename
    )  # rename: the target
    if isinstance(name, str) and name.endswith(".partial"):
        name = name[: -len(".partial")]  # the file the user named
    where = f": {name}" if name is not None else ""
    code = (
        ErrorCode.NOT_FOUND if isinstance(exc, FileNotFoundError) else ErrorCode.STORE
    )
    return f"{code}: {exc.strerror or exc}{where}"


@click.group(cls=OneLineErrors)
@click.option("--traceback", is_flag=True, help="Show the full stack on errors.")
@click.option(
    "--store",
    "store_path",
    envvar="OMS_RDF_STORE",
    help="Directory of the on-disk store, or the URL of an Oxigraph server "
    "(http(s)://host:port: /query, /update, /store) (or $OMS_RDF_STORE).",
)
@click.option(
    "--query-url", help="A SPARQL 1.1 server's query endpoint (instead of --store)."
)
@click.option("--update-url", help="Its update endpoint (default: the query endpoint).")
@click.option("--store-url", help="Its Graph Store Protocol endpoint, for bulk loads.")
@click.option(
    "--virtuoso",
    envvar="OMS_RDF_VIRTUOSO",
    help="The base URL of a Virtuoso server, http(s)://[user:password@]host:port "
    "(or $OMS_RDF_VIRTUOSO); a user needs the SPARQL_UPDATE role to write.",
)
@click.option(
    "--forward-only",
    is_flag=True,
    help="System time moves forward only: a write dated before the store's last "
    "commit is refused, so past as-of answers are final. Recorded in the store, "
    "and kept by every later opening.",
)
@click.version_option(package_name="oms-rdf")
@click.pass_context
def cli(
    ctx: click.Context,
    traceback: bool,
    store_path: str | None,
    query_url: str | None,
    update_url: str | None,
    store_url: str | None,
    virtuoso: str | None,
    forward_only: bool,
) -> None:
    """Open Memory Specification grains as a bi-temporal RDF knowledge graph."""
    endpoints = None if query_url is None else (query_url, update_url, store_url)
    ctx.obj = Where(
        virtuoso=virtuoso,
        endpoints=endpoints,
        path=store_path,
        forward_only=forward_only,
    )


def store_after_command(
    ctx: click.Context, _param: click.Parameter, value: str | None
) -> None:
    """Take ``--store`` given after the command as if it came before it."""
    if value is not None:
        root = ctx.find_root()
        root.obj = dataclasses.replace(
            root.obj, path=value, virtuoso=None, endpoints=None
        )


def accept_store_after(command: click.Command) -> None:
    """Let ``oms-rdf beliefs --store DIR`` mean ``oms-rdf --store DIR beliefs``
    (a command that serves has a ``--store`` of its own already), and so for each
    command of a group (``oms-rdf audit verify --store DIR``)."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            accept_store_after(sub)
    if any("--store" in p.opts for p in command.params):
        return
    command.params.append(
        click.Option(
            ["--store"],
            expose_value=False,
            is_eager=True,  # before the arguments and options that open the store
            callback=store_after_command,
            help="The store, as the global --store (before the command) gives it.",
        )
    )


for module in (grains, writes, questions, files, serving, privacy, demo):
    for command in module.COMMANDS:
        if module not in (grains, demo):  # these open no store
            accept_store_after(command)
        cli.add_command(command)


def main() -> None:
    """Run the ``oms-rdf`` command line."""
    cli(prog_name="oms-rdf")
