"""``POST /v1/transactions``: a publication over HTTP, as one store transaction.

The body is ``{"operations": [...]}``, each operation one of::

    {"op": "put", "fact": {...}}
    {"op": "supersede", "id": ID, "fact": {...}, "justification": TEXT,
     "valid_from": T, "valid_to": T}
    {"op": "retract", "id": ID, "reason": TEXT, "valid_from": T, "valid_to": T}
    {"op": "contradict", "id": ID, "reason": TEXT}

``fact`` is a fact's fields as ``POST /v1/facts`` takes them, ``T`` epoch ms or
ISO 8601 text; ``valid_from``/``valid_to`` make a supersede or a retract one over
that portion of valid time (SQL:2011 ``FOR PORTION OF``; a put or a contradict
given one is refused). Every operation is checked against
the token first (a fact outside its namespaces is a 404, a new one a 403), then
all run in one :meth:`~oms_rdf.GrainStore.transaction`: one atomic write, one
system time, one audit event, or nothing. A refused operation is answered as the
facts API answers it (``{"code", "message", "path"}``, ``path`` naming the
operation: ``$.operations[2]``) and the store is unchanged. The answer (201) lists
the address each operation made or targeted, and for one over a portion of valid
time, the grains written in its target's place (``split_into``: the new grain
and the pieces kept).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..codec.grain import Grain
from ..errors import ErrorCode, OmsError, SchemaError
from ..store import GrainStore
from ..store.admission import successor_fields
from ..store.portion import over_portion, portion_of
from ..store.transaction import refuse_made
from .auth import Authorize, Token
from .bodies import json_body
from .facts import FactsApi, Refused
from .lanes import Runner

__all__ = ["MAX_OPERATIONS", "batch_routes"]

MAX_OPERATIONS = 10_000  # operations of one transaction
_OPS = ("put", "supersede", "retract", "contradict")


def batch_routes(
    store: GrainStore, authorize: Authorize, *, run: Runner
) -> list[Route]:
    """Return the ``POST /v1/transactions`` route over ``store``."""
    api = FactsApi(store, authorize, run)
    return [Route("/v1/transactions", api.guarded(_transaction), methods=["POST"])]


def _transaction(api: FactsApi, request: Request, raw: bytes) -> Response:
    token = api.scope(request, write=True)
    body = json_body(raw)
    operations = body.get("operations")
    if not isinstance(operations, list) or not 0 < len(operations) <= MAX_OPERATIONS:
        raise SchemaError(
            f'expected "operations": a list of 1 to {MAX_OPERATIONS} operations',
            path="$.operations",
        )
    made: set[str] = set()  # what earlier operations write: not stored yet
    done: list[dict[str, Any]] = []
    # Checked inside: a fact without created_at takes the transaction's one time.
    with api.store.transaction() as tx:
        checked = [_checked(api, token, i, op, made) for i, op in enumerate(operations)]
        for i, (op, target, item) in enumerate(checked):
            try:
                done.append({"op": op["op"], "id": _apply(tx, op, target, item)})
            except OmsError as exc:
                raise _at(exc, i) from None
    for answer, (op, target, _item) in zip(done, checked, strict=True):
        if target is not None and op.get("valid_from") is not None:
            answer["split_into"] = list(api.store.status(target.address).split_into)
    return JSONResponse({"operations": done}, status_code=201)


def _checked(
    api: FactsApi, token: Token, i: int, op: Any, made: set[str]
) -> tuple[dict[str, Any], Grain | None, Any]:
    """An operation with the fact it targets and the fields it writes, each
    checked against the token; nothing is written yet. ``made``: the addresses
    the operations before it write, to which it adds its own."""
    where = f"$.operations[{i}]"
    if not isinstance(op, dict) or op.get("op") not in _OPS:
        raise SchemaError(
            f'each operation is an object whose "op" is one of {_OPS}', path=where
        )
    try:
        _portion_where_taken(op)
        target = None
        if op["op"] != "put":
            target = _target(api, token, op, made)
        item = None
        if op["op"] in ("put", "supersede"):
            if not isinstance(op.get("fact"), dict):
                raise SchemaError('needs "fact": the fields of a fact', path="$.fact")
            try:
                item, grain = api.writable(token, op["fact"])
            except Refused as refused:
                raise refused.within(f"{where}.fact", f"operation {i}") from None
            if target is not None:  # what supersede makes of the fact
                grain = _successor(api.store, op, target, item) or grain
            made.add(grain.address)
        elif not isinstance(op.get("reason", ""), str) or (
            op["op"] == "retract" and not op.get("reason")
        ):
            raise SchemaError('say why in "reason" (it is audited)', path="$.reason")
    except OmsError as exc:
        raise _at(exc, i) from None
    return op, target, item


def _successor(
    store: GrainStore, op: dict[str, Any], target: Grain, item: Any
) -> Grain | None:
    """The grain a supersede makes of a fact given as fields: in the spec's
    shape, valid over its portion (None for a blob, which is as it is)."""
    if not isinstance(item, dict):
        return None
    portion = portion_of(op.get("valid_from"), op.get("valid_to"))
    given: Any = item if portion is None else over_portion(item, portion, target)
    fields = successor_fields(target.address, given, op.get("justification"))
    return store.accept(fields)[0]


def _portion_where_taken(op: dict[str, Any]) -> None:
    """Refuse a portion of valid time on an operation that has none.

    Raises:
        SchemaError: ERR_SCHEMA for ``valid_from``/``valid_to`` on a put (its
            fact says its valid time) or a contradiction (of the whole fact).
    """
    given = [k for k in ("valid_from", "valid_to") if op.get(k) is not None]
    if given and op["op"] in ("put", "contradict"):
        raise SchemaError(
            f"{given[0]} makes a supersede or a retract one over a portion of valid "
            f'time; a "{op["op"]}" has none (a put gives its valid time in its '
            "fact, a contradiction is of the whole fact)",
            path=f"$.{given[0]}",
        )


def _target(api: FactsApi, token: Token, op: dict[str, Any], made: set[str]) -> Grain:
    """The stored fact an operation names.

    Raises:
        SchemaError: ERR_SCHEMA without an id. StoreError: ERR_CONFLICT for a
            fact an earlier operation of the batch writes (refuse_made).
        NotFoundError: ERR_NOT_FOUND, as the facts API answers.
    """
    ref = op.get("id")
    if not isinstance(ref, str):
        raise SchemaError(f'"{op["op"]}" needs the "id" of a fact', path="$.id")
    refuse_made(made, ref)
    return api.fact(token, ref)


def _apply(tx: GrainStore, op: dict[str, Any], target: Grain | None, item: Any) -> str:
    """Run one operation on the transaction; the address it made or targeted."""
    portion = {k: op[k] for k in ("valid_from", "valid_to") if op.get(k) is not None}
    kind = op["op"]
    if kind == "put":
        return tx.put(item)
    assert target is not None  # every other operation names a fact (_checked)
    if kind == "supersede":
        return tx.supersede(
            target, item, justification=op.get("justification"), **portion
        )
    if kind == "retract":
        tx.retract(target, reason=op["reason"], **portion)
    else:
        tx.contradict(target, reason=op.get("reason"))
    return target.address


def _at(exc: OmsError, i: int) -> OmsError:
    """The same error, saying which operation it is of."""
    path = f"$.operations[{i}]" + (
        exc.path[1:] if exc.path and exc.path.startswith("$") else ""
    )
    code = exc.code if isinstance(exc.code, ErrorCode) else None
    return type(exc)(f"operation {i}: {exc.message}", code=code, path=path)
