package db

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/normalize"
)

// MaxTemplateSize is the longest template text, in bytes of UTF-8.
const MaxTemplateSize = 4 << 20

// ErrTemplateNeedsTexts is returned when a template change would leave
// stored documents fingerprinted with other templates than new ones: every
// stored document must have its text (Options.KeepTexts) to be
// fingerprinted again. The database is unchanged.
var ErrTemplateNeedsTexts = errors.New("fpdb: changing templates needs the text of every stored document")

// ErrNoTemplate is returned for a template name the database does not
// have.
var ErrNoTemplate = errors.New("fpdb: no such template")

// ErrReindexPending is returned by a read-only Open of a database whose
// last template change was interrupted: some documents still have
// fingerprints made with the templates before it. Opening it for writing
// finishes the change.
var ErrReindexPending = errors.New("fpdb: an interrupted template change must be finished")

// Template is a text whose shingles every fingerprint of the database
// leaves out (see DB.AddTemplate).
type Template struct {
	// Name names the template (the rules of document ids apply).
	Name string
	// Text is the template's text: UTF-8, after its character encoding
	// was decoded.
	Text []byte
	// Format is how the text is read: FormatText or FormatHTML.
	Format Format
	// Added is when the template was added.
	Added time.Time
	// Shingles is the number of its distinct shingles.
	Shingles int
}

// TemplateResult reports a template change.
type TemplateResult struct {
	// Template is the template added or removed.
	Template Template
	// Replaced reports that AddTemplate replaced a template of the same
	// name.
	Replaced bool
	// Documents is the number of stored documents fingerprinted again
	// from their texts; Changed of them got another fingerprint.
	Documents, Changed int
	// Excluded is the number of distinct shingles all templates now
	// exclude.
	Excluded int
}

// templateValueVersion is the first byte of a template record: version,
// format byte (textFormatPlain or textFormatMarkup), the time added (Unix
// nanoseconds, u64be), then the UTF-8 text.
const templateValueVersion = 1

func encodeTemplate(t *Template) []byte {
	fb := byte(textFormatPlain)
	if t.Format == FormatHTML {
		fb = textFormatMarkup
	}
	v := make([]byte, 10, 10+len(t.Text))
	v[0], v[1] = templateValueVersion, fb
	binary.BigEndian.PutUint64(v[2:], uint64(t.Added.UnixNano()))
	return append(v, t.Text...)
}

// decodeTemplate decodes the record of the template named name; errors
// wrap ErrCorrupt.
func decodeTemplate(name string, v []byte) (Template, error) {
	if len(v) < 10 || v[0] != templateValueVersion {
		return Template{}, fmt.Errorf("%w: template %q: record of %d bytes, version %d", ErrCorrupt, name, len(v), firstByte(v))
	}
	t := Template{Name: name, Added: time.Unix(0, int64(binary.BigEndian.Uint64(v[2:]))).UTC(), Text: slices.Clone(v[10:])}
	switch v[1] {
	case textFormatPlain:
		t.Format = FormatText
	case textFormatMarkup:
		t.Format = FormatHTML
	default:
		return Template{}, fmt.Errorf("%w: template %q: format byte %d", ErrCorrupt, name, v[1])
	}
	if !utf8.Valid(t.Text) || len(t.Text) > MaxTemplateSize {
		return Template{}, fmt.Errorf("%w: template %q: text of %d bytes is not valid UTF-8 or too long", ErrCorrupt, name, len(t.Text))
	}
	return t, nil
}

func firstByte(v []byte) int {
	if len(v) == 0 {
		return -1
	}
	return int(v[0])
}

// baseParams returns the fingerprint parameters without templates.
func (d *DB) baseParams() fingerprint.Params {
	return fingerprint.Params{K: d.params.K, ShingleWidth: d.params.ShingleWidth, Seed: d.params.Seed,
		NormalizeVersion: d.params.NormalizeVersion}
}

