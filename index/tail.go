package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// NoTail is the tail mark of an index whose every document has its postings
// in Pebble.
const NoTail = math.MaxUint32

// TailFilePrefix starts the names of the sstables FlushTail writes in the
// database directory before it ingests them. A file left by a crash is
// garbage: RemoveTailFiles deletes it.
const TailFilePrefix = "fpdb-tail-"

// The tail.
//
// While deferring (Defer), added documents get their fingerprint records but
// no posting operands, and their ids stay out of the posting cache, which
// mirrors Pebble. The smallest such id is the tail mark W, written in the
// batch of the first deferred add: every id < W has its postings in Pebble,
// no id ≥ W has any. A probe plan scans the tail's fingerprints besides
// probing, so searches see the tail's documents at once. FlushTail writes
// the postings of the live ids ≥ W, one merge operand per key, into an
// sstable ingested in one atomic step with W reset to NoTail; ApplyFlushTail then adds them to
// the cached lists. A crash before the ingest leaves the tail as it was.

// Defer makes later adds deferred (see the tail). Like a write, it must not
// run concurrently with other calls.
func (ix *Index) Defer() { ix.deferring = true }

// Deferring reports whether adds are deferred.
func (ix *Index) Deferring() bool { return ix.deferring }

// TailStart returns the tail mark W: the smallest id whose postings are not
// in Pebble, or NoTail.
func (ix *Index) TailStart() uint32 { return ix.tailStart }

// TailLen returns the number of live documents whose postings are not yet
// written.
func (ix *Index) TailLen() int {
	n := 0
	for id := int(ix.tailStart); id < ix.Cap(); id++ {
		if ix.Live(uint32(id)) {
			n++
		}
	}
	return n
}

// inTail reports whether id's postings are not in Pebble.
func (ix *Index) inTail(id uint32) bool { return id >= ix.tailStart }

// checkDeferredID refuses a deferred add of an id below Cap: the tail holds
// only ids above every id stored before it.
func (ix *Index) checkDeferredID(id uint32) error {
	if ix.deferring && int(id) < ix.Cap() && id < ix.tailStart {
		return fmt.Errorf("index: deferred add of id %d, below the largest id stored (%d)", id, ix.Cap()-1)
	}
	return nil
}

// stageTailMark writes the tail mark first into b when a deferred add of
// id opens the tail.
func (ix *Index) stageTailMark(b *pebble.Batch, first uint32) error {
	if ix.tailStart != NoTail {
		return nil
	}
	return b.Set(keys.Tail(), binary.BigEndian.AppendUint32(nil, first), nil)
}

// loadTail reads the tail mark. It stays as written even when the tail
// holds no live document: no id ≥ W may get postings until FlushTail resets
// it.
func (ix *Index) loadTail() error {
	w, err := ix.readTailMark()
	ix.tailStart = w
	return err
}

// readTailMark reads the tail mark from Pebble (NoTail when absent, as in
// format version 1).
func (ix *Index) readTailMark() (uint32, error) {
	v, closer, err := ix.db.Get(keys.Tail())
	if errors.Is(err, pebble.ErrNotFound) {
		return NoTail, nil
	}
	if err != nil {
		return 0, fmt.Errorf("index: read tail mark: %w", err)
	}
	defer closer.Close()
	if len(v) != 4 {
		return 0, fmt.Errorf("%w: tail mark %x: want 4 bytes", ErrCorrupt, v)
	}
	return binary.BigEndian.Uint32(v), nil
}

// eachTail calls fn for every live id in the tail, in increasing order.
func (ix *Index) eachTail(fn func(id uint32, fp []uint64)) {
	for id := int(ix.tailStart); id < ix.Cap(); id++ {
		if fp := ix.Fingerprint(uint32(id)); fp != nil {
			fn(uint32(id), fp)
		}
	}
}

