package db

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/normalize"
)

// ErrBadInput is the error for an Input the database cannot store as
// given: one that does not set exactly one of Text, Reader, Open and
// Fingerprint, or whose Size, Words, Shingles or Added is out of range.
var ErrBadInput = errors.New("fpdb: bad input")

// Input is a document to store: its id, exactly one of Text, Reader, Open
// and Fingerprint, and metadata.
type Input struct {
	// ID is the document id; a stored document with this id is replaced.
	ID string
	// Text is the document's text.
	Text []byte
	// Reader is read to the end for the document's text, in bounded memory
	// however long it is (in a database that keeps texts, the text is held
	// to be stored, up to Options.MaxTextSize).
	Reader io.Reader
	// Open opens the document's text; it is read to the end and closed
	// (by AddBatch on one of its fingerprinting goroutines, so that a batch
	// of files holds only a few open at a time).
	Open func() (io.ReadCloser, error)
	// Fingerprint is a fingerprint computed elsewhere with the database's
	// K, ShingleWidth and Seed.
	Fingerprint []uint64
	// ContentHash, Size, Words and Shingles (the number of distinct
	// shingles) are stored with a Fingerprint (they are computed from a
	// text). A zero ContentHash means none: matches of the document are
	// then never flagged Exact. Zero Shingles means unknown: containment
	// is then estimated from Words.
	ContentHash [16]byte
	Size        int64
	Words       int
	Shingles    int
	// Source names where the document came from (a path, a URL); may be
	// empty.
	Source string
	// Added is recorded as the time the document was added; the zero value
	// means the time of the write.
	Added time.Time
	// TextOptions say how Text, Reader or Open's bytes are read (Source
	// names the text for FormatAuto).
	TextOptions
	// ReplaceUnchanged stores the document even when the document stored
	// under its id has the same content (content hash and fingerprint;
	// without a content hash, also Size, Words and Shingles). By
	// default such a document is left as it is — its time added and its
	// place in storing order stay — and reported as unchanged
	// (AddResult.Unchanged, BatchResult.Unchanged), so that re-adding a
	// crawl does not make old documents new. (In a database that keeps
	// texts, a stored version without a text is not unchanged: the
	// document is stored anew with its text.)
	ReplaceUnchanged bool

	// keptText is the text Import stores with a Fingerprint, in a
	// database that keeps texts.
	keptText *StoredText
	// checkText makes prepare refuse an export's record whose keptText
	// does not give its content hash and fingerprint (checkExportText);
	// Import sets it.
	checkText bool
}

// Add stores the document in (fingerprinting its text), replacing any
// document with its id. With opts.Threshold > 0 it first finds the stored
// near duplicates (see AddOptions). The write is one atomic batch, durable
// on return unless Options.NoSync. A nil opts means no check.
func (d *DB) Add(ctx context.Context, in Input, opts *AddOptions) (*AddResult, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	d.tmplMu.RLock()
	defer d.tmplMu.RUnlock()
	o, err := d.addPrecheck(ctx, in.ID, opts)
	if err != nil {
		return nil, err
	}
	doc, err := d.prepare(ctx, &in)
	if cerr := ctx.Err(); cerr != nil { // it ended during the read
		return nil, fmt.Errorf("fpdb: add %q: %w", in.ID, cerr)
	}
	if err != nil {
		return nil, fmt.Errorf("fpdb: add %q: %w", in.ID, err)
	}
	return d.store(ctx, doc, o, in.ReplaceUnchanged)
}

// The ranges of what a document record holds: word and shingle counts up
// to 2^62, and the time added as nanoseconds since 1970 in an int64.
const (
	maxCount     = 1 << 62
	minAddedYear = 1678
	maxAddedYear = 2261
)

