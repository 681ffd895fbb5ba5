package db

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/minhash"
	"github.com/fpdb/fpdb/internal/normalize"
	"github.com/fpdb/fpdb/internal/shingle"
)

// Default values of Options.
const (
	// DefaultK is the default fingerprint length in bits.
	DefaultK = 512
	// DefaultGroupWidth is the default width in bits of an index group.
	DefaultGroupWidth = 16
	// DefaultShingleWidth is the default number of words per shingle.
	DefaultShingleWidth = 4
	// DefaultSeed is the default seed of the shingle and min-hash functions.
	DefaultSeed uint64 = 0x6670646231
	// DefaultCacheSize is the default size of Pebble's block cache.
	DefaultCacheSize = 64 << 20
	// DefaultMaxOpenFiles is the default limit of open table files.
	DefaultMaxOpenFiles = 4096
	// minMemTableSize is the least MemTableSize (Validate).
	minMemTableSize = 64 << 10
	// DefaultMemTableSize is the default size of Pebble's memtable.
	DefaultMemTableSize = 64 << 20
	// DefaultMaxTextSize is the default of Options.MaxTextSize: the
	// longest text a database that keeps texts stores, in bytes.
	DefaultMaxTextSize = 64 << 20
	// MaxMaxTextSize is the largest Options.MaxTextSize accepted.
	MaxMaxTextSize = 1 << 30
	// MaxIDLen is the longest document id accepted, in bytes.
	MaxIDLen = 1024
	// MaxGroupWidth is the widest index group accepted, in bits.
	MaxGroupWidth = index.MaxGroupWidth
	// MaxGroups is the largest number of index groups accepted: with the
	// default group width, K is at most 4080.
	MaxGroups = index.MaxGroups
	// MaxK is the longest fingerprint accepted, in bits.
	MaxK = minhash.MaxK
	// MaxShingleWidth is the most words per shingle accepted.
	MaxShingleWidth = shingle.MaxWidth
	// NormalizeVersion is the newest version of the text normalization
	// rules, the default for new databases. Version 2 strips markup only
	// from HTML and XML and normalizes Unicode (NFKC-like compatibility
	// mapping, case folding, invisible characters removed, look-alike
	// Cyrillic and Greek letters read as Latin); version 1 strips anything
	// that looks like a tag from every text.
	NormalizeVersion = normalize.Version
	// MinNormalizeVersion is the oldest normalization version this build
	// still fingerprints with: databases created with it keep working.
	MinNormalizeVersion = normalize.MinVersion
)

