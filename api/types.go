package api

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Version is the API version, the first element of every path (/v1/...).
const Version = "v1"

// Error is the body of every error response.
type Error struct {
	// Code names the kind of error, for programs: bad_request, not_found,
	// unauthorized, forbidden, too_large, timeout, too_many_requests,
	// unavailable, internal.
	Code string `json:"code"`
	// Message says what went wrong, naming the input.
	Message string `json:"message"`
	// RequestID identifies the request in the server's log.
	RequestID string `json:"request_id,omitempty"`
	// Reason names, for a 4xx, the database's error when there is one:
	// not_found, no_words, binary, invalid_id, text_too_large,
	// invalid_threshold, invalid_options, bad_fingerprint, ... (see
	// server/apiconv.Reason).
	Reason string `json:"reason,omitempty"`
}

// ErrorBody wraps an Error: {"error": {...}}.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error codes.
const (
	CodeBadRequest      = "bad_request"
	CodeNotFound        = "not_found"
	CodeUnauthorized    = "unauthorized"
	CodeForbidden       = "forbidden"
	CodeTooLarge        = "too_large"
	CodeTimeout         = "timeout"
	CodeTooManyRequests = "too_many_requests"
	CodeUnavailable     = "unavailable"
	CodeInternal        = "internal"
	// CodeOutcomeUnknown (status 504) is answered by a cluster's nodes
	// only: a write whose log message was sent and whose answer did not
	// come, so that it may or may not be done. Sending the same write again
	// is safe (an add finds its document unchanged); GET tells which.
	CodeOutcomeUnknown = "outcome_unknown"
)

// TextInput says how a text is read. Format is "auto" (default), "text"
// or "html"; Encoding a WHATWG label ("" or "auto": detected).
type TextInput struct {
	Format   string `json:"format,omitempty"`
	Encoding string `json:"encoding,omitempty"`
}

// AddRequest is a document to add (POST /v1/documents as JSON).
type AddRequest struct {
	// ID is the document's id (required).
	ID string `json:"id"`
	// Text is the document's text.
	Text string `json:"text"`
	// Source names where it came from (a path, a URL).
	Source string `json:"source,omitempty"`
	// Threshold, when > 0, checks for stored near duplicates first: in
	// (0, 1]. In Go 0 is no check (the field is left out of the JSON);
	// a JSON body with an explicit threshold outside (0, 1], 0 included,
	// is refused (400), as is any threshold on a line of a batch.
	Threshold float64 `json:"threshold,omitempty"`
	// Reject stores nothing when the check finds a near duplicate.
	Reject bool `json:"reject,omitempty"`
	// Replace stores the document anew even when the stored one has the
	// same content.
	Replace bool `json:"replace,omitempty"`
	// Limit caps the matches returned (0: all).
	Limit int `json:"limit,omitempty"`
	TextInput
}

// AddResult is the answer to an add.
type AddResult struct {
	ID string `json:"id"`
	// Line is the document's line in the body of a checked batch (POST
	// /v1/batch?threshold=R), from 1; 0 (absent) otherwise.
	Line int `json:"line,omitempty"`
	// Stored reports that the document was written; Replaced that it
	// replaced a document of the same id; Unchanged that the stored one
	// had the same content and was left as it is; Rejected that Reject
	// refused it.
	Stored    bool `json:"stored"`
	Replaced  bool `json:"replaced"`
	Unchanged bool `json:"unchanged"`
	Rejected  bool `json:"rejected"`
	// Matches are the stored near duplicates the check found.
	Matches []Match `json:"matches"`
	// Pending is set by a cluster only, in its answer 202 Accepted to a
	// plain add (no Threshold) whose shard has no live replica: the
	// document is in the cluster's write log (Stored is true), and a
	// replica of the shard stores it when one returns. Until then whether
	// it replaces a stored document, or leaves one of the same content
	// unchanged, is not known (Replaced and Unchanged are false).
	Pending bool `json:"pending,omitempty"`
}

// Match is a stored document found by a query or a check.
type Match struct {
	ID string `json:"id"`
	// Similarity is the estimated resemblance, 1 − 2·Hamming/K.
	Similarity float64 `json:"similarity"`
	Hamming    int     `json:"hamming"`
	// Exact reports equal content hashes (identical normalized text).
	Exact bool `json:"exact"`
	// QueryInDoc and DocInQuery are the estimated containments (absent
	// when a shingle count is unknown, or the resemblance is below 4/√K,
	// where the estimate is noise).
	QueryInDoc float64 `json:"query_in_doc,omitempty"`
	DocInQuery float64 `json:"doc_in_query,omitempty"`
}

// QueryRequest is a query (POST /v1/query as JSON): a text, or a
// fingerprint in hex with its shingle count.
type QueryRequest struct {
	Text string `json:"text,omitempty"`
	// Fingerprint is K bits in hex, 16 digits per 64-bit word, word 0
	// first (as "fpdb get" prints it); Shingles its distinct shingle
	// count (needed with Containment).
	Fingerprint string `json:"fingerprint,omitempty"`
	Shingles    int    `json:"shingles,omitempty"`
	// Threshold is the least resemblance, in (0, 1] (default 0.7 unless
	// Containment is given). In Go 0 is the default (the field is left
	// out of the JSON); a JSON body with an explicit threshold outside
	// (0, 1], 0 included, is refused (400).
	Threshold float64 `json:"threshold,omitempty"`
	// Containment, when > 0, asks for the documents that contain at least
	// that share of the query.
	Containment float64 `json:"containment,omitempty"`
	Limit       int     `json:"limit,omitempty"`
	// Plan is "auto" (default), "scan", "probe" or "approx"; Tau the probe
	// radius (with "probe"); Recall the least expected recall (with
	// "approx").
	Plan   string  `json:"plan,omitempty"`
	Tau    *int    `json:"tau,omitempty"`
	Recall float64 `json:"recall,omitempty"`
	// Explain asks for the plan's counters.
	Explain bool `json:"explain,omitempty"`
	TextInput
}

