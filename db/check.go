package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/normalize"
	"github.com/fpdb/fpdb/internal/posting"
)

// maxListed caps the problems a CheckError lists one by one.
const maxListed = 1000

// CheckError is returned by Check when the database violates an invariant.
// It lists every violation found (up to 1000; Omitted counts the rest).
// errors.Is(err, ErrCorrupt) holds.
type CheckError struct {
	// Dir is the database directory.
	Dir string
	// Problems describe the violations, one each, naming the document
	// (internal id and id), the key and what is wrong.
	Problems []string
	// Omitted is the number of further violations not listed.
	Omitted int
}

// Error lists the problems on one line, separated by "; ".
func (e *CheckError) Error() string {
	n := len(e.Problems) + e.Omitted
	s := fmt.Sprintf("fpdb: check %s: %d problem(s): %s", e.Dir, n, strings.Join(e.Problems, "; "))
	if e.Omitted > 0 {
		s += fmt.Sprintf("; and %d more", e.Omitted)
	}
	return s
}

// Unwrap returns ErrCorrupt.
func (e *CheckError) Unwrap() error { return ErrCorrupt }

// problems collects invariant violations.
type problems struct {
	list    []string
	omitted int
}

func (p *problems) add(format string, args ...any) {
	if len(p.list) < maxListed {
		p.list = append(p.list, fmt.Sprintf(format, args...))
	} else {
		p.omitted++
	}
}

func (p *problems) count() int { return len(p.list) + p.omitted }

// err returns a *CheckError for the problems, or nil when there are none.
func (p *problems) err(dir string) error {
	if p.count() == 0 {
		return nil
	}
	return &CheckError{Dir: dir, Problems: slices.Clone(p.list), Omitted: p.omitted}
}

// corrupt returns an error wrapping ErrCorrupt that lists the problems
// found by op (e.g. "open") in dir; there must be at least one.
func (p *problems) corrupt(op, dir string) error {
	s := strings.Join(p.list, "; ")
	if p.omitted > 0 {
		s += fmt.Sprintf("; and %d more", p.omitted)
	}
	return fmt.Errorf("fpdb: %s %s: %w: %s (Repair, fpdb check --repair, rebuilds the database from its intact documents)", op, dir, ErrCorrupt, s)
}

// Problems that Open and Check both report, worded alike.
const (
	msgNoFingerprint = "document %d (%q) has no fingerprint"
	msgNoRecord      = "fingerprint %d has no document record"
	msgBeyondNext    = "internal id %d is at or beyond the next internal id %d"
)

// nextLimit returns the largest next internal id accepted for a store
// whose largest stored internal id is maxIID (-1: none) and whose
// fingerprints have k bits. The in-memory arrays indexed by internal id
// grow to the next id at the next add, so a damaged next-id record far
// beyond the stored ids would make that add allocate memory for ids never
// assigned (hundreds of GB for an id near 2^32). The limit is 4 times the
// stored id range, and at least 256 MiB worth of ids: deleting the newest
// documents leaves a legitimate gap below it. Repair resets a next id
// beyond it.
func nextLimit(maxIID int64, k int) int64 {
	perID := int64(k/8) + docTableBytesPerID
	return min(max(4*(maxIID+1), (256<<20)/perID), math.MaxUint32)
}

// checkNext reports a next internal id that is not beyond every stored id
// (maxIID, -1 when none), or is implausibly far beyond them (nextLimit).
func checkNext(maxIID int64, next uint32, k int, p *problems) {
	switch lim := nextLimit(maxIID, k); {
	case maxIID >= int64(next):
		p.add(msgBeyondNext, maxIID, next)
	case int64(next) > lim:
		p.add("next internal id %d is far beyond the largest stored internal id %d (at most %d accepted): the next-id record is damaged", next, maxIID, lim)
	}
}

