"""Errors raised by the fpdb client.

Every error the server answers is an :class:`FpdbError` subclass chosen by
the ``code`` of the server's error body (``{"error": {"code", "message",
"request_id", "reason"}}``), or by the HTTP status when the body is not that
JSON (a proxy's error page, say). A server that cannot be reached raises
:class:`ConnectionFailed`, which is also a built-in :class:`ConnectionError`;
an answer that is not what an fpdb server answers there (a wrong base URL,
another program on the port) raises :class:`BadResponse`.
"""

from __future__ import annotations

import json
import re
from typing import Dict, Optional, Type

__all__ = [
    "FpdbError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Timeout",
    "OutcomeUnknown",
    "TooLarge",
    "TooManyRequests",
    "ServerError",
    "Unavailable",
    "ConnectionFailed",
    "BadResponse",
    "error_from_response",
]


class FpdbError(Exception):
    """Base class of every error of the fpdb client.

    Attributes:
        status: the HTTP status (``None`` when no answer came).
        code: the server's error code (``"not_found"``, ``"forbidden"``, ...).
        message: what went wrong, as the server says it.
        request_id: the request's id in the server's log (``None`` if unknown).
        reason: the database's error behind a 4xx, as the server names it
            (``"not_found"``, ``"no_words"``, ``"invalid_id"``, ...); ``""``
            when the server names none (a path it does not serve, a body
            that is not the server's JSON).
        retry_after: the seconds the server asked to wait before a retry
            (its ``Retry-After``), ``None`` when it asked none.
        done: for a failed request of :meth:`Client.add_many`, the
            :class:`BatchResult` of the requests answered before it (their
            documents are stored); ``None`` otherwise.
        failed_line: for a failed request of :meth:`Client.add_many`, the
            1-based place in ``docs`` of its first document; ``None``
            otherwise.
    """

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: str = "",
        request_id: Optional[str] = None,
        retry_after: Optional[float] = None,
        reason: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.request_id = request_id
        self.retry_after = retry_after
        self.reason = reason
        self.done: Optional[object] = None
        self.failed_line: Optional[int] = None

    def __str__(self) -> str:
        parts = []
        if self.code:
            parts.append(self.code)
        if self.status is not None:
            parts.append("HTTP %d" % self.status)
        if self.request_id:
            parts.append("request " + self.request_id)
        return "%s (%s)" % (self.message, ", ".join(parts)) if parts else self.message


class BadRequest(FpdbError):
    """The request was at fault (400): a bad id, no words, malformed options, ...

    The database is unchanged."""


class Unauthorized(FpdbError):
    """No token, or an unknown one (401): the server runs with ``--tokens``."""


class Forbidden(FpdbError):
    """The token may only read (403), or the database is read-only."""


class NotFound(FpdbError):
    """No such document (404, :attr:`reason` ``"not_found"``), or an
    endpoint this server does not have (no :attr:`reason`). The calls on a
    document (:meth:`Client.get`, ``id in client``, :meth:`Client.delete`)
    raise it only for the former: a 404 that does not say the document is
    not found is a :class:`BadResponse`."""


class Timeout(FpdbError):
    """The request took too long (408 from the server, or no answer within
    the client's ``timeout``). A 408 means that the server did nothing; a
    write that got no answer within the client's ``timeout`` may have been
    done."""


class OutcomeUnknown(FpdbError):
    """The server cannot tell whether the write was done (504, a cluster
    node): it sent the write to the cluster's log, whose answer did not
    come. The documents may or may not be stored (now or shortly). Send the
    same write again, which is safe (an add of a stored document's id and
    text changes nothing and comes back ``unchanged``; a delete of a deleted
    id, ``NotFound``), or read the documents back with :meth:`Client.get`.
    Not sent again by the client's ``retries``. A write whose time ran out
    before it was sent is a :class:`Timeout` instead (not done)."""


class TooLarge(FpdbError):
    """The body is over the server's ``--max-body`` (413)."""


class TooManyRequests(FpdbError):
    """More requests at once than the server's ``--max-concurrent`` (429);
    retry later."""


class ServerError(FpdbError):
    """The server failed (500): its log, at :attr:`request_id`, says why."""


class Unavailable(ServerError):
    """The server is shutting down or its database is closed (503)."""


class ConnectionFailed(FpdbError, ConnectionError):
    """The server could not be reached: not running, wrong address, or the
    connection broke. Also a built-in :class:`ConnectionError`."""


class BadResponse(FpdbError):
    """The answer is not what an fpdb server answers there (code
    ``bad_response``): not JSON, or a 404 to a call on a document that does
    not say the document is not found. The client's ``url`` is likely not
    the server's base URL (``http://HOST:PORT``, with no path such as
    ``/v1`` after it), or another program answers at that address. The
    message names the URL; :attr:`status` is the answer's HTTP status."""


_BY_CODE: Dict[str, Type[FpdbError]] = {
    "bad_request": BadRequest,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "timeout": Timeout,
    "outcome_unknown": OutcomeUnknown,
    "too_large": TooLarge,
    "too_many_requests": TooManyRequests,
    "unavailable": Unavailable,
    "internal": ServerError,
}

_BY_STATUS: Dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "bad_request",
    408: "timeout",
    413: "too_large",
    415: "bad_request",
    429: "too_many_requests",
    503: "unavailable",
    504: "outcome_unknown",
}


def error_from_response(
    status: int, body: bytes, request_id: Optional[str] = None, *, retry_after: Optional[str] = None
) -> FpdbError:
    """Return the error for an HTTP answer of ``status`` with ``body``.

    The server's JSON error body decides the class by its code; any other
    body (or an unknown code) falls back on the status. ``retry_after`` is
    the answer's Retry-After header (seconds), if any.
    """
    wait: Optional[float] = None
    if retry_after and re.fullmatch(r"[0-9]+", retry_after.strip()):
        wait = float(min(int(retry_after.strip()), 3600))
    code = ""
    message = ""
    reason = ""
    try:
        err = json.loads(body.decode("utf-8"))["error"]
        code = str(err.get("code") or "")
        message = str(err.get("message") or "")
        reason = str(err.get("reason") or "")
        request_id = err.get("request_id") or request_id
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        text = body.decode("utf-8", "replace").strip()
        message = text[:300] if text else "HTTP %d" % status
    cls = _BY_CODE.get(code)
    if cls is None:
        fallback = _BY_STATUS.get(status, "internal" if status >= 500 else "bad_request")
        cls = _BY_CODE[fallback]
        code = code or fallback
    return cls(message or "HTTP %d" % status, status=status, code=code, request_id=request_id, retry_after=wait, reason=reason)
