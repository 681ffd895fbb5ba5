"""The values the fpdb client returns: small dataclasses made from the
server's JSON. Fields the server adds later are kept in each value's
``raw`` dict, so an older client still reads a newer server."""

from __future__ import annotations

import base64
import binascii
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Type, TypeVar

__all__ = [
    "Match",
    "Matches",
    "AddResult",
    "BatchResult",
    "Skipped",
    "Document",
    "DeleteResult",
    "Stats",
    "Pair",
    "Cluster",
]

T = TypeVar("T")


def _build(cls: Type[T], d: Dict[str, Any], **override: Any) -> T:
    """Make a ``cls`` from the JSON object ``d``: known fields only, the whole
    object as ``raw``."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kw = {k: v for k, v in d.items() if k in names and k != "raw"}
    kw.update(override)
    if "raw" in names:
        kw["raw"] = d
    return cls(**kw)


@dataclass(frozen=True)
class Match:
    """A stored document found by a query or by an add's check.

    Attributes:
        id: the stored document's id.
        similarity: the estimated resemblance (Jaccard of the shingle sets),
            ``1 - 2 * hamming / k``.
        hamming: the Hamming distance of the two fingerprints.
        exact: both have the same normalized text (equal content hashes).
        query_in_doc: the estimated share of the query found in the document
            (0.0 when unknown).
        doc_in_query: the estimated share of the document found in the query.
    """

    id: str
    similarity: float
    hamming: int = 0
    exact: bool = False
    query_in_doc: float = 0.0
    doc_in_query: float = 0.0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Match":
        return _build(
            cls,
            d,
            similarity=float(d.get("similarity") or 0.0),
            query_in_doc=float(d.get("query_in_doc") or 0.0),
            doc_in_query=float(d.get("doc_in_query") or 0.0),
        )


class Matches(List[Match]):
    """A list of :class:`Match`, most similar first, with the query plan's
    counters in :attr:`explain` when the query asked for them (else
    ``None``)."""

    explain: Optional[Dict[str, Any]] = None

    def ids(self) -> List[str]:
        """The matched ids, in order (what a datasketch ``query`` returns)."""
        return [m.id for m in self]


def _matches(items: Optional[List[Dict[str, Any]]], explain: Optional[Dict[str, Any]] = None) -> Matches:
    out = Matches(Match.from_json(m) for m in (items or []))
    out.explain = explain
    return out


@dataclass(frozen=True)
class AddResult:
    """What an add did.

    Attributes:
        id: the document's id.
        stored: the document was written (a new one, or a replacement).
        replaced: it replaced a stored document of the same id.
        unchanged: a document of that id with the same content was stored
            already and was left as it is.
        rejected: ``reject`` refused it because the check found a near
            duplicate (listed in :attr:`matches`).
        matches: the stored near duplicates the check found (empty without
            a threshold).
        line: in :attr:`BatchResult.results`, the document's 1-based place
            in the documents given to :meth:`Client.add_many`; else 0.
        pending: a cluster node's answer (202) to an add without a
            threshold whose shard has no live replica: the document is in
            the cluster's write log (``stored``) and is stored when a
            replica of the shard returns; whether it replaces a stored
            document, or is unchanged, is not known until then. False
            otherwise.
    """

    id: str
    stored: bool
    replaced: bool = False
    unchanged: bool = False
    rejected: bool = False
    matches: Matches = field(default_factory=Matches)
    line: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    pending: bool = False  # last: the fields before it keep their places

    @classmethod
    def from_json(cls, d: Dict[str, Any], offset: int = 0) -> "AddResult":
        line = int(d.get("line") or 0)
        return _build(cls, d, matches=_matches(d.get("matches")), line=line + offset if line else 0,
                      pending=bool(d.get("pending")))


@dataclass(frozen=True)
class Skipped:
    """A document :meth:`Client.add_many` did not store: its 1-based place in
    the input (``line``), its id and why: ``error``, the server's message,
    and ``reason``, a name to test (``no_words``, ``binary``, ``invalid_id``,
    ``text_too_large``, …, or ``duplicate_in_batch``: an earlier document of
    the same request, of ``batch_size`` documents, has its id), "" when the
    server gives none."""

    line: int
    id: str
    error: str
    reason: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any], offset: int = 0) -> "Skipped":
        return _build(cls, d, line=int(d.get("line") or 0) + offset, id=d.get("id") or "", error=d.get("error") or "",
                      reason=d.get("reason") or "")


@dataclass
class BatchResult:
    """The summary of :meth:`Client.add_many`: how many documents were
    stored (new ones and replacements), how many of those replaced a stored
    one, how many were unchanged, how many rejected (a check with
    ``reject``), the ones skipped with the reason, and with a check each
    document's :class:`AddResult` in ``results``.

    ``pending`` counts, in a cluster node's answers (202) only, the
    documents (also counted in ``stored``) whose shard has no live replica:
    they are in the cluster's write log and are stored when a replica of
    their shard returns (whether each replaces a stored document, or is
    unchanged, is not known until then); 0 otherwise."""

    stored: int = 0
    replaced: int = 0
    unchanged: int = 0
    rejected: int = 0
    skipped: List[Skipped] = field(default_factory=list)
    results: List[AddResult] = field(default_factory=list)
    pending: int = 0


@dataclass(frozen=True)
class Document:
    """A stored document's metadata (the text itself is not returned).

    Attributes:
        id: its id.
        source: where it came from, as given when it was added. A source
            that is not UTF-8 (a file's path may be any bytes) is given as
            Python gives such a file name (``os.fsdecode`` on POSIX): each
            byte that is not UTF-8 as a lone surrogate (UTF-8 with
            ``surrogateescape``), so that ``os.fsencode(doc.source)`` is its
            bytes. ``raw["source"]`` has U+FFFD for each instead. Such a
            string, like any file name Python holds so, cannot be printed
            to a UTF-8 stream nor sent by ``add_many`` as it is (``add``
            sends it as its bytes).
        size: the text's size in bytes.
        words: its number of words.
        shingles: its number of distinct shingles (0: unknown).
        added: when it was stored, RFC 3339.
        content_hash: the hash of its normalized text, in hex.
        fingerprint: its fingerprint in hex (for :meth:`Client.query_fingerprint`).
    """

    id: str
    source: str = ""
    size: int = 0
    words: int = 0
    shingles: int = 0
    added: str = ""
    content_hash: str = ""
    fingerprint: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Document":
        b64 = d.get("source_base64")
        if not isinstance(b64, str):
            return _build(cls, d)
        try:
            raw = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            return _build(cls, d)  # source, with U+FFFD, is all there is
        return _build(cls, d, source=raw.decode("utf-8", "surrogateescape"))


@dataclass(frozen=True)
class DeleteResult:
    """What a delete did (or would do, with ``dry_run``): the number of
    documents deleted and, for ids given, those that were not stored.

    ``pending`` lists, in a cluster node's answers (202) only, the ids given
    whose shard has no live replica: their deletion is in the cluster's
    write log and is applied when a replica of the shard returns. Whether
    each was stored is not known: they are counted neither in ``deleted``
    nor in ``not_found``. Empty otherwise."""

    deleted: int
    not_found: List[str] = field(default_factory=list)
    dry_run: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    pending: List[str] = field(default_factory=list)  # last: the fields before it keep their places

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "DeleteResult":
        return _build(cls, d, deleted=int(d.get("deleted") or 0), not_found=list(d.get("not_found") or []),
                      pending=list(d.get("pending") or []))


@dataclass(frozen=True)
class Span:
    """Where a shared passage lies in one text: byte offsets ``start`` to
    ``end`` (a slice of the UTF-8 text), lines and columns from 1, and the
    index of its first word and its number of words."""

    start: int
    end: int
    line: int = 0
    col: int = 0
    end_line: int = 0
    end_col: int = 0
    word: int = 0
    words: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Span":
        return _build(cls, d)


@dataclass(frozen=True)
class Passage:
    """A passage the two texts of a comparison share: its span in each."""

    a: Span
    b: Span

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Passage":
        return cls(a=Span.from_json(d.get("a") or {}), b=Span.from_json(d.get("b") or {}))


@dataclass(frozen=True)
class Comparison:
    """How similar two texts or stored documents are, as ``fpdb compare
    --json`` prints it.

    Attributes:
        estimated: the resemblance the fingerprints estimate (what queries
            use); ``hamming`` and ``k`` are its Hamming distance and bits.
        jaccard: the exact resemblance of the two shingle sets.
        contained_a, contained_b: the share of A's shingles found in B, and
            of B's in A.
        shared_shingles: the number of shingles both have.
        passages: the passages they share, longest first.
        more_passages: the texts share more passages than ``passages``
            holds: the server answers with the longest 1000 at most.
        a, b: each side's name, format and sizes (``raw`` has them all).
    """

    estimated: float
    jaccard: float
    contained_a: float
    contained_b: float
    hamming: int = 0
    k: int = 0
    shared_shingles: int = 0
    passages: List[Passage] = field(default_factory=list)
    a: Dict[str, Any] = field(default_factory=dict)
    b: Dict[str, Any] = field(default_factory=dict)
    more_passages: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Comparison":
        return _build(
            cls,
            d,
            estimated=float(d.get("estimated") or 0.0),
            jaccard=float(d.get("jaccard") or 0.0),
            contained_a=float(d.get("contained_a") or 0.0),
            contained_b=float(d.get("contained_b") or 0.0),
            passages=[Passage.from_json(p) for p in (d.get("passages") or [])],
            a=dict(d.get("a") or {}),
            b=dict(d.get("b") or {}),
        )


@dataclass(frozen=True)
class ImportResult:
    """What an import stored: the number of documents and, from a cluster,
    which keeps neither, the numbers of the export's texts and audit-log
    entries it did not keep."""

    imported: int
    dropped_texts: int = 0
    dropped_log_entries: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ImportResult":
        return _build(
            cls,
            d,
            imported=int(d.get("imported") or 0),
            dropped_texts=int(d.get("dropped_texts") or 0),
            dropped_log_entries=int(d.get("dropped_log_entries") or 0),
        )


@dataclass(frozen=True)
class Stats:
    """The database's counters and creation parameters (``raw`` holds every
    field the server sent).

    Attributes:
        docs: the number of stored documents.
        disk_bytes: the database's size on disk.
        k: the fingerprint's length in bits.
        shingle_width: words per shingle.
        group_widths: the index's group widths in bits.
        keep_texts: the database keeps each document's text.
        audit_log: the database keeps an audit log.
        created: when the database was created, RFC 3339.
        import_incomplete: an import into the database did not finish: it
            refuses other writes (Forbidden, reason ``import_incomplete``)
            until the same export is imported again, which resumes.
    """

    docs: int
    disk_bytes: int = 0
    k: int = 0
    shingle_width: int = 0
    group_widths: List[int] = field(default_factory=list)
    keep_texts: bool = False
    audit_log: bool = False
    created: str = ""
    import_incomplete: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Stats":
        return _build(cls, d)


@dataclass(frozen=True)
class Pair:
    """A pair of stored near duplicates: ids ``a`` and ``b``, their estimated
    resemblance, Hamming distance and whether their texts are the same."""

    a: str
    b: str
    similarity: float
    hamming: int = 0
    exact: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Pair":
        return _build(cls, d, similarity=float(d.get("similarity") or 0.0))


@dataclass(frozen=True)
class Cluster:
    """A group of near duplicates.

    Attributes:
        cluster: its number, from 1, largest first.
        size: the number of documents in it.
        pairs: the number of pairs above the threshold inside it.
        ids: its documents, in the order they were stored.
        keep: the document to keep, with a ``keep`` policy or with
            ``centers=True`` (the cluster's center, chosen by the policy if
            one is given); "" with neither.
        drop: the others, with a ``keep`` policy or ``centers=True``; empty
            with neither.
        center: the member ``cohesion`` is measured from: the kept document,
            else the first stored.
        cohesion: the least similarity of a member to ``center``.
    """

    cluster: int
    size: int
    ids: List[str]
    pairs: int = 0
    keep: str = ""
    drop: List[str] = field(default_factory=list)
    center: str = ""
    cohesion: float = 0.0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Cluster":
        return _build(
            cls,
            d,
            ids=list(d.get("ids") or []),
            drop=list(d.get("drop") or []),
            keep=d.get("keep") or "",
            center=d.get("center") or "",
            cohesion=float(d.get("cohesion") or 0.0),
        )
