"""The fpdb HTTP client (standard library only: urllib and json)."""

from __future__ import annotations

import base64
import datetime
import http.client
import io
import ipaddress
import json
import os
import random
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import (
    IO,
    Any,
    Callable,
    Dict,
    Generic,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Tuple,
    TypeVar,
    Union,
)

from .errors import (
    BadRequest,
    BadResponse,
    ConnectionFailed,
    FpdbError,
    NotFound,
    Timeout,
    TooManyRequests,
    Unavailable,
    error_from_response,
)
from .types import (
    AddResult,
    BatchResult,
    Cluster,
    Comparison,
    DeleteResult,
    Document,
    ImportResult,
    Matches,
    Pair,
    Skipped,
    Stats,
    _matches,
)

__all__ = ["Client", "Stream", "DEFAULT_URL", "__version__"]

__version__ = "0.1.0"

DEFAULT_URL = "http://127.0.0.1:7700"
"""Where ``fpdb serve`` listens by default."""

Text = Union[str, bytes]
"""A document's text: a str, or bytes (sent as they are; the server detects
their encoding unless ``encoding`` is given)."""

DocItem = Union[Tuple[str, Text], Tuple[str, Text, str], Mapping[str, Any]]
"""An item of :meth:`Client.add_many`: ``(id, text)``, ``(id, text, source)``
or a mapping with ``id``, ``text`` and optionally ``source``."""

T = TypeVar("T")

_MAX_RETRY_WAIT = 2.0  # seconds: the backoff's cap
_MAX_RETRY_AFTER = 10.0  # seconds: the most of a server's Retry-After waited
_EXPECT_BYTES = 1 << 16  # a larger body (or a file) asks first: Expect: 100-continue
_EXPECT_WAIT = 1.0  # seconds waited for the server's 100 Continue before the body is sent anyway


class _Prefixed(io.RawIOBase):
    """A raw stream reading ``head`` and then ``raw``."""

    def __init__(self, head: bytes, raw: Any) -> None:
        super().__init__()
        self._head = head
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._raw.readinto(b)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _Replayed:
    """A socket for http.client's response whose first bytes, ``head``, were
    read already."""

    def __init__(self, head: bytes, sock: socket.socket) -> None:
        self._head = head
        self._sock = sock

    def makefile(self, mode: str, *args: Any, **kw: Any) -> IO[bytes]:
        return io.BufferedReader(_Prefixed(self._head, self._sock.makefile("rb", buffering=0)))


class _Hearing:
    """What the client's connections add to http.client's: the server's
    answer to a large body is heard even when it comes before the body.

    A request with ``Expect: 100-continue`` (a large body, or a file) sends
    its headers, then waits up to _EXPECT_WAIT for the server: on its
    ``100 Continue`` (the Go server sends it as the handler starts reading)
    or on silence the body is sent; a final answer instead (401, 403, 429:
    the server refused before reading) is the answer, and the body is never
    sent. And when the server stops reading midway (413 past --max-body)
    and closes the connection, the broken pipe while sending is not the
    end: the answer the server wrote before is read.
    """

    sock: Any
    _method: str
    response_class: Any

    def request(self, method: str, url: str, body: Any = None, headers: Any = {}, *, encode_chunked: bool = False) -> None:  # noqa: B006
        self._fpdb_expect = body is not None and any(
            k.lower() == "expect" and str(v).lower() == "100-continue" for k, v in dict(headers).items()
        )
        self._fpdb_head: Optional[bytes] = None  # a final answer's head, read before the body was sent
        self._fpdb_send_error: Optional[OSError] = None
        super().request(method, url, body, headers, encode_chunked=encode_chunked)  # type: ignore[misc]

    def endheaders(self, message_body: Any = None, *, encode_chunked: bool = False) -> None:
        if message_body is None:
            super().endheaders(encode_chunked=encode_chunked)  # type: ignore[misc]
            return
        super().endheaders()  # type: ignore[misc]  # the headers alone
        if getattr(self, "_fpdb_expect", False):
            head = self._fpdb_wait_continue()
            if head is not None:
                self._fpdb_head = head
                return
        try:
            self._fpdb_send_body(message_body, encode_chunked)
        except OSError as e:  # BrokenPipeError, ConnectionResetError, ssl.SSLEOFError...
            if isinstance(e, (socket.timeout, TimeoutError)):
                raise
            # The server closed the connection before it took the whole
            # body: it may have answered first; getresponse reads it (and
            # raises this error when there is no answer).
            self._fpdb_send_error = e

    def _fpdb_send_body(self, body: Any, chunked: bool) -> None:
        if hasattr(body, "read"):
            blocks: Iterable[Any] = iter(lambda: body.read(1 << 16), b"")
        elif isinstance(body, (bytes, bytearray, memoryview)):
            blocks = [body]
        else:
            blocks = body
        for b in blocks:
            if isinstance(b, str):
                b = b.encode("iso-8859-1")
            if not b:
                continue
            if chunked:
                self.send(b"%X\r\n" % len(b))  # type: ignore[attr-defined]
                self.send(b)  # type: ignore[attr-defined]
                self.send(b"\r\n")  # type: ignore[attr-defined]
            else:
                self.send(b)  # type: ignore[attr-defined]
        if chunked:
            self.send(b"0\r\n\r\n")  # type: ignore[attr-defined]

    def _fpdb_wait_continue(self) -> Optional[bytes]:
        """None to send the body (the server said 100 Continue, or nothing
        within _EXPECT_WAIT), else the head of the final answer the server
        sent instead (b"" when it closed the connection)."""
        sock = self.sock
        timeout = sock.gettimeout()
        while True:
            sock.settimeout(_EXPECT_WAIT if timeout is None else min(_EXPECT_WAIT, timeout))
            try:
                first = sock.recv(1)
            except (socket.timeout, TimeoutError):
                return None  # a server that does not answer Expect: the body
            finally:
                sock.settimeout(timeout)
            head = first
            while head and not head.endswith(b"\r\n\r\n") and len(head) < 65536:
                b = sock.recv(1)  # byte by byte: nothing of what follows is taken
                if not b:
                    break
                head += b
            parts = head.split(None, 2)
            if len(parts) >= 2 and parts[1].isdigit() and 100 <= int(parts[1]) < 200 and head.endswith(b"\r\n\r\n"):
                if int(parts[1]) == 100:
                    return None
                continue  # another interim answer (103 Early Hints): wait on
            return head

    def getresponse(self) -> Any:
        head = self._fpdb_head
        if head is not None:
            # The final answer came before the body: read it from its head on.
            self._fpdb_head = None
            resp = self.response_class(_Replayed(head, self.sock), method=self._method)
            try:
                resp.begin()
            except BaseException:
                resp.close()
                raise
            self.close()  # type: ignore[attr-defined]  # the answer holds the connection (urllib sends Connection: close)
            return resp
        try:
            return super().getresponse()  # type: ignore[misc]
        except (http.client.HTTPException, OSError) as e:
            if self._fpdb_send_error is not None:
                raise self._fpdb_send_error from e
            raise


