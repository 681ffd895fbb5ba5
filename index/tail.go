package index

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"strings"

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

// Deferring reports whether Defer was called.
func (ix *Index) Deferring() bool { return ix.deferring }

// deferAdds reports whether an add goes to the tail: while deferring, and
// whenever a tail exists, since no id ≥ W may get postings before
// FlushTail.
func (ix *Index) deferAdds() bool { return ix.deferring || ix.tailStart != NoTail }

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
	if ix.deferAdds() && int(id) < ix.Cap() && id < ix.tailStart {
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
	w, err := ReadTailMark(ix.db)
	ix.tailStart = w
	return err
}

// FlushTail writes the postings of the tail's documents (one merge operand
// per posting key) as two sstables named TailFilePrefix… in dir on fs, one
// with the reset tail mark and one with the postings, ingests both in one
// atomic step, and removes them. Readers may run meanwhile: they see the
// tail through the scan, and lists they read from Pebble are cut at the
// tail mark (postingReader.read). Writers must be excluded. Call
// ApplyFlushTail afterwards, excluding readers. Without a tail it does
// nothing.
func (ix *Index) FlushTail(ctx context.Context, fs vfs.FS, dir string) error {
	if ix.tailStart == NoTail {
		return nil
	}
	var paths []string
	defer func() {
		for _, p := range paths {
			_ = fs.Remove(p)
		}
	}()
	write := func(fill func(w *sstable.Writer) error) error {
		p := filepath.Join(dir, fmt.Sprintf("%s%06d.sst", TailFilePrefix, len(paths)))
		f, err := fs.Create(p, vfs.WriteCategoryUnspecified)
		if err != nil {
			return fmt.Errorf("index: flush tail: %w", err)
		}
		paths = append(paths, p)
		w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), sstable.WriterOptions{
			TableFormat: ix.db.TableFormat(),
			MergerName:  posting.MergerName,
			Compression: sstable.GoodCompression, // it may go to the bottom level
		})
		err = fill(w)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("index: flush tail: %w", err)
		}
		return nil
	}

	// The reset tail mark.
	err := write(func(w *sstable.Writer) error {
		return w.Set(keys.Tail(), binary.BigEndian.AppendUint32(nil, NoTail))
	})
	if err != nil {
		return err
	}
	// The postings, group by group (the groups' key ranges are disjoint and
	// in order). Apart from the mark, the file can go to the lowest level
	// whose keys it does not overlap: into an empty store, the bottom one,
	// never to be compacted again.
	if tail := ix.tailIDs(); len(tail) > 0 {
		var val, key []byte
		err := write(func(w *sstable.Writer) error {
			return ix.eachTailRun(ctx, tail, func(y uint32, ids []uint32) error {
				val = posting.AppendSorted(val[:0], ids, nil)
				key = keys.AppendPosting(key[:0], y)
				return w.Merge(key, val)
			})
		})
		if err != nil {
			return err
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
	if ix.cache.tracking() {
		_ = ix.eachTailRun(context.Background(), ix.tailIDs(), ix.cache.addRun)
	}
	ix.tailStart = NoTail
}

// tailIDs returns the live ids of the tail, in increasing order.
func (ix *Index) tailIDs() []uint32 {
	var ids []uint32
	for id := int(ix.tailStart); id < ix.Cap(); id++ {
		if ix.Live(uint32(id)) {
			ids = append(ids, uint32(id))
		}
	}
	return ids
}

// eachTailRun calls fn for every posting key of the documents tail, in key
// order, with their ids under that key (increasing).
func (ix *Index) eachTailRun(ctx context.Context, tail []uint32, fn func(y uint32, ids []uint32) error) error {
	ks := make([]uint64, len(tail))
	var buf []uint32
	for g := range ix.layout.Widths {
		if err := ctx.Err(); err != nil {
			return err
		}
		for i, id := range tail {
			ks[i] = uint64(ix.layout.Value(ix.Fingerprint(id), g))<<32 | uint64(id)
		}
		sortKeys(ks)
		if err := eachRun(ks, buf, fn); err != nil {
			return err
		}
	}
	return nil
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
		if strings.HasPrefix(n, TailFilePrefix) {
			if err := fs.Remove(filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	return nil
}
