package db

import (
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/keys"
)

// change is one atomic write: the documents it stores and the stored
// documents it removes. Every write of documents — Add, AddBatch, Delete,
// the bulk deletes — is one change, staged, committed and applied by
// DB.write, so that all of them keep the same invariants.
type change struct {
	// adds are the documents to store; write assigns their internal ids
	// (Doc.iid), in order, from the next id.
	adds []Doc
	// removes are the stored documents this change removes: the previous
	// versions of replaced documents and the deleted ones.
	removes []victim
	// unmap are the ids whose id-map entry goes (the deleted documents; a
	// replaced document's entry is overwritten by its add).
	unmap []string
	// extra are further keys set in the same batch (a template change's
	// progress).
	extra []keyValue
	// log are the audit-log entries of the change (numbered and timed by
	// write; ignored by a database without the log), logDel the log keys
	// it erases and logSet the entries it rewrites (Forget).
	log    []LogEntry
	logDel [][]byte
	logSet []logKV
}

// keyValue is a key and its value.
type keyValue struct{ key, value []byte }

// victim is a stored document to remove: its id and internal id.
type victim struct {
	ext string
	iid uint32
}

// write stages c in one Pebble batch (document records, id map, next id,
// texts, audit-log entries, and through the index the fingerprints and postings or the bulk-load
// deferred mark), commits it and applies it to memory. writeMu is held;
// write takes mu exclusively (and the index its own lock) for the commit
// and the memory update only, so readers see the change whole.
//
// With synced writes, a nil later has write wait for the WAL sync itself.
// A caller that passes later gets the committed batch in it instead, and
// waits (later.wait) once it has released writeMu: the next writer then
// checks and commits while this sync runs, and Pebble's WAL writer covers
// the writes committed meanwhile with one sync (group commit). The change
// is visible from its commit on, as each of Pebble's own batches is.
func (d *DB) write(c *change, later *pendingSync) error {
	if uint64(d.nextIID)+uint64(len(c.adds)) >= math.MaxUint32 {
		return ErrIDSpaceExhausted
	}
	b := d.pdb.NewBatch()
	var ps pendingSync // set by the commit of synced writes
	defer func() {     // last: after mu is released
		if ps.b == nil {
			b.Close()
			return
		}
		later.hold(ps)
	}()
	removes := make([]uint32, len(c.removes))
	for i, v := range c.removes {
		if d.docs.ext(v.iid) != v.ext {
			return fmt.Errorf("%q: %w: id map names internal id %d, which is not that document", v.ext, ErrCorrupt, v.iid)
		}
		_ = b.Delete(keys.Doc(v.iid), nil)
		if d.params.KeepTexts {
			_ = b.Delete(keys.Text(v.iid), nil)
		}
		removes[i] = v.iid
	}
	for _, ext := range c.unmap {
		_ = b.Delete(keys.ExtID(ext), nil)
	}
	iid := d.nextIID
	entries := make([]index.Entry, len(c.adds))
	rec := make([]byte, 0, 256)
	for i := range c.adds {
		doc := &c.adds[i]
		doc.iid = iid
		iid++
		rec = appendDocRecord(rec[:0], doc)
		_ = b.Set(keys.ExtID(doc.ID), encodeIID(doc.iid), nil)
		_ = b.Set(keys.Doc(doc.iid), rec, nil)
		if doc.text != nil {
			_ = b.Set(keys.Text(doc.iid), doc.text, nil)
		}
		entries[i] = index.Entry{ID: doc.iid, FP: doc.Fingerprint}
	}
	if len(c.adds) > 0 {
		_ = b.Set(keys.NextID(), encodeIID(iid), nil)
	}
	for _, kv := range c.extra {
		if kv.value == nil {
			_ = b.Delete(kv.key, nil)
		} else {
			_ = b.Set(kv.key, kv.value, nil)
		}
	}
	lw, err := d.stageLogChange(b, c)
	if err != nil {
		return err
	}
	w, err := d.ix.Stage(b, entries, removes)
	if err != nil {
		return err
	}
	defer w.Abort()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := w.Commit(func() (err error) { ps, err = d.commitNoSyncWait(b); return err }); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for _, r := range removes {
		d.docs.remove(r)
	}
	for i := range c.adds {
		doc := &c.adds[i]
		d.docs.set(doc.iid, doc.ID, doc.ContentHash, SetSize(doc.Shingles, doc.Words, d.params.ShingleWidth))
	}
	d.nextIID = iid
	d.applyLog(lw)
	d.metrics.writes.Add(1)
	d.metrics.added.Add(int64(len(c.adds)))
	d.metrics.deleted.Add(int64(len(removes)))
	return nil
}

