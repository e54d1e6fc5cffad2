"""Commands that serve a store: ``serve`` (HTTP, SPARQL Protocol) and ``mcp`` (MCP).

Each checks, before it opens the store, that its address can be bound, and says
that it serves only once the port takes connections, so a script can wait for
that line; a server that fails to start is a one-line refusal.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import threading
from collections.abc import Iterator

import click

from ..errors import ErrorCode, StoreError
from .opening import made_store, open_store, refuse_missing
from .options import FiniteFloat, server_options

LOOPBACK_OF = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}


@click.command("serve")
@server_options(7878, "Address to bind.")
@click.option(
    "--query-timeout",
    default=30.0,
    show_default=True,
    type=FiniteFloat(min=0, min_open=True),
    help="Seconds a query may run before the answer is a 503.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),  # a missing one: ERR_NOT_FOUND, when read
    help='Bearer tokens: {"TOKEN": {"namespaces": [...] or "*", "write": true}}.',
)
@click.option(
    "--max-body",
    default=16 * 1024 * 1024,
    show_default=True,
    type=click.IntRange(min=1),
    help="Bytes a request body may have (more: 413).",
)
@click.option(
    "--cors",
    multiple=True,
    metavar="ORIGIN",
    help="An origin whose browser pages may call the server (repeatable; none by "
    "default).",
)
@click.pass_context
def serve_cmd(
    ctx: click.Context,
    store_path: str | None,
    host: str,
    port: int,
    query_timeout: float,
    token_file: str | None,
    max_body: int,
    cors: tuple[str, ...],
) -> None:
    """Serve the store over HTTP: SPARQL Protocol and Update, Graph Store (read), a page.

    Needs the [server] extra. Example:

        oms-rdf serve --store mem.db --port 7878
    """
    try:
        from ..http.app import load_tokens, serve
    except ImportError:
        raise click.UsageError(
            "serve needs the server extra: pip install 'oms-rdf[server]'"
        ) from None
    tokens = load_tokens(token_file) if token_file else None
    refuse_missing(ctx, store_path)
    check_bindable(host, port)  # before the store opens, and before "serving on"
    store = open_store(ctx, path=store_path)
    mode = "tokens required" if tokens else "read-only, open"
    line = f"serving on {url_of(host, port)} ({mode}; Ctrl-C to stop)"
    with announced_when_listening(host, port, line):
        serve(
            store,
            host=host,
            port=port,
            tokens=tokens,
            query_timeout=query_timeout,
            max_body=max_body,
            cors=cors,
        )


def url_of(host: str, port: int) -> str:
    """The server's URL: an IPv6 address in brackets (RFC 3986)."""
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


@click.command("mcp")
@server_options(7879, "Address to bind, with --http.")
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    metavar="NS",
    help="A namespace the session may read and write (repeatable; default: all).",
)
@click.option(
    "--http",
    is_flag=True,
    help="Streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
)
@click.option(
    "--query-timeout",
    default=30.0,
    show_default=True,
    type=FiniteFloat(min=0.1),
    help="Seconds a sparql call may run before it is refused.",
)
@click.pass_context
def mcp_cmd(
    ctx: click.Context,
    store_path: str | None,
    host: str,
    port: int,
    namespaces: tuple[str, ...],
    http: bool,
    query_timeout: float,
) -> None:
    """Serve the store as an agent's memory over MCP (stdio, or --http on loopback).

    An agent's memory may start empty: where nothing is (or in an empty folder) a
    new store is made, and a note on stderr says so. Needs the [mcp] extra. Example:

        oms-rdf mcp --store mem.db --namespace work
    """
    try:
        from ..http.mcp import run
    except ImportError:
        raise click.UsageError(
            "mcp needs the mcp extra: pip install 'oms-rdf[mcp]'"
        ) from None
    if any(not n.strip() for n in namespaces):
        raise click.BadParameter(
            "a namespace cannot be empty", param_hint="--namespace"
        )
    if http:
        check_bindable(host, port)
    store = open_store(ctx, path=store_path, create=True, keep_new=True)
    line = f"MCP on {url_of(host, port)}mcp (no authentication; Ctrl-C to stop)"
    made = made_store(ctx)
    if made is not None:  # a typo in --store is no silent new memory
        note = f"note: no store at {made}: making a new, empty one"
        if http:
            line = f"{line}\n{note}"  # after the line a client waits for
        else:
            click.echo(note, err=True)
    with (
        announced_when_listening(host, port, line) if http else contextlib.nullcontext()
    ):
        run(
            store,
            http=http,
            host=host,
            port=port,
            namespaces=namespaces or None,
            query_timeout=query_timeout,
        )


def check_bindable(host: str, port: int) -> None:
    """Bind each address of ``host`` as the server will (SO_REUSEADDR, IPv6 only on
    IPv6), then let go, so a port another process listens on is a clear refusal.

    Raises:
        StoreError: ERR_CONFLICT when the address is in use; ERR_STORE when the host
            does not resolve or the address cannot be bound (permission, not local).
    """
    where = f"{host}:{port}"
    try:
        addresses = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except (OSError, UnicodeError) as exc:
        raise StoreError(
            f"cannot serve on {where}: --host {host!r} does not resolve ({exc})"
        ) from None
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise StoreError(
                        f"cannot serve on {where}: the address is already in use "
                        "(another process listens there; choose another --port)",
                        code=ErrorCode.CONFLICT,
                    ) from None
                raise StoreError(f"cannot serve on {where}: {exc.strerror}") from None


@contextlib.contextmanager
def announced_when_listening(host: str, port: int, line: str) -> Iterator[None]:
    """Print ``line`` once ``host:port`` takes connections (the server binds inside
    ``serve``); a server that fails to start turns into a one-line refusal."""
    done = threading.Event()
    target = LOOPBACK_OF.get(host, host)

    def announce() -> None:
        while not done.is_set():
            try:
                socket.create_connection((target, port), timeout=1).close()
            except OSError:
                done.wait(0.02)
                continue
            click.echo(line, err=True)
            return

    watcher = threading.Thread(target=announce, name="serving-on", daemon=True)
    watcher.start()
    try:
        yield
    except SystemExit as exc:  # uvicorn exits 3 when it cannot bind after all
        if exc.code in (0, None):
            raise
        raise StoreError(
            f"cannot serve on {host}:{port}: the server did not start (its reason "
            "is on the line above)"
        ) from None
    finally:
        done.set()
        watcher.join(5)


COMMANDS = [serve_cmd, mcp_cmd]
