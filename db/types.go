package db

import (
	"time"

	"github.com/fpdb/fpdb/index"
)

// Doc is a stored document.
type Doc struct {
	// ID is the caller-given id, unique in the database.
	ID string
	// seq is the internal document number (a replaced document gets a new
	// one); it is not part of the API.
	seq uint32
	// Fingerprint is the K-bit fingerprint: bit j is bit j%64 of word j/64.
	Fingerprint []uint64
	// ContentHash is a 128-bit hash of the normalized text; all zero for a
	// document added by fingerprint without one.
	ContentHash [16]byte
	// Source names where the document came from (a path, a URL); may be empty.
	Source string
	// Size is the size of the original text in bytes (0 when added by
	// fingerprint).
	Size int64
	// Words is the number of normalized words (0 when added by fingerprint).
	Words int
	// Added is when the document was stored.
	Added time.Time
}

// Match is a stored document similar to a query.
type Match struct {
	// ID is the matching document's id.
	ID string
	// Similarity is the estimated resemblance 1 − 2·Hamming/K.
	Similarity float64
	// Hamming is the Hamming distance between the fingerprints.
	Hamming int
	// Exact reports that the content hashes are equal (the normalized texts
	// are identical).
	Exact bool
}

// Plan selects how a query finds its candidates: the planner's choice
// (PlanAuto, the zero value), a forced probe radius with the exact count
// filter or the scan — all of which return exactly the set a linear scan
// returns — or an approximate plan (PlanApprox, or PlanProbe with MinHits
// above the exact filter), which may miss matches. It is the index's plan
// type.
type Plan = index.Plan

// PlanKind is a kind of query plan.
type PlanKind = index.PlanKind

// Plan kinds.
const (
	// PlanAuto lets the planner pick the cheapest exact plan.
	PlanAuto = index.Auto
	// PlanProbe probes, in every group, all values within Plan.Tau bits of
	// the query's group value and keeps documents hit in enough groups
	// (Plan.MinHits above the exact count filter trades recall for speed).
	PlanProbe = index.Probe
	// PlanScan compares the query with every stored fingerprint.
	PlanScan = index.Scan
	// PlanApprox lets the planner also use approximate probe plans whose
	// expected recall (for a document at the threshold's Hamming radius,
	// under the binomial model of independent fingerprint bits) is at least
	// Plan.MinRecall. It is never the default: its answers may miss matches.
	PlanApprox = index.Approx
)

// QueryOptions configure a query.
type QueryOptions struct {
	// Threshold is the minimum estimated resemblance, in (0, 1].
	Threshold float64
	// Limit caps the number of matches returned (the closest first); 0
	// means no limit.
	Limit int
	// Plan forces a plan; the zero value lets the planner choose. Forcing a
	// probe plan that cannot be exact for the threshold is an error.
	Plan Plan
}

// QueryStats describes how a query was executed (the plan, the count
// filter, the work done); it is the index's search statistics type.
type QueryStats = index.Stats

// QueryResult is the answer to a query.
type QueryResult struct {
	// Matches are sorted by Hamming distance, then by id.
	Matches []Match
	// Stats describe the execution.
	Stats QueryStats
}

// AddOptions configure an add.
type AddOptions struct {
	// Threshold, when > 0, makes the add first look for stored documents
	// with resemblance ≥ Threshold and return them in AddResult.Matches. The
	// check and the store happen under one lock: no other write comes
	// between them.
	Threshold float64
	// Reject makes the add store nothing when the check found a match.
	Reject bool
	// Limit caps the matches returned; 0 means no limit.
	Limit int
}

// AddResult is the outcome of an add.
type AddResult struct {
	// Stored reports that the document was written.
	Stored bool
	// Replaced reports that a document with the same id was replaced.
	Replaced bool
	// Matches are the stored documents found by the check (other than the
	// document's own previous version), sorted like query matches.
	Matches []Match
	// Doc is the document as stored (or as it would have been stored when
	// Reject refused it).
	Doc Doc
}

// Params are the creation parameters of a database.
type Params struct {
	// FormatVersion is the on-disk format version.
	FormatVersion int
	// K is the fingerprint length in bits.
	K int
	// GroupWidths are the index group widths.
	GroupWidths []int
	// ShingleWidth is the number of words per shingle.
	ShingleWidth int
	// Seed seeds the hash functions.
	Seed uint64
	// HashVersion is the version of the shingle-hash and min-hash scheme.
	HashVersion int
	// NormalizeVersion is the version of the text normalization.
	NormalizeVersion int
	// Merger is the name of the posting merge operator.
	Merger string
	// Created is when the database was created.
	Created time.Time
}

// Stats summarize a database.
type Stats struct {
	// Params are the creation parameters.
	Params Params
	// Docs is the number of live documents.
	Docs int
	// DiskBytes is the size of the database files.
	DiskBytes int64
	// Deferred is the number of documents whose postings a bulk load has
	// not written yet (Options.BulkLoad; Flush writes them).
	Deferred int
}