// prepare checks in and turns it into the document to store, fingerprinting
// its text. It does not validate the id. A text read from a reader is read
// until ctx is done (see ctxReader).
func (d *DB) prepare(ctx context.Context, in *Input) (Doc, error) {
	set := 0
	for _, b := range []bool{in.Text != nil, in.Reader != nil, in.Open != nil, in.Fingerprint != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		return Doc{}, fmt.Errorf("%w: set exactly one of Text, Reader, Open and Fingerprint", ErrBadInput)
	}
	if y := in.Added.Year(); !in.Added.IsZero() && (y < minAddedYear || y > maxAddedYear) {
		// Stored as nanoseconds since 1970: an int64 holds these years only.
		return Doc{}, fmt.Errorf("%w: Added %v: out of range (years %d to %d)", ErrBadInput, in.Added, minAddedYear, maxAddedYear)
	}
	doc := Doc{ID: in.ID, Source: in.Source, Added: in.Added.UTC()}
	if in.Fingerprint != nil {
		if want := d.params.K / 64; len(in.Fingerprint) != want {
			return Doc{}, fmt.Errorf("%w: %d bits, want K = %d", ErrBadFingerprint, 64*len(in.Fingerprint), d.params.K)
		}
		doc.Fingerprint = slices.Clone(in.Fingerprint)
		doc.ContentHash, doc.Size, doc.Words, doc.Shingles = in.ContentHash, in.Size, in.Words, in.Shingles
		// The bounds the document record is read back with (a record
		// outside them is corrupt, and would stop Open).
		if in.Shingles < 0 || in.Shingles > maxCount {
			return Doc{}, fmt.Errorf("%w: Shingles = %d: must be in [0, 2^62]", ErrBadInput, in.Shingles)
		}
		if in.Words < 0 || in.Words > maxCount {
			return Doc{}, fmt.Errorf("%w: Words = %d: must be in [0, 2^62]", ErrBadInput, in.Words)
		}
		if in.Size < 0 {
			return Doc{}, fmt.Errorf("%w: Size = %d: must not be negative", ErrBadInput, in.Size)
		}
		if d.params.FormatVersion < formatV3 {
			doc.Shingles = 0 // records of older formats have no count
		}
		if in.keptText != nil && in.checkText {
			if err := d.checkExportText(in); err != nil {
				return Doc{}, err
			}
		}
		if kt := in.keptText; kt != nil && d.params.KeepTexts {
			if int64(len(kt.Text)) > d.opts.MaxTextSize {
				return Doc{}, fmt.Errorf("%w: %d bytes, more than %d (Options.MaxTextSize)", ErrTextTooLarge, len(kt.Text), d.opts.MaxTextSize)
			}
			f, err := TextOptions{Format: kt.Format}.normalizeFormat("")
			if err != nil || f == normalize.FormatAuto {
				return Doc{}, fmt.Errorf("%w: text format %v", ErrInvalidOptions, kt.Format)
			}
			if doc.text, err = d.texts.encode(kt.Text, f); err != nil {
				return Doc{}, err
			}
		}
		return doc, nil
	}
	r := in.Reader // nil for in.Text, read in place
	if in.Open != nil {
		rc, err := in.Open()
		if err != nil {
			return Doc{}, err
		}
		if rc == nil {
			return Doc{}, fmt.Errorf("%w: Open returned neither a reader nor an error", ErrBadInput)
		}
		defer rc.Close()
		r = rc
	}
	var keep *textCapture
	if d.params.KeepTexts {
		buf, _ := d.textBufs.Get().(*[]byte)
		if buf == nil {
			buf = new([]byte)
		}
		keep = &textCapture{buf: (*buf)[:0], limit: d.opts.MaxTextSize}
		defer func() {
			if cap(keep.buf) <= maxPooledText {
				*buf = keep.buf[:0]
				d.textBufs.Put(buf)
			}
		}()
	}
	res, size, f, err := d.buildText(withContext(ctx, r), in.Text, in.TextOptions, in.Source, keep)
	if err != nil {
		return Doc{}, err
	}
	doc.Fingerprint, doc.ContentHash, doc.Size, doc.Words = res.FP, res.ContentHash, size, res.Words
	if d.params.FormatVersion >= formatV3 {
		doc.Shingles = shingleCount(res)
	}
	if keep != nil {
		if doc.text, err = d.texts.encode(keep.buf, f); err != nil {
			return Doc{}, err
		}
	}
	return doc, nil
}

func (d *DB) addPrecheck(ctx context.Context, id string, opts *AddOptions) (*AddOptions, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validID(id); err != nil {
		return nil, fmt.Errorf("fpdb: add: %w", err)
	}
	o, err := checkAddOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("fpdb: add %q: %w", id, err)
	}
	if d.opts.ReadOnly {
		return nil, fmt.Errorf("fpdb: add %q: %w", id, ErrReadOnly)
	}
	return o, nil
}

