package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/keys"
)

// SalvageReport describes what Salvage read and what it could not.
type SalvageReport struct {
	// Docs is the number of documents written.
	Docs int
	// Unreadable lists the ranges of internal ids whose document records or
	// fingerprints could not be read (a damaged block of the store).
	Unreadable []UnreadableRange
	// Dropped lists the documents left out though something of them was
	// read: a record without its fingerprint or the reverse, an undecodable
	// record or fingerprint, an older copy of an id; and the stored texts
	// left out (undecodable: the document is written without it).
	Dropped []string
	// Left names what a salvaged export never carries that the database
	// holds: its audit log (the export has none, so a database imported
	// from it keeps none), and the mark of an import that did not finish
	// (the documents are then only the first ones of that import's
	// export).
	Left []string
}

// UnreadableRange is a range of internal ids Salvage could not read.
type UnreadableRange struct {
	// What is "fingerprints", "document records" or "texts".
	What string
	// From and To are the first and last internal id of the range.
	From, To uint32
	// Err is the read error (Pebble's, printed without its "<corruption
	// detail carrier>" and naming the damaged file).
	Err error
}

// String describes the range.
func (u UnreadableRange) String() string {
	switch {
	case u.From == u.To:
		return fmt.Sprintf("%s: internal id %d: %v", u.What, u.From, u.Err)
	case u.To == math.MaxUint32:
		return fmt.Sprintf("%s: internal ids %d and above: %v", u.What, u.From, u.Err)
	}
	return fmt.Sprintf("%s: internal ids %d to %d: %v", u.What, u.From, u.To, u.Err)
}

// Salvage writes every document of the database in dir that can still be
// read to w, in the export format (see Export), for a database that Open or
// Repair refuse because parts of its files are damaged. It reads the store
// without changing it: when a block of document records or fingerprints
// cannot be read (a checksum mismatch, say), it skips to the next readable
// key and lists the ids it skipped. Only whole documents (record and
// fingerprint both readable and valid) are written, each with its text
// when the database keeps texts and the text can be read; when two
// records carry the same id, the newest stays. Import the output into a
// new database:
//
//	fpdb export --salvage -o rescued.jsonl && fpdb --db new import rescued.jsonl
//
// The meta record (the creation parameters) must be readable. The
// documents are held in memory until written (about K/8 + 100 bytes each,
// plus their compressed texts).
// opts gives run-time settings (nil: defaults); the database must not be
// open elsewhere for writing (ErrLocked).
func Salvage(ctx context.Context, dir string, w io.Writer, opts *Options) (*SalvageReport, error) {
	if w == nil {
		return nil, fmt.Errorf("fpdb: salvage: %w: no writer", ErrInvalidOptions)
	}
	d, release, err := openStore("salvage", dir, opts, true)
	if err != nil {
		return nil, err
	}
	defer release()
	rep, err := d.salvage(ctx, w)
	if err != nil {
		return rep, fmt.Errorf("fpdb: salvage %s: %w", dir, err)
	}
	return rep, nil
}

// salvage reads the open store and writes what it can to w.
func (d *DB) salvage(ctx context.Context, w io.Writer) (*SalvageReport, error) {
	rep := &SalvageReport{}
	k := d.params.K
	fps := make(map[uint32][]uint64)
	err := readSalvage(ctx, d.pdb, keys.PrefixFingerprint, keys.Fingerprint, keys.ParseFingerprint, "fingerprints", rep,
		func(iid uint32, v []byte) {
			fp, err := bitvec.FromBytes(v, k)
			if err != nil {
				rep.drop(iid, "fingerprint: %v", err)
				return
			}
			fps[iid] = fp
		})
	if err != nil {
		return rep, err
	}
	texts := make(map[uint32][]byte) // stored values, compressed
	if d.params.KeepTexts {
		err = readSalvage(ctx, d.pdb, keys.PrefixText, keys.Text, keys.ParseText, "texts", rep,
			func(iid uint32, v []byte) { texts[iid] = slices.Clone(v) })
		if err != nil {
			return rep, err
		}
	}
	var docs []Doc
	newest := make(map[string]int) // ext id → index in docs
	err = readSalvage(ctx, d.pdb, keys.PrefixDoc, keys.Doc, keys.ParseDoc, "document records", rep,
		func(iid uint32, v []byte) {
			doc, err := decodeDocRecord(v)
			if err != nil {
				rep.drop(iid, "%v", err)
				return
			}
			fp, ok := fps[iid]
			if !ok {
				rep.drop(iid, "document %q has no readable fingerprint", doc.ID)
				return
			}
			delete(fps, iid)
			doc.iid, doc.Fingerprint = iid, fp
			if i, ok := newest[doc.ID]; ok {
				rep.drop(docs[i].iid, "document %q: an older copy of the id", doc.ID)
				docs[i].ID = "" // records are read in increasing internal id order
			}
			newest[doc.ID] = len(docs)
			docs = append(docs, doc)
		})
	if err != nil {
		return rep, err
	}
	orphans := make([]uint32, 0, len(fps))
	for iid := range fps {
		orphans = append(orphans, iid)
	}
	slices.Sort(orphans)
	for _, iid := range orphans {
		rep.drop(iid, "fingerprint without a readable document record")
	}
	// The templates the fingerprints were made with; a damaged template
	// record is left out with a note.
	ts, terr := readTemplates(d.pdb)
	if terr != nil {
		rep.Dropped = append(rep.Dropped, fmt.Sprintf("templates: %v", terr))
		ts = nil
	}
	if d.params.AuditLog {
		rep.Left = append(rep.Left, "the audit log: a salvaged export carries none, and a database imported from it keeps none")
	}
	if mark, _ := readImportMark(d.pdb); mark != nil {
		rep.Left = append(rep.Left, "the mark of an import that did not finish: the documents are only the first ones of that import's export")
	}
	ew, err := newExportWriter(w, d.params, len(newest), -1, ts...)
	if err != nil {
		return rep, err
	}
	var buf []byte
	for i := range docs {
		if docs[i].ID == "" {
			continue
		}
		var text *StoredText
		if v, ok := texts[docs[i].iid]; ok {
			t, err := d.texts.decode(v, buf)
			if err == nil && !utf8.Valid(t.Text) {
				err = errors.New("not UTF-8")
			}
			if err != nil {
				rep.drop(docs[i].iid, "text of document %q: %v (the document is written without it)", docs[i].ID, err)
			} else {
				text, buf = &t, t.Text[:0]
			}
		}
		if err := ew.writeText(&docs[i], docs[i].Fingerprint, text); err != nil {
			return rep, err
		}
		rep.Docs++
	}
	return rep, ew.Flush()
}