class _HTTPConnection(_Hearing, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_Hearing, http.client.HTTPSConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_HTTPSConnection, req, context=self._context)  # type: ignore[attr-defined]


class _Lines:
    """The lines of a streamed answer, each read as it arrives.

    http.client's ``readline`` reads a chunked body through ``peek``, which
    takes a connection cut at a chunk's end for the body's end: a stream the
    server cut off (its ``--stream-timeout``, a shutdown) would read as a
    complete, shorter one. ``read1`` raises ``IncompleteRead`` instead unless
    the last chunk came; a body of a Content-Length must have all of it.
    """

    def __init__(self, resp: Any) -> None:
        self._resp = resp
        self._buf = bytearray()
        self._pos = 0  # the start of the next line in _buf

    def readline(self) -> bytes:
        """The next line, with its newline; b"" at the answer's end.

        Each byte is searched once and the consumed bytes are dropped only
        when they are most of the buffer, so a long line costs time in
        proportion to its length, whatever the size of the reads.

        Raises:
            http.client.IncompleteRead: the answer ended before its end (a
                last line without its newline, a chunked body without its
                last chunk, a body shorter than its Content-Length).
        """
        scan = self._pos
        while True:
            i = self._buf.find(b"\n", scan)
            if i >= 0:
                line = bytes(self._buf[self._pos : i + 1])
                self._pos = i + 1
                if self._pos > len(self._buf) // 2:
                    del self._buf[: self._pos]
                    self._pos = 0
                return line
            scan = len(self._buf)
            data = self._resp.read1(1 << 16)
            if not data:
                break
            self._buf += data
        rest = bytes(self._buf[self._pos :])
        self._buf, self._pos = bytearray(), 0
        length = getattr(self._resp, "length", None)
        if rest or (length is not None and length > 0):
            raise http.client.IncompleteRead(rest, length)
        return b""


def _cut_off(url: str, what: str, e: BaseException) -> "ConnectionFailed":
    """The error of a stream that ended before its end (as the Go client's
    "unexpected EOF")."""
    why = "unexpected EOF" if isinstance(e, http.client.IncompleteRead) else str(e)
    return ConnectionFailed(
        "the %s from %s broke off: %s (the server stopped before its end: its --stream-timeout, a shutdown, "
        "or the connection was cut)" % (what, url, why),
        code="connection_failed",
    )


class Stream(Generic[T]):
    """An iterator over a streamed answer (NDJSON, one value per line).

    Each value is parsed as its line arrives: the answer is never read
    whole. The connection is closed at the end, by :meth:`close`, or on
    leaving a ``with`` block; a stream left half-read holds its connection
    until it is closed or garbage-collected::

        with client.pairs(0.9) as pairs:
            for p in pairs:
                ...
    """

    def __init__(self, resp: Any, parse: Callable[[Dict[str, Any]], T], url: str) -> None:
        self._resp = resp
        self._lines = _Lines(resp)
        self._parse = parse
        self._url = url
        self._closed = False

    def __iter__(self) -> "Stream[T]":
        return self

    def __next__(self) -> T:
        while not self._closed:
            try:
                line = self._lines.readline()
            except (socket.timeout, TimeoutError) as e:
                self.close()
                raise Timeout("no data from %s within the client's timeout" % self._url, code="timeout") from e
            except (OSError, ValueError, http.client.HTTPException) as e:
                self.close()
                raise _cut_off(self._url, "stream", e) from e
            if not line:
                self.close()
                break
            line = line.strip()
            if not line:
                continue
            try:
                value = json.loads(line.decode("utf-8"))
            except ValueError as e:
                self.close()
                raise BadResponse("%s sent a line that is not JSON: %r" % (self._url, line[:200]), code="bad_response") from e
            if isinstance(value, dict) and set(value) == {"error"}:
                # A stream that failed after it began ends with its error.
                self.close()
                raise error_from_response(500, line)
            return self._parse(value)
        raise StopIteration

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if not self._closed:
            self._closed = True
            self._resp.close()

    def __enter__(self) -> "Stream[T]":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _duration(d: Union[str, datetime.timedelta, int, float]) -> str:
    """A Go duration string: "720h" as it is, a timedelta or seconds as "Ns"."""
    if isinstance(d, str):
        return d
    if isinstance(d, datetime.timedelta):
        d = d.total_seconds()
    # Fixed-point: Go's durations have no exponent ("1e-06s" is refused).
    return ("%.9f" % float(d)).rstrip("0").rstrip(".") + "s"


