package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/binom"
	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/normalize"
)

// pebbleFormat is the Pebble format major version fpdb creates and keeps
// its databases at. It is pinned, so that a Pebble upgrade never changes
// the on-disk format behind fpdb's back.
const pebbleFormat = pebble.FormatValueSeparation

// DB is an fpdb database. It is safe for concurrent use by many goroutines.
type DB struct {
	dir    string
	opts   *Options
	params Params
	pdb    *pebble.DB
	lock   io.Closer
	ix     *index.Index
	wopts  *pebble.WriteOptions
	// commits numbers the synced writes (under writeMu, so in the WAL's
	// order) as they begin to commit, applied is the number of the last
	// one whose commit returned, and synced the highest number known to be
	// synced (see pendingSync).
	commits, applied, synced atomic.Uint64
	// watch follows Pebble's memtable flushes (see flushWatch).
	watch *flushWatch

	// writeMu serializes writers, so that a check-then-add sees no other
	// write between its check and its store.
	writeMu sync.Mutex
	// mu guards the in-memory state below (the index guards its own):
	// readers hold it shared while they map the index's hits to documents;
	// a writer holds it exclusively while it commits its batch and applies
	// it to memory, so readers see each write whole. Lock order: writeMu,
	// then mu, then the index's locks.
	mu      sync.RWMutex
	closed  bool     // the store is closed (Stats reports the last counts)
	docs    docTable // ids and content hashes by internal id
	nextIID uint32

	builders sync.Pool // *fingerprint.Builder
	// exclude is the set of the templates' shingles (nil for none), part
	// of every fingerprint's parameters (fpParams); changed under writeMu
	// and mu.
	exclude atomic.Pointer[fingerprint.Exclude]
	// tmplMu keeps fingerprints and the templates in step: every add and
	// query holds it shared from fingerprinting its text to its write or
	// search, a template change holds it exclusively while it switches
	// the templates and fingerprints the stored documents again. Lock
	// order: tmplMu, then writeMu.
	tmplMu sync.RWMutex

	// texts compresses and decompresses stored texts; nil unless the
	// database keeps texts (Params.KeepTexts).
	texts *textCodec
	// textBufs recycles the buffers that hold a text while it is
	// fingerprinted and compressed (*[]byte).
	textBufs sync.Pool

	flushAt int // deferred documents that trigger a flush (bulkFlushDocs)

	// log is the audit log's write state (Params.AuditLog), read from the
	// store at the first write; guarded by writeMu.
	log logState
	// importing is set, under writeMu, while ImportInto fills the
	// database: every other write fails with ErrImportRunning (lockWriter),
	// and Export too (it is read without the lock).
	importing atomic.Bool
	// importMark is the value of the import mark (keys.ImportMark) while
	// an import has not finished, nil otherwise; set under writeMu, read
	// anywhere. Changers fail with ErrImportIncomplete while it is set.
	importMark atomic.Pointer[[]byte]

	// life tracks the calls in flight, so that Close waits for them.
	life lifecycle
	// metrics count queries and writes (Metrics).
	metrics metrics
	// walArmed makes a WAL failure end the process (walGuardFS): set once
	// the store is open, cleared when Close begins closing it.
	walArmed atomic.Bool

	// hook, when set by a test, is called at named points of long calls
	// ("storage stats", "warm"), to hold them there.
	hook func(point string)
	// randomCDF[h] is the probability that a random fingerprint is within
	// Hamming distance h of a query (planSearch's expected hits).
	randomCDF []float64
	// testSplit, when set by a test, chooses the first size class a
	// containment search compares apart (given the largest class; above
	// it: none), instead of the cost model.
	testSplit func(top int) int
	// testImportBatch, when set by a test, is the number of documents
	// (and log entries) an import writes per batch (importBatchDocs
	// otherwise).
	testImportBatch int
	// testStopReindex, when set by a test, stops a template change's
	// reindex before a batch when it returns true, as a crash would.
	testStopReindex func() bool
	// beforeUnlock, when set, runs in Close once the store is closed and
	// before the directory's lock is released: Import removes there the
	// database it made and stored nothing in, while no other process can
	// have opened it.
	beforeUnlock func()
	// created is set when Open made the database (dir held none).
	created bool
}

// Created reports whether Open made the database: dir was missing, empty,
// or held only the lock file of a database deleted before (see
// CloseDiscardEmpty). Told under the lock, so no other process can have
// made it in between.
func (d *DB) Created() bool { return d.created }