// drop lists a document left out.
func (r *SalvageReport) drop(iid uint32, why string, args ...any) {
	r.Dropped = append(r.Dropped, fmt.Sprintf("internal id %d: ", iid)+fmt.Sprintf(why, args...))
}

// readSalvage calls fn for every readable key of the range of internal ids
// keyed by key (prefix pfx), in increasing order. When the store fails to
// read a block, it finds the smallest id beyond it from which reading
// works again (salvageResume), lists the ids skipped in rep.Unreadable and
// goes on from there. Only a cancelled ctx stops it.
func readSalvage(ctx context.Context, r pebble.Reader, pfx byte, key func(uint32) []byte, parse func([]byte) (uint32, error),
	what string, rep *SalvageReport, fn func(iid uint32, v []byte)) error {
	_, hi := keys.Range(pfx)
	for from := int64(0); from <= math.MaxUint32; {
		if err := ctx.Err(); err != nil {
			return err
		}
		it, err := r.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: key(uint32(from)), UpperBound: hi})
		if err != nil {
			return fmt.Errorf("read %s: %w", what, storageError(err))
		}
		next := from // the first id not yet read
		n := 0
		for it.First(); it.Valid(); it.Next() {
			if n++; n%4096 == 0 && ctx.Err() != nil {
				break
			}
			iid, err := parse(it.Key())
			if err != nil {
				continue // not an id key: nothing to salvage
			}
			next = int64(iid) + 1
			v, err := it.ValueAndErr()
			if err != nil {
				rep.Unreadable = append(rep.Unreadable, UnreadableRange{what, iid, iid, pebbleDetail(err)})
				continue
			}
			fn(iid, v)
		}
		ierr := it.Error()
		_ = it.Close()
		if err := ctx.Err(); err != nil {
			return err
		}
		if ierr == nil || next > math.MaxUint32 {
			return nil
		}
		resume := salvageResume(ctx, r, key, hi, next)
		rep.Unreadable = append(rep.Unreadable, UnreadableRange{what, uint32(next), uint32(min(resume-1, math.MaxUint32)), pebbleDetail(ierr)})
		from = resume
	}
	return nil
}

// salvageResume returns the smallest id s > from at which an iterator
// positions without error (math.MaxUint32+1 when there is none), by
// doubling the step from from, then bisecting. Positioning at s reads the
// block that holds s: it fails exactly while s lies in a damaged block.
func salvageResume(ctx context.Context, r pebble.Reader, key func(uint32) []byte, hi []byte, from int64) int64 {
	readable := func(s int64) bool {
		it, err := r.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: key(uint32(s)), UpperBound: hi})
		if err != nil {
			return false
		}
		it.First()
		ok := it.Error() == nil
		_ = it.Close()
		return ok
	}
	bad, step := from, int64(1)
	for {
		s := from + step
		if s > math.MaxUint32 {
			if bad == math.MaxUint32 || !readable(math.MaxUint32) {
				return math.MaxUint32 + 1
			}
			s = math.MaxUint32
		}
		if readable(s) {
			// bad is unreadable, s readable: bisect.
			for s-bad > 1 {
				mid := bad + (s-bad)/2
				if readable(mid) {
					s = mid
				} else {
					bad = mid
				}
			}
			return s
		}
		bad, step = s, step*2
	}
}