def _check_id(id: Any, op: str) -> None:
    """Raise BadRequest when ``id`` is a str that UTF-8 cannot encode: one
    with lone surrogates, as ``os.fsdecode`` gives a file name whose bytes
    are not UTF-8. An id goes to the server as UTF-8 (in a path, a query
    string or JSON), and the server's ids are UTF-8 text."""
    if not isinstance(id, str):
        return
    try:
        id.encode("utf-8")
    except UnicodeEncodeError as u:
        raise BadRequest(
            "%s: the id %r is not UTF-8 text (%s, at position %d: os.fsdecode gives them for the bytes of a "
            "file name that is not UTF-8); an id is sent as UTF-8: decode the name's bytes first, e.g. "
            "os.fsencode(name).decode('utf-8', 'replace')" % (op, id, u.reason, u.start),
            code="bad_request",
        ) from None


def _doc_path(id: str) -> str:
    """The URL path of the document ``id``: every character escaped but
    the unreserved ones, and an id of dots alone ("." or "..") escaped too,
    as a path of dot segments would be cleaned away from the document."""
    if id in (".", ".."):
        return "/v1/documents/" + id.replace(".", "%2E")
    return "/v1/documents/" + urllib.parse.quote(id, safe="")


def _item_id(item: Any) -> Any:
    """The id of an add_many item, for messages."""
    if isinstance(item, Mapping):
        return item.get("id")
    return item[0]


def _source_bytes(source: Optional[str]) -> Optional[bytes]:
    """The bytes of a source that is not UTF-8, a file name as os.fsdecode
    gives it on POSIX (UTF-8 with surrogateescape); None for any other."""
    if source is None:
        return None
    try:
        source.encode("utf-8")
        return None
    except UnicodeEncodeError:
        return source.encode("utf-8", "surrogateescape")


def _item(item: DocItem) -> Dict[str, Any]:
    """One add_many item as a JSON object {"id","text"[,"source"]}."""
    if isinstance(item, Mapping):
        doc = {k: item[k] for k in ("id", "text", "source") if k in item and item[k] is not None}
    elif isinstance(item, (tuple, list)) and len(item) in (2, 3):
        doc = {"id": item[0], "text": item[1]}
        if len(item) == 3 and item[2] is not None:
            doc["source"] = item[2]
    else:
        raise TypeError("add_many wants (id, text), (id, text, source) or a dict, not %r" % (item,))
    if isinstance(doc.get("text"), bytes):
        doc["text"] = doc["text"].decode("utf-8")
    return doc