// Open opens the database in dir, creating it when dir does not exist or is
// empty (unless opts.ErrorIfNotExist or opts.ReadOnly). A nil opts is the
// zero Options: an existing database opens with its stored creation
// parameters, a new one gets the defaults. (DefaultOptions() sets every
// creation parameter, so it opens only a database created with the
// defaults: to change a run-time setting, start from &Options{}.) Open fails with ErrLocked when the database is open
// elsewhere, ErrNotFPDB when dir holds something else, and a *ParamsError
// when opts asks for other creation parameters than the stored ones.
func Open(dir string, opts *Options) (*DB, error) {
	given, o, err := prepareOptions(opts)
	if err != nil {
		return nil, err
	}
	if o.ReadOnly {
		o.ErrorIfNotExist = true
	}
	fs := o.fs
	exists, err := probeDir(fs, dir)
	if err != nil {
		return nil, err
	}
	if !exists {
		if o.ErrorIfNotExist {
			return nil, fmt.Errorf("%w: %s", ErrNotExist, dir)
		}
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("fpdb: create %s: %w", dir, err)
		}
	}
	lock, err := lockDir(fs, dir, o.ReadOnly, o.LockWait)
	if err != nil {
		return nil, err
	}
	// Another look, under the lock: while this Open waited for it, the
	// process that held it may have deleted the database it made and
	// stored nothing in (CloseDiscardEmpty, Import), or made one where
	// there was none.
	exists, err = probeDir(fs, dir)
	if err == nil && !exists && o.ErrorIfNotExist {
		err = fmt.Errorf("%w: %s", ErrNotExist, dir)
	}
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	if !o.ReadOnly {
		if err := index.RemoveFlushFiles(fs, dir); err != nil {
			_ = lock.Close()
			return nil, fmt.Errorf("fpdb: open %s: remove unfinished posting files: %w", dir, err)
		}
	}
	d := &DB{dir: dir, opts: o, lock: lock, wopts: pebble.Sync, flushAt: bulkFlushDocs, watch: newFlushWatch(o.Logger), created: !exists}
	d.life.init()
	if o.NoSync {
		d.wopts = pebble.NoSync
	}
	err = d.open(given)
	if err == nil {
		d.walArmed.Store(true)
		err = d.load()
	}
	if err != nil {
		// Closing the store may write the WAL and wait for a flush: a
		// failure there is not one to end the process for.
		d.watch.closing()
		d.walArmed.Store(false)
		if d.pdb != nil {
			_ = d.pdb.Close()
		}
		d.texts.close()
		_ = lock.Close()
		return nil, err
	}
	return d, nil
}

// prepareOptions returns a copy of the options as given (zero creation
// parameters mean "as stored") and a copy with defaults filled and
// validated.
func prepareOptions(opts *Options) (given, o *Options, err error) {
	given = &Options{}
	if opts != nil {
		given = opts.Clone()
	}
	o = given.Clone().EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	return given, o, nil
}

// probeDir reports whether dir holds a database. An empty or missing dir
// holds none; a dir with files but no Pebble store is not an fpdb database.
func probeDir(fs vfs.FS, dir string) (bool, error) {
	fi, err := fs.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("fpdb: open %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("%w: %s is not a directory", ErrNotFPDB, dir)
	}
	names, err := fs.List(dir)
	if err != nil {
		return false, fmt.Errorf("fpdb: open %s: %w", dir, err)
	}
	if len(names) == 0 || (len(names) == 1 && names[0] == lockFileName) {
		return false, nil
	}
	desc, err := pebble.Peek(dir, fs)
	if err == nil && !desc.Exists && interruptedCreate(names) {
		// A crash while creating the database: start again.
		return false, nil
	}
	if err != nil || !desc.Exists {
		return false, fmt.Errorf("%w: %s has files but no fpdb database", ErrNotFPDB, dir)
	}
	if m := optionsMerger(fs, desc.OptionsFilename); m != "" && m != index.MergerName {
		return false, fmt.Errorf("%w: %s is a Pebble store with merge operator %q", ErrNotFPDB, dir, m)
	}
	return true, nil
}

// optionsMerger returns the merge operator named in a Pebble OPTIONS file,
// or "" when it cannot tell.
func optionsMerger(fs vfs.FS, path string) string {
	if path == "" {
		return ""
	}
	f, err := fs.Open(path)
	if err != nil {
		return ""
	}
	b, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "merger="); ok {
			return v
		}
	}
	return ""
}