// reject answers an add that Reject refuses: logged, nothing stored.
func (d *DB) reject(res *AddResult, doc Doc, entry func(Decision) []LogEntry, later *pendingSync) (*AddResult, error) {
	if err := d.writeLog(entry(DecisionRejected), later); err != nil {
		return nil, fmt.Errorf("fpdb: add %q: %w", doc.ID, err)
	}
	res.Doc = doc
	res.Doc.text = nil
	return res, nil
}

// store runs the optional check and writes doc in one batch.
func (d *DB) store(ctx context.Context, doc Doc, o *AddOptions, replaceUnchanged bool) (*AddResult, error) {
	if err := d.enter(ctx); err != nil {
		return nil, err
	}
	defer d.leave()
	synced := pendingSync{d: d}
	defer synced.wait() // after writeMu is released: concurrent adds share a WAL sync
	if err := d.lockWriter(changer); err != nil {
		return nil, fmt.Errorf("fpdb: add %q: %w", doc.ID, err)
	}
	defer d.writeMu.Unlock()
	defer d.maybeFlushDeferred(ctx) // runs after mu is released
	d.mu.RLock()
	res := &AddResult{}
	var err error
	var found0 []Match // every match, for the audit log
	if o.Threshold > 0 {
		var qr *QueryResult
		qr, err = d.searchLocked(ctx, d.docQuery(&doc), QueryOptions{Threshold: o.Threshold}, doc.ID)
		if err == nil {
			res.Matches, found0 = qr.Matches, qr.Matches
			if o.Limit > 0 && len(res.Matches) > o.Limit {
				res.Matches = res.Matches[:o.Limit]
			}
		}
	}
	d.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("fpdb: add %q: %w", doc.ID, err)
	}
	if doc.Added.IsZero() {
		doc.Added = time.Now().UTC()
	}
	entry := func(x Decision) []LogEntry {
		if !d.params.AuditLog {
			return nil
		}
		return []LogEntry{addEntry(&doc, x, OpAdd, o, replaceUnchanged, found0)}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// A document stored already with this content stays as it is, and is
	// reported unchanged (with its matches) even when Reject would refuse
	// it: it is stored, which "rejected" would deny.
	old, found, err := d.lookup(doc.ID)
	if err != nil {
		return nil, fmt.Errorf("fpdb: add %q: %w", doc.ID, err)
	}
	if found && !replaceUnchanged {
		same, err := d.unchanged(old, &doc)
		if err != nil {
			return nil, fmt.Errorf("fpdb: add %q: %w", doc.ID, err)
		}
		if same {
			if err := d.writeLog(entry(DecisionUnchanged), &synced); err != nil {
				return nil, fmt.Errorf("fpdb: add %q: %w", doc.ID, err)
			}
			res.Unchanged, res.Doc = true, doc
			res.Doc.text = nil
			return res, nil
		}
	}
	if o.Reject && len(res.Matches) > 0 {
		return d.reject(res, doc, entry, &synced)
	}
	c := &change{adds: []Doc{doc}, log: entry(DecisionStored)}
	if found {
		c.removes = []victim{{ext: doc.ID, iid: old}}
		c.log = entry(DecisionReplaced)
	}
	if err := d.write(c, &synced); err != nil {
		return nil, fmt.Errorf("fpdb: add %q: %w", doc.ID, err)
	}
	res.Stored, res.Replaced, res.Doc = true, found, c.adds[0]
	res.Doc.text = nil
	return res, nil
}

// lookup returns the internal id stored for ext. Callers hold writeMu (or
// accept a racing answer).
func (d *DB) lookup(ext string) (uint32, bool, error) {
	v, closer, err := d.pdb.Get(keys.ExtID(ext))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer closer.Close()
	iid, err := decodeIID(v)
	return iid, err == nil, err
}

// unchanged reports whether the document stored at iid has the content of
// doc: the same content hash and fingerprint, and a stored text when doc
// brings one. Without a content hash (a document added by fingerprint),
// its sizes must be the same too: they are all that is known of its
// content beyond the fingerprint, and containment is estimated from them.
// writeMu is held.
func (d *DB) unchanged(iid uint32, doc *Doc) (bool, error) {
	same := d.docs.ext(iid) != "" && d.docs.hash(iid) == doc.ContentHash &&
		slices.Equal(d.ix.Fingerprint(iid), doc.Fingerprint)
	if same && doc.ContentHash == ([16]byte{}) {
		v, closer, err := d.pdb.Get(keys.Doc(iid))
		if err != nil {
			return false, storageError(err)
		}
		rec, err := decodeDocRecord(v)
		_ = closer.Close()
		if err != nil {
			return false, err
		}
		same = rec.Size == doc.Size && rec.Words == doc.Words && rec.Shingles == doc.Shingles
	}
	if !same || doc.text == nil {
		return same, nil
	}
	has, err := d.hasText(iid)
	if err != nil {
		return false, storageError(err)
	}
	return has, nil
}