// templateShingles returns the distinct shingles of t under the
// database's rules.
func (d *DB) templateShingles(t *Template) ([]uint64, error) {
	f := normalize.FormatText
	if t.Format == FormatHTML {
		f = normalize.FormatMarkup
	}
	return d.baseParams().ShinglesOf(t.Text, f)
}

// readTemplates returns the stored templates, by name, from r.
func readTemplates(r pebble.Reader) ([]Template, error) {
	lo, hi := keys.TemplateRange()
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, storageError(err)
	}
	defer it.Close()
	var out []Template
	for it.First(); it.Valid(); it.Next() {
		name := string(it.Key()[len(lo):])
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, storageError(err)
		}
		t, err := decodeTemplate(name, v)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, storageError(it.Error())
}

// loadTemplates reads the templates and sets the exclusion set of the
// fingerprints; it returns the templates with their shingle counts.
func (d *DB) loadTemplates() ([]Template, error) {
	ts, err := readTemplates(d.pdb)
	if err != nil {
		return nil, err
	}
	ex, err := d.exclusion(ts)
	if err != nil {
		return nil, err
	}
	d.exclude.Store(ex)
	return ts, nil
}

// exclusion returns the set of the shingles of ts (nil for none) and sets
// each one's Shingles.
func (d *DB) exclusion(ts []Template) (*fingerprint.Exclude, error) {
	var all []uint64
	for i := range ts {
		hs, err := d.templateShingles(&ts[i])
		if err != nil {
			return nil, fmt.Errorf("template %q: %w", ts[i].Name, err)
		}
		ts[i].Shingles = len(hs)
		all = append(all, hs...)
	}
	return fingerprint.NewExclude(all), nil
}

// Templates returns the database's templates, by name.
func (d *DB) Templates(ctx context.Context) ([]Template, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if err := d.enter(ctx); err != nil {
		return nil, err
	}
	defer d.leave()
	d.mu.RLock()
	ts, err := readTemplates(d.pdb)
	d.mu.RUnlock()
	if err == nil {
		_, err = d.exclusion(ts)
	}
	if err != nil {
		return nil, fmt.Errorf("fpdb: templates: %w", err)
	}
	return ts, nil
}

// AddTemplate adds the template named name, read from text with to (or
// replaces the template of that name): from then on, every fingerprint
// the database makes — of documents added, of query texts — leaves out
// the template's shingles, so that text shared only through a template
// (a call for proposals, a license header, starter code) never makes two
// documents similar, and shared passages never consist of it. A document
// made only of template text resembles no other document but its exact
// copies.
//
// The stored documents are fingerprinted again from their texts, so that
// the index stays exact: a database with stored documents must keep texts
// and have the text of every document, or AddTemplate fails with
// ErrTemplateNeedsTexts and changes nothing. Each document's new
// fingerprint is written atomically; an interrupted change is finished by
// the next writable Open (a read-only Open fails with ErrReindexPending
// until then). Writers wait while the documents are fingerprinted again.
func (d *DB) AddTemplate(ctx context.Context, name string, text []byte, to TextOptions) (*TemplateResult, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	t, err := d.prepareTemplate(name, text, to)
	if err != nil {
		return nil, fmt.Errorf("fpdb: add template %q: %w", name, err)
	}
	res, err := d.changeTemplates(ctx, &t, false, false)
	if err != nil {
		return nil, fmt.Errorf("fpdb: add template %q: %w", name, err)
	}
	return res, nil
}

// RemoveTemplate removes the template named name (ErrNoTemplate when there
// is none) and fingerprints the stored documents again, as AddTemplate
// does.
func (d *DB) RemoveTemplate(ctx context.Context, name string) (*TemplateResult, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if err := validID(name); err != nil {
		return nil, fmt.Errorf("fpdb: remove template: %w", err)
	}
	res, err := d.changeTemplates(ctx, &Template{Name: name}, true, false)
	if err != nil {
		return nil, fmt.Errorf("fpdb: remove template %q: %w", name, err)
	}
	return res, nil
}