func (d *DB) open(given *Options) error {
	o := d.opts
	if d.watch == nil { // Repair's and Salvage's store (openStore)
		d.watch = newFlushWatch(o.Logger)
	}
	cache := pebble.NewCache(o.CacheSize)
	defer cache.Unref()
	popts := &pebble.Options{
		Cache:              cache,
		FormatMajorVersion: pebbleFormat,
		Merger:             index.Merger(),
		MaxOpenFiles:       o.MaxOpenFiles,
		MemTableSize:       uint64(o.MemTableSize),
		ReadOnly:           o.ReadOnly,
		FS:                 pebbleFS(o, &d.walArmed),
		Logger:             slogLogger{o.Logger},
		EventListener:      d.watch.listener(),
		// A second compaction when L0 or the compaction debt grows: a bulk
		// load's postings flush makes one compaction rewrite every
		// posting list, meanwhile the memtables flushed into L0 must
		// still be compacted, or writes stall behind it.
		CompactionConcurrencyRange: func() (int, int) { return 1, max(2, runtime.GOMAXPROCS(0)) },
	}
	// Pebble's Balanced settings: zstd level 1 on the bottom level, where
	// nearly all data lives (one level up, for value blocks only), the
	// fastest codec above (Pebble skips a codec for blocks it does not
	// shrink, as postings written as gaps barely do).
	popts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionBalanced })
	pdb, err := pebble.Open(d.dir, popts)
	if err != nil {
		return fmt.Errorf("fpdb: open %s: %w", d.dir, storageError(err))
	}
	d.pdb = pdb

	raw, closer, err := pdb.Get(keys.Meta())
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if err := d.create(); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("fpdb: open %s: read meta: %w", d.dir, storageError(err))
	default:
		p, err := decodeMeta(raw)
		_ = closer.Close()
		if err != nil {
			return fmt.Errorf("fpdb: open %s: %w", d.dir, err)
		}
		if err := checkBuild(p); err != nil {
			return fmt.Errorf("fpdb: open %s: %w", d.dir, err)
		}
		if err := checkParams(p, given); err != nil {
			return fmt.Errorf("fpdb: open %s: %w", d.dir, err)
		}
		d.params = p
	}
	if d.params.KeepTexts {
		if d.texts, err = newTextCodec(); err != nil {
			return fmt.Errorf("fpdb: open %s: %w", d.dir, err)
		}
	}
	return nil
}

// create writes the meta record of a new database.
func (d *DB) create() error {
	if d.opts.ReadOnly {
		return fmt.Errorf("%w: %s", ErrNotExist, d.dir)
	}
	// A store with keys but no meta record is not ours.
	it, err := d.pdb.NewIter(nil)
	if err != nil {
		return err
	}
	hasKeys := it.First()
	if err := it.Close(); err != nil {
		return err
	}
	if hasKeys {
		return fmt.Errorf("%w: %s holds a Pebble store without fpdb meta", ErrNotFPDB, d.dir)
	}
	o := d.opts
	d.params = Params{
		FormatVersion:    formatFor(),
		K:                o.K,
		GroupWidths:      slices.Clone(o.GroupWidths),
		ShingleWidth:     o.ShingleWidth,
		Seed:             o.Seed,
		HashVersion:      fingerprint.HashVersion,
		NormalizeVersion: o.NormalizeVersion,
		Merger:           index.MergerName,
		Created:          time.Now().UTC().Truncate(time.Second),
		KeepTexts:        o.KeepTexts,
		AuditLog:         o.AuditLog,
	}
	b := d.pdb.NewBatch()
	defer b.Close()
	_ = b.Set(keys.Meta(), encodeMeta(d.params), nil)
	_ = b.Set(keys.NextID(), encodeIID(0), nil)
	defer exitOnStoragePanic(d.opts.Logger)
	if err := b.Commit(pebble.Sync); err != nil { // synced even with NoSync
		return fmt.Errorf("fpdb: create %s: %w", d.dir, err)
	}
	return nil
}

