package db

import (
	"errors"
	"fmt"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/normalize"
)

// Sentinel errors. Test for them with errors.Is; the returned errors wrap
// them with details (the input, the path, the parameter).
var (
	// ErrNotFound is returned when no document has the given id.
	ErrNotFound = errors.New("fpdb: document not found")
	// ErrClosed is returned by calls on a closed DB.
	ErrClosed = errors.New("fpdb: database is closed")
	// ErrLocked is returned by Open when another process (or another DB
	// value in this process) has the database open.
	ErrLocked = errors.New("fpdb: database is locked by another process")
	// ErrNotExist is returned by Open when the directory holds no database
	// and Options.ErrorIfNotExist or Options.ReadOnly is set.
	ErrNotExist = errors.New("fpdb: database does not exist")
	// ErrNotFPDB is returned by Open when the directory is not empty and is
	// not an fpdb database.
	ErrNotFPDB = errors.New("fpdb: not an fpdb database")
	// ErrParamsMismatch is returned by Open when the creation parameters in
	// Options differ from those recorded in the database (see *ParamsError).
	ErrParamsMismatch = errors.New("fpdb: creation parameters do not match the database")
	// ErrFormatVersion is returned by Open when the database was written in a
	// format version this build cannot read.
	ErrFormatVersion = errors.New("fpdb: unsupported format version")
	// ErrCorrupt is returned when a stored record cannot be decoded.
	ErrCorrupt = errors.New("fpdb: corrupt record")
	// ErrReadOnly is returned by writes on a DB opened with Options.ReadOnly.
	ErrReadOnly = errors.New("fpdb: database is read-only")
	// ErrInvalidID is returned for an empty, too long or non-UTF-8 document id.
	ErrInvalidID = errors.New("fpdb: invalid document id")
	// ErrInvalidThreshold is returned for a threshold outside (0, 1].
	ErrInvalidThreshold = errors.New("fpdb: threshold must be in (0, 1]")
	// ErrInvalidOptions is returned by Options.Validate.
	ErrInvalidOptions = errors.New("fpdb: invalid options")
	// ErrNoText is returned by DB.Text when the database does not keep
	// texts (Options.KeepTexts) or the document was stored without one.
	ErrNoText = errors.New("fpdb: no stored text")
	// ErrTextTooLarge is returned (wrapped, naming the document) when a
	// database that keeps texts is given a text longer than
	// Options.MaxTextSize (the document is not stored), and by Compare
	// for a text or stored text longer than MaxCompareText.
	ErrTextTooLarge = errors.New("fpdb: text too large")
	// ErrImportRunning is returned by a write (or Check, Warm, Compact,
	// Flush) made while ImportInto fills the database: it would be mixed
	// into the export's documents and audit log. Nothing is written; try
	// again once the import has ended. Export fails with it too (it would
	// export part of the import).
	ErrImportRunning = errors.New("fpdb: an import into the database is running")
	// ErrImportIncomplete is returned by a write (and by Check and Export) to a
	// database that an import did not finish (it stopped on an error, an
	// interrupt or a crash): the database holds the export's documents up
	// to a whole batch, and refuses every other write so that an import of
	// the same export can resume where it stopped. Import that export
	// again, or remove the database.
	ErrImportIncomplete = errors.New("fpdb: an import into the database did not finish")
	// ErrIDSpaceExhausted is returned when all 2^32 internal ids were used.
	ErrIDSpaceExhausted = errors.New("fpdb: internal id space exhausted")

	// ErrInfeasiblePlan is returned when QueryOptions.Plan forces a probe
	// radius whose count filter cannot be exact for the threshold.
	ErrInfeasiblePlan = index.ErrInfeasible

	// ErrNoWords is returned when a document has no words (empty, white
	// space or punctuation only).
	ErrNoWords = fingerprint.ErrNoWords
	// ErrBinary is returned for binary or non-UTF-8 input.
	ErrBinary = normalize.ErrBinary
	// ErrBadFingerprint is returned for a fingerprint of the wrong length.
	ErrBadFingerprint = bitvec.ErrBadFingerprint
)

// ParamsError describes a creation parameter that differs between Options
// (or this build) and the database (or an export being imported).
// errors.Is(err, ErrParamsMismatch) holds.
type ParamsError struct {
	Param  string // name of the parameter, e.g. "K"
	Stored string // value recorded in the database (in the export if Export)
	Given  string // value asked for in Options (this build's if Build)
	// Export is set when Stored is the value recorded in an export read
	// by Import, not in a database.
	Export bool
	// Build is set when Given is not an option but this build's own value
	// (its hash or normalization version, its posting merger).
	Build bool
	// Into is set when Given is the value recorded in an export that
	// does not fit the database it is imported into (ImportInto).
	Into bool
}

// Error names both sides: "creation parameter K is 512 in the database,
// but 256 was asked for", or, for a value of this build, "the export was
// made with hash version 2; this build uses 1".
func (e *ParamsError) Error() string {
	where := "the database"
	if e.Export {
		where = "the export"
	}
	if e.Build {
		made := "was created"
		if e.Export {
			made = "was made"
		}
		return fmt.Sprintf("fpdb: %s %s with %s %s; this build uses %s", where, made, paramName(e.Param), e.Stored, e.Given)
	}
	if e.Into {
		return fmt.Sprintf("fpdb: creation parameter %s is %s in the database, but %s in the export", e.Param, e.Stored, e.Given)
	}
	return fmt.Sprintf("fpdb: creation parameter %s is %s in %s, but %s was asked for", e.Param, e.Stored, where, e.Given)
}

// paramName returns the name of a parameter of this build for a message.
func paramName(param string) string {
	switch param {
	case "HashVersion":
		return "hash version"
	case "NormalizeVersion":
		return "normalization version"
	case "Merger":
		return "posting merger"
	}
	return param
}

// Unwrap returns ErrParamsMismatch.
func (e *ParamsError) Unwrap() error { return ErrParamsMismatch }