// prepareTemplate checks and decodes a template text.
func (d *DB) prepareTemplate(name string, text []byte, to TextOptions) (Template, error) {
	if err := validID(name); err != nil {
		return Template{}, err
	}
	if d.opts.ReadOnly {
		return Template{}, ErrReadOnly
	}
	f, err := to.normalizeFormat(name)
	if err != nil {
		return Template{}, err
	}
	r, err := d.decode(bytes.NewReader(text), to.Encoding, f)
	if err != nil {
		return Template{}, err
	}
	text, err = io.ReadAll(io.LimitReader(r, MaxTemplateSize+1))
	if err != nil {
		return Template{}, err
	}
	if len(text) > MaxTemplateSize {
		return Template{}, fmt.Errorf("%w: more than %d bytes (MaxTemplateSize)", ErrTextTooLarge, MaxTemplateSize)
	}
	if f == normalize.FormatAuto {
		f = normalize.Sniff(text)
	}
	t := Template{Name: name, Text: text, Format: fromNormalize(f), Added: time.Now().UTC()}
	if _, err := d.templateShingles(&t); err != nil {
		return Template{}, err
	}
	return t, nil
}

// changeTemplates adds (or replaces) t, or removes the template named
// t.Name, and fingerprints the stored documents again; imp when
// ImportInto makes the change (see lockWriter).
func (d *DB) changeTemplates(ctx context.Context, t *Template, remove, imp bool) (*TemplateResult, error) {
	if d.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	if err := d.enter(ctx); err != nil {
		return nil, err
	}
	defer d.leave()
	d.tmplMu.Lock() // no add or query in flight (tmplMu)
	defer d.tmplMu.Unlock()
	if err := d.lockWriter(writerOf(imp)); err != nil {
		return nil, err
	}
	defer d.writeMu.Unlock()
	if d.params.FormatVersion < formatV3 {
		return nil, fmt.Errorf("%w: the database is of format %d, which predates templates (export it and import it into a new database)", ErrFormatVersion, d.params.FormatVersion)
	}
	ts, err := readTemplates(d.pdb)
	if err != nil {
		return nil, err
	}
	res := &TemplateResult{Template: *t}
	i := slices.IndexFunc(ts, func(x Template) bool { return x.Name == t.Name })
	switch {
	case remove && i < 0:
		return nil, ErrNoTemplate
	case remove:
		res.Template = ts[i]
		hs, err := d.templateShingles(&ts[i])
		if err != nil {
			return nil, fmt.Errorf("template %q: %w", t.Name, err)
		}
		res.Template.Shingles = len(hs)
		ts = slices.Delete(ts, i, i+1)
	case i >= 0:
		res.Replaced = true
		ts[i] = *t
	default:
		ts = append(ts, *t)
	}
	ex, err := d.exclusion(ts)
	if err != nil {
		return nil, err
	}
	for _, x := range ts {
		if x.Name == t.Name && !remove {
			res.Template.Shingles = x.Shingles
		}
	}
	res.Excluded = ex.Len()
	if err := d.allHaveTexts(ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// One batch: the template change, the format, and the mark of the
	// documents to fingerprint again.
	b := d.pdb.NewBatch()
	defer b.Close()
	if remove {
		_ = b.Delete(keys.Template(t.Name), nil)
	} else {
		_ = b.Set(keys.Template(t.Name), encodeTemplate(t), nil)
	}
	// On disk only: d.params is read without a lock, and format 4 changes
	// nothing this build does (it keeps older builds away).
	if p := d.params; p.FormatVersion < formatV4 {
		p.FormatVersion = formatV4
		_ = b.Set(keys.Meta(), encodeMeta(p), nil)
	}
	if d.ix.Len() > 0 {
		_ = b.Set(keys.ReindexMark(), encodeReindexMark(d.nextIID, 0), nil)
	}
	d.mu.Lock()
	err = d.commit(b)
	if err == nil {
		d.exclude.Store(ex)
	}
	d.mu.Unlock()
	if err != nil {
		return nil, storageError(err)
	}
	// Once committed, the change runs to its end whatever ctx says: a
	// half-changed database would answer inexactly (a crash is finished by
	// the next writable Open).
	res.Documents, res.Changed, err = d.reindex(context.WithoutCancel(ctx))
	return res, err
}

// allHaveTexts fails with ErrTemplateNeedsTexts unless every stored
// document has a stored text. writeMu is held.
func (d *DB) allHaveTexts(ctx context.Context) error {
	n := d.ix.Len()
	if n == 0 {
		return nil
	}
	if !d.params.KeepTexts {
		docs := "documents"
		if n == 1 {
			docs = "document"
		}
		return fmt.Errorf("%w: it holds %d %s and was created without texts (Options.KeepTexts); add templates to a new database before its documents", ErrTemplateNeedsTexts, n, docs)
	}
	lo, hi := keys.Range(keys.PrefixText)
	it, err := d.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi, KeyTypes: pebble.IterKeyTypePointsOnly})
	if err != nil {
		return storageError(err)
	}
	defer it.Close()
	texts := roaring.New()
	for it.First(); it.Valid(); it.Next() {
		if iid, err := keys.ParseText(it.Key()); err == nil {
			texts.Add(iid)
		}
	}
	if err := it.Error(); err != nil {
		return storageError(err)
	}
	missing := 0
	for iid := range d.ix.Cap() {
		if d.ix.Live(uint32(iid)) && !texts.Contains(uint32(iid)) {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("%w: %d of its %d documents have no stored text (added by fingerprint or imported without one); delete them first", ErrTemplateNeedsTexts, missing, n)
	}
	return nil
}