// checkBuild refuses databases whose data this build would compute or read
// differently.
func checkBuild(p Params) error {
	if p.FormatVersion < formatMinSupported || p.FormatVersion > formatNewest {
		return fmt.Errorf("%w: format %d, this build reads %d..%d", ErrFormatVersion, p.FormatVersion, formatMinSupported, formatNewest)
	}
	if p.HashVersion != fingerprint.HashVersion {
		return &ParamsError{Param: "HashVersion", Stored: fmt.Sprint(p.HashVersion), Given: fmt.Sprint(fingerprint.HashVersion), Build: true}
	}
	if p.NormalizeVersion < normalize.MinVersion || p.NormalizeVersion > normalize.Version {
		return &ParamsError{Param: "NormalizeVersion", Stored: fmt.Sprint(p.NormalizeVersion),
			Given: fmt.Sprintf("%d to %d", normalize.MinVersion, normalize.Version), Build: true}
	}
	if p.Merger != index.MergerName {
		return &ParamsError{Param: "Merger", Stored: p.Merger, Given: index.MergerName, Build: true}
	}
	return nil
}

// load builds the in-memory state from the store. Every size it reads from
// disk is bounded before memory is allocated by it: the next internal id
// against the largest stored one (nextLimit), every stored id against the
// next id; and every document record must have its fingerprint and the
// reverse, since queries and writes rely on both. A store that breaks any
// of these fails with ErrCorrupt naming each problem.
func (d *DB) load() error {
	ctx := context.Background()
	layout, err := index.NewLayout(d.params.K, d.params.GroupWidths)
	if err != nil {
		return fmt.Errorf("fpdb: open %s: %w: %w", d.dir, ErrCorrupt, err)
	}
	if _, err := fingerprint.NewBuilder(d.fpParams()); err != nil {
		return fmt.Errorf("fpdb: open %s: %w: %w", d.dir, ErrCorrupt, err)
	}
	if _, err := d.loadTemplates(); err != nil {
		return fmt.Errorf("fpdb: open %s: %w", d.dir, err)
	}
	d.randomCDF = binom.CDFTable(d.params.K, 0.5)
	if m, err := readImportMark(d.pdb); err != nil {
		return fmt.Errorf("fpdb: open %s: %w", d.dir, err)
	} else if m != nil {
		d.importMark.Store(&m)
	}
	var p problems
	next, err := readNextID(d.pdb, &p)
	if err != nil {
		return fmt.Errorf("fpdb: open %s: %w", d.dir, err)
	}
	maxIID, err := lastIID(d.pdb)
	if err != nil {
		return fmt.Errorf("fpdb: open %s: %w", d.dir, err)
	}
	if p.count() == 0 {
		checkNext(maxIID, next, layout.K, &p)
	}
	if p.count() > 0 {
		return p.corrupt("open", d.dir)
	}
	d.nextIID = next
	d.ix = index.New(d.pdb, layout)
	d.ix.SetHugePages(!d.opts.NoHugePages)
	d.ix.SetPostingEncoding(d.params.postingEncoding())
	if err := d.ix.Load(ctx, next); err != nil {
		return fmt.Errorf("fpdb: open %s: %w", d.dir, storageError(err))
	}
	d.docs.reserve(int(maxIID) + 1) // maxIID < next ≤ nextLimit
	lo, hi := keys.Range(keys.PrefixDoc)
	it, err := d.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		iid, err := keys.ParseDoc(it.Key())
		if err != nil {
			return fmt.Errorf("fpdb: open %s: %w: %w", d.dir, ErrCorrupt, err)
		}
		doc, err := decodeDocRecord(it.Value())
		if err != nil {
			return fmt.Errorf("fpdb: open %s: document %d: %w", d.dir, iid, err)
		}
		if err := validID(doc.ID); err != nil {
			return fmt.Errorf("fpdb: open %s: document %d: %w: %w", d.dir, iid, ErrCorrupt, err)
		}
		d.docs.set(iid, doc.ID, doc.ContentHash, SetSize(doc.Shingles, doc.Words, d.params.ShingleWidth))
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("fpdb: open %s: read document records: %w", d.dir, storageError(err))
	}
	for iid := range max(d.docs.len(), d.ix.Cap()) {
		ext := d.docs.ext(uint32(iid))
		rec := ext != ""
		switch fp := d.ix.Live(uint32(iid)); {
		case rec && !fp:
			p.add(msgNoFingerprint, iid, ext)
		case fp && !rec:
			p.add(msgNoRecord, iid)
		}
	}
	checkDeferredMark(d.ix.DeferredFrom(), next, &p)
	if p.count() > 0 {
		return p.corrupt("open", d.dir)
	}
	if d.opts.ReadOnly {
		end, next, pending, err := reindexMark(d.pdb)
		if err != nil {
			return fmt.Errorf("fpdb: open %s: %w", d.dir, err)
		}
		if pending {
			return fmt.Errorf("fpdb: open %s: %w: internal ids %d to %d are still to be fingerprinted again; open it for writing once (fpdb compact does) to finish",
				d.dir, ErrReindexPending, next, end-1)
		}
		return nil // deferred postings left by a crash is scanned by queries
	}
	if err := d.upgrade(); err != nil {
		return fmt.Errorf("fpdb: open %s: %w", d.dir, err)
	}
	switch {
	case d.opts.BulkLoad:
		d.ix.Defer()
	default:
		// Postings deferred by a bulk load that did not close.
		if err := d.flushDeferred(ctx); err != nil {
			return fmt.Errorf("fpdb: open %s: %w", d.dir, err)
		}
	}
	// A template change that did not finish.
	d.writeMu.Lock()
	_, _, err = d.reindex(ctx)
	d.writeMu.Unlock()
	if err != nil {
		return fmt.Errorf("fpdb: open %s: finish the template change: %w", d.dir, err)
	}
	return nil
}

