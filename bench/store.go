package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// PebbleFormat is the Pebble format major version the bench creates its
// stores at: the one db/ pins (db.pebbleFormat).
const PebbleFormat = pebble.FormatValueSeparation

// Store is an index built by the bench directly on an on-disk Pebble store.
type Store struct {
	Dir   string
	DB    *pebble.DB
	Index *index.Index
	// Build describes how the store was built.
	Build BuildStats
}

// BuildStats describe the building of a Store.
type BuildStats struct {
	Docs      int           `json:"docs"`
	K         int           `json:"k"`
	Widths    []int         `json:"group_widths"`
	Ingest    time.Duration `json:"ingest_ns"`  // batched Stage + commit (NoSync)
	Compact   time.Duration `json:"compact_ns"` // Flush + Compact
	Warm      time.Duration `json:"warm_ns"`    // Index.Warm (posting cache filled)
	DiskBytes int64         `json:"disk_bytes"` // after Flush + Compact
	// Resident is the growth of the process's resident memory from before
	// the build to after Warm, both after a garbage collection that returns
	// free memory to the system: what the open index holds (fingerprints,
	// posting lists, the pebble block cache it used), 0 when unknown.
	Resident int64 `json:"resident_bytes"`
	// Heap is the growth of the Go heap's live objects over the same span.
	Heap       int64   `json:"heap_bytes"`
	FPPerSec   float64 `json:"fp_per_sec"`   // Docs / Ingest
	BytesPerFP float64 `json:"bytes_per_fp"` // DiskBytes / Docs
}

// OpenPebble opens (creating) a Pebble store in dir with fpdb's merge
// operator and pinned format, and a block cache of cacheBytes. The store is
// a build-and-query store for benchmarks: its write-ahead log is off
// (every build ends with a Flush) and its memtables are large.
func OpenPebble(dir string, cacheBytes int64) (*pebble.DB, error) {
	cache := pebble.NewCache(cacheBytes)
	defer cache.Unref()
	o := &pebble.Options{
		Cache:                 cache,
		FormatMajorVersion:    PebbleFormat,
		Merger:                posting.Merger(),
		MaxOpenFiles:          4096,
		MemTableSize:          64 << 20,
		L0CompactionThreshold: 8,
		L0StopWritesThreshold: 1000,
		DisableWAL:            true,
		Logger:                quietLogger{},
	}
	return pebble.Open(dir, o)
}

// quietLogger drops Pebble's informational messages.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(2)
}

// BuildStore writes the n fingerprints of flat (k bits each, id = position)
// into a fresh Pebble store in dir with index.Stage, in NoSync batches of
// batch documents, then flushes and compacts the store so that reads see a
// warm, compacted state, and fills the index's posting cache (Index.Warm). It is the ingest path of
// fpdb (one merge operand per posting per document) and is slow for
// millions of documents: see BulkStore.
func BuildStore(ctx context.Context, dir string, layout *index.Layout, flat []uint64, batch int) (*Store, error) {
	return build(ctx, dir, layout, flat, func(pdb *pebble.DB, ix *index.Index, n, stride int) error {
		b := pdb.NewBatch()
		defer func() { b.Close() }()
		for i := 0; i < n; i++ {
			// Staged only: build loads the memory from the store.
			w, err := ix.Stage(b, []index.Entry{{ID: uint32(i), FP: flat[i*stride : (i+1)*stride]}}, nil)
			if err != nil {
				return err
			}
			w.Abort()
			if (i+1)%batch == 0 || i == n-1 {
				if err := b.Commit(pebble.NoSync); err != nil {
					return err
				}
				b.Close()
				b = pdb.NewBatch()
			}
		}
		return nil
	})
}