// errTestStop is what reindex returns when a test stops it
// (DB.testStopReindex), as a crash would.
var errTestStop = errors.New("reindex stopped by a test")

// reindexBatch is how many documents one atomic write of a template change
// fingerprints again.
const reindexBatch = 256

// encodeReindexMark returns the value of the reindex mark: the internal
// ids in [next, end) are still to be fingerprinted again.
func encodeReindexMark(end, next uint32) []byte {
	return binary.BigEndian.AppendUint32(encodeIID(end), next)
}

// reindexMark returns the reindex mark; ok is false when there is none.
func reindexMark(r pebble.Reader) (end, next uint32, ok bool, err error) {
	v, closer, err := r.Get(keys.ReindexMark())
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, storageError(err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, 0, false, fmt.Errorf("%w: reindex mark is %d bytes, want 8", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint32(v), binary.BigEndian.Uint32(v[4:]), true, nil
}

// reindex fingerprints again, from their texts, the documents the reindex
// mark names, in storing order, and removes the mark. A document whose
// fingerprint (or shingle count) changes is stored anew — same id, source,
// time and text, a new internal id at the end, so that storing order is
// kept among the documents that change, which follow those that do not —
// and its old version removed; each batch of documents and the mark's
// progress are one atomic write. writeMu is held. It returns the
// documents fingerprinted and how many of them changed.
func (d *DB) reindex(ctx context.Context) (done, changed int, err error) {
	end, next, ok, err := reindexMark(d.pdb)
	if err != nil || !ok {
		return 0, 0, err
	}
	var buf []byte
	for {
		if err := ctx.Err(); err != nil {
			return done, changed, err
		}
		docs, texts, err := d.reindexNext(next, end)
		if err != nil {
			return done, changed, err
		}
		if len(docs) == 0 {
			break
		}
		next = docs[len(docs)-1].iid + 1
		c := &change{extra: []keyValue{{keys.ReindexMark(), encodeReindexMark(end, next)}}}
		for i := range docs {
			doc := &docs[i]
			st, err := d.texts.decode(texts[i], buf)
			if err != nil {
				return done, changed, fmt.Errorf("document %q: %w", doc.ID, err)
			}
			buf = st.Text
			res, _, err := d.build(nil, st.Text, TextOptions{Format: st.Format, Encoding: "utf-8"}, "")
			if err != nil {
				return done, changed, fmt.Errorf("document %q: fingerprint its stored text: %w", doc.ID, err)
			}
			if shingleCount(res) == doc.Shingles && slices.Equal(res.FP, d.ix.Fingerprint(doc.iid)) {
				continue
			}
			c.removes = append(c.removes, victim{ext: doc.ID, iid: doc.iid})
			doc.Fingerprint, doc.Shingles, doc.text = res.FP, shingleCount(res), texts[i]
			c.adds = append(c.adds, *doc)
		}
		d.at("reindex")
		if d.testStopReindex != nil && d.testStopReindex() {
			return done, changed, errTestStop
		}
		if err := d.write(c, nil); err != nil {
			return done, changed, err
		}
		done += len(docs)
		changed += len(c.adds)
	}
	b := d.pdb.NewBatch()
	defer b.Close()
	_ = b.Delete(keys.ReindexMark(), nil)
	if err := d.commit(b); err != nil {
		return done, changed, storageError(err)
	}
	return done, changed, nil
}

// reindexNext returns the next reindexBatch documents in [next, end), with
// their stored texts' values.
func (d *DB) reindexNext(next, end uint32) ([]Doc, [][]byte, error) {
	it, err := d.pdb.NewIter(&pebble.IterOptions{LowerBound: keys.Doc(next), UpperBound: keys.Doc(end)})
	if err != nil {
		return nil, nil, storageError(err)
	}
	defer it.Close()
	var docs []Doc
	var texts [][]byte
	for it.First(); it.Valid() && len(docs) < reindexBatch; it.Next() {
		iid, err := keys.ParseDoc(it.Key())
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, nil, storageError(err)
		}
		doc, err := decodeDocRecord(v)
		if err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", iid, err)
		}
		doc.iid = iid
		tv, closer, err := d.pdb.Get(keys.Text(iid))
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, nil, fmt.Errorf("%w: document %q has no stored text", ErrTemplateNeedsTexts, doc.ID)
		}
		if err != nil {
			return nil, nil, storageError(err)
		}
		texts = append(texts, slices.Clone(tv))
		_ = closer.Close()
		docs = append(docs, doc)
	}
	return docs, texts, storageError(it.Error())
}