// commit commits b with the DB's write options and waits for its sync. A
// storage failure ends the process (see storageFailure); any other error
// is returned. writeMu is held (or no other call runs: Open, Repair), so
// the commits are numbered in the WAL's order.
func (d *DB) commit(b *pebble.Batch) error {
	defer exitOnStoragePanic(d.opts.Logger)
	if !d.wopts.Sync {
		return b.Commit(d.wopts)
	}
	seq := d.commits.Add(1) // before it is visible: whoever sees it finds it counted
	if err := b.Commit(d.wopts); err != nil {
		return err
	}
	d.applied.Store(seq)
	d.markSynced(seq)
	return nil
}

// commitNoSyncWait is commit that returns before the WAL sync of synced
// writes: b is applied and visible then, and the returned pendingSync
// (without a batch for unsynced writes or an error) waits for its sync.
// Until then b stays open; pendingSync.wait closes it. writeMu is held, so
// the commits are numbered in commit order.
func (d *DB) commitNoSyncWait(b *pebble.Batch) (pendingSync, error) {
	defer exitOnStoragePanic(d.opts.Logger)
	if !d.wopts.Sync {
		return pendingSync{d: d}, b.Commit(d.wopts)
	}
	seq := d.commits.Add(1) // before it is visible: whoever sees it finds it counted
	if err := d.pdb.ApplyNoSyncWait(b, d.wopts); err != nil {
		return pendingSync{d: d}, err
	}
	d.applied.Store(seq)
	return pendingSync{b: b, d: d, seq: seq}, nil
}

// pendingSync is a call's wait for durability: the batch it committed
// without waiting for its WAL sync (b), or, for a call that wrote nothing,
// the writes committed before it (see wait). The zero value waits for
// nothing.
type pendingSync struct {
	b   *pebble.Batch
	d   *DB
	seq uint64 // b's number in d.commits
}

// hold hands the sync q to the caller that passed p (waiting first for a
// sync it holds already), or waits for it at once when p is nil.
func (p *pendingSync) hold(q pendingSync) {
	if p == nil {
		q.wait()
		return
	}
	if p.b != nil {
		p.wait()
	}
	*p = q
}

// wait waits for the WAL sync of p's batch and closes it. A call that
// wrote nothing but answered from the stored state (an unchanged or
// rejected add, a delete of a missing document) waits instead until every
// write committed before it is synced, so that what it reported outlives a
// crash: those writes are visible from their commit on. A failed sync ends
// the process (storageFailure): the writes are applied and visible, and
// whether they are durable is unknown, as after a failed WAL write.
func (p *pendingSync) wait() {
	d := p.d
	if d == nil || !d.wopts.Sync {
		return
	}
	if p.b == nil {
		d.syncCommitted()
		return
	}
	b := p.b
	p.b = nil
	defer b.Close()
	if err := b.SyncWait(); err != nil {
		storageFailure(d.opts.Logger, fmt.Errorf("WAL sync: %w", err))
	}
	d.markSynced(p.seq)
}

// syncCommitted returns once every write committed so far (every write a
// reader can see) is synced: at once when it is, else after a sync of the
// WAL (shared with the writers waiting for theirs). Not for ReadOnly.
func (d *DB) syncCommitted() {
	if !d.wopts.Sync || d.opts.ReadOnly {
		return
	}
	if d.synced.Load() >= d.commits.Load() {
		return
	}
	// The sync covers every write in the WAL before its record: those whose
	// commit returned (applied), and any later one a reader saw, which is
	// in the WAL once visible. Only the former are marked: a commit still
	// in flight may not be in the WAL yet.
	n := d.applied.Load()
	func() {
		defer exitOnStoragePanic(d.opts.Logger)
		if err := d.pdb.LogData(nil, pebble.Sync); err != nil {
			storageFailure(d.opts.Logger, fmt.Errorf("WAL sync: %w", err))
		}
	}()
	d.markSynced(n)
}

// markSynced records that the commits up to number n are synced.
func (d *DB) markSynced(n uint64) {
	for {
		s := d.synced.Load()
		if s >= n || d.synced.CompareAndSwap(s, n) {
			return
		}
	}
}
