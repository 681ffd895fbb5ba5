"""fpdb: a Python client of the fpdb near-duplicate fingerprint database's
HTTP server (``fpdb serve``), standard library only.

>>> from fpdb import Client
>>> c = Client()                     # http://127.0.0.1:7700, as fpdb serve
>>> c.add("a.txt", "some text ...")  # doctest: +SKIP
>>> c.query("some text ...")         # doctest: +SKIP

See clients/python/README.md.
"""

from .client import DEFAULT_URL, Client, Stream, __version__
from .errors import (
    BadRequest,
    BadResponse,
    ConnectionFailed,
    Forbidden,
    FpdbError,
    NotFound,
    OutcomeUnknown,
    ServerError,
    Timeout,
    TooLarge,
    TooManyRequests,
    Unauthorized,
    Unavailable,
)
from .types import (
    AddResult,
    BatchResult,
    Cluster,
    Comparison,
    DeleteResult,
    Document,
    ImportResult,
    Match,
    Passage,
    Span,
    Matches,
    Pair,
    Skipped,
    Stats,
)

__all__ = [
    "Client",
    "Stream",
    "DEFAULT_URL",
    "__version__",
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
    "Match",
    "Matches",
    "AddResult",
    "BatchResult",
    "Skipped",
    "Document",
    "DeleteResult",
    "Comparison",
    "Passage",
    "Span",
    "ImportResult",
    "Stats",
    "Pair",
    "Cluster",
]