// checkDeferredMark reports a deferred mark at or beyond the next internal id: the mark
// is the id of the first document whose postings were deferred.
func checkDeferredMark(mark, next uint32, p *problems) {
	if mark != index.NoDeferred && mark >= next {
		p.add("deferred mark %d is at or beyond the next internal id %d", mark, next)
	}
}

// readNextID reads the next-id record; a missing or undecodable one is a
// problem, a read failure an error.
func readNextID(pdb *pebble.DB, p *problems) (uint32, error) {
	raw, closer, err := pdb.Get(keys.NextID())
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		p.add("next-id record is missing")
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("read next-id record: %w", storageError(err))
	}
	defer closer.Close()
	next, err := decodeIID(raw)
	if err != nil {
		p.add("next-id record: %v", err)
	}
	return next, nil
}

// lastIID returns the largest internal id with a document record, or -1.
func lastIID(pdb *pebble.DB) (int64, error) {
	lo, hi := keys.Range(keys.PrefixDoc)
	it, err := pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, fmt.Errorf("read document records: %w", storageError(err))
	}
	iid := int64(-1)
	if it.Last() {
		s, err := keys.ParseDoc(it.Key())
		if err != nil {
			_ = it.Close()
			return 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		iid = int64(s)
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("read document records: %w", storageError(err))
	}
	return iid, nil
}

