package db

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/evidence"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/normalize"
)

// BoilerplateOptions configure SuggestTemplate.
type BoilerplateOptions struct {
	// MinShare is the least share of the documents read that a shingle
	// must occur in to count as boilerplate, in (0, 1]. Default 0.5.
	MinShare float64
	// MinWords is the fewest words a passage of boilerplate must have to
	// be suggested. Default 8.
	MinWords int
	// Sample is how many stored texts are read, spread evenly over the
	// database (all of them when there are fewer). Default 2000: the
	// shingle counts of 2 000 texts of 1 000 words take about 100 MB.
	Sample int
}

// Boilerplate is a suggested template: the passages most stored documents
// share, for the user to review before adding it (AddTemplate).
type Boilerplate struct {
	// Text is the suggested template: the passages, in the words of the
	// first document read that holds each, separated by blank lines. A
	// passage of a markup (HTML, XML) document is its readable text (tags
	// left out, references decoded: evidence.Readable), which AddTemplate
	// reads as plain text, to the same words.
	Text []byte
	// Passages are the passages, each in the text of one document.
	Passages []BoilerplatePassage
	// Shingles is the number of shingles found in at least MinShare of
	// the documents read (those of existing templates not counted).
	Shingles int
	// Documents is the number of documents read; MinDocuments the number
	// of them a shingle had to occur in.
	Documents, MinDocuments int
}

// BoilerplatePassage is one passage of a Boilerplate.
type BoilerplatePassage struct {
	// ID is the document whose text the passage is taken from.
	ID string
	// Span is where it is in that text.
	Span Span
}

// SuggestTemplate finds boilerplate: passages made of shingles that
// occur in at least opts.MinShare of the stored documents (a sample of
// them), leaving out what the templates already cover. It needs stored
// texts (ErrNoText otherwise) and changes nothing: the caller shows the
// suggestion and adds it with AddTemplate if it is right. A nil opts
// means the defaults.
func (d *DB) SuggestTemplate(ctx context.Context, opts *BoilerplateOptions) (_ *Boilerplate, err error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	o := BoilerplateOptions{MinShare: 0.5, MinWords: 8, Sample: 2000}
	if opts != nil {
		if opts.MinShare != 0 {
			o.MinShare = opts.MinShare
		}
		if opts.MinWords != 0 {
			o.MinWords = opts.MinWords
		}
		if opts.Sample != 0 {
			o.Sample = opts.Sample
		}
	}
	var bad []string // only the fields at fault
	if math.IsNaN(o.MinShare) || o.MinShare <= 0 || o.MinShare > 1 {
		bad = append(bad, fmt.Sprintf("MinShare %v (want (0, 1])", o.MinShare))
	}
	if o.MinWords < 1 {
		bad = append(bad, fmt.Sprintf("MinWords %d (want ≥ 1)", o.MinWords))
	}
	if o.Sample < 1 {
		bad = append(bad, fmt.Sprintf("Sample %d (want ≥ 1)", o.Sample))
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("fpdb: suggest template: %w: %s", ErrInvalidOptions, strings.Join(bad, ", "))
	}
	ctx, leave, err := d.enterLong(ctx)
	if err != nil {
		return nil, err
	}
	defer leave(&err)
	if !d.params.KeepTexts {
		return nil, fmt.Errorf("fpdb: suggest template: %w: the database does not keep texts (it was created without Options.KeepTexts)", ErrNoText)
	}
	d.mu.RLock()
	snap := d.pdb.NewSnapshot()
	p := d.fpParams()
	d.mu.RUnlock()
	defer snap.Close()

	// Count the texts, then read Sample of them (all when there are no
	// more), spread evenly, twice: to count the shingles, then to cut the
	// passages. Text i is read when i·Sample/total reaches a new integer.
	total := 0
	all := func(int) bool { return true }
	if err := eachText(ctx, snap, all, func(uint32, []byte) error { total++; return nil }); err != nil {
		return nil, fmt.Errorf("fpdb: suggest template: %w", err)
	}
	pick := func(i int) bool { return total <= o.Sample || (i+1)*o.Sample/total != i*o.Sample/total }
	fr := evidence.NewFrequency(p)
	var buf []byte
	read := func(v []byte) (StoredText, normalize.Format, error) {
		st, err := d.texts.decode(v, buf)
		buf = st.Text
		f := normalize.FormatText
		if st.Format == FormatHTML {
			f = normalize.FormatMarkup
		}
		return st, f, err
	}
	err = eachText(ctx, snap, pick, func(iid uint32, v []byte) error {
		st, f, err := read(v)
		if err != nil {
			return err
		}
		return fr.Add(st.Text, f)
	})
	if err != nil {
		return nil, fmt.Errorf("fpdb: suggest template: %w", err)
	}
	b := &Boilerplate{Documents: fr.Texts(), MinDocuments: max(2, int(math.Ceil(o.MinShare*float64(fr.Texts()))))}
	common := fr.Common(b.MinDocuments)
	b.Shingles = len(common)
	if len(common) == 0 {
		return b, nil
	}
	covered := map[uint64]bool{}
	err = eachText(ctx, snap, pick, func(iid uint32, v []byte) error {
		st, f, err := read(v)
		if err != nil {
			return err
		}
		spans, err := evidence.CommonPassages(p, st.Text, f, common, covered, o.MinWords)
		if err != nil || len(spans) == 0 {
			return err
		}
		id, err := snapID(snap, iid)
		if err != nil {
			return err
		}
		// A markup document's passages are its readable text (one reading
		// of the document for all of them): the words a template added as
		// text excludes are those the markup's are read as.
		var readable []string
		if f == normalize.FormatMarkup {
			ranges := make([][2]int64, len(spans))
			for i, s := range spans {
				ranges[i] = [2]int64{s.Start, s.End}
			}
			readable = evidence.Readable(st.Text, true, ranges)
		}
		for i, s := range spans {
			if len(b.Text) > 0 {
				b.Text = append(b.Text, "\n\n"...)
			}
			if readable != nil {
				b.Text = append(b.Text, readable[i]...)
			} else {
				b.Text = append(b.Text, st.Text[s.Start:s.End]...)
			}
			b.Passages = append(b.Passages, BoilerplatePassage{ID: id, Span: s})
		}
		if len(covered) == len(common) {
			return errStop
		}
		return nil
	})
	if err != nil && err != errStop {
		return nil, fmt.Errorf("fpdb: suggest template: %w", err)
	}
	return b, nil
}

// errStop ends an iteration early.
var errStop = errors.New("stop")

// eachText calls fn with the internal id and value (valid during the call
// only) of every stored text i (0, 1, … in storing order) that pick(i)
// accepts.
func eachText(ctx context.Context, snap *pebble.Snapshot, pick func(i int) bool, fn func(iid uint32, v []byte) error) error {
	lo, hi := keys.Range(keys.PrefixText)
	it, err := snap.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return storageError(err)
	}
	defer it.Close()
	i := 0
	for it.First(); it.Valid(); it.Next() {
		if i++; !pick(i - 1) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		iid, err := keys.ParseText(it.Key())
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return storageError(err)
		}
		if err := fn(iid, v); err != nil {
			return err
		}
	}
	return storageError(it.Error())
}

// snapID returns the id of the document at internal id iid in snap.
func snapID(snap *pebble.Snapshot, iid uint32) (string, error) {
	v, closer, err := snap.Get(keys.Doc(iid))
	if err != nil {
		return "", fmt.Errorf("document %d: %w", iid, storageError(err))
	}
	defer closer.Close()
	doc, err := decodeDocRecord(v)
	return doc.ID, err
}
