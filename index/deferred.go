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

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// NoDeferred is the deferred mark of an index whose every document has its postings
// in Pebble.
const NoDeferred = math.MaxUint32

// FlushFilePrefix starts the names of the sstables FlushDeferred writes in the
// database directory before it ingests them. A file left by a crash is
// garbage: RemoveFlushFiles deletes it.
const FlushFilePrefix = "fpdb-tail-"

// Deferred postings.
//
// While deferring (Defer), added documents get their fingerprint records but
// no posting operands, and their ids stay out of the posting cache, which
// mirrors Pebble. The smallest such id is the deferred mark W, written in the
// batch of the first deferred add: every id < W has its postings in Pebble,
// no id ≥ W has any. A probe plan scans the deferred documents' fingerprints besides
// probing, so searches see the deferred documents at once. FlushDeferred writes
// the postings of the live ids ≥ W, one merge operand per key, into an
// sstable ingested in one atomic step with W reset to NoDeferred; applyFlush then adds them to
// the cached lists. A crash before the ingest leaves them deferred.

// Defer makes later adds deferred (see above).
func (ix *Index) Defer() {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.deferring = true
}

// Deferring reports whether Defer was called.
func (ix *Index) Deferring() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.deferring
}

// deferAdds reports whether an add is deferred: while deferring, and
// whenever deferred documents exist, since no id ≥ W may get postings before
// FlushDeferred.
func (ix *Index) deferAdds() bool { return ix.deferring || ix.deferFrom != NoDeferred }

// DeferredFrom returns the deferred mark W: the smallest id whose postings are not
// in Pebble, or NoDeferred.
func (ix *Index) DeferredFrom() uint32 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.deferFrom
}

// DeferredLen returns the number of live documents whose postings are not yet
// written.
func (ix *Index) DeferredLen() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.deferredLen()
}

func (ix *Index) deferredLen() int {
	n := 0
	for id := int(ix.deferFrom); id < ix.capacity(); id++ {
		if ix.isLive(uint32(id)) {
			n++
		}
	}
	return n
}

// isDeferred reports whether id's postings are not in Pebble.
func (ix *Index) isDeferred(id uint32) bool { return id >= ix.deferFrom }

// checkDeferredID refuses a deferred add of an id below Cap: deferred
// documents have only ids above every id stored before it.
func (ix *Index) checkDeferredID(id uint32) error {
	if ix.deferAdds() && int(id) < ix.capacity() && id < ix.deferFrom {
		return fmt.Errorf("index: deferred add of id %d, below the largest id stored (%d)", id, ix.capacity()-1)
	}
	return nil
}

// stageDeferredMark writes the deferred mark first into b when a deferred add of
// id starts the deferred documents.
func (ix *Index) stageDeferredMark(b *pebble.Batch, first uint32) error {
	if ix.deferFrom != NoDeferred {
		return nil
	}
	return b.Set(keys.DeferredMark(), binary.BigEndian.AppendUint32(nil, first), nil)
}

// loadDeferredMark reads the deferred mark. It stays as written even when the deferred range
// holds no live document: no id ≥ W may get postings until FlushDeferred resets
// it.
func (ix *Index) loadDeferredMark() error {
	w, err := ReadDeferredMark(ix.db)
	ix.deferFrom = w
	return err
}