// FlushTail writes the postings of the tail's documents (one merge operand
// per posting key) as two sstables named TailFilePrefix… in dir on fs (the
// reset tail mark, and the postings), ingests
// them together with the reset tail mark in one atomic step, and removes
// them. The cache already holds the ids, so readers see no change and may
// run meanwhile; writers must be excluded. Call ApplyFlushTail afterwards,
// excluding readers. Without a tail it does nothing.
func (ix *Index) FlushTail(ctx context.Context, fs vfs.FS, dir string) (err error) {
	if ix.tailStart == NoTail {
		return nil
	}
	var paths []string
	defer func() {
		for _, p := range paths {
			_ = fs.Remove(p)
		}
	}()
	tf := ix.db.TableFormat()
	create := func(i int) (*sstable.Writer, error) {
		p := filepath.Join(dir, fmt.Sprintf("%s%06d.sst", TailFilePrefix, i))
		f, err := fs.Create(p, vfs.WriteCategoryUnspecified)
		if err != nil {
			return nil, fmt.Errorf("index: flush tail: %w", err)
		}
		paths = append(paths, p)
		return sstable.NewWriter(objstorageprovider.NewFileWritable(f), sstable.WriterOptions{
			TableFormat: tf,
			MergerName:  posting.MergerName,
			Compression: sstable.GoodCompression, // it may go to the bottom level
		}), nil
	}

	// File 0: the reset tail mark.
	w, err := create(0)
	if err != nil {
		return err
	}
	if err := w.Set(keys.Tail(), binary.BigEndian.AppendUint32(nil, NoTail)); err != nil {
		_ = w.Close()
		return fmt.Errorf("index: flush tail: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("index: flush tail: %w", err)
	}

	// File 1: the postings, group by group (the groups' key ranges are
	// disjoint and in order). Apart from the mark, the file can go to the
	// lowest level whose keys it does not overlap: into an empty store,
	// the bottom one, never to be compacted again.
	var ks []uint64
	var ids []uint32
	var val, key []byte
	if ix.TailLen() > 0 {
		if w, err = create(1); err != nil {
			return err
		}
	} else {
		w = nil
	}
	for g := range ix.layout.Widths {
		if w == nil {
			break
		}
		if err := ctx.Err(); err != nil {
			_ = w.Close()
			return err
		}
		ks = ks[:0]
		ix.eachTail(func(id uint32, fp []uint64) {
			ks = append(ks, uint64(ix.layout.Value(fp, g))<<32|uint64(id))
		})
		if len(ks) == 0 {
			break
		}
		sortKeys(ks)
		err := eachRun(ks, ids, func(y uint32, ids []uint32) error {
			val = posting.AppendSorted(val[:0], ids, nil)
			key = keys.AppendPosting(key[:0], y)
			return w.Merge(key, val)
		})
		if err != nil {
			_ = w.Close()
			return fmt.Errorf("index: flush tail: %w", err)
		}
	}
	if w != nil {
		if err := w.Close(); err != nil {
			return fmt.Errorf("index: flush tail: %w", err)
		}
	}
	if err := ix.db.Ingest(ctx, paths); err != nil {
		return fmt.Errorf("index: flush tail: ingest: %w", err)
	}
	return nil
}

// ApplyFlushTail records in memory that FlushTail succeeded: the tail's ids
// join the cached posting lists and no document is in the tail any more.
func (ix *Index) ApplyFlushTail() {
	if ix.tailStart == NoTail {
		return
	}
	if ix.cache.keys.Load() > 0 || ix.cache.complete.Load() {
		var ks []uint64
		var ids []uint32
		for g := range ix.layout.Widths {
			ks = ks[:0]
			ix.eachTail(func(id uint32, fp []uint64) {
				ks = append(ks, uint64(ix.layout.Value(fp, g))<<32|uint64(id))
			})
			sortKeys(ks)
			_ = eachRun(ks, ids, ix.cache.addRun)
		}
	}
	ix.tailStart = NoTail
}

// tailScanned reports whether probe plans must scan the tail.
func (ix *Index) tailScanned() bool { return ix.tailStart != NoTail && int(ix.tailStart) < ix.Cap() }

// RemoveTailFiles deletes the sstables a crashed FlushTail left in dir.
func RemoveTailFiles(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if len(n) > len(TailFilePrefix) && n[:len(TailFilePrefix)] == TailFilePrefix {
			if err := fs.Remove(filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	return nil
}