// dropImportedTemplates removes every template, for an import that failed
// before storing a document (the database had none before it; no document
// is fingerprinted again). It runs even when ctx is cancelled.
func (d *DB) dropImportedTemplates(ctx context.Context) error {
	ts, err := readTemplates(d.pdb)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if _, err := d.changeTemplates(context.WithoutCancel(ctx), &Template{Name: t.Name}, true, true); err != nil {
			return err
		}
	}
	return nil
}

// importTemplates adds the templates of an export header to the new,
// empty database of Import; a name given twice is an invalid export.
func (d *DB) importTemplates(ctx context.Context, ets []ExportTemplate, stored map[string]bool) error {
	seen := map[string]bool{}
	for _, et := range ets {
		if seen[et.Name] {
			return fmt.Errorf("fpdb: import: %w: template %q given twice", ErrBadExport, et.Name)
		}
		seen[et.Name] = true
		if stored[et.Name] {
			continue // added by the unfinished import of this export
		}
		f, err := ParseFormat(et.Format)
		if err == nil && f == FormatAuto {
			err = fmt.Errorf("format %q", et.Format)
		}
		var added time.Time
		if err == nil {
			added, err = time.Parse(time.RFC3339Nano, et.Added)
			if err == nil && (added.Year() < 1970 || added.Year() > 2200) {
				err = fmt.Errorf("added %s is out of range", et.Added)
			}
		}
		var t Template
		if err == nil {
			t, err = d.prepareTemplate(et.Name, []byte(et.Text), TextOptions{Format: f, Encoding: "utf-8"})
		}
		if err != nil {
			return fmt.Errorf("fpdb: import: %w: template %q: %w", ErrBadExport, et.Name, err)
		}
		t.Added = added.UTC()
		if _, err := d.changeTemplates(ctx, &t, false, true); err != nil {
			return fmt.Errorf("fpdb: import: template %q: %w", et.Name, err)
		}
	}
	return nil
}
