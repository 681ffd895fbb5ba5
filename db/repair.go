package db

import (
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/keys"
)

// RepairReport describes what Repair found and did.
type RepairReport struct {
	// Problems are the violations found before repairing, as Check words
	// them (at most 1000; Omitted counts the rest).
	Problems []string
	// Omitted is the number of further problems not listed.
	Omitted int
	// Kept is the number of documents kept.
	Kept int
	// Dropped describes each document record or fingerprint removed because
	// it could not be kept: undecodable, without its other half (a record
	// without a fingerprint or the reverse), or an older copy of an id.
	Dropped []string
	// Postings is the number of posting keys written.
	Postings int
	// Changed reports that Repair wrote anything (false when the database
	// was consistent).
	Changed bool
}

// Repair rebuilds the derived records of the database in dir from its
// document records and fingerprints: the ext-id map, every posting list and
// the next-id record (a format-1 database is first upgraded to format 2). A document is kept
// when both its record and its fingerprint decode; when two kept records
// carry the same id, the one the ext-id map names (else the newest) stays.
// Everything else is removed and listed in the report. A stored text that
// does not decode, that does not give its document's content hash (see
// Check), or whose document is not kept, is removed too (a kept document
// whose text was damaged stays, without it).
//
// The database must not be open (Repair takes its lock: ErrLocked
// otherwise), and its meta record must be intact (Repair does not guess the
// creation parameters). The rebuild is one synced batch: an interrupted
// Repair changes nothing, and running Repair again is harmless. A database
// with no problems is left untouched.
func Repair(ctx context.Context, dir string, opts *Options) (*RepairReport, error) {
	if opts != nil && opts.ReadOnly {
		return nil, fmt.Errorf("fpdb: repair %s: %w", dir, ErrReadOnly)
	}
	d, release, err := openStore("repair", dir, opts, false)
	if err != nil {
		return nil, err
	}
	defer release()
	layout, err := index.NewLayout(d.params.K, d.params.GroupWidths)
	if err != nil {
		return nil, fmt.Errorf("fpdb: repair %s: %w: %w", dir, ErrCorrupt, err)
	}
	if err := d.upgrade(); err != nil {
		return nil, fmt.Errorf("fpdb: repair %s: %w", dir, err)
	}
	rep, err := d.repair(ctx, layout)
	if err != nil {
		if pebble.IsCorruptionError(err) {
			return nil, fmt.Errorf("fpdb: repair %s: %w (a damaged block of the store's files cannot be rebuilt in place: Salvage, fpdb export --salvage, writes every readable document, to Import into a new database)", dir, err)
		}
		return nil, fmt.Errorf("fpdb: repair %s: %w", dir, err)
	}
	if err := d.pdb.Close(); err != nil {
		return nil, fmt.Errorf("fpdb: repair %s: close: %w", dir, err)
	}
	d.pdb = nil
	return rep, nil
}

// openStore opens the store of the closed database in dir for op (Repair,
// Salvage) without loading it: it takes the lock (shared when readOnly),
// removes unfinished posting files unless readOnly, opens Pebble and reads
// the meta record. release closes Pebble and the lock.
func openStore(op, dir string, opts *Options, readOnly bool) (d *DB, release func(), err error) {
	given, o, err := prepareOptions(opts)
	if err != nil {
		return nil, nil, err
	}
	o.ReadOnly, o.ErrorIfNotExist = readOnly, true
	exists, err := probeDir(o.fs, dir)
	if err != nil {
		return nil, nil, err
	}
	if !exists {
		return nil, nil, fmt.Errorf("fpdb: %s: %w: %s", op, ErrNotExist, dir)
	}
	lock, err := lockDir(o.fs, dir, readOnly, o.LockWait)
	if err != nil {
		return nil, nil, err
	}
	if !readOnly {
		if err := index.RemoveFlushFiles(o.fs, dir); err != nil {
			_ = lock.Close()
			return nil, nil, fmt.Errorf("fpdb: %s %s: remove unfinished posting files: %w", op, dir, err)
		}
	}
	d = &DB{dir: dir, opts: o, lock: lock, wopts: pebble.Sync}
	release = func() {
		if d.pdb != nil {
			_ = d.pdb.Close()
		}
		d.texts.close()
		_ = lock.Close()
	}
	if err := d.open(given); err != nil {
		release()
		return nil, nil, fmt.Errorf("fpdb: %s: %w", op, err)
	}
	return d, release, nil
}