// at calls d.hook at a named point of a long call.
func (d *DB) at(point string) {
	if d.hook != nil {
		d.hook(point)
	}
}

func (d *DB) fpParams() fingerprint.Params {
	p := d.baseParams()
	p.Exclude = d.exclude.Load()
	return p
}

// Close closes the database; it is CloseContext without a deadline.
func (d *DB) Close() error { return d.CloseContext(context.Background()) }

// CloseContext closes the database. New calls fail with ErrClosed from the
// moment it begins; long calls in flight (Export, Pairs, Clusters, Check,
// StorageStats, Warm, QueryMany, SuggestTemplate, Fingerprint, AddBatch's
// fingerprinting, the bulk deletes) are cancelled and return an error
// wrapping ErrClosed; CloseContext waits for every call in flight to
// return (so a function a call of d calls back must not call Close),
// writes the postings a bulk load deferred (cut short when ctx is done:
// the next writable Open writes them), writes Pebble's memtable to a table
// when this process wrote (so that the next Open replays no WAL; when ctx
// is done or a table write fails, the next Open replays it instead),
// closes the store and releases the lock. A second Close, or one called
// while the first runs, waits until the first has finished (the lock
// released: an Open may follow at once) and returns ErrClosed; while the
// first still runs, CloseContext stops waiting when its ctx is done and
// returns ErrClosed wrapping ctx's error. When ctx cuts the writing of
// deferred postings short, the database is closed all the same and
// nothing stored is lost: the error (wrapping ctx's) says that the next
// writable Open writes them, not that the close failed.
func (d *DB) CloseContext(ctx context.Context) error { return d.close(ctx, true, nil) }

// CloseUnflushed is Close for a database about to be removed: it leaves
// the postings that a bulk load deferred (Options.BulkLoad) unwritten,
// which saves writing them (about a tenth of a bulk load's time). Nothing
// stored is lost: the next writable Open writes them. fpdb dedup closes
// its work database so before it removes it.
func (d *DB) CloseUnflushed() error { return d.close(context.Background(), false, nil) }

// CloseDiscardEmpty is Close for a database its caller has just created:
// when this Open made the database (Created is true) and d holds no
// document once every call in flight has returned, its files are deleted
// (whatever else it holds, such as templates, goes too) before the lock
// is released, so that no other process opens it in between; the
// directory is left with the lock file alone, which Open reads as no
// database. A database that existed before Open (Created false) is never
// deleted, even when it holds no live document (every one deleted): it is
// closed like Close, keeping its audit log, marks, templates and
// parameters, and removed is false. fpdb add, template add and dedup call
// it when they made the database and failed having stored nothing (every
// input refused; template add before its template is stored), so that the
// mistake leaves no empty database whose parameters a corrected command
// would have to match. removed reports whether the files were deleted; an error
// deleting them is returned with the database closed.
func (d *DB) CloseDiscardEmpty() (removed bool, err error) {
	err = d.close(context.Background(), true, &removed)
	return removed, err
}