// Options configure a DB. The zero value of every field means its default;
// a nil *Options passed to Open means all defaults.
//
// K, GroupWidths, ShingleWidth, Seed, NormalizeVersion, KeepTexts and AuditLog are
// creation parameters: they are recorded when the database is created. When opening an existing database,
// zero values take the recorded ones, and non-zero values that differ from
// the recorded ones make Open fail with a *ParamsError.
type Options struct {
	// K is the fingerprint length in bits, a positive multiple of 64, at
	// most MaxK. Default 512, or the sum of GroupWidths when they are given.
	K int
	// GroupWidths are the widths in bits of the index groups, in order; they
	// must sum to K, each must be in [1, MaxGroupWidth], and there may be at
	// most MaxGroups of them. Default: K/16 groups of 16 bits (or, when K is
	// not a multiple of 16, widths as equal as possible near 16 bits), so
	// that a K above 4080 needs wider groups.
	GroupWidths []int
	// ShingleWidth is the number of consecutive words in a shingle. Default 4.
	ShingleWidth int
	// Seed seeds the shingle hash and the min-hash functions. Default
	// DefaultSeed. Two databases compare fingerprints only if they share K,
	// ShingleWidth and Seed.
	Seed uint64
	// NormalizeVersion is the version of the text normalization rules the
	// database fingerprints texts with (see NormalizeVersion, the newest,
	// and MinNormalizeVersion). Default: the newest for a new database;
	// an existing database keeps the version it was created with.
	NormalizeVersion int
	// KeepTexts makes a new database store each document added from a
	// text (Input.Text, Reader or Open; not Input.Fingerprint) with its
	// text, compressed with zstd, in the same atomic write as the
	// document: DB.Text returns it, and Export and Import carry it.
	// Replacing or deleting a document replaces or deletes its text. The
	// text kept is the one the words were read from: UTF-8, after the
	// input's character encoding was decoded (markup included), with the
	// format it was read as. Each text is held in memory to be compressed
	// (see MaxTextSize). Default false: a database created without
	// KeepTexts never stores texts. An existing database keeps what it
	// was created with: false takes the recorded choice, and true on a
	// database created without texts makes Open fail with a *ParamsError.
	KeepTexts bool
	// AuditLog makes a new database record every decision about a
	// document in an audit log (DB.Log): each Add (stored, replaced,
	// unchanged or rejected, with the threshold, the mode and the matches
	// that decided it), each document AddBatch stores or leaves unchanged,
	// and each delete — written in the same atomic batch as the document
	// it describes (a rejection writes only its entry). Delete keeps the
	// deleted document's entries and records the deletion; Forget erases
	// them. Export and Import carry the log. Default false: a database
	// created without it never records. An existing database keeps what
	// it was created with: false takes the recorded choice, and true on a
	// database created without the log makes Open fail with a
	// *ParamsError.
	AuditLog bool

	// MaxTextSize is the longest text, in bytes of UTF-8 after decoding,
	// that a database keeping texts accepts: Add of a longer document
	// fails with an error wrapping ErrTextTooLarge (nothing is stored), and
	// AddBatch skips it. Default DefaultMaxTextSize (64 MiB); at most
	// MaxMaxTextSize. Without KeepTexts texts are not held, and a Reader
	// of any length is read in bounded memory.
	MaxTextSize int64

	// NoSync makes writes return before they reach stable storage. A crash
	// may then lose the most recent writes (each still all or nothing). Use
	// it for bulk loads; default false (every write is synced).
	NoSync bool
	// ReadOnly opens an existing database for reads only. Writes fail with
	// ErrReadOnly.
	ReadOnly bool
	// ErrorIfNotExist makes Open fail with ErrNotExist instead of creating a
	// database. ReadOnly implies it.
	ErrorIfNotExist bool
	// LockWait is how long Open (and Repair, Salvage) wait for a database
	// another DB or process holds, retrying, before they fail with
	// ErrLocked — like SQLite's busy timeout. Default 0: fail at once.
	LockWait time.Duration
	// CacheSize is the size in bytes of Pebble's block cache. Default 64 MiB.
	CacheSize int64
	// MaxOpenFiles limits the table files Pebble keeps open. Default 4096.
	MaxOpenFiles int
	// BulkLoad defers the posting writes of added documents: each document's
	// records are still written atomically (and synced unless NoSync) before
	// its Add or AddBatch returns, and queries see it at once, but its m
	// postings are written only when 1 048 576 documents are deferred (or,
	// once more are indexed, as many as are indexed, up to 4 194 304), at
	// Flush and at Close: once per posting key for all of them, as
	// sstables ingested in one atomic step. Loading many documents is then
	// several times faster. Until then, queries scan the deferred documents'
	// fingerprints besides probing the index. Writing the postings sorts
	// 8 bytes per deferred document at a time. After a crash, Open writes
	// the deferred postings from the stored fingerprints. Default false. Not
	// with ReadOnly.
	BulkLoad bool
	// MemTableSize is the size in bytes of Pebble's memtable. Default
	// 64 MiB. Every document adds an operand to postings all over the key
	// space, so each memtable flush overlaps every posting table and each
	// compaction rewrites them: a larger memtable means fewer of them.
	// With 4 MiB, compactions took half the CPU of a server under 16
	// adding clients (100 000 documents), which stored 1 098 documents/s
	// against 2 349/s with 64 MiB. Pebble starts with a small memtable and
	// doubles it up to this size, so a short run holds little; a long run
	// of writes holds up to two (one being flushed). Close writes the
	// memtable to a table, so that the next Open has no WAL to replay;
	// after a crash, Open replays up to two memtables' worth of WAL
	// (a WAL of 14 MiB, 30 000 fingerprint documents, took 1.4 s). At
	// least 64 KiB and below 4 GiB.
	MemTableSize int64
	// NoHugePages stops fpdb from asking Linux to back its largest arrays
	// (the fingerprints held in memory, and the posting lists Warm builds)
	// with transparent huge pages (madvise MADV_HUGEPAGE). The advice makes
	// queries in cold CPU caches faster, since their random reads then
	// rarely miss the TLB; it may also make the process's resident memory
	// exceed what the Go runtime counts as in use, and the first writes to
	// those arrays (while opening and warming) may wait for the kernel to
	// compact memory. Default false (advised); it changes nothing where
	// transparent huge pages are "never" or on other systems.
	NoHugePages bool
	// Logger receives Pebble's and fpdb's log messages. Default: discarded.
	Logger *slog.Logger

	// fs is the file system the database lives on: vfs.Default (the
	// operating system's) unless a test sets an in-memory or
	// fault-injecting one. Pebble's file system type is not part of the API.
	fs vfs.FS
}

// widthsK returns the K that group widths sum to, when they are some and
// each is a valid width whose sum is a valid K (otherwise Validate names
// the width at fault, against the default K).
func widthsK(widths []int) (int, bool) {
	k := 0
	for _, w := range widths {
		if w < 1 || w > MaxGroupWidth {
			return 0, false
		}
		k += w
	}
	return k, len(widths) > 0 && k%64 == 0 && k <= MaxK
}

// DefaultOptions returns a fresh Options with every default filled in.
func DefaultOptions() *Options {
	o := &Options{}
	o.EnsureDefaults()
	return o
}