// BulkStore builds the same stored state as BuildStore — fingerprint
// records and one posting value per key holding every id with that group
// value, in fpdb's on-disk format (keys.Fingerprint, keys.Posting,
// posting.AppendSorted with posting.Compact, as a new database and
// index.New write) — but aggregates the postings in memory first and
// writes each posting key once, in key order. Index.Stage of one document writes one
// merge operand per posting per document, which Pebble then merges one by
// one: too slow to build indexes of millions of documents within the
// suite's time budget.
func BulkStore(ctx context.Context, dir string, layout *index.Layout, flat []uint64) (*Store, error) {
	return build(ctx, dir, layout, flat, func(pdb *pebble.DB, ix *index.Index, n, stride int) error {
		b := pdb.NewBatch()
		flush := func(force bool) error {
			if !force && b.Len() < 4<<20 {
				return nil
			}
			if err := b.Commit(pebble.NoSync); err != nil {
				return err
			}
			b.Close()
			b = pdb.NewBatch()
			return nil
		}
		defer func() { b.Close() }()
		var buf []byte
		for i := 0; i < n; i++ {
			buf = bitvec.AppendBytes(buf[:0], flat[i*stride:(i+1)*stride])
			if err := b.Set(keys.Fingerprint(uint32(i)), buf, nil); err != nil {
				return err
			}
			if err := flush(false); err != nil {
				return err
			}
		}
		// Counting sort of (y, id) by y: ids come out sorted within a key.
		m := layout.M()
		last := layout.Offset[m-1] + 1<<layout.Widths[m-1]
		start := make([]uint32, int(last)+1)
		for i := 0; i < n; i++ {
			fp := flat[i*stride : (i+1)*stride]
			for g := 0; g < m; g++ {
				start[layout.Value(fp, g)+1]++
			}
		}
		for y := 1; y < len(start); y++ {
			start[y] += start[y-1]
		}
		ids := make([]uint32, n*m)
		pos := slices.Clone(start[:len(start)-1])
		for i := 0; i < n; i++ {
			fp := flat[i*stride : (i+1)*stride]
			for g := 0; g < m; g++ {
				y := layout.Value(fp, g)
				ids[pos[y]] = uint32(i)
				pos[y]++
			}
		}
		for y := 0; y < len(start)-1; y++ {
			if start[y] == start[y+1] {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			op := posting.AppendSorted(nil, ids[start[y]:start[y+1]], nil, posting.Compact)
			if err := b.Merge(keys.Posting(uint32(y)), op, nil); err != nil {
				return err
			}
			if err := flush(false); err != nil {
				return err
			}
		}
		return flush(true)
	})
}

func build(ctx context.Context, dir string, layout *index.Layout, flat []uint64, write func(*pebble.DB, *index.Index, int, int) error) (*Store, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	pdb, err := OpenPebble(dir, 256<<20)
	if err != nil {
		return nil, fmt.Errorf("bench: open %s: %w", dir, err)
	}
	stride := layout.K / 64
	n := len(flat) / stride
	ix := index.New(pdb, layout)
	st := BuildStats{Docs: n, K: layout.K, Widths: layout.Widths}
	rss0, heap0 := settledMemory()
	start := time.Now()
	if err := write(pdb, ix, n, stride); err != nil {
		pdb.Close()
		return nil, fmt.Errorf("bench: build %s: %w", dir, err)
	}
	st.Ingest = time.Since(start)
	if err := ix.Load(ctx, uint32(n)); err != nil { // as Open does
		pdb.Close()
		return nil, fmt.Errorf("bench: load %s: %w", dir, err)
	}
	start = time.Now()
	if err := pdb.Flush(); err != nil {
		pdb.Close()
		return nil, err
	}
	lo, _ := keys.Range(keys.PrefixFingerprint)
	_, hi := keys.Range(keys.PrefixPosting)
	if err := pdb.Compact(ctx, lo, hi, true); err != nil {
		pdb.Close()
		return nil, err
	}
	st.Compact = time.Since(start)
	start = time.Now()
	if err := ix.Warm(ctx); err != nil {
		pdb.Close()
		return nil, err
	}
	st.Warm = time.Since(start)
	if rss, heap := settledMemory(); rss0 > 0 && rss > 0 {
		st.Resident, st.Heap = rss-rss0, int64(heap)-int64(heap0)
	}
	st.DiskBytes = DirSize(dir)
	st.FPPerSec = float64(n) / st.Ingest.Seconds()
	st.BytesPerFP = float64(st.DiskBytes) / float64(n)
	return &Store{Dir: dir, DB: pdb, Index: ix, Build: st}, nil
}

// settledMemory collects garbage, returns free memory to the system and
// returns the resident set size (0 when unknown) and the bytes of live Go
// heap objects.
func settledMemory() (rss int64, heap uint64) {
	debug.FreeOSMemory() // collects first
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return procKB("VmRSS"), ms.HeapAlloc
}

// Close closes the store and removes its directory.
func (s *Store) Close() error {
	err := s.DB.Close()
	if rerr := os.RemoveAll(s.Dir); err == nil {
		err = rerr
	}
	return err
}

// DirSize returns the total size of the regular files under dir.
func DirSize(dir string) int64 {
	var total int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
		return nil
	})
	return total
}
