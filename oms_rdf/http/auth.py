"""Bearer tokens: what a request may read and write, by namespace.

A token file maps each secret to its grant (:func:`load_tokens`); a request names
its secret in ``Authorization: Bearer SECRET`` and is given its :class:`Token`
(:func:`authorizer`). Without a token file every request is :data:`OPEN`: every
namespace, read-only.

>>> Token(namespaces=("crm",)).covers("crm"), OPEN.covers("any"), OPEN.write
(True, True, False)
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..errors import ErrorCode, NotFoundError, SchemaError
from .responses import error_response

__all__ = ["OPEN", "Authorize", "Token", "authorizer", "load_tokens"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Token:
    """What a bearer token may do: read (and write) the knowledge of its namespaces,
    and, with ``erase``, erase grains (compliance erasure is its own scope)."""

    namespaces: tuple[str, ...] | None = None  # None: every namespace
    write: bool = False
    erase: bool = False

    def covers(self, namespace: object) -> bool:
        """Whether ``namespace`` is one of this token's."""
        return self.namespaces is None or namespace in self.namespaces


OPEN = Token()  # no token file: every namespace, read-only

# A request's token, or the response refusing it (401).
Authorize = Callable[[Request], Token | Response]


def load_tokens(path: str | Path) -> dict[str, Token]:
    """Read a token file: ``{"TOKEN": {"namespaces": ["crm"] or "*", "write": true}}``;
    ``"erase": true`` adds the erase scope.

    Raises:
        NotFoundError: ERR_NOT_FOUND for no such file.
        SchemaError: ERR_SCHEMA for a file that is not such a JSON object.
    """
    if not Path(path).is_file():
        raise NotFoundError(f"no token file {path}")
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SchemaError(f"cannot read the token file {path}: {exc}") from None
    if not isinstance(data, dict) or not data:
        # An empty file would answer every request 401: no server anyone can use.
        raise SchemaError(f"{path}: expected a JSON object of one token or more")
    return {secret: _grant(path, secret, grant) for secret, grant in data.items()}


def _grant(path: str | Path, secret: str, grant: Any) -> Token:
    """The token one entry of the file grants.

    Raises:
        SchemaError: ERR_SCHEMA for a short secret or a malformed grant.
    """
    namespaces = grant.get("namespaces") if isinstance(grant, dict) else None
    write = grant.get("write", False) if isinstance(grant, dict) else None
    erase = grant.get("erase", False) if isinstance(grant, dict) else None
    valid = namespaces == "*" or (
        isinstance(namespaces, list)
        and namespaces
        and all(isinstance(n, str) for n in namespaces)
    )
    if (
        len(secret) < 16
        or not valid
        or not isinstance(write, bool)
        or not isinstance(erase, bool)
    ):
        raise SchemaError(
            f'{path}: each token (16+ characters) needs "namespaces" (a list, or '
            '"*") and optional booleans "write" and "erase"',
            path=f"$.{secret[:4]}…",
        )
    scope = None if namespaces == "*" else tuple(namespaces or ())
    return Token(namespaces=scope, write=write, erase=erase)


def authorizer(tokens: Mapping[str, Token] | None) -> Authorize:
    """Return how a request is given its token: :data:`OPEN` without ``tokens``,
    else the token whose secret its bearer header names, or a 401."""

    def authorize(request: Request) -> Token | Response:
        if tokens is None:
            return OPEN
        header = request.headers.get("authorization", "")
        given = header[7:].strip() if header.lower().startswith("bearer ") else ""
        for secret, token in tokens.items():
            if given and hmac.compare_digest(given.encode(), secret.encode()):
                return token
        return error_response(
            401,
            ErrorCode.INVALIDATION_DENIED,
            "a bearer token is needed (Authorization: Bearer TOKEN)",
            headers={"www-authenticate": "Bearer"},
        )

    return authorize
