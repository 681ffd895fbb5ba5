package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
)

// ErrNoMark is returned by DB.Mark for a name no mark has.
var ErrNoMark = errors.New("fpdb: no such mark")

// MaxMarkName and MaxMarkValue bound a mark's name and value, in bytes.
const (
	MaxMarkName  = 4096
	MaxMarkValue = 1 << 20
)

// Mark is a small named record a caller keeps in the database, written in
// the same atomic batch as documents (AddBatchMarked): a loader records how
// far it has read an input with the documents it stored from it, so that
// after a crash the mark and the documents agree, and a rerun resumes
// where the mark says. Marks are not documents: queries, pairs, exports
// and backups of documents ignore them (a backup copies them, as it copies
// every record).
type Mark struct {
	// Name is the mark's name: valid UTF-8, 1 to MaxMarkName bytes.
	Name string
	// Value is the caller's data, at most MaxMarkValue bytes; a nil Value
	// in AddBatchMarked deletes the mark.
	Value []byte
}

func validMark(m *Mark) error {
	switch {
	case m.Name == "" || len(m.Name) > MaxMarkName || !utf8.ValidString(m.Name):
		return fmt.Errorf("%w: mark name %q must be 1 to %d bytes of UTF-8", ErrInvalidOptions, m.Name, MaxMarkName)
	case len(m.Value) > MaxMarkValue:
		return fmt.Errorf("%w: mark %q: value of %d bytes (at most %d)", ErrInvalidOptions, m.Name, len(m.Value), MaxMarkValue)
	}
	return nil
}

// AddBatchMarked is AddBatch that also sets (or, with a nil Value,
// deletes) the mark m in the same atomic batch: after a crash, either
// the documents stored and the mark are both present, or neither is. The
// mark is written even when no document of docs is stored (all skipped or
// unchanged, or docs empty).
func (d *DB) AddBatchMarked(ctx context.Context, docs []Input, m Mark) (*BatchResult, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if err := validMark(&m); err != nil {
		return nil, fmt.Errorf("fpdb: add batch: %w", err)
	}
	return d.addBatchMarked(ctx, docs, OpAddBatch, &m)
}

// AddBatchMarkedBy is AddBatchMarked with the marks made by marks from
// the documents the batch skips (as BatchResult.Skipped lists them),
// known once the texts are fingerprinted and before anything is written:
// a loader can keep, in the same atomic batch as the documents it stores,
// which of its inputs the database refused (which an id stored before
// would otherwise hide after a crash). marks is called at most once (not
// when the call fails before: a read-only database, an ended context),
// from the calling goroutine, with the documents refused by their id or
// text (not those left unchanged), and may return no mark; a mark with a
// nil Value is deleted, and of two marks of one name the later is
// written. Every mark is checked as AddBatchMarked checks its own: one
// that is not valid fails the whole batch (nothing is written).
func (d *DB) AddBatchMarkedBy(ctx context.Context, docs []Input, marks func(skipped []BatchSkip) []Mark) (*BatchResult, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	return d.addBatchSpec(ctx, docs, writeSpec{op: OpAddBatch, marksOf: marks, what: "add batch"})
}

// SetMark sets (or, with a nil Value, deletes) the mark m, durably.
func (d *DB) SetMark(ctx context.Context, m Mark) error {
	if err := d.live(); err != nil {
		return err
	}
	if err := validMark(&m); err != nil {
		return fmt.Errorf("fpdb: set mark: %w", err)
	}
	_, err := d.addBatchSpec(ctx, nil, writeSpec{op: OpAddBatch, mark: &m, what: "set mark"})
	return err
}

// Mark returns the value of the mark named name, or an error wrapping
// ErrNoMark.
func (d *DB) Mark(ctx context.Context, name string) ([]byte, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if err := d.enter(ctx); err != nil {
		return nil, err
	}
	defer d.leave()
	v, closer, err := d.pdb.Get(keys.Mark(name))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("fpdb: mark %q: %w", name, ErrNoMark)
	}
	if err != nil {
		return nil, fmt.Errorf("fpdb: mark %q: %w", name, storageError(err))
	}
	defer closer.Close()
	return slices.Clone(v), nil
}

// Marks returns the marks whose names start with prefix, by name.
func (d *DB) Marks(ctx context.Context, prefix string) (_ []Mark, err error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	ctx, leave, err := d.enterLong(ctx)
	if err != nil {
		return nil, err
	}
	defer leave(&err)
	lo := keys.Mark(prefix)
	it, err := d.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return nil, fmt.Errorf("fpdb: marks: %w", storageError(err))
	}
	defer it.Close()
	var out []Mark
	n := len(keys.MarkPrefix())
	for it.First(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("fpdb: marks: %w", storageError(err))
		}
		out = append(out, Mark{Name: string(it.Key()[n:]), Value: slices.Clone(v)})
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("fpdb: marks: %w", storageError(err))
	}
	return out, nil
}

// prefixEnd returns the smallest key above every key starting with p (nil:
// none).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