// Clone returns a deep copy of o; of a nil o, a new zero Options (which
// Open, like a nil *Options, reads as every default).
func (o *Options) Clone() *Options {
	if o == nil {
		return &Options{}
	}
	c := *o
	c.GroupWidths = append([]int(nil), o.GroupWidths...)
	return &c
}

// EnsureDefaults fills every zero field with its default and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.K == 0 {
		o.K = DefaultK
		if k, ok := widthsK(o.GroupWidths); ok { // the widths say K
			o.K = k
		}
	}
	if len(o.GroupWidths) == 0 && o.K > 0 {
		o.GroupWidths = EqualWidths(o.K, DefaultGroupWidth)
	}
	if o.ShingleWidth == 0 {
		o.ShingleWidth = DefaultShingleWidth
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.NormalizeVersion == 0 {
		o.NormalizeVersion = NormalizeVersion
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.MaxOpenFiles == 0 {
		o.MaxOpenFiles = DefaultMaxOpenFiles
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	if o.MaxTextSize == 0 {
		o.MaxTextSize = DefaultMaxTextSize
	}
	if o.fs == nil {
		o.fs = vfs.Default
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate reports every problem of o at once. It expects defaults filled.
// It checks the creation parameters with the same code that builds the
// fingerprints and the index layout from them, so that options it accepts
// always make a database that opens again.
func (o *Options) Validate() error {
	var errs []error
	fp := fingerprint.Params{K: o.K, ShingleWidth: o.ShingleWidth, Seed: o.Seed, NormalizeVersion: o.NormalizeVersion}
	if err := fp.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.K > 0 && o.K%64 == 0 {
		// An invalid K is reported above; the layout would repeat it.
		if _, err := index.NewLayout(o.K, o.GroupWidths); err != nil {
			if len(o.GroupWidths) > MaxGroups {
				err = fmt.Errorf("%w (GroupWidths: give at most %d groups, at most %d bits wide)", err, MaxGroups, MaxGroupWidth)
			}
			errs = append(errs, err)
		}
	}
	if o.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("CacheSize = %d: must not be negative", o.CacheSize))
	}
	if o.MemTableSize != 0 && (o.MemTableSize < minMemTableSize || o.MemTableSize >= 4<<30) {
		// Pebble panics on a memtable smaller than its first allocation.
		errs = append(errs, fmt.Errorf("MemTableSize = %d: must be 0 (the default) or in [64 KiB, 4 GiB)", o.MemTableSize))
	}
	if o.MaxTextSize < 0 || o.MaxTextSize > MaxMaxTextSize {
		errs = append(errs, fmt.Errorf("MaxTextSize = %d: must be in [0, %d]", o.MaxTextSize, MaxMaxTextSize))
	}
	if o.BulkLoad && o.ReadOnly {
		errs = append(errs, errors.New("BulkLoad and ReadOnly: a bulk load writes"))
	}
	if o.MaxOpenFiles < 0 {
		errs = append(errs, fmt.Errorf("MaxOpenFiles = %d: must not be negative", o.MaxOpenFiles))
	}
	if o.LockWait < 0 {
		errs = append(errs, fmt.Errorf("LockWait = %v: must not be negative", o.LockWait))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
}

// EqualWidths splits k bits into groups of about width bits each, as equal
// as possible (the first groups take the extra bits).
func EqualWidths(k, width int) []int {
	if k <= 0 || width <= 0 {
		return nil
	}
	return index.SplitWidths(k, (k+width-1)/width)
}

// SuggestedGroupWidth returns the index group width in bits suggested for
// a database of k-bit fingerprints expected to grow to about docs
// documents (Options.GroupWidths = EqualWidths(k, width); fpdb add
// --group-bits): 18 from 4 million documents, when EqualWidths(k, 18) keeps
// the key space within the dense posting cache (index.MaxDenseSpace: k up
// to 704), else DefaultGroupWidth (16). The width is fixed when the
// database is created.
//
// A posting list holds about docs / 2^width documents, and the count
// filter of a query touches every id of the lists it probes. At 10 million
// documents and k = 512, 16-bit groups make lists of about 150 ids and
// EqualWidths(512, 18) (19 groups of 18 bits, 10 of 17) lists of 38 and
// 76; on the same fingerprints, queries at r = 0.9, 0.8 and 0.7 ran 1.3
// to 1.4, 2.0 and 1.6 to 2.1 times as fast (two runs of make bench-scale,
// docs/SCALING.md). Wider
// groups cost memory that does not shrink with the database: 12 bytes per
// value of the merged key space (Σ 2^width: 8 for the posting cache's
// slot, 4 for its offset after Warm), 75 MB at k = 512 and 18 bits against
// 25 MB at 16; fewer groups save 4 bytes per document and group left out.
// At k = 512 the two balance at about 4 million documents, hence the
// threshold.
func SuggestedGroupWidth(k, docs int) int {
	if docs >= 4_000_000 {
		if l, err := index.NewLayout(k, EqualWidths(k, 18)); err == nil && l.Space() <= index.MaxDenseSpace {
			return 18
		}
	}
	return DefaultGroupWidth
}