// storageError marks a Pebble corruption error (a checksum mismatch, a
// damaged file) and the index's ErrCorrupt with ErrCorrupt as well, so that
// callers can test for it.
func storageError(err error) error {
	err = pebbleDetail(err)
	if err != nil && !errors.Is(err, ErrCorrupt) && (pebble.IsCorruptionError(err) || errors.Is(err, index.ErrCorrupt)) {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}

// pebbleCarrier is the message of the value Pebble joins to a corruption
// error to carry its DataCorruptionInfo; joined, it ends the error's
// message on a line of its own.
const pebbleCarrier = "<corruption detail carrier>"

// pebbleDetail returns err, or, when its message holds Pebble's corruption
// detail carrier, err wrapped in a *corruptionDetail whose message is the
// detail itself and the damaged file.
func pebbleDetail(err error) error {
	var cd *corruptionDetail
	if err == nil || errors.As(err, &cd) || !strings.Contains(err.Error(), pebbleCarrier) {
		return err
	}
	return &corruptionDetail{err: err}
}

// corruptionDetail is a Pebble corruption error printed without Pebble's
// "<corruption detail carrier>" line, naming the damaged file instead.
// errors.Is and errors.As see the Pebble error through Unwrap.
type corruptionDetail struct{ err error }

func (e *corruptionDetail) Error() string {
	s := strings.ReplaceAll(e.err.Error(), "\n"+pebbleCarrier, "")
	s = strings.TrimSpace(strings.ReplaceAll(s, pebbleCarrier, ""))
	if info := pebble.ExtractDataCorruptionInfo(e.err); info != nil && info.Path != "" && !strings.Contains(s, info.Path) {
		s += " (file " + info.Path + ")"
	}
	return s
}

// Unwrap returns the Pebble error.
func (e *corruptionDetail) Unwrap() error { return e.err }

// Check verifies every on-disk invariant and that memory agrees with disk:
//
//   - the meta record decodes and equals the open parameters, and the next-id
//     record decodes and is beyond every stored internal id;
//   - every document record decodes and has its fingerprint, the ext-id entry
//     naming it and exactly its m posting entries (one per group, under its
//     group value), or none when its postings are deferred by a bulk load;
//   - no fingerprint, ext-id entry, posting or text names an internal id
//     that has no document record (or names the wrong one); a format-2
//     store has no content-hash key;
//   - every stored text decodes (its zstd frame and checksum, UTF-8) and
//     gives its document's content hash (its words are read again: a
//     damaged text, or one an import took from a damaged export, is
//     found), and a database that does not keep texts has none;
//   - every audit-log entry decodes and is in the log's id index, every
//     index key names an entry of its id, the log's sequence counter is
//     beyond every entry, and a database without the log has none of them;
//   - the in-memory id map and fingerprints equal the stored ones.
//
// It returns nil, a *CheckError listing every violation (errors.Is(err,
// ErrCorrupt) holds), or the error that stopped the scan (a read error,
// also marked ErrCorrupt when Pebble reports corruption; ctx's error).
// Writers (and the writing of deferred postings) wait while Check runs;
// queries do not. Repair rebuilds what Check finds broken.
func (d *DB) Check(ctx context.Context) (err error) {
	if err := d.live(); err != nil {
		return err
	}
	ctx, leave, err := d.enterWriter(ctx, "check", false, exclusive)
	if err != nil {
		return err
	}
	defer leave(&err)
	d.mu.RLock()
	defer d.mu.RUnlock()
	var p problems
	meta, err := checkMeta(d.pdb, &p)
	if err != nil {
		return fmt.Errorf("fpdb: check %s: %w", d.dir, err)
	}
	if meta != nil && fmt.Sprint(*meta) != fmt.Sprint(d.params) {
		p.add("meta record %+v differs from the open parameters %+v", *meta, d.params)
	}
	st, err := scanStore(ctx, d.pdb, d.ix.Layout(), d.params, d.texts, &p)
	if err != nil {
		return fmt.Errorf("fpdb: check %s: %w", d.dir, err)
	}
	st.verify(&p)

	// Memory against disk.
	if st.mark != d.ix.DeferredFrom() {
		p.add("deferred mark is %d on disk, %d in memory", st.mark, d.ix.DeferredFrom())
	}
	if st.nextOK && st.next != d.nextIID {
		p.add("next internal id is %d on disk, %d in memory", st.next, d.nextIID)
	}
	for iid := range uint32(d.docs.len()) {
		ext, hash := d.docs.ext(iid), d.docs.hash(iid)
		if ext == "" {
			continue
		}
		r, ok := st.recs[iid]
		if !ok {
			p.add("document %d (%q) is in memory but has no document record", iid, ext)
		} else if r.ext != ext || r.hash != hash {
			p.add("document %d: memory holds id %q hash %x, the record id %q hash %x", iid, ext, hash, r.ext, r.hash)
		}
	}
	for _, iid := range st.recOrder {
		if d.docs.ext(iid) == "" {
			p.add("document %d (%q) is on disk but not in memory", iid, st.recs[iid].ext)
		}
	}
	st.fps.each(func(iid uint32, fp []uint64) {
		mem := d.ix.Fingerprint(iid)
		if mem == nil {
			p.add("fingerprint %d is on disk but not in memory", iid)
		} else if !slices.Equal(mem, fp) {
			p.add("fingerprint %d on disk differs from memory", iid)
		}
	})
	for iid := range d.ix.Cap() {
		if d.ix.Live(uint32(iid)) && st.fps.get(uint32(iid)) == nil {
			p.add("fingerprint %d is in memory but not on disk", iid)
		}
	}
	if st.fps.n != d.ix.Len() {
		p.add("%d fingerprints on disk, %d in memory", st.fps.n, d.ix.Len())
	}
	if err := d.ix.CheckCache(ctx); errors.Is(err, index.ErrCorrupt) {
		p.add("%v", err)
	} else if err != nil {
		return fmt.Errorf("fpdb: check %s: %w", d.dir, err)
	}
	if err := d.checkTemplates(&p); err != nil {
		return fmt.Errorf("fpdb: check %s: %w", d.dir, err)
	}
	if err := p.err(d.dir); err != nil {
		return err
	}
	if d.unfinishedImport() {
		return fmt.Errorf("fpdb: check %s: %w: it holds the first %d documents of an export; import the same export again to finish it, or remove the database", d.dir, ErrImportIncomplete, d.ix.Len())
	}
	return nil
}

// checkTemplates checks that the template records decode, that their
// shingles are the set fingerprints are made without, and that no
// template change is left unfinished.
func (d *DB) checkTemplates(p *problems) error {
	ts, err := readTemplates(d.pdb)
	if errors.Is(err, ErrCorrupt) {
		p.add("%v", err)
		return nil
	}
	if err != nil {
		return err
	}
	for _, t := range ts {
		if validID(t.Name) != nil {
			p.add("template with an invalid name %q", t.Name)
		}
	}
	ex, err := d.exclusion(ts)
	if err != nil {
		p.add("templates: %v", err)
	} else if cur := d.exclude.Load(); !ex.Equal(cur) {
		p.add("the templates have %d shingles, but fingerprints are made without another set of %d", ex.Len(), cur.Len())
	}
	if len(ts) > 0 {
		var q problems
		if m, err := checkMeta(d.pdb, &q); err == nil && m != nil && m.FormatVersion < formatV4 {
			p.add("%d templates in a database of format %d", len(ts), m.FormatVersion)
		}
	}
	if end, next, pending, err := reindexMark(d.pdb); err != nil {
		p.add("%v", err)
	} else if pending {
		p.add("a template change is unfinished: internal ids %d to %d are to be fingerprinted again", next, end-1)
	}
	return nil
}

// checkMeta reads and decodes the meta record; a missing or undecodable one
// is a problem (nil Params), a read failure an error.
func checkMeta(pdb *pebble.DB, p *problems) (*Params, error) {
	raw, closer, err := pdb.Get(keys.Meta())
	if errors.Is(err, pebble.ErrNotFound) {
		p.add("meta record is missing")
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read meta record: %w", storageError(err))
	}
	defer closer.Close()
	m, err := decodeMeta(raw)
	if err != nil {
		p.add("%v", err)
		return nil, nil
	}
	return &m, nil
}

// recInfo is what the checks need of a document record.
type recInfo struct {
	ext  string
	hash [16]byte
}

// diskState is what a scan of the store found, decoded as far as possible.
type diskState struct {
	layout *index.Layout

	next   uint32
	nextOK bool
	mark   uint32 // the deferred mark: ids ≥ mark have no postings yet

	recs     map[uint32]recInfo // decodable document records
	recOrder []uint32           // their internal ids, ascending
	fps      *fpTable           // decodable fingerprints and their postings
	ext      map[string]uint32  // decodable ext-id entries
	extOrder []string           // their ids, in key order

	// badKeys are keys whose key or value could not be decoded; Repair
	// deletes them.
	badKeys [][]byte
}

// scanStore reads every record of the store of a database with creation
// parameters params, reports what cannot be decoded, what postings are
// wrong and which texts belong to no document or do not give its content
// hash (texts decodes them; nil when params.KeepTexts is not set), and
// returns what could be decoded.
func scanStore(ctx context.Context, pdb *pebble.DB, layout *index.Layout, params Params, texts *textCodec, p *problems) (*diskState, error) {
	format := params.FormatVersion
	st := &diskState{
		layout: layout,
		recs:   make(map[uint32]recInfo),
		ext:    make(map[string]uint32),
	}
	before := p.count()
	next, err := readNextID(pdb, p)
	if err != nil {
		return nil, err
	}
	st.next, st.nextOK = next, p.count() == before
	st.mark, err = index.ReadDeferredMark(pdb)
	switch {
	case errors.Is(err, index.ErrCorrupt):
		p.add("%v", strings.TrimPrefix(err.Error(), index.ErrCorrupt.Error()+": "))
		st.mark = index.NoDeferred
	case err != nil:
		return nil, storageError(err)
	}
	bad := func(k []byte) { st.badKeys = append(st.badKeys, slices.Clone(k)) }

	err = eachKV(ctx, pdb, keys.PrefixDoc, "document records", func(k, v []byte) {
		iid, err := keys.ParseDoc(k)
		if err != nil {
			p.add("document key %x: %v", k, err)
			bad(k)
			return
		}
		doc, err := decodeDocRecord(v)
		if err != nil {
			p.add("document %d: %v", iid, err)
			bad(k)
			return
		}
		st.recs[iid] = recInfo{ext: doc.ID, hash: doc.ContentHash}
		st.recOrder = append(st.recOrder, iid)
	})
	if err != nil {
		return nil, err
	}
	// Fingerprints below the next id go into a dense table, unless the next
	// id is implausible (nextLimit); any others (only in a damaged store)
	// into a map.
	maxRec := int64(-1)
	if len(st.recOrder) > 0 {
		maxRec = int64(st.recOrder[len(st.recOrder)-1])
	}
	st.fps = newFPTable(layout, uint32(min(int64(st.next), nextLimit(maxRec, layout.K))))
	err = eachKV(ctx, pdb, keys.PrefixExtID, "ext-id entries", func(k, v []byte) {
		ext, err := keys.ParseExtID(k)
		if err != nil {
			p.add("ext-id key %x: %v", k, err)
			bad(k)
			return
		}
		iid, err := decodeIID(v)
		if err != nil {
			p.add("ext-id %q: %v", ext, err)
			bad(k)
			return
		}
		st.ext[ext] = iid
		st.extOrder = append(st.extOrder, ext)
	})
	if err != nil {
		return nil, err
	}
	err = eachKV(ctx, pdb, keys.PrefixFingerprint, "fingerprints", func(k, v []byte) {
		iid, err := keys.ParseFingerprint(k)
		if err != nil {
			p.add("fingerprint key %x: %v", k, err)
			bad(k)
			return
		}
		fp, err := bitvec.FromBytes(v, layout.K)
		if err != nil {
			p.add("fingerprint %d: %v", iid, err)
			bad(k)
			return
		}
		st.fps.put(iid, fp)
	})
	if err != nil {
		return nil, err
	}
	if format >= formatV2 {
		// Format 1 kept a content-hash index (its 'h' keys stay, unused,
		// until a writable Open upgrades it); in format 2 any is stray.
		err = eachKV(ctx, pdb, keys.PrefixHash, "content-hash entries", func(k, _ []byte) {
			p.add("content-hash key %x: format %d has no content-hash index", k, format)
			bad(k)
		})
		if err != nil {
			return nil, err
		}
	}
	hashes := startTextChecks(params.NormalizeVersion)
	defer hashes.wait()
	err = eachKV(ctx, pdb, keys.PrefixText, "texts", func(k, v []byte) {
		iid, err := keys.ParseText(k)
		if err != nil {
			p.add("text key %x: %v", k, err)
			bad(k)
			return
		}
		if !params.KeepTexts || texts == nil {
			p.add("text %d: the database does not keep texts", iid)
			bad(k)
			return
		}
		r, ok := st.recs[iid]
		if !ok {
			p.add("text %d has no document record", iid)
			bad(k)
			return
		}
		t, err := texts.decode(v, nil) // the check below keeps it
		if err == nil && !utf8.Valid(t.Text) {
			err = errors.New("not UTF-8")
		}
		if err != nil {
			p.add("text of document %d (%q): %v", iid, r.ext, err)
			bad(k)
			return
		}
		hashes.add(textCheck{iid: iid, ext: r.ext, key: slices.Clone(k), want: r.hash, text: t})
	})
	if err != nil {
		return nil, err
	}
	for _, c := range hashes.wait() {
		if c.err != nil {
			p.add("text of document %d (%q): %v", c.iid, c.ext, c.err)
		} else {
			p.add("text of document %d (%q) does not give the document's content hash (it gives %x, the record has %x): the text or the record is damaged",
				c.iid, c.ext, c.got, c.want)
		}
		bad(c.key)
	}
	if _, err := checkLog(ctx, pdb, params, p, bad); err != nil {
		return nil, err
	}
	err = index.VerifyPostings(ctx, pdb, layout, index.PostingVerifier{
		RoaringOnly: params.postingEncoding() == posting.Roaring,
		Fingerprint: st.fps.get,
		Found:       st.fps.markGroup,
		Problem: func(msg string, key []byte) {
			p.add("%s", msg)
			if key != nil {
				bad(key)
			}
		},
	})
	if err != nil {
		return nil, storageError(err)
	}
	return st, nil
}

// textCheck is a stored text to verify against its document's content
// hash (see textChecks).
type textCheck struct {
	iid  uint32
	ext  string
	key  []byte
	want [16]byte
	text StoredText
	got  [16]byte // the text's content hash, when it is not want
	err  error    // or why it has none
}

// textChecks verifies stored texts against the content hashes of their
// documents (fingerprint.Hasher) on GOMAXPROCS goroutines while the scan goes on:
// a text that was damaged, or stored by an import from a damaged export,
// no longer gives the hash its document was stored with.
type textChecks struct {
	jobs chan textCheck
	wg   sync.WaitGroup
	mu   sync.Mutex
	bad  []textCheck
	done bool
}

// startTextChecks starts the checks of texts normalized by version.
func startTextChecks(version int) *textChecks {
	c := &textChecks{jobs: make(chan textCheck, 64)}
	for range runtime.GOMAXPROCS(0) {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			h := fingerprint.NewHasher(version)
			for j := range c.jobs {
				f := normalize.FormatText
				if j.text.Format == FormatHTML {
					f = normalize.FormatMarkup
				}
				sum, _, err := h.Hash(j.text.Text, f)
				if err == nil && sum == j.want {
					continue
				}
				j.text, j.got, j.err = StoredText{}, sum, err
				c.mu.Lock()
				c.bad = append(c.bad, j)
				c.mu.Unlock()
			}
		}()
	}
	return c
}

