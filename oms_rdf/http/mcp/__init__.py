"""``oms-rdf mcp``: the store as an agent's memory over the Model Context Protocol.

An MCP server on the official SDK (the ``[mcp]`` extra) over stdio, or over the
streamable HTTP transport on loopback. Its tools put, find, change and question
beliefs through the store's public methods, so every write runs the same checks,
protection policies and audit as a write through the library, the command line or
``oms-rdf serve``:

- ``believe``: put a belief (subject, relation, object, confidence, ...).
- ``recall``: ranked search over the beliefs in force (optionally at a point).
- ``beliefs_at``: the beliefs true at ``valid_at`` as known at ``as_of``.
- ``revise`` / ``supersede``: replace a belief by a new version; ``revise`` also
  asks the entrenchment tiers, ``supersede`` only the policies.
- ``retract``: withdraw a belief without replacement, saying why.
- ``evidence``: record supporting or refuting evidence (its SPRT state).
- ``history``: the supersession chain through a belief, oldest first.
- ``sparql``: a read-only SPARQL query (SELECT, ASK, CONSTRUCT, DESCRIBE).

Resources: ``oms://belief/{address}`` is one belief as JSON (its fields, index
state and ISO times), ``oms://beliefs/recent`` the beliefs most recently put that
are in force now.

Every argument is checked (types, ranges, lengths) before the store is touched; a
refusal is a tool error whose text starts with the spec's code (``ERR_SCHEMA: ...``,
``ERR_INVALIDATION_DENIED: ...``), never a crash, and leaves the store as it was.
A session given ``namespaces`` reads and writes only those: a belief of another
namespace is ``ERR_NOT_FOUND`` as if it did not exist, and a write into one is
``ERR_INVALIDATION_DENIED``, as a bearer token's scope is over HTTP.

The package: this module builds and runs the server; :mod:`.memory` holds its
tools and resources, :mod:`.arguments` their argument types. It may import the
layers below http (the store's public API only), the http modules that need no
Starlette (lanes, results, render, federation), and the MCP SDK and pydantic (the
``[mcp]`` extra).

>>> from oms_rdf import GrainStore
>>> server = create_server(GrainStore(), namespaces=["work"])
>>> server.name
'oms-rdf'
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from inspect import signature
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult, Tool, ToolAnnotations
from pydantic import ValidationError

from ...errors import ErrorCode, OmsError, SchemaError
from ...store import GrainStore
from .arguments import MAX_OBJECT, MAX_ROWS, MAX_TEXT, argument_error
from .memory import RECENT, Memory

__all__ = [
    "LOOPBACK",
    "MAX_OBJECT",
    "MAX_ROWS",
    "MAX_TEXT",
    "RECENT",
    "create_server",
    "exposure",
    "run",
]

_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, open_world_hint=False
)


class _MemoryServer(MCPServer[Any]):
    """MCPServer whose tool errors carry the spec's code: the store's refusals as
    they are raised, the refused arguments as ERR_SCHEMA, ERR_RANGE or ERR_EMPTY."""

    # Each tool's argument names: one the tool does not take is refused, never
    # ignored (an agent would believe it had said something it had not).
    arguments_of: dict[str, frozenset[str]]

    async def list_tools(self) -> list[Tool]:
        """The tools, each schema saying what :meth:`call_tool` holds to: no
        argument beyond those listed."""
        return [
            tool.model_copy(
                update={
                    "input_schema": {**tool.input_schema, "additionalProperties": False}
                }
            )
            for tool in await super().list_tools()
        ]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Context[Any, Any] | None = None,
    ) -> CallToolResult | InputRequiredResult:
        unknown = sorted(set(arguments) - self.arguments_of.get(name, set(arguments)))
        if unknown:
            taken = ", ".join(sorted(self.arguments_of[name]))
            raise ToolError(
                f"{ErrorCode.SCHEMA}: {name} takes no argument {', '.join(unknown)}; "
                f"it takes {taken} (at $.{unknown[0]})"
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(argument_error(name, cause)) from None
            if isinstance(cause, OmsError):  # the store's refusal, with its code
                raise ToolError(str(cause)) from None
            raise


def create_server(
    store: GrainStore,
    /,
    *,
    namespaces: Iterable[str] | None = None,
    query_timeout: float = 30.0,
) -> MCPServer[Any]:
    """Return an MCP server whose tools and resources are ``store``'s beliefs.

    Args:
        store: the store the session remembers in; every write goes through its
            public methods (policies, audit and atomic writes included).
        namespaces: the namespaces the session may read and write (None: all).
        query_timeout: seconds a ``sparql`` call may run before it is refused
            (ERR_QUERY) and the query stopped.

    Raises:
        SchemaError: ERR_SCHEMA for an empty namespace list or an empty name.
    """
    if isinstance(namespaces, str):  # a name is no list of names: not 'w', 'o', ...
        raise SchemaError(
            f"namespaces: expected a list of names, found the text {namespaces!r}",
            path="namespaces",
        )
    scope = None if namespaces is None else tuple(dict.fromkeys(namespaces))
    if scope is not None and (not scope or not all(scope)):
        raise SchemaError(
            f"namespaces: expected one or more non-empty names, found {list(scope)}",
            path="namespaces",
        )
    memory = Memory(store, scope, query_timeout)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield None
        finally:
            memory.close()  # the query threads go with the server

    server = _MemoryServer(
        "oms-rdf",
        lifespan=lifespan,
        title="oms-rdf memory",
        instructions=_INSTRUCTIONS,
        version=_version(),
        log_level="WARNING",
    )
    server.arguments_of = {}
    for fn, hints in (
        (memory.believe, _WRITE),
        (memory.recall, _READ),
        (memory.beliefs_at, _READ),
        (memory.revise, _WRITE),
        (memory.supersede, _WRITE),
        (memory.retract, _WRITE),
        (memory.evidence, _WRITE),
        (memory.history, _READ),
        (memory.sparql, _READ),
    ):
        server.add_tool(fn, name=fn.__name__, annotations=hints, structured_output=True)
        server.arguments_of[fn.__name__] = frozenset(signature(fn).parameters)
    server.resource(
        "oms://belief/{address}",
        name="belief",
        description="One belief as JSON: its fields, index state and ISO times.",
        mime_type="application/json",
    )(memory.belief_resource)
    server.resource(
        "oms://beliefs/recent",
        name="recent beliefs",
        description=f"The {RECENT} beliefs most recently put that are in force now.",
        mime_type="application/json",
    )(memory.recent_resource)
    return server


_INSTRUCTIONS = (
    "Long-term memory as beliefs (subject, relation, object, confidence) in a "
    "bi-temporal store. `believe` what you learn; `recall` before you answer; "
    "`revise` a belief that changed (by its address) rather than believing a second "
    "one; `retract` what turned out false; `evidence` to strengthen or weaken one. "
    "Ask the past with `beliefs_at`: valid_at is when it was true in the world, "
    "as_of when we believed it ('what did we believe last Tuesday' is as_of=that "
    "day). Errors start with a spec code such as ERR_INVALIDATION_DENIED (a "
    "protected belief) or ERR_SCHEMA (a bad argument)."
)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("oms-rdf")
    except PackageNotFoundError:  # pragma: no cover - a source tree not installed
        return "0"


LOOPBACK = ("127.0.0.1", "localhost", "::1")  # the SDK guards these from rebinding


def exposure(host: str, namespaces: Sequence[str] | None = None) -> str | None:
    """What an HTTP server on ``host`` lays open, when it is not loopback, else None.

    >>> exposure("127.0.0.1") is None
    True
    >>> exposure("0.0.0.0", ["work"])
    "0.0.0.0 is not loopback and MCP over HTTP has no authentication: anyone who reaches it reads and writes namespace(s) ['work']"
    """
    if host in LOOPBACK:
        return None
    scope = "every namespace" if not namespaces else f"namespace(s) {list(namespaces)}"
    return (
        f"{host} is not loopback and MCP over HTTP has no authentication: anyone "
        f"who reaches it reads and writes {scope}"
    )


def run(
    store: GrainStore,
    /,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 7879,
    namespaces: Sequence[str] | None = None,
    query_timeout: float = 30.0,
) -> None:
    """Serve ``store`` to one MCP client over stdio, or over streamable HTTP at
    ``http://host:port/mcp``, until the client goes (or Ctrl-C); then close it.

    Over stdio, stdout carries the protocol only: nothing else is printed there.
    """
    server = create_server(store, namespaces=namespaces, query_timeout=query_timeout)
    warning = exposure(host, namespaces) if http else None
    if warning:
        print(f"oms-rdf mcp: warning: {warning}", file=sys.stderr)
    try:
        if http:
            server.run("streamable-http", host=host, port=port)
        else:
            server.run("stdio")
    except KeyboardInterrupt:  # pragma: no cover - a person's Ctrl-C
        print("stopped", file=sys.stderr)
    finally:
        store.close()
