package db

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable/block"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/keys"
)

// CompactResult describes a compaction.
type CompactResult struct {
	// BytesBefore and BytesAfter are the sizes of the store's live tables
	// (after flushing the memtable) before and after.
	BytesBefore, BytesAfter int64
	// Elapsed is the time the compaction took.
	Elapsed time.Duration
}

// Compact rewrites the whole store: posting lists are folded into one
// value each (the removals of deleted documents disappear from them) and
// the records of deleted documents are dropped, so that disk usage and
// posting reads shrink after many deletes. In the background, Pebble's
// compactions fold operands as data moves down the levels and its
// tombstone-density compactions pick up tables dense with deleted records;
// Compact does it all at once. Readers proceed
// meanwhile; writers wait until it is done.
func (d *DB) Compact(ctx context.Context) (_ CompactResult, err error) {
	if err := d.live(); err != nil {
		return CompactResult{}, err
	}
	ctx, leave, err := d.enterWriter(ctx, "compact", true, exclusive)
	if err != nil {
		return CompactResult{}, err
	}
	defer leave(&err)
	defer exitOnStoragePanic(d.opts.Logger) // the flush rotates the WAL
	start := time.Now()
	var res CompactResult
	// Flush first, so that the memtable's operands are compacted too
	// (waitFlush: until ctx ends, and a flush that cannot be written ends
	// the process rather than this wait).
	if err := d.waitFlush(ctx); err != nil {
		return res, fmt.Errorf("fpdb: compact: %w", err)
	}
	res.BytesBefore = d.pdb.Metrics().Total().TablesSize
	if err := d.pdb.Compact(ctx, []byte{0x00}, []byte{0xff}, true); err != nil {
		return res, fmt.Errorf("fpdb: compact: %w", storageError(err))
	}
	res.BytesAfter = d.pdb.Metrics().Total().TablesSize
	res.Elapsed = time.Since(start)
	return res, nil
}

// LengthBucket counts the posting lists whose length is in [Min, Max].
type LengthBucket struct {
	Min, Max int
	Keys     int
}

// StorageStats describe how a database uses its storage.
type StorageStats struct {
	// Docs is the number of live documents.
	Docs int
	// DeletedNotCompacted is the number of deleted (or replaced) document
	// versions whose deletion Pebble still holds as a tombstone above the
	// bottom level, where the deleted record may still be: what a
	// compaction would reclaim. (A tombstone Compact moved to the bottom
	// level whole, as it does with a table that overlaps no other, hides
	// nothing and is not counted: a few bytes, dropped when Pebble
	// rewrites the table.)
	DeletedNotCompacted int
	// DiskBytes is the size of the database files; BytesPerDoc is
	// DiskBytes / Docs (0 without documents).
	DiskBytes   int64
	BytesPerDoc float64
	// CompactionDebt is Pebble's estimate of the bytes its background
	// compactions still have to rewrite.
	CompactionDebt uint64
	// PostingKeys is the number of non-empty posting lists and PostingIDs
	// the sum of their lengths (Docs × m when consistent).
	PostingKeys int
	PostingIDs  int64
	// MaxPosting is the longest posting list.
	MaxPosting int
	// PostingLengths is the distribution of posting list lengths in
	// power-of-two buckets [1, 1], [2, 3], [4, 7], …; empty buckets are
	// left out.
	PostingLengths []LengthBucket
	// Texts is the number of stored texts (Options.KeepTexts; 0 when the
	// database does not keep texts), TextBytes the size of their stored
	// values (compressed) and TextRawBytes the size of the texts
	// themselves (UTF-8).
	Texts        int
	TextBytes    int64
	TextRawBytes int64
	// LogEntries is the number of audit-log entries (Options.AuditLog; 0
	// when the database keeps no log) and LogBytes the size of their
	// keys and values, id index included.
	LogEntries int
	LogBytes   int64
}

// StorageStats reads every posting list and scans the store's tombstones
// to compute the storage statistics. It takes time proportional to the
// database (seconds for millions of documents); queries and writes go on
// meanwhile, so the figures are those of a moment during the call.
func (d *DB) StorageStats(ctx context.Context) (_ *StorageStats, err error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	ctx, leave, err := d.enterLong(ctx)
	if err != nil {
		return nil, err
	}
	defer leave(&err)
	d.mu.RLock()
	docs := d.ix.Len()
	d.mu.RUnlock()
	d.at("storage stats")
	m := d.pdb.Metrics()
	st := &StorageStats{
		Docs:           docs,
		DiskBytes:      int64(m.DiskSpaceUsage()),
		CompactionDebt: m.Compact.EstimatedDebt,
	}
	if st.Docs > 0 {
		st.BytesPerDoc = float64(st.DiskBytes) / float64(st.Docs)
	}
	// A document record is never written again once deleted (internal ids
	// are not reused), so each tombstone in its range is one deleted
	// document version not yet compacted away; one in the bottom level
	// hides nothing below it (the record is gone already).
	lo, hi := keys.Range(keys.PrefixDoc)
	bottom := len(m.Levels) - 1
	err = d.pdb.ScanInternal(ctx, block.CategoryUnknown, lo, hi,
		func(k *pebble.InternalKey, _ pebble.LazyValue, at pebble.IteratorLevel) error {
			if at.Kind == pebble.IteratorLevelLSM && at.Level == bottom {
				return nil
			}
			switch k.Kind() {
			case pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete, pebble.InternalKeyKindDeleteSized:
				st.DeletedNotCompacted++
			}
			return nil
		}, nil, nil, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("fpdb: storage stats: %w", err)
	}

	if err := d.textStats(ctx, st); err != nil {
		return nil, fmt.Errorf("fpdb: storage stats: %w", err)
	}
	if err := d.logStats(ctx, st); err != nil {
		return nil, fmt.Errorf("fpdb: storage stats: %w", err)
	}
	ps, err := index.ReadPostingStats(ctx, d.pdb)
	if err != nil {
		return nil, fmt.Errorf("fpdb: storage stats: %w", storageError(err))
	}
	st.PostingKeys, st.PostingIDs, st.MaxPosting = ps.Keys, ps.IDs, ps.Max
	for b, keys := range ps.Lengths {
		if keys > 0 {
			st.PostingLengths = append(st.PostingLengths, LengthBucket{Min: 1 << b, Max: 1<<(b+1) - 1, Keys: keys})
		}
	}
	return st, nil
}

// textStats counts the stored texts and their sizes into st.
func (d *DB) textStats(ctx context.Context, st *StorageStats) error {
	return eachKV(ctx, d.pdb, keys.PrefixText, "texts", func(_, v []byte) {
		st.Texts++
		st.TextBytes += int64(len(v))
		if n := rawSize(v); n > 0 {
			st.TextRawBytes += n
		}
	})
}