// add queues a text to check; c keeps it.
func (c *textChecks) add(j textCheck) { c.jobs <- j }

// wait waits for the checks queued and returns the texts that failed, by
// internal id; after the first call it returns nil.
func (c *textChecks) wait() []textCheck {
	if c.done {
		return nil
	}
	c.done = true
	close(c.jobs)
	c.wg.Wait()
	slices.SortFunc(c.bad, func(a, b textCheck) int { return cmp.Compare(a.iid, b.iid) })
	return c.bad
}

// verify cross-checks the records st holds against each other.
func (st *diskState) verify(p *problems) {
	maxIID := int64(-1)
	for _, iid := range st.recOrder {
		r := st.recs[iid]
		maxIID = max(maxIID, int64(iid))
		if got, ok := st.ext[r.ext]; !ok {
			p.add("document %d (%q) has no ext-id entry", iid, r.ext)
		} else if got != iid {
			p.add("document %d (%q): its ext-id entry names internal id %d", iid, r.ext, got)
		}
		fp := st.fps.get(iid)
		if fp == nil {
			p.add(msgNoFingerprint, iid, r.ext)
			continue
		}
		for g := range st.layout.M() {
			switch in := st.fps.hasGroup(iid, g); {
			case iid >= st.mark && in:
				p.add("document %d (%q) has deferred postings (not yet written) but in posting key %d (group %d)", iid, r.ext, st.layout.Value(fp, g), g)
			case iid < st.mark && !in:
				p.add("document %d (%q) is missing from posting key %d (group %d)", iid, r.ext, st.layout.Value(fp, g), g)
			}
		}
	}
	st.fps.each(func(iid uint32, _ []uint64) {
		maxIID = max(maxIID, int64(iid))
		if _, ok := st.recs[iid]; !ok {
			p.add(msgNoRecord, iid)
		}
	})
	for _, ext := range st.extOrder {
		iid := st.ext[ext]
		if r, ok := st.recs[iid]; !ok {
			p.add("ext-id %q names internal id %d, which has no document record", ext, iid)
		} else if r.ext != ext {
			p.add("ext-id %q names internal id %d, which is document %q", ext, iid, r.ext)
		}
	}
	if st.nextOK {
		checkNext(maxIID, st.next, st.layout.K, p)
		checkDeferredMark(st.mark, st.next, p)
	}
}

