package api

// BatchResult is the answer to POST /v1/batch: the documents stored (of
// which Replaced replaced a stored document of the same id), left
// unchanged (the same content was stored under the id), rejected (a
// checked batch with reject) and skipped. A checked batch (?threshold=R)
// also answers the outcome of each document not skipped, in line order,
// in Results.
type BatchResult struct {
	Stored    int         `json:"stored"`
	Replaced  int         `json:"replaced"`
	Unchanged int         `json:"unchanged"`
	Rejected  int         `json:"rejected,omitempty"`
	Skipped   []BatchSkip `json:"skipped"`
	Results   []AddResult `json:"results,omitempty"`
	// Pending is set by a cluster only, in its answer 202 Accepted to an
	// unchecked batch some of whose documents' shards have no live
	// replica: it counts those documents, which are in the cluster's write
	// log and counted in Stored, and which a replica of their shard stores
	// when one returns. Whether each replaces a stored document, or leaves
	// one of the same content unchanged, is not known until then (they
	// are not counted in Replaced or Unchanged).
	Pending int `json:"pending,omitempty"`
}

// BatchCheck is the check of a checked batch (POST
// /v1/batch?threshold=R&reject=true&limit=N): each document is checked in
// line order, against the stored documents and the lines before it, as
// an add with Threshold, Reject and Limit checks it.
type BatchCheck struct {
	Threshold float64
	Reject    bool
	Limit     int
}

// BatchSkip is a line of a batch that was not stored, and why (binary or
// empty text, an invalid id, an id given on an earlier line).
type BatchSkip struct {
	// Line is the line's number in the body, from 1.
	Line  int    `json:"line"`
	ID    string `json:"id"`
	Error string `json:"error"`
	// Reason names the database's error, as Error.Reason does.
	Reason string `json:"reason,omitempty"`
}

// DeleteRequest selects the documents to delete (POST /v1/delete): by
// ids, by id prefix, or by age (exactly one of them).
type DeleteRequest struct {
	IDs    []string `json:"ids,omitempty"`
	Prefix string   `json:"prefix,omitempty"`
	// OlderThan selects the documents added longer ago than a Go duration
	// ("720h") or a number of days ("30d").
	OlderThan string `json:"older_than,omitempty"`
	// DryRun counts what would be deleted and deletes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// Forget (with IDs) also erases the documents' audit-log entries.
	Forget bool `json:"forget,omitempty"`
}

// TemplateRequest adds a template (POST /v1/templates), or replaces the
// template of that name.
type TemplateRequest struct {
	Name string `json:"name"`
	Text string `json:"text"`
	TextInput
}

// Template is a template of the database: one element of GET
// /v1/templates and one line of "fpdb template list --json".
type Template struct {
	Name     string `json:"name"`
	Shingles int    `json:"shingles"`
	// Format is how its text is read: text or html.
	Format string `json:"format"`
	Bytes  int    `json:"bytes"`
	// Added is when it was added, RFC 3339.
	Added string `json:"added"`
}

// Templates lists the templates (GET /v1/templates).
type Templates struct {
	Templates []Template `json:"templates"`
}

// TemplateResult is the answer to a template change: the template added
// or removed, whether it replaced one of the same name, the documents
// fingerprinted again (Changed of them got another fingerprint) and the
// distinct shingles all templates now exclude.
type TemplateResult struct {
	Template  Template `json:"template"`
	Replaced  bool     `json:"replaced"`
	Documents int      `json:"documents"`
	Changed   int      `json:"changed"`
	Excluded  int      `json:"excluded"`
}

// BackupRequest asks for a backup (POST /v1/backup) into Dir: an absolute
// path on the server's machine, which must not exist.
type BackupRequest struct {
	Dir string `json:"dir"`
}

// BackupResult is the answer to a backup.
type BackupResult struct {
	Dir string `json:"dir"`
	// Docs is the number of documents in the copy, counted in it (writes
	// go on in the database during a backup).
	Docs int `json:"docs"`
	// Seconds is how long the backup took.
	Seconds float64 `json:"seconds"`
}