func encodeIID(iid uint32) []byte { return binary.BigEndian.AppendUint32(nil, iid) }

func decodeIID(b []byte) (uint32, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("%w: internal id is %d bytes, want 4", ErrCorrupt, len(b))
	}
	return binary.BigEndian.Uint32(b), nil
}

// AddOptions configure an add.
type AddOptions struct {
	// Threshold, when in (0, 1], makes the add first look for stored
	// documents with resemblance ≥ Threshold and return them in
	// AddResult.Matches; 0 checks nothing, and any other value (negative,
	// above 1, NaN) fails with ErrInvalidThreshold. The
	// check and the store happen under one lock: no other write comes
	// between them.
	Threshold float64
	// Reject makes the add store nothing when the check found a match
	// (Stored false). A document already stored under its id with the same
	// content is reported Unchanged instead, with its matches: it stays
	// stored.
	Reject bool
	// Limit caps the matches returned; 0 means no limit.
	Limit int
}

// AddResult is the outcome of an add.
type AddResult struct {
	// Stored reports that the document was written.
	Stored bool
	// Replaced reports that a document with the same id was replaced.
	Replaced bool
	// Unchanged reports that the document stored under the id has the same
	// content, and was left as it is (see Input.ReplaceUnchanged).
	Unchanged bool
	// Matches are the stored documents found by the check (other than the
	// document's own previous version), sorted like query matches.
	Matches []Match
	// Doc is the document as stored (or as it would have been stored when
	// Reject refused it).
	Doc Doc
}

// shingleCount returns the shingle count recorded for a document
// fingerprinted as res: its distinct shingles, or 1 for a document made
// only of template text (0 would read as "unknown" and make its size an
// estimate from its words; with 1 it contains no query).
func shingleCount(res fingerprint.Result) int {
	if res.Distinct == 0 && res.Excluded > 0 {
		return 1
	}
	return res.Distinct
}

// Prepare computes the document in as Add would store it (its
// fingerprint, content hash, size, words and shingle count, with the
// database's parameters and templates) without storing anything. A
// cluster gateway fingerprints with it before it appends the document to
// its write log. The returned Doc's Added is in's (zero if unset).
func (d *DB) Prepare(ctx context.Context, in Input) (*Doc, error) {
	docs, errs, err := d.PrepareBatch(ctx, []Input{in})
	if err != nil {
		return nil, err
	}
	return docs[0], errs[0]
}

// PrepareBatch is Prepare for each of docs, on GOMAXPROCS goroutines as
// AddBatch fingerprints: docs[i] prepared is out[i], or errs[i] says why it
// would be refused. err is set (out and errs nil) when the database is
// closed or ctx ends.
func (d *DB) PrepareBatch(ctx context.Context, docs []Input) (out []*Doc, errs []error, err error) {
	if err := d.live(); err != nil {
		return nil, nil, err
	}
	if err := d.enter(ctx); err != nil {
		return nil, nil, err
	}
	defer d.leave()
	d.tmplMu.RLock() // every document under the same templates
	defer d.tmplMu.RUnlock()
	prepared, errs := d.fingerprintBatch(ctx, docs)
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	out = make([]*Doc, len(docs))
	for i := range prepared {
		switch {
		case errs[i] != nil && validID(docs[i].ID) != nil:
			errs[i] = fmt.Errorf("fpdb: prepare: %w", errs[i])
		case errs[i] != nil:
			errs[i] = fmt.Errorf("fpdb: prepare %q: %w", docs[i].ID, errs[i])
		default:
			prepared[i].text = nil
			out[i] = &prepared[i]
		}
	}
	return out, errs, nil
}

// Input returns the input that stores d as it is (its fingerprint, content
// hash, size, words, shingle count, source and time added; no text): what
// a document prepared elsewhere (Prepare) is added with.
func (d *Doc) Input() Input {
	return Input{ID: d.ID, Source: d.Source, Added: d.Added, Fingerprint: d.Fingerprint, ContentHash: d.ContentHash,
		Size: d.Size, Words: d.Words, Shingles: d.Shingles}
}