// eachKV calls fn for every key of the range with prefix pfx. what names
// the range in errors.
func eachKV(ctx context.Context, pdb *pebble.DB, pfx byte, what string, fn func(k, v []byte)) error {
	lo, hi := keys.Range(pfx)
	it, err := pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("read %s: %w", what, storageError(err))
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				_ = it.Close()
				return err
			}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("read %s at key %x: %w", what, it.Key(), storageError(err))
		}
		fn(it.Key(), v)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("read %s: %w", what, storageError(err))
	}
	return nil
}

// fpTable holds fingerprints by internal id, with a bit per group telling
// whether the id was found in that group's posting. Ids below the stored
// next id live in one dense array; others (only in a corrupt store) in a
// map, so that a damaged key cannot make the table huge.
type fpTable struct {
	layout *index.Layout
	stride int // words per fingerprint
	gw     int // words of group bits
	row    int // stride + gw
	limit  uint32
	dense  []uint64
	has    []uint64 // bit per dense id
	extra  map[uint32][]uint64
	n      int
}

func newFPTable(l *index.Layout, limit uint32) *fpTable {
	t := &fpTable{layout: l, stride: l.K / 64, gw: (l.M() + 63) / 64, limit: limit, extra: make(map[uint32][]uint64)}
	t.row = t.stride + t.gw
	return t
}