// repair scans the open store and rewrites its derived records.
func (d *DB) repair(ctx context.Context, layout *index.Layout) (*RepairReport, error) {
	var p problems
	if _, err := checkMeta(d.pdb, &p); err != nil {
		return nil, err
	}
	st, err := scanStore(ctx, d.pdb, layout, d.params, d.texts, &p)
	if err != nil {
		return nil, err
	}
	st.verify(&p)
	rep := &RepairReport{Problems: slices.Clone(p.list), Omitted: p.omitted}
	if p.count() == 0 {
		rep.Kept = len(st.recs)
		return rep, nil
	}

	// Choose the documents to keep.
	b := d.pdb.NewBatch()
	defer b.Close()
	drop := func(iid uint32, why string, args ...any) {
		rep.Dropped = append(rep.Dropped, fmt.Sprintf("internal id %d: ", iid)+fmt.Sprintf(why, args...))
		_ = b.Delete(keys.Doc(iid), nil)
		_ = b.Delete(keys.Fingerprint(iid), nil)
		_ = b.Delete(keys.Text(iid), nil)
	}
	byExt := make(map[string][]uint32)
	var extOrder []string
	maxIID := int64(-1)
	for _, iid := range st.recOrder {
		maxIID = max(maxIID, int64(iid))
		r := st.recs[iid]
		if st.fps.get(iid) == nil {
			drop(iid, "document %q has no usable fingerprint", r.ext)
			continue
		}
		if byExt[r.ext] == nil {
			extOrder = append(extOrder, r.ext)
		}
		byExt[r.ext] = append(byExt[r.ext], iid)
	}
	st.fps.each(func(iid uint32, _ []uint64) {
		maxIID = max(maxIID, int64(iid))
		if _, ok := st.recs[iid]; !ok {
			drop(iid, "fingerprint without a document record")
		}
	})
	var kept []uint32
	for _, ext := range extOrder {
		iids := byExt[ext]
		keep := iids[len(iids)-1] // the newest
		if named, ok := st.ext[ext]; ok && slices.Contains(iids, named) {
			keep = named
		}
		for _, iid := range iids {
			if iid != keep {
				drop(iid, "document %q is an older copy of the id, superseded by internal id %d", ext, keep)
			}
		}
		kept = append(kept, keep)
	}
	slices.Sort(kept)
	for _, k := range st.badKeys {
		_ = b.Delete(k, nil)
	}

	// Rewrite the derived records from the kept documents.
	lo, hi := keys.Range(keys.PrefixExtID)
	if err := b.DeleteRange(lo, hi, nil); err != nil {
		return nil, err
	}
	for _, iid := range kept {
		_ = b.Set(keys.ExtID(st.recs[iid].ext), encodeIID(iid), nil)
	}
	postings, err := index.StageRebuild(b, layout, kept, st.fps.get, d.params.postingEncoding())
	if err != nil {
		return nil, err
	}
	// Ids of dropped documents may be given again: none of their keys is
	// left. A next id beyond the kept ones stays unless it is implausible.
	next := uint32(0)
	if len(kept) > 0 {
		next = kept[len(kept)-1] + 1
	}
	if st.nextOK && st.next > next && int64(st.next) <= nextLimit(int64(next)-1, layout.K) {
		next = st.next
	}
	_ = b.Set(keys.NextID(), encodeIID(next), nil)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := d.commit(b); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	rep.Kept, rep.Postings, rep.Changed = len(kept), postings, true
	return rep, nil
}