// FlushDeferred writes the postings of the deferred documents (one merge operand
// per posting key) as two sstables named FlushFilePrefix… in dir on fs, one
// with the reset deferred mark and one with the postings, ingests both in one
// atomic step, and removes them. Readers may run meanwhile: they see the
// deferred documents through the scan, and lists they read from Pebble are cut at the
// deferred mark (postingReader.read); they wait only while the deferred
// ids then join the cached lists. Without deferred documents it does
// nothing. An ingestion that overlaps Pebble's memtable (the deferred mark
// is written there) waits inside Pebble for the memtable's flush, deaf to
// ctx: the caller writes the memtable first (package db's waitFlush).
func (ix *Index) FlushDeferred(ctx context.Context, fs vfs.FS, dir string) error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if ix.deferFrom == NoDeferred {
		return nil
	}
	var paths []string
	defer func() {
		for _, p := range paths {
			_ = fs.Remove(p)
		}
	}()
	write := func(fill func(w *sstable.Writer) error) error {
		p := filepath.Join(dir, fmt.Sprintf("%s%06d.sst", FlushFilePrefix, len(paths)))
		f, err := fs.Create(p, vfs.WriteCategoryUnspecified)
		if err != nil {
			return fmt.Errorf("index: flush deferred postings: %w", err)
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
			return fmt.Errorf("index: flush deferred postings: %w", err)
		}
		return nil
	}

	// The reset deferred mark.
	err := write(func(w *sstable.Writer) error {
		return w.Set(keys.DeferredMark(), binary.BigEndian.AppendUint32(nil, NoDeferred))
	})
	if err != nil {
		return err
	}
	// The postings, group by group (the groups' key ranges are disjoint and
	// in order). Apart from the mark, the file can go to the lowest level
	// whose keys it does not overlap: into an empty store, the bottom one,
	// never to be compacted again.
	if ids := ix.deferredIDs(); len(ids) > 0 {
		var val, key []byte
		err := write(func(w *sstable.Writer) error {
			return ix.eachDeferredRun(ctx, ids, func(y uint32, ids []uint32) error {
				val = posting.AppendSorted(val[:0], ids, nil, ix.postingEnc)
				key = keys.AppendPosting(key[:0], y)
				return w.Merge(key, val)
			})
		})
		if err != nil {
			return err
		}
	}
	if err := ix.db.Ingest(ctx, paths); err != nil {
		return fmt.Errorf("index: flush deferred postings: ingest: %w", err)
	}
	ix.mu.Lock()
	ix.applyFlush()
	ix.mu.Unlock()
	return nil
}

// applyFlush records in memory that FlushDeferred succeeded: the deferred ids
// join the cached posting lists and no document's postings are deferred any more.
func (ix *Index) applyFlush() {
	if ix.deferFrom == NoDeferred {
		return
	}
	if ix.cache.tracking() {
		_ = ix.eachDeferredRun(context.Background(), ix.deferredIDs(), ix.cache.addRun)
	}
	ix.deferFrom = NoDeferred
}

// deferredIDs returns the live deferred ids, in increasing order.
func (ix *Index) deferredIDs() []uint32 {
	var ids []uint32
	for id := int(ix.deferFrom); id < ix.capacity(); id++ {
		if ix.isLive(uint32(id)) {
			ids = append(ids, uint32(id))
		}
	}
	return ids
}

// eachDeferredRun calls fn for every posting key of the deferred documents ids
// (increasing), in key order, with their ids under that key (increasing;
// fn must not keep the slice). A group whose values are few against the
// ids is sorted by one counting sort, which keeps the ids in order within
// a value; the others by sorting (value, id) keys.
func (ix *Index) eachDeferredRun(ctx context.Context, ids []uint32, fn func(y uint32, ids []uint32) error) error {
	var ks []uint64
	var buf, vals, sorted, start []uint32
	for g, w := range ix.layout.Widths {
		if err := ctx.Err(); err != nil {
			return err
		}
		if 1<<w > 4*len(ids) {
			if ks == nil {
				ks = make([]uint64, len(ids))
			}
			for i, id := range ids {
				ks[i] = uint64(ix.layout.Value(ix.fingerprint(id), g))<<32 | uint64(id)
			}
			sortKeys(ks)
			if err := eachRun(ks, buf, fn); err != nil {
				return err
			}
			continue
		}
		if vals == nil {
			vals, sorted = make([]uint32, len(ids)), make([]uint32, len(ids))
		}
		if cap(start) < 1<<w+1 {
			start = make([]uint32, 1<<w+1)
		}
		start = start[:1<<w+1]
		clear(start)
		from, width := ix.layout.Starts[g], ix.layout.Widths[g]
		for i, id := range ids {
			v := bitvec.Bits(ix.fingerprint(id), from, width)
			vals[i] = v
			start[v+1]++
		}
		for v := 1; v < len(start); v++ {
			start[v] += start[v-1]
		}
		for i, id := range ids {
			v := vals[i]
			sorted[start[v]] = id
			start[v]++
		}
		// start[v] is now where value v's ids end.
		lo := uint32(0)
		for v, hi := range start[:1<<w] {
			if hi > lo {
				if err := fn(ix.layout.Offset[g]+uint32(v), sorted[lo:hi]); err != nil {
					return err
				}
			}
			lo = hi
		}
	}
	return nil
}

// scansDeferred reports whether probe plans must scan the deferred documents.
func (ix *Index) scansDeferred() bool {
	return ix.deferFrom != NoDeferred && int(ix.deferFrom) < ix.capacity()
}

// RemoveFlushFiles deletes the sstables a crashed FlushDeferred left in dir.
func RemoveFlushFiles(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if strings.HasPrefix(n, FlushFilePrefix) {
			if err := fs.Remove(filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	return nil
}