// QueryResult is the answer to a query.
type QueryResult struct {
	Matches []Match  `json:"matches"`
	Explain *Explain `json:"explain,omitempty"`
}

// Explain is what a query did.
type Explain struct {
	Plan       string `json:"plan"`
	Radius     int    `json:"radius"`
	MinHits    int    `json:"min_hits"`
	Probes     int    `json:"probes"`
	Postings   int    `json:"postings"`
	Candidates int    `json:"candidates"`
	// Verified is the number of documents whose fingerprint was compared
	// with the query: every document, each once, for a scan (see
	// db.QueryStats for a containment query's large documents).
	Verified int `json:"verified"`
	// Reads is the number of posting lists read from storage (cache
	// misses).
	Reads     int     `json:"reads"`
	Recall    float64 `json:"recall"`
	ElapsedNS int64   `json:"elapsed_ns"`
}

// Doc is a stored document (GET /v1/documents/{id}). Its JSON form holds
// Source as it is stored, byte for byte (see MarshalJSON).
type Doc struct {
	ID string `json:"id"`
	// Source names where it came from (a path, a URL): any bytes, as a
	// file's path may be.
	Source string `json:"source"`
	Size   int64  `json:"size"`
	Words  int    `json:"words"`
	// Shingles is the number of distinct shingles (0: unknown).
	Shingles int `json:"shingles"`
	// Added is when it was stored, RFC 3339.
	Added       string `json:"added"`
	ContentHash string `json:"content_hash"`
	Fingerprint string `json:"fingerprint"`
}

// MarshalJSON writes d as a JSON object. A Source that is not valid UTF-8
// (a file's path may be any bytes), which a JSON string cannot hold, is
// also written as source_base64, its bytes in base64 (standard, padded):
// source then has each invalid byte replaced by U+FFFD.
func (d Doc) MarshalJSON() ([]byte, error) {
	v := docJSON{plainDoc: plainDoc(d)}
	if !utf8.ValidString(d.Source) {
		v.SourceBase64 = []byte(d.Source)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as the server writes its answers
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads a Doc as MarshalJSON writes it: Source is
// source_base64 when that is present.
func (d *Doc) UnmarshalJSON(b []byte) error {
	var v docJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*d = Doc(v.plainDoc)
	if v.SourceBase64 != nil {
		d.Source = string(v.SourceBase64)
	}
	return nil
}

// plainDoc is a Doc without its JSON methods.
type plainDoc Doc

// docJSON is the JSON form of a Doc.
type docJSON struct {
	plainDoc
	SourceBase64 []byte `json:"source_base64,omitempty"`
}

// DeleteResult is the answer to a delete.
type DeleteResult struct {
	// Deleted is the number of documents deleted (or that would be, with
	// DryRun); NotFound the ids given that are not stored.
	Deleted  int      `json:"deleted"`
	NotFound []string `json:"not_found,omitempty"`
	DryRun   bool     `json:"dry_run,omitempty"`
	// IDs are, with DryRun by prefix or age, the ids that would be
	// deleted, in storing order.
	IDs []string `json:"ids,omitempty"`
	// Erased and Redacted are, with Forget, the audit-log entries erased
	// (about the forgotten ids) and redacted (naming one as a match).
	Erased   *int `json:"erased,omitempty"`
	Redacted *int `json:"redacted,omitempty"`
	// Pending are, in a cluster's answer 202 Accepted only, the ids given
	// whose shard has no live replica: their deletion is in the cluster's
	// write log, and a replica of the shard applies it when one returns.
	// Whether each was stored is not known: they are counted neither in
	// Deleted nor in NotFound.
	Pending []string `json:"pending,omitempty"`
}

// Stats describes the database (GET /v1/stats).
type Stats struct {
	Docs      int   `json:"docs"`
	DiskBytes int64 `json:"disk_bytes"`
	Deferred  int   `json:"deferred_postings_docs"`
	// ImportIncomplete is set when an import into the database did not
	// finish: it refuses other writes until the same export is imported
	// again (which resumes).
	ImportIncomplete bool   `json:"import_incomplete,omitempty"`
	FormatVersion    int    `json:"format_version"`
	K                int    `json:"k"`
	GroupWidths      []int  `json:"group_widths"`
	ShingleWidth     int    `json:"shingle_width"`
	Seed             uint64 `json:"seed"`
	NormalizeVersion int    `json:"normalize_version"`
	KeepTexts        bool   `json:"keep_texts"`
	AuditLog         bool   `json:"audit_log"`
	Created          string `json:"created"`
}

// ImportResult is the answer to POST /v1/import.
type ImportResult struct {
	// Imported is the number of documents imported.
	Imported int `json:"imported"`
	// DroppedTexts and DroppedLogEntries count what a cluster, which keeps
	// neither, did not keep of the export: the documents' texts and the
	// entries of its audit log (absent when none).
	DroppedTexts      int `json:"dropped_texts,omitempty"`
	DroppedLogEntries int `json:"dropped_log_entries,omitempty"`
}