class Client:
    """A client of an fpdb server (``fpdb serve``).

    Args:
        url: the server's base URL; default ``$FPDB_SERVER`` (as the
            ``fpdb`` command line reads it), else ``$FPDB_URL`` (read before
            ``$FPDB_SERVER`` was, kept for compatibility), else
            ``http://127.0.0.1:7700`` (where ``fpdb serve`` listens). An
            empty variable counts as unset.
        token: a bearer token, for a server run with ``--tokens``; default
            ``$FPDB_TOKEN``, as the command line (none when unset or empty).
        timeout: seconds to wait for the server on each request (for a
            stream: between two pieces of it). The default, 90, is more than
            the server's default request time (60) plus a cluster node's
            waits for the log's late answer to a write (10, and 10 more to
            read the log after a conflict), so that their answer (201, 408,
            or 504 :class:`OutcomeUnknown`) comes first.
        ssl_context: for ``https`` URLs, an :class:`ssl.SSLContext` (to trust
            a private CA, say); default: the system's.
        retries: how many more times a request is sent when the server could
            not take it for now and sending it again is safe: the connection
            was refused (nothing was sent), the server answered 429 (too
            many requests at once: it did nothing), or it answered 503
            (unavailable: shutting down, or a cluster shard without a live
            replica for now) to a call that changes nothing (``get``,
            ``query``, ``stats``, ``pairs`` and ``clusters`` before their
            first item). A write answered 503 is not sent again (a cluster
            may have logged it). 0 never retries; the last error is raised.
            Each attempt waits for the server up to ``timeout``.
        retry_wait: seconds before the first retry, doubled before each next
            one up to 2, with random jitter; the server's ``Retry-After``,
            when longer, is waited instead (at most 10 seconds).
        stream_timeout: seconds a stream (:meth:`pairs`, :meth:`clusters`,
            :meth:`export`) waits for its first line and then
            between two lines, instead of ``timeout``: the server works out
            every cluster, and a pairs run its first pair, before it sends
            anything, which takes minutes on a large database. The default,
            1830, is more than the server's default bound on a stream
            (``fpdb serve --stream-timeout``, 30 minutes).

    Proxies from the environment (``http_proxy``...) are used except for
    servers on this machine (127.0.0.0/8, ::1, localhost).

    The methods follow datasketch's ``MinHashLSH``: :meth:`insert` (an alias of
    :meth:`add`) stores a text under a key, :meth:`query` returns the stored
    near duplicates of a text, ``key in client`` and :meth:`remove` exist.
    Every method raises an :class:`~fpdb.FpdbError` subclass on failure.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        timeout: float = 90,
        *,
        ssl_context: Optional[ssl.SSLContext] = None,
        retries: int = 3,
        retry_wait: float = 0.1,
        stream_timeout: float = 1830,
    ) -> None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError("fpdb: retries %r: want an int >= 0" % (retries,))
        if not isinstance(retry_wait, (int, float)) or isinstance(retry_wait, bool) or not retry_wait >= 0:
            raise ValueError("fpdb: retry_wait %r: want seconds >= 0" % (retry_wait,))
        self.retries = retries
        self.retry_wait = float(retry_wait)
        url = url or os.environ.get("FPDB_SERVER") or os.environ.get("FPDB_URL") or DEFAULT_URL
        if "://" not in url:
            url = "http://" + url
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("fpdb: url %r: want http://HOST:PORT or https://HOST:PORT" % url)
        self.url = url.rstrip("/")
        self.token = token if token is not None else (os.environ.get("FPDB_TOKEN") or None)
        self.timeout = timeout
        if isinstance(stream_timeout, bool) or not isinstance(stream_timeout, (int, float)) or not stream_timeout > 0:
            raise ValueError("fpdb: stream_timeout %r: want seconds > 0" % (stream_timeout,))
        self.stream_timeout = float(stream_timeout)
        handlers: List[Any] = []
        if _is_loopback(parts.hostname):
            handlers.append(urllib.request.ProxyHandler({}))
        handlers.append(_HTTPHandler())
        handlers.append(_HTTPSHandler(context=ssl_context))
        self._opener = urllib.request.build_opener(*handlers)

    def __repr__(self) -> str:
        return "Client(%r%s)" % (self.url, ", token=..." if self.token else "")

    # -- transport ---------------------------------------------------------

    def _open(
        self,
        method: str,
        path: str,
        *,
        params: Optional[Mapping[str, Any]] = None,
        body: Optional[Union[bytes, IO[bytes]]] = None,
        json_body: Any = None,
        content_type: Optional[str] = None,
        retry: str = "write",
        timeout: Optional[float] = None,
    ) -> Any:
        """Send a request; return the open response of a 2xx answer, or raise.

        ``retry`` says what may be sent again (see ``retries``): ``"read"``
        (changes nothing: a 503 too), ``"write"`` (no connection, 429) or
        ``"none"``. ``timeout`` replaces the client's (for streams)."""
        url = self.url + path
        try:
            if params:
                q = {k: ("true" if v is True else "false" if v is False else v) for k, v in params.items() if v is not None}
                if q:
                    url += "?" + urllib.parse.urlencode(q)
            if json_body is not None:
                body = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
                content_type = "application/json"
        except UnicodeEncodeError as u:
            # A str with lone surrogates (os.fsdecode's bytes of a name that
            # is not UTF-8): nothing is sent.
            raise BadRequest(
                "%s %s: a string of the request is not UTF-8 text (%s: %r); decode such bytes first"
                % (method, path, u.reason, u.object[max(0, u.start - 20) : u.end + 20]),
                code="bad_request",
            ) from None
        headers = {"Accept": "application/json", "User-Agent": "fpdb-python/" + __version__}
        if content_type:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if body is not None and (hasattr(body, "read") or len(body) > _EXPECT_BYTES):
            # The server may refuse before it reads the body (401, 403,
            # 429): it is then not sent at all (see _Hearing).
            headers["Expect"] = "100-continue"
        req = urllib.request.Request(url, data=body, headers=headers, method=method)
        wait = self.retry_wait
        attempt = 0
        while True:
            try:
                return self._send(req, timeout or self.timeout)
            except FpdbError as e:
                delay = self._retry_delay(e, retry, attempt, wait)
                if delay is None:
                    raise
            time.sleep(delay)
            attempt += 1
            wait = min(2 * wait, _MAX_RETRY_WAIT)

    def _retry_delay(self, e: FpdbError, retry: str, attempt: int, wait: float) -> Optional[float]:
        """Seconds to wait before sending again what failed with ``e``, or
        None when it is not sent again."""
        if retry == "none" or attempt >= self.retries:
            return None
        refused = isinstance(e, ConnectionFailed) and isinstance(getattr(e.__cause__, "reason", None), ConnectionRefusedError)
        if not (refused or isinstance(e, TooManyRequests) or (isinstance(e, Unavailable) and retry == "read")):
            return None
        # Jitter: clients refused at once do not all come back at once.
        return max(wait / 2 + random.uniform(0, wait / 2), min(e.retry_after or 0.0, _MAX_RETRY_AFTER))

    def _send(self, req: urllib.request.Request, timeout: float) -> Any:
        """Send a request once (see _open), waiting up to timeout seconds
        for each piece of the answer."""
        try:
            return self._opener.open(req, timeout=timeout)
        except urllib.error.HTTPError as e:
            try:
                data = e.read()
            except OSError:
                data = b""
            finally:
                e.close()
            h = e.headers
            raise error_from_response(
                e.code, data, h.get("X-Request-ID") if h else None, retry_after=h.get("Retry-After") if h else None
            ) from None
        except (socket.timeout, TimeoutError) as e:
            raise Timeout("no answer from %s within %gs (Client timeout)" % (self.url, timeout), code="timeout") from e
        except urllib.error.URLError as e:
            reason = e.reason
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise Timeout("no answer from %s within %gs (Client timeout)" % (self.url, timeout), code="timeout") from e
            if isinstance(reason, ConnectionRefusedError):
                why = "connection refused: is `fpdb serve` running there?"
            else:
                why = str(reason)
            raise ConnectionFailed("cannot reach the fpdb server at %s (%s)" % (self.url, why), code="connection_failed") from e
        except (http.client.HTTPException, OSError) as e:
            raise ConnectionFailed("the connection to %s broke: %s" % (self.url, e), code="connection_failed") from e

    def _read(self, method: str, path: str, **kw: Any) -> Tuple[bytes, int]:
        """Send a request and return its answer's body and status."""
        resp = self._open(method, path, **kw)
        try:
            return resp.read(), resp.status
        except (socket.timeout, TimeoutError) as e:
            raise Timeout("no answer from %s within %gs (Client timeout)" % (self.url, self.timeout), code="timeout") from e
        except OSError as e:
            raise ConnectionFailed("the connection to %s broke: %s" % (self.url, e), code="connection_failed") from e
        finally:
            resp.close()

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        """Send a request and return its decoded JSON answer."""
        data, status = self._read(method, path, **kw)
        try:
            return json.loads(data.decode("utf-8"))
        except ValueError as e:
            raise BadResponse("%s%s answered something that is not JSON: %r" % (self.url, path, data[:200]), status=status, code="bad_response") from e

    def _stream(self, path: str, params: Mapping[str, Any], parse: Callable[[Dict[str, Any]], T]) -> Stream[T]:
        resp = self._open("GET", path, params=params, retry="read", timeout=self.stream_timeout)
        return Stream(resp, parse, self.url + path)

    # -- documents ---------------------------------------------------------

    def add(
        self,
        id: str,
        text: Text,
        *,
        threshold: Optional[float] = None,
        reject: bool = False,
        replace: bool = False,
        source: Optional[str] = None,
        limit: Optional[int] = None,
        format: Optional[str] = None,
        encoding: Optional[str] = None,
    ) -> AddResult:
        """Store ``text`` under ``id``, checking first for near duplicates.

        The check and the write are one step on the server: with ``reject``,
        no two near duplicates are both stored, however many clients add at
        once. A document whose id is stored with the same content is left as
        it is (``unchanged``) unless ``replace``; with other content it
        replaces the stored one.

        Args:
            id: the document's id (any non-empty string; "/" allowed).
            text: its text; bytes are sent as they are (their encoding is
                detected unless ``encoding`` names it).
            threshold: when given, a resemblance in (0, 1]: the stored
                documents of resemblance ≥ ``threshold`` are returned in
                ``matches``. Leave it out (``None``) for no check: 0 is
                refused (BadRequest), not read as no check.
            reject: do not store it if the check finds one (needs ``threshold``).
            replace: store it anew even when the stored one has the same content.
            source: where it came from (a path, a URL), kept as metadata. A
                file name that is not UTF-8, as ``os.fsdecode`` gives it on
                POSIX (its other bytes as lone surrogates), is stored as
                those bytes, as :attr:`Document.source` gives it back.
            limit: return at most this many matches.
            format: ``"auto"`` (default), ``"text"`` or ``"html"``.
            encoding: a WHATWG encoding label for bytes (default: detected).

        Returns:
            an :class:`AddResult` (``stored``, ``rejected``, ``matches``...;
            ``pending`` when a cluster node logged it while its shard has
            no live replica: stored when one returns).

        Raises:
            BadRequest: a bad id (one that is not UTF-8 text, such as a
                file name ``os.fsdecode`` gives with lone surrogates, is
                refused before anything is sent), no words, a
                ``threshold`` outside (0, 1], ``reject`` without
                ``threshold``...
            TooLarge: a text over the server's ``--max-body``.
            Forbidden: a read-only token.
        """
        _check_id(id, "add")
        opts = {
            # 0 is sent, for the server to refuse (as query() does), not
            # dropped: it would store with no check.
            "threshold": None if threshold is None else threshold,
            "reject": reject or None,
            "replace": replace or None,
            "source": source,
            "limit": limit,
            "format": format,
            "encoding": encoding,
        }
        raw_source = _source_bytes(source)
        if raw_source is not None and not isinstance(text, (bytes, bytearray)):
            # A JSON string cannot hold a source that is not UTF-8: the text
            # goes as the body, in UTF-8, and the source in the query string.
            text = text.encode("utf-8")
            opts["encoding"] = encoding or "utf-8"
        if isinstance(text, (bytes, bytearray)):
            params = dict(opts, id=id)
            if raw_source is not None:
                params["source"] = raw_source
            data = self._call("POST", "/v1/documents", params=params, body=bytes(text), content_type="application/octet-stream")
        else:
            body = {"id": id, "text": text}
            body.update({k: v for k, v in opts.items() if v is not None})
            data = self._call("POST", "/v1/documents", json_body=body)
        return AddResult.from_json(data)

    def insert(self, key: str, text: Text, **options: Any) -> AddResult:
        """Store ``text`` under ``key`` (datasketch's name for :meth:`add`)."""
        return self.add(key, text, **options)

    def add_many(
        self,
        docs: Iterable[DocItem],
        *,
        batch_size: int = 1000,
        max_batch_bytes: int = 16 << 20,
        threshold: Optional[float] = None,
        reject: bool = False,
        limit: Optional[int] = None,
    ) -> BatchResult:
        """Store many documents in batches (``POST /v1/batch``, a request
        each), without a near-duplicate check unless ``threshold`` is
        given. The server stores a batch in atomic writes of up to 1 000
        documents each.

        With ``threshold``, each document is checked as :meth:`add` with
        ``threshold``, ``reject`` and ``limit`` would check it, in order,
        against the stored documents and the documents before it (a later
        document with an earlier one's id replaces it), and the result's
        ``results`` hold each document's :class:`AddResult` (``line``: its
        1-based place in ``docs``). A cluster node answers the same: it
        checks and appends each run of up to 1 000 documents (fewer when
        they would not fit in one message of its write log) as one
        transaction on the log.

        Args:
            docs: ``(id, text)`` or ``(id, text, source)`` tuples, or dicts with
                ``id``, ``text`` and optionally ``source``; any iterable (a
                generator is read as the batches go).
            batch_size: documents per request.
            max_batch_bytes: a batch is sent before it grows past this size
                (keep it under the server's ``--max-body``, 64 MiB by default).
            threshold: check each document for near duplicates of
                resemblance ≥ ``threshold`` (``None`` or 0: no check, as
                :meth:`add`).
            reject: with ``threshold``, do not store a document that has one.
            limit: with ``threshold``, return at most this many matches per
                document.

        Returns:
            a :class:`BatchResult`: how many were stored, replaced, unchanged
            (and rejected), the documents skipped (``line`` is the item's
            1-based place in ``docs``) with the reason, and with
            ``threshold`` each document's outcome. A cluster node counts in
            ``pending`` (and in ``stored``) the documents whose shard has no
            live replica: logged, stored when one returns.

        Raises:
            FpdbError: a request failed. The requests answered before it are
                stored, and the exception carries their results in ``done``
                (a :class:`BatchResult`) and the place in ``docs`` of the
                failed request's first document in ``failed_line``: send
                the documents from there again. The failed request stored
                nothing when the server answered it with an error, unless
                that error is a 503 saying where the batch stopped (the
                documents before that line are stored); when no answer came
                (:class:`ConnectionFailed`, a proxy's 5xx) its documents may
                be stored, as when a cluster node answers
                :class:`OutcomeUnknown` (504: the documents before the line
                it names are stored, those from there may be). Documents
                stored already are reported ``unchanged`` when sent again.
            BadRequest: an item's text is bytes that are not UTF-8, or its
                source holds the surrogate escapes of a file name that is
                not (a batch carries its fields as JSON strings): the items before it are
                sent and stored, ``done`` holds their results and
                ``failed_line`` is the item's place.
        """
        if not threshold and (reject or limit is not None):
            raise ValueError("reject and limit need threshold")
        params = None
        if threshold:
            params = {"threshold": threshold, "reject": reject or None, "limit": limit}
        total = BatchResult()
        lines: List[bytes] = []
        size = 0
        offset = 0  # items sent before this batch

        def flush() -> None:
            nonlocal lines, size, offset
            if not lines:
                return
            try:
                data = self._call("POST", "/v1/batch", params=params, body=b"".join(lines), content_type="application/x-ndjson")
            except FpdbError as e:
                e.done, e.failed_line = total, offset + 1
                raise
            total.stored += int(data.get("stored") or 0)
            total.replaced += int(data.get("replaced") or 0)
            total.unchanged += int(data.get("unchanged") or 0)
            total.rejected += int(data.get("rejected") or 0)
            total.pending += int(data.get("pending") or 0)
            total.skipped.extend(Skipped.from_json(s, offset) for s in (data.get("skipped") or []))
            total.results.extend(AddResult.from_json(r, offset) for r in (data.get("results") or []))
            offset += len(lines)
            lines, size = [], 0

        for place, item in enumerate(docs, 1):
            try:
                line = json.dumps(_item(item), ensure_ascii=False).encode("utf-8") + b"\n"
            except (UnicodeDecodeError, UnicodeEncodeError) as u:
                # A batch carries its fields as JSON strings: they must be
                # UTF-8 (a Document.source of a file name that is not,
                # held with surrogate escapes, is not either). The items
                # before it are sent first, so that the error's
                # failed_line is this item's place.
                flush()
                what = "the text is not UTF-8" if isinstance(u, UnicodeDecodeError) else "its id, text or source is not UTF-8 text"
                e = BadRequest(
                    "add_many: item %d (id %r): %s (%s); decode it first, or store it with add(), "
                    "which sends a bytes text and a file name's bytes as they are" % (place, _item_id(item), what, u.reason),
                    code="bad_request",
                )
                e.done, e.failed_line = total, offset + 1
                raise e from None
            if lines and (len(lines) >= batch_size or size + len(line) > max_batch_bytes):
                flush()
            lines.append(line)
            size += len(line)
        flush()
        return total

    def _on_document(self, method: str, path: str, **kw: Any) -> Any:
        """``_call`` of a request on one document (``path`` from
        _doc_path): a 404 is NotFound only when the server says that the
        document is not found (its error's ``reason`` ``not_found``); any
        other 404 (a wrong base URL whose path the server does not serve,
        another program's page) is a BadResponse naming the URL."""
        try:
            return self._call(method, path, **kw)
        except NotFound as e:
            if e.reason == "not_found":
                raise
            raise BadResponse(
                "%s %s%s answered 404 (%s), not an fpdb server's \"document not found\": is %s the fpdb server's "
                "base URL (http://HOST:PORT, no path such as /v1 after it)?"
                % (method, self.url, path, e.message[:200], self.url),
                status=e.status,
                code="bad_response",
                request_id=e.request_id,
            ) from e

    def get(self, id: str) -> Document:
        """Return the metadata of the stored document ``id``.

        Raises:
            NotFound: no document has that id.
            BadRequest: a bad id (one that is not UTF-8 text, such as a
                file name ``os.fsdecode`` gives with lone surrogates, is
                refused before anything is sent).
            BadResponse: a 404 that does not say the document is not
                found: the client's ``url`` is not an fpdb server's base
                URL.
        """
        _check_id(id, "get")
        return Document.from_json(self._on_document("GET", _doc_path(id), retry="read"))

    def __contains__(self, id: object) -> bool:
        """``id in client``: whether a document of that id is stored.

        False only when the server says the document is not found; any
        other error is raised, as :meth:`get` raises it (``BadResponse`` for
        a 404 from a wrong base URL, ``BadRequest`` for an id that is not
        UTF-8 text).
        """
        if not isinstance(id, str):
            return False
        _check_id(id, "id in client")
        try:
            self.get(id)
        except NotFound:  # get raises it only for a document not found
            return False
        return True

    def delete(self, id: str, *, dry_run: bool = False, forget: bool = False) -> DeleteResult:
        """Delete the stored document ``id``.

        Args:
            dry_run: only check that it is stored (``deleted`` is 1).
            forget: also erase its entries in the audit log; this also
                serves a document deleted before (``deleted`` is then 0,
                ``erased`` counts the entries erased).

        Returns:
            a :class:`DeleteResult`: ``deleted`` 1; or, from a cluster node
            whose shard of ``id`` has no live replica, ``deleted`` 0 and
            ``id`` in ``pending`` (the delete is logged, and applied when a
            replica returns).

        Raises:
            NotFound: no document has that id (with ``forget``: nor has
                the audit log any entry about it).
            BadRequest: a bad id (one that is not UTF-8 text is refused
                before anything is sent).
            BadResponse: a 404 that does not say the document is not
                found, as :meth:`get`.
        """
        _check_id(id, "delete")
        path = _doc_path(id)
        params = {"dry_run": dry_run or None, "forget": forget or None}
        return DeleteResult.from_json(self._on_document("DELETE", path, params=params))

    def remove(self, key: str) -> DeleteResult:
        """Delete the document ``key`` (datasketch's name for :meth:`delete`)."""
        return self.delete(key)

    def delete_many(
        self,
        ids: Optional[Iterable[str]] = None,
        *,
        prefix: Optional[str] = None,
        older_than: Union[str, datetime.timedelta, int, float, None] = None,
        dry_run: bool = False,
        forget: bool = False,
    ) -> DeleteResult:
        """Delete several documents at once (``POST /v1/delete``): the ids
        given, every id starting with ``prefix``, or every document added more
        than ``older_than`` ago (a Go duration such as ``"720h"``, ``"30d"``,
        a :class:`datetime.timedelta` or seconds). Give exactly one.
        ``dry_run`` counts and deletes nothing; ``forget`` (with ``ids``) also
        erases the documents' audit-log entries.

        Returns:
            a :class:`DeleteResult`; ``not_found`` lists the ids given that
            were not stored, and ``pending``, from a cluster node, those
            whose shard has no live replica (their deletes are logged, and
            applied when one returns; counted neither in ``deleted`` nor in
            ``not_found``). No ids (an empty list) delete nothing: the
            result says 0 deleted, and no request is sent.

        Raises:
            BadRequest: an id that is not UTF-8 text (a file name
                ``os.fsdecode`` gives with lone surrogates), before anything
                is sent.
        """
        given = [x is not None for x in (ids, prefix, older_than)]
        if sum(given) != 1:
            raise ValueError("delete_many: give exactly one of ids, prefix, older_than")
        body: Dict[str, Any] = {}
        if ids is not None:
            if isinstance(ids, str):
                raise TypeError("delete_many: ids is a list of ids, not one string (use delete)")
            id_list = list(ids)
            for id in id_list:
                _check_id(id, "delete_many")
            if not id_list:
                # The server refuses a request that names nothing ("ids is
                # empty"); deleting no ids deletes nothing. The answer the
                # server gives when none of the ids is stored.
                raw: Dict[str, Any] = {"deleted": 0}
                if dry_run:
                    raw["dry_run"] = True
                elif forget:
                    raw["erased"], raw["redacted"] = 0, 0
                return DeleteResult.from_json(raw)
            body["ids"] = id_list
        elif prefix is not None:
            body["prefix"] = prefix
        else:
            body["older_than"] = _duration(older_than)  # type: ignore[arg-type]
        if dry_run:
            body["dry_run"] = True
        if forget:
            body["forget"] = True
        return DeleteResult.from_json(self._call("POST", "/v1/delete", json_body=body))

    # -- queries -----------------------------------------------------------

    def query(
        self,
        text: Text,
        threshold: Optional[float] = None,
        *,
        containment: Optional[float] = None,
        limit: Optional[int] = None,
        plan: Optional[str] = None,
        tau: Optional[int] = None,
        recall: Optional[float] = None,
        explain: bool = False,
        format: Optional[str] = None,
        encoding: Optional[str] = None,
    ) -> Matches:
        """Return the stored near duplicates of ``text``, most similar first.
        Nothing is stored.

        Args:
            text: the query text (str, or bytes sent as they are).
            threshold: the least estimated resemblance, in (0, 1]; the
                server refuses any other, 0 included (BadRequest); ``None``:
                0.7, or none when ``containment`` is given.
            containment: when given, the documents that contain at least this
                share of the query (and have ``threshold``, if given).
            limit: at most this many matches.
            plan: ``"auto"`` (default), ``"scan"``, ``"probe"`` or
                ``"approx"``; every plan but ``"approx"`` returns the same,
                exact answer.
            tau: the probe radius, with ``plan="probe"``.
            recall: the least expected recall, with ``plan="approx"``.
            explain: put the plan's counters in the result's ``explain``.
            format, encoding: as for :meth:`add`.

        Returns:
            :class:`Matches`, a list of :class:`Match` (``.ids()`` gives the ids).
        """
        opts = {
            "threshold": threshold,
            "containment": containment,
            "limit": limit,
            "plan": plan,
            "tau": tau,
            "recall": recall,
            "explain": explain or None,
            "format": format,
            "encoding": encoding,
        }
        if isinstance(text, (bytes, bytearray)):
            data = self._call("POST", "/v1/query", params=opts, body=bytes(text), content_type="application/octet-stream", retry="read")
        else:
            body = {"text": text}
            body.update({k: v for k, v in opts.items() if v is not None})
            data = self._call("POST", "/v1/query", json_body=body, retry="read")
        return _matches(data.get("matches"), data.get("explain"))

    def query_fingerprint(
        self,
        fingerprint: str,
        threshold: Optional[float] = None,
        *,
        shingles: Optional[int] = None,
        containment: Optional[float] = None,
        limit: Optional[int] = None,
        plan: Optional[str] = None,
        tau: Optional[int] = None,
        recall: Optional[float] = None,
        explain: bool = False,
    ) -> Matches:
        """Like :meth:`query`, for a fingerprint in hex (as
        :attr:`Document.fingerprint`); ``shingles``, its distinct shingle
        count, is needed with ``containment``."""
        body: Dict[str, Any] = {"fingerprint": fingerprint}
        opts = {
            "shingles": shingles,
            "threshold": threshold,
            "containment": containment,
            "limit": limit,
            "plan": plan,
            "tau": tau,
            "recall": recall,
            "explain": explain or None,
        }
        body.update({k: v for k, v in opts.items() if v is not None})
        data = self._call("POST", "/v1/query", json_body=body, retry="read")
        return _matches(data.get("matches"), data.get("explain"))

    def pairs(self, threshold: float) -> Stream[Pair]:
        """Every pair of stored documents of resemblance ≥ ``threshold``, once,
        as an iterator of :class:`Pair` read as the server sends them
        (``GET /v1/pairs``). Close it (or use ``with``) to stop early."""
        return self._stream("/v1/pairs", {"threshold": threshold}, Pair.from_json)

    def clusters(
        self,
        threshold: float,
        *,
        centers: bool = False,
        keep: Optional[str] = None,
        max_size: Optional[int] = None,
    ) -> Stream[Cluster]:
        """The groups of near duplicates at ``threshold``, largest first, as an
        iterator of :class:`Cluster` (``GET /v1/clusters``).

        Args:
            threshold: the least resemblance of a pair.
            centers: no chaining: every member within ``threshold`` of the
                cluster's center.
            keep: name the document to keep in each cluster and the ones to
                drop: ``"oldest"``, ``"newest"``, ``"first"``, ``"longest"`` or
                ``"shortest"``.
            max_size: with ``centers``, the largest cluster.
        """
        params = {"threshold": threshold, "centers": centers or None, "keep": keep, "max_size": max_size}
        return self._stream("/v1/clusters", params, Cluster.from_json)

    # -- comparing -----------------------------------------------------------

    def compare(
        self,
        a: Union[Text, Mapping[str, Any]],
        b: Union[Text, Mapping[str, Any]],
        *,
        min_words: Optional[int] = None,
        gap: Optional[int] = None,
        passages: Optional[int] = None,
        html: bool = False,
    ) -> Union[Comparison, str]:
        """Compare two texts or stored documents (``POST /v1/compare``): the
        resemblance the fingerprints estimate, the exact one, the
        containments and the passages they share.

        Args:
            a, b: a text (``str``), a file's ``bytes`` (read by the server
                as an upload to ``add`` or ``query`` is: its character
                encoding found unless ``encoding`` says it), or a mapping:
                ``{"id": ID}`` for a stored document (whose text the database
                keeps), ``{"text": ..., "name": ..., "format": ...,
                "encoding": ...}`` for a named text (``"bytes": b"..."``
                instead of ``"text"`` for a file's bytes).
            min_words: leave out passages of fewer words (the server's
                default 8; 0 for every passage).
            gap: merge passages at most this many words apart.
            passages: keep the longest this many.
            html: return the page ``fpdb compare --html`` writes (``str``)
                instead of a :class:`Comparison`.

        Raises:
            NotFound: a stored id is unknown.
            BadRequest: a stored document has no text (a database that keeps
                none, or a cluster).
        """

        def side(x: Union[Text, Mapping[str, Any]]) -> Dict[str, Any]:
            if isinstance(x, (bytes, bytearray)):
                return {"bytes": base64.b64encode(bytes(x)).decode("ascii")}
            if isinstance(x, str):
                return {"text": x}
            out = {k: v for k, v in dict(x).items() if v is not None}
            if isinstance(out.get("bytes"), (bytes, bytearray)):
                out["bytes"] = base64.b64encode(bytes(out["bytes"])).decode("ascii")
            return out

        body: Dict[str, Any] = {"a": side(a), "b": side(b)}
        for k, v in (("min_words", min_words), ("gap", gap), ("passages", passages)):
            if v is not None:
                body[k] = v
        if not html:
            return Comparison.from_json(self._call("POST", "/v1/compare", json_body=body, retry="read"))
        page, _ = self._read("POST", "/v1/compare", params={"html": True}, json_body=body, retry="read")
        return page.decode("utf-8")

    # -- export and import ------------------------------------------------

    def export(self, out: IO[bytes]) -> int:
        """Write the export of the served database, or of the whole cluster
        when the server is a cluster node (``GET /v1/export``: a header line,
        one line per document, then a database's audit log, as ``fpdb
        export`` writes it), to the binary file ``out``, line by line as it
        comes. Returns the number of documents, from the header. An export
        that fails midway, or holds fewer lines than its header announces,
        raises after the lines written: ``out`` is then cut short, and an
        import refuses it."""
        url = self.url + "/v1/export"
        resp = self._open("GET", "/v1/export", retry="read", timeout=self.stream_timeout)
        header: Optional[Dict[str, Any]] = None
        lines = 0
        lines_of = _Lines(resp)
        try:
            while True:
                try:
                    line = lines_of.readline()
                except (socket.timeout, TimeoutError) as e:
                    raise Timeout("no data from %s within the client's timeout" % url, code="timeout") from e
                except (OSError, ValueError, http.client.HTTPException) as e:
                    raise _cut_off(url, "export", e) from e
                if not line:
                    break
                if line.startswith(b'{"error":'):  # a failure the server reports in the stream
                    raise error_from_response(500, line)
                if header is None:
                    try:
                        header = json.loads(line.decode("utf-8"))
                    except ValueError as e:
                        raise BadResponse("%s sent a header that is not JSON: %r" % (url, line[:200]), code="bad_response") from e
                out.write(line)
                lines += 1
        finally:
            resp.close()
        if not isinstance(header, dict) or "docs" not in header:
            raise BadResponse("%s sent no export header" % url, code="bad_response")
        want = 1 + int(header["docs"]) + int(header.get("log_entries") or 0)
        if lines != want:
            # An answer that only the connection's end delimits (neither
            # chunked nor of a Content-Length), cut at a line's end.
            raise ConnectionFailed("the export from %s ended midway: %d lines, its header announces %d" % (url, lines, want), code="connection_failed")
        return int(header["docs"])

    def import_export(self, src: Union[bytes, IO[bytes]]) -> ImportResult:
        """Store an export (``POST /v1/import``: the bytes, or a binary file
        read as it is sent) in the served database, or in the whole cluster
        when the server is a cluster node; it must hold no document and have
        the export's parameters. A file is never sent again (bytes are, as
        any write, when the server refuses for now). The client's timeout
        bounds each read of the connection, not the whole import. On an
        error after documents were stored, the error (``Unavailable``) gives
        their number."""
        retry = "write" if isinstance(src, (bytes, bytearray)) else "none"
        data = self._call("POST", "/v1/import", body=src, content_type="application/x-ndjson", retry=retry)
        return ImportResult.from_json(data)

    # -- the server --------------------------------------------------------

    def stats(self) -> Stats:
        """The database's counters and parameters (``docs``, ``disk_bytes``,
        ``k``...)."""
        return Stats.from_json(self._call("GET", "/v1/stats", retry="read"))

    def __len__(self) -> int:
        """The number of stored documents (one request)."""
        return self.stats().docs

    def ready(self) -> bool:
        """Whether the server answers and its database is open (``/readyz``);
        False when it cannot be reached or is shutting down."""
        try:
            self._open("GET", "/readyz", retry="none").close()
        except FpdbError:
            return False
        return True

