"""``oms-rdf serve``: the store over HTTP, for every client that is not this process.

- ``/sparql``: the SPARQL 1.1 Protocol (GET, POST form, POST
  ``application/sparql-query``) over the dataset ``store.query`` uses, with
  ``default-graph-uri``/``named-graph-uri`` and the extension parameters
  ``valid_at`` and ``as_of`` (ISO 8601 or epoch ms) for time travel, ``valid_during``
  and ``system_during`` (``START/END``) for ranges. SELECT and ASK
  answer in SPARQL JSON, XML, CSV or TSV; CONSTRUCT and DESCRIBE in Turtle,
  N-Triples or JSON-LD, by content negotiation. A malformed query is a 400 with
  the parser's message; a query over its time limit a 503, and cancelled (an
  answer that streams stops between two rows; what pyoxigraph 0.5 evaluates in
  one step, such as an aggregate, runs in a process killed at the limit:
  :mod:`.isolation`, :mod:`.forking`). With no query, ``GET`` answers the Service
  Description (:mod:`.description`). SPARQL Update over GET, or a request with both
  ``query`` and ``update``, is a 400 (SPARQL 1.1 Protocol §2.1, §2.2).
- ``/store``: the Graph Store Protocol, read-only (``?default``, ``?graph=IRI``),
  with ``valid_at``/``as_of``: the knowledge with the exact terms the grains record.
- ``/v1/facts``: the facts API (:mod:`oms_rdf.http.facts`), described at ``/openapi.json``
  and, for people, ``/docs``; ``/v1/transactions``, a publication as one store
  transaction (:mod:`.batch`).
- ``/``: the explorer, a page to query the store at any point in time and see
  its history (:mod:`.page`, :mod:`.explorer`).

- SPARQL Update at ``/sparql`` (``update=``, or a body of type
  ``application/sparql-update``) as belief operations (:mod:`oms_rdf.io.update`):
  ``INSERT DATA`` adopts, ``DELETE DATA`` retracts through the policies (a refusal is
  a 403 naming the spec code, and the store is unchanged), any other form is a 400.

Limits: a request body over ``max_body`` bytes is a 413, answered from its
``content-length`` before it is read (:mod:`oms_rdf.http.middleware`); query text
over ``MAX_QUERY_CHARS`` or nested deeper than ``MAX_DEPTH`` is a 400 before any
parser runs (:mod:`oms_rdf.rdf.limits`). Store calls never run on the event loop
(:mod:`oms_rdf.http.lanes`): queries on a lane of ``query_workers`` threads, within
``query_timeout``; everything else (writes included) on a lane of its own, without
a time limit, so that a write is never left running behind an error (a write
answers when it has committed or failed). Every error body is JSON
``{"code", "message", "path"}``.

This module assembles the app from its parts: :mod:`.protocol` (``/sparql``,
``/store``), :mod:`.facts` (``/v1``), :mod:`.page` (``/``), :mod:`.auth` (tokens),
:mod:`.middleware` (Host and body guards).

Bearer tokens (:func:`load_tokens`) are scoped to namespaces and to reading or
writing; a token sees only the knowledge of its namespaces, through every route
(``GRAPH`` and ``DESCRIBE`` included, since the dataset itself is narrowed). Without
tokens the server is read-only and open to whoever reaches it (it binds loopback
by default, and :func:`serve` bound to loopback answers only to loopback ``Host``
names, against DNS rebinding). Starlette and uvicorn come with the ``[server]`` extra.

>>> from oms_rdf import GrainStore
>>> app = create_app(GrainStore())
>>> sorted(r.path for r in app.routes if not r.path.startswith(("/explorer", "/v1")))
['/', '/docs', '/openapi.json', '/sparql', '/store']
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response

from ..errors import ErrorCode
from ..store import GrainStore
from .auth import Token, authorizer, load_tokens
from .batch import batch_routes
from .explorer import explorer_routes
from .facts import fact_routes
from .lanes import Lane, runner_on
from .middleware import LOOPBACK, BodyLimit, Cors, HostCheck
from .page import page_route
from .protocol import SparqlProtocol
from .responses import error_response
from .results import RESULT_TYPES, serialize_results

__all__ = [
    "MAX_BODY",
    "RESULT_TYPES",
    "Token",
    "create_app",
    "load_tokens",
    "serialize_results",
    "serve",
]

MAX_BODY = 16 * 1024 * 1024  # bytes of a request body, by default


def create_app(
    store: GrainStore,
    *,
    tokens: Mapping[str, Token] | None = None,
    query_timeout: float = 30.0,
    max_body: int = MAX_BODY,
    query_workers: int = 4,
    store_workers: int = 8,
    cors: Sequence[str] = (),
    hosts: Sequence[str] | None = None,
) -> Starlette:
    """Return the ASGI app serving ``store`` (see the module docstring).

    ``hosts``, when given, are the only names the ``Host`` header may carry (a
    page on another site that rebinds its DNS name to this address is refused).

    ``cors`` lists the origins (``https://app.example``) whose pages may call the
    server from a browser; none by default, so that no other site's page reads
    its answers.

    ``app.state.lanes`` holds its two worker lanes (queries, and every other store
    call); :func:`serve` closes them on a stop.
    """
    queries = Lane("oms-query", workers=query_workers)
    calls = Lane("oms-store", workers=store_workers, backlog=256)
    authorize = authorizer(tokens)
    protocol = SparqlProtocol(
        store, authorize, queries=queries, calls=calls, query_timeout=query_timeout
    )
    app = Starlette(
        routes=[
            *protocol.routes(),
            page_route(),
            *explorer_routes(store, authorize, run=runner_on(calls)),
            *fact_routes(store, authorize, run=runner_on(calls)),
            *batch_routes(store, authorize, run=runner_on(calls)),
        ],
        middleware=_middleware(cors=cors, hosts=hosts, max_body=max_body),
        exception_handlers={HTTPException: _http_error, Exception: _http_error},
    )
    app.state.lanes = (queries, calls)
    app.state.isolated = protocol.isolated  # serve() kills its processes at a stop
    return app


def _middleware(
    *, cors: Sequence[str], hosts: Sequence[str] | None, max_body: int
) -> list[Middleware]:
    """The guards in front of every route, outermost first."""
    guards = []
    if cors:
        guards.append(
            Middleware(
                Cors,
                allow_origins=list(cors),
                allow_methods=["GET", "POST", "PUT", "DELETE"],
                allow_headers=["authorization", "content-type"],
            )
        )
    if hosts is not None:
        guards.append(Middleware(HostCheck, hosts=hosts))
    guards.append(Middleware(BodyLimit, max_body=max_body))
    return guards


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's errors (404, 405, 413, ...) and any crash, as our JSON error."""
    if isinstance(exc, HTTPException):
        status, message, headers = exc.status_code, exc.detail, exc.headers
    else:
        status, message, headers = 500, "internal error", None
    code = {404: ErrorCode.NOT_FOUND, 413: ErrorCode.RANGE}.get(
        status, ErrorCode.SCHEMA
    )
    code = code if status < 500 else ErrorCode.STORE
    return error_response(status, code, message, headers=headers)


def serve(
    store: GrainStore,
    *,
    host: str = "127.0.0.1",
    port: int = 7878,
    tokens: Mapping[str, Token] | None = None,
    query_timeout: float = 30.0,
    max_body: int = MAX_BODY,
    grace: float = 3.0,
    cors: Sequence[str] = (),
) -> None:
    """Serve ``store`` until SIGINT or SIGTERM, then flush it and return.

    A stop is bounded: uvicorn gives the requests in flight ``grace`` seconds,
    the queries still running are cancelled (and given a second more), the writes
    in flight are waited for (up to ten times ``grace``: a write is atomic, it is
    never cut in the middle), and the store is flushed. A query pyoxigraph cannot
    interrupt may still hold a worker then: the process ends at once after the
    flush (its lock goes with it) instead of waiting for that query.
    """
    import signal

    import uvicorn

    def stop(signum: int, frame: object) -> None:
        raise _SignalledError

    if tokens is None and host not in LOOPBACK:
        print(
            f"oms-rdf serve: warning: {host} is not loopback and there is no token "
            "file: anyone who reaches it reads every namespace",
            file=sys.stderr,
        )
    # Bound to loopback, only loopback names: DNS rebinding cannot reach it.
    hosts = list(LOOPBACK) if host in LOOPBACK else None
    app = create_app(
        store,
        tokens=tokens,
        query_timeout=query_timeout,
        max_body=max_body,
        cors=cors,
        hosts=hosts,
    )
    if app.state.isolated is not None:  # queries run in processes from the start
        app.state.isolated.ready(30.0)
    previous = {
        sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=max(1, round(grace)),
        )
    except _SignalledError:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _stop(app, store, grace)


def _stop(app: Starlette, store: GrainStore, grace: float) -> None:
    """Cancel the queries, wait for the writes, flush: the bounded end of a serve."""
    import os

    queries, calls = app.state.lanes
    stopped = queries.close(grace=min(grace, 1.0))  # cancelled: they stop at once
    if app.state.isolated is not None:
        app.state.isolated.close()  # a query's process is killed, not waited for
    written = calls.close(grace=10 * grace)
    store.flush()
    if not (stopped and written):
        print(
            "oms-rdf serve: work still running at the stop was abandoned; the store "
            "was flushed",
            file=sys.stderr,
            flush=True,
        )
        os._exit(0)


class _SignalledError(Exception):
    """SIGINT or SIGTERM, after uvicorn's graceful shutdown."""