// close is CloseContext, which writes the deferred postings only if
// flush, and, when discard is not nil, deletes the database's files if it
// holds no document and Open made it (*discard then true).
func (d *DB) close(ctx context.Context, flush bool, discard *bool) error {
	if !d.beginClose() {
		return d.closeWait(ctx)
	}
	defer d.endClose()
	var err error
	if discard != nil && d.created && d.ix.Len() == 0 && !d.opts.ReadOnly {
		*discard = true
		flush = false // nothing worth writing
		prev := d.beforeUnlock
		d.beforeUnlock = func() {
			if rerr := removeAllBut(d.opts.fs, d.dir, lockFileName); rerr != nil {
				*discard = false
				err = errors.Join(err, fmt.Errorf("fpdb: close: removing the empty database %s: %w", d.dir, rerr))
			}
			if prev != nil {
				prev()
			}
		}
	}
	// From here on a failed flush ends no process: Close stops waiting for
	// it instead (waitFlush), and the next Open writes what it could not.
	d.watch.closing()
	if !d.opts.ReadOnly && flush {
		d.writeMu.Lock()
		if ferr := d.flushDeferred(ctx); ferr != nil {
			err = fmt.Errorf("fpdb: close: %w (the next writable Open writes them)", ferr)
		}
		if err == nil {
			err = d.flushMemtable(ctx)
		}
		d.writeMu.Unlock()
	}
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.walArmed.Store(false) // a failure to close the WAL is returned
	if cerr := d.pdb.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("fpdb: close: %w", cerr)
	}
	d.texts.close()
	if d.beforeUnlock != nil {
		d.beforeUnlock()
	}
	if uerr := d.lock.Close(); err == nil && uerr != nil {
		err = fmt.Errorf("fpdb: close: unlock: %w", uerr)
	}
	return err
}

// flushMemtable writes Pebble's memtable to a table if this process wrote
// to the WAL, so that the next Open has no WAL to replay: with memtables
// of 64 MiB, a replay on open took a second where reading the flushed
// table takes milliseconds. It stops waiting, and leaves the WAL to the
// next Open, when ctx is done or a flush fails (a table write that fails
// is retried by Pebble without end; see waitFlush, which does not even
// start when flushes are failing already). A failed WAL write ends the
// process (the flush rotates the WAL); writeMu is held, Close has begun.
func (d *DB) flushMemtable(ctx context.Context) error {
	if d.pdb.Metrics().WAL.BytesIn == 0 {
		return nil
	}
	switch err := d.waitFlush(ctx); {
	case err == nil, ctx.Err() != nil:
		return nil
	case errors.Is(err, errFlushFailed):
		d.opts.Logger.Warn("fpdb: close: the memtable was not written; the next Open replays the WAL", "err", err)
		return nil
	default:
		return fmt.Errorf("fpdb: close: flush: %w", err)
	}
}

// Params returns the database's creation parameters.
func (d *DB) Params() Params {
	p := d.params
	p.GroupWidths = slices.Clone(p.GroupWidths)
	return p
}

// Dir returns the database directory.
func (d *DB) Dir() string { return d.dir }

// MaxTextSize returns the longest text the database keeps, in bytes of
// UTF-8 after decoding: the Options.MaxTextSize it was opened with, or
// DefaultMaxTextSize when that was 0 (see Options.MaxTextSize: a
// database that keeps texts refuses a longer one, ErrTextTooLarge).
func (d *DB) MaxTextSize() int64 { return d.opts.MaxTextSize }

// ValidID returns nil if id is a valid document id: 1 to MaxIDLen bytes
// of UTF-8 without NUL; else an error wrapping ErrInvalidID that says why.
func ValidID(id string) error { return validID(id) }

// validID checks a caller-given document id.
func validID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidID)
	case len(id) > MaxIDLen:
		return fmt.Errorf("%w: %q… is %d bytes, at most %d", ErrInvalidID, id[:32], len(id), MaxIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidID, id)
	case strings.ContainsRune(id, 0):
		return fmt.Errorf("%w: %q contains a NUL byte", ErrInvalidID, id)
	}
	return nil
}

// validThreshold checks a resemblance threshold.
func validThreshold(r float64) error {
	if math.IsNaN(r) || r <= 0 || r > 1 {
		return fmt.Errorf("%w: got %v", ErrInvalidThreshold, r)
	}
	return nil
}

// slogLogger adapts a *slog.Logger to Pebble's Logger.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Infof(format string, args ...any) { s.l.Info(fmt.Sprintf(format, args...)) }
func (s slogLogger) Errorf(format string, args ...any) {
	s.l.Error(fmt.Sprintf(format, args...))
}

// Fatalf is called by Pebble on errors it cannot recover from, and must
// not return: fpdb ends the process (see storageFailure).
func (s slogLogger) Fatalf(format string, args ...any) {
	storageFailure(s.l, fmt.Sprintf(format, args...))
}
