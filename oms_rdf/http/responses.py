"""The JSON error every route answers, ``{"code", "message", "path"}``, and how an
error of ours becomes one.

>>> error_response(404, "ERR_NOT_FOUND", "no such fact").body
b'{"code":"ERR_NOT_FOUND","message":"no such fact","path":null}'
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse, Response

from ..errors import ErrorCode, OmsError, PolicyError

__all__ = ["busy", "error_response", "not_acceptable", "refusal"]


def error_response(
    status: int,
    code: str,
    message: str,
    path: str | None = None,
    *,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """Return the JSON error every route answers: ``{"code", "message", "path"}``."""
    body = {"code": str(code), "message": message, "path": path}
    return JSONResponse(body, status_code=status, headers=headers)


def not_acceptable(message: str) -> Response:
    """Return the 406 of an Accept header no answer's media type meets; it says
    the answer varies with Accept, as the answers it refuses do (RFC 9110)."""
    return error_response(406, ErrorCode.QUERY, message, "Accept", headers=_VARY)


_VARY = {"Vary": "Accept"}


def refusal(exc: OmsError) -> Response:
    """Return an error of ours as the SPARQL endpoint answers it: a policy's
    refusal is a 403, the caller's fault a 400 (a time out of range too, though
    its class is a policy's), no acceptable media type a 406, the store's a 500."""
    if exc.path == "Accept":
        return not_acceptable(exc.message)
    elif isinstance(exc, PolicyError) and not isinstance(exc, ValueError):
        status = 403
    else:
        status = 400 if isinstance(exc, ValueError) else 500
    return error_response(status, exc.code, exc.message, exc.path)


def busy(headers: Mapping[str, str] | None = None) -> Response:
    """Return the 503 of a lane whose backlog is full: nothing was started."""
    message = "the server is busy: too many requests are waiting; try again"
    return error_response(503, ErrorCode.STORE, message, headers=headers)