func (t *fpTable) rowOf(iid uint32) []uint64 {
	if iid < t.limit {
		if int(iid/64) >= len(t.has) || t.has[iid/64]&(1<<(iid%64)) == 0 {
			return nil
		}
		return t.dense[int(iid)*t.row : (int(iid)+1)*t.row]
	}
	return t.extra[iid]
}

func (t *fpTable) put(iid uint32, fp []uint64) {
	var r []uint64
	if iid < t.limit {
		need := (int(iid) + 1) * t.row
		if need > len(t.dense) {
			t.dense = append(t.dense, make([]uint64, need-len(t.dense))...)
		}
		for int(iid/64) >= len(t.has) {
			t.has = append(t.has, 0)
		}
		if t.has[iid/64]&(1<<(iid%64)) == 0 {
			t.n++
		}
		t.has[iid/64] |= 1 << (iid % 64)
		r = t.dense[int(iid)*t.row : (int(iid)+1)*t.row]
	} else {
		if t.extra[iid] == nil {
			t.n++
		}
		r = make([]uint64, t.row)
		t.extra[iid] = r
	}
	copy(r, fp)
	clear(r[t.stride:])
}

// get returns the fingerprint of iid, or nil.
func (t *fpTable) get(iid uint32) []uint64 {
	if r := t.rowOf(iid); r != nil {
		return r[:t.stride]
	}
	return nil
}

func (t *fpTable) markGroup(iid uint32, g int) {
	if r := t.rowOf(iid); r != nil {
		r[t.stride+g/64] |= 1 << (g % 64)
	}
}

func (t *fpTable) hasGroup(iid uint32, g int) bool {
	r := t.rowOf(iid)
	return r != nil && r[t.stride+g/64]&(1<<(g%64)) != 0
}

// each calls fn for every fingerprint, by ascending internal id.
func (t *fpTable) each(fn func(iid uint32, fp []uint64)) {
	for w, word := range t.has {
		for word != 0 {
			b := uint32(w*64) + uint32(bits.TrailingZeros64(word))
			word &= word - 1
			fn(b, t.dense[int(b)*t.row:int(b)*t.row+t.stride])
		}
	}
	extra := make([]uint32, 0, len(t.extra))
	for iid := range t.extra {
		extra = append(extra, iid)
	}
	slices.Sort(extra)
	for _, iid := range extra {
		fn(iid, t.extra[iid][:t.stride])
	}
}
