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
// and the database. errors.Is(err, ErrParamsMismatch) holds.
type ParamsError struct {
	Param  string // name of the parameter, e.g. "K"
	Stored string // value recorded in the database
	Given  string // value asked for in Options
}

func (e *ParamsError) Error() string {
	return fmt.Sprintf("fpdb: creation parameter %s is %s in the database, but %s was asked for", e.Param, e.Stored, e.Given)
}

// Unwrap returns ErrParamsMismatch.
func (e *ParamsError) Unwrap() error { return ErrParamsMismatch }
