package db

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
)

// ErrNoLog is returned by Log and Forget's log half on a database that
// keeps no audit log (created without Options.AuditLog, or before the log
// existed).
var ErrNoLog = errors.New("fpdb: the database keeps no audit log (it was created without Options.AuditLog)")

// MaxLogMatches is the most matches an audit-log entry lists; the number
// of further matches is kept (LogEntry.MoreMatches).
const MaxLogMatches = 16

// Decision is what an add or a delete did with a document, as the audit
// log records it.
type Decision uint8

// Decisions. Their numbers are on-disk values.
const (
	// DecisionStored: the document was stored under an id not stored
	// before.
	DecisionStored Decision = 1
	// DecisionReplaced: the document was stored in place of the document
	// stored under its id.
	DecisionReplaced Decision = 2
	// DecisionUnchanged: the document stored under the id has the same
	// content and was left as it is (Input.ReplaceUnchanged).
	DecisionUnchanged Decision = 3
	// DecisionRejected: the add found near duplicates and, with
	// AddOptions.Reject, stored nothing.
	DecisionRejected Decision = 4
	// DecisionDeleted: the document was deleted (and its entries kept).
	DecisionDeleted Decision = 5
)

var decisionNames = [...]string{DecisionStored: "stored", DecisionReplaced: "replaced", DecisionUnchanged: "unchanged",
	DecisionRejected: "rejected", DecisionDeleted: "deleted"}

// String returns the decision's name: stored, replaced, unchanged,
// rejected or deleted.
func (x Decision) String() string {
	if int(x) < len(decisionNames) && decisionNames[x] != "" {
		return decisionNames[x]
	}
	return fmt.Sprintf("decision(%d)", uint8(x))
}

// ParseDecision returns the decision named s (Decision.String).
func ParseDecision(s string) (Decision, error) {
	for i, n := range decisionNames {
		if n != "" && n == s {
			return Decision(i), nil
		}
	}
	return 0, fmt.Errorf("fpdb: unknown decision %q", s)
}

// LogOp is the call that made a decision of the audit log.
type LogOp uint8

// Calls recorded in the audit log. Their numbers are on-disk values.
const (
	// OpAdd is DB.Add (fpdb add): one document, with or without a check.
	OpAdd LogOp = 1
	// OpAddBatch is DB.AddBatch (fpdb add --bulk): no check.
	OpAddBatch LogOp = 2
	// OpImport is Import of an export without a log into a database that
	// keeps one: each document imported is recorded as stored.
	OpImport LogOp = 3
	// OpDelete is Delete, DeleteMany, DeletePrefix or DeleteOlderThan.
	OpDelete LogOp = 4
)

var opNames = [...]string{OpAdd: "add", OpAddBatch: "batch", OpImport: "import", OpDelete: "delete"}

// String returns the call's name: add, batch, import or delete.
func (op LogOp) String() string {
	if int(op) < len(opNames) && opNames[op] != "" {
		return opNames[op]
	}
	return fmt.Sprintf("op(%d)", uint8(op))
}

// parseLogOp returns the call named s (LogOp.String).
func parseLogOp(s string) (LogOp, error) {
	for i, n := range opNames {
		if n != "" && n == s {
			return LogOp(i), nil
		}
	}
	return 0, fmt.Errorf("unknown op %q", s)
}

// LogMatch is a stored document an add found near its document, as the
// audit log records it.
type LogMatch struct {
	// ID is the matching document's id; empty when that document was
	// forgotten since (DB.Forget).
	ID string
	// Similarity is the estimated resemblance 1 − 2·Hamming/K.
	Similarity float64
	// Hamming is the Hamming distance between the fingerprints.
	Hamming int
	// Exact reports that the content hashes were equal.
	Exact bool
}

// LogEntry is one decision of the audit log (Options.AuditLog): what an
// add or a delete did with one document, when, with which parameters and
// because of which matches.
type LogEntry struct {
	// Seq is the entry's sequence number: it grows by one with each entry
	// written and is never reused, so a gap shows erased entries
	// (DB.Forget).
	Seq uint64
	// Time is when the decision was made, in UTC. Times never decrease
	// along the log: when the clock is set back, entries take the time of
	// the previous one.
	Time time.Time
	// ID is the document's id.
	ID string
	// Decision is what was done.
	Decision Decision
	// Op is the call that decided.
	Op LogOp
	// Threshold is the resemblance threshold of the add's near-duplicate
	// check; 0 when the add ran none (AddOptions.Threshold 0, AddBatch,
	// deletes).
	Threshold float64
	// Reject is AddOptions.Reject and ReplaceUnchanged is
	// Input.ReplaceUnchanged of the add.
	Reject, ReplaceUnchanged bool
	// Matches are the near duplicates the check found, most similar first
	// (at most MaxLogMatches); MoreMatches counts the ones not listed.
	Matches     []LogMatch
	MoreMatches int
	// ContentHash is the content hash of the document added (of the
	// document deleted, for a deletion); zero when it has none.
	ContentHash [16]byte
	// Source is the document's Source as given to the add; empty for a
	// deletion.
	Source string
}

// LogOptions select the entries DB.Log returns.
type LogOptions struct {
	// ID, when set, selects the entries of that document (found through
	// the log's id index, without scanning the others).
	ID string
	// Since, when set, selects the entries made at or after it.
	Since time.Time
	// After selects the entries whose sequence number is greater: the
	// last Seq of a page returns the next page.
	After uint64
	// Limit, when > 0, stops after that many entries.
	Limit int
}

// Log calls fn for every entry of the audit log that o selects, in
// sequence order (oldest first). It reads a snapshot taken at the call:
// writes may proceed meanwhile and are not seen. An error from fn stops
// the iteration and is returned. It fails with ErrNoLog when the database
// keeps no log.
func (d *DB) Log(ctx context.Context, o LogOptions, fn func(LogEntry) error) (err error) {
	if err := d.live(); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("fpdb: log: %w: no function to call", ErrInvalidOptions)
	}
	if o.ID != "" {
		if err := validID(o.ID); err != nil {
			return fmt.Errorf("fpdb: log: %w", err)
		}
	}
	if !d.params.AuditLog {
		return fmt.Errorf("fpdb: log: %w", ErrNoLog)
	}
	ctx, leave, err := d.enterLong(ctx)
	if err != nil {
		return err
	}
	defer leave(&err)
	snap := d.pdb.NewSnapshot()
	defer snap.Close()
	// Entries are read once synced: one a crash could undo would have
	// its number given to another entry afterwards.
	d.syncCommitted()
	r := logReader{snap: snap, k: d.params.K}
	var ferr error
	n := 0
	each := func(e *LogEntry) (bool, error) {
		if !o.Since.IsZero() && e.Time.Before(o.Since) {
			return true, nil
		}
		if err := fn(*e); err != nil {
			ferr = err
			return false, err
		}
		n++
		return o.Limit <= 0 || n < o.Limit, nil
	}
	if o.ID != "" {
		err = r.byID(ctx, o.ID, o.After, each)
	} else {
		err = r.from(ctx, o.After, o.Since, each)
	}
	if ferr != nil {
		return ferr
	}
	if err != nil {
		return fmt.Errorf("fpdb: log: %w", err)
	}
	return nil
}

// logReader reads the audit log of a snapshot.
type logReader struct {
	snap *pebble.Snapshot
	k    int
}

// from calls fn for the entries after sequence number after, from the
// first made at or after since (found by bisection: times never decrease
// along the log), until fn returns false.
func (r logReader) from(ctx context.Context, after uint64, since time.Time, fn func(*LogEntry) (bool, error)) error {
	lo, hi := keys.Range(keys.PrefixLog)
	if after < math.MaxUint64 {
		lo = keys.Log(after + 1)
	} else {
		return nil
	}
	it, err := r.snap.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return storageError(err)
	}
	defer it.Close()
	if !since.IsZero() {
		if err := r.seekSince(it, after, since); err != nil {
			return err
		}
	} else {
		it.First()
	}
	for n := 0; it.Valid(); n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		e, err := r.decode(it)
		if err != nil {
			return err
		}
		if more, err := fn(&e); err != nil || !more {
			return err
		}
		it.Next()
	}
	return storageError(it.Error())
}

// seekSince positions it at the first entry after sequence number after
// made at or after since, by bisection over sequence numbers.
func (r logReader) seekSince(it *pebble.Iterator, after uint64, since time.Time) error {
	if !it.Last() {
		return storageError(it.Error())
	}
	last, err := keys.ParseLog(it.Key())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	lo, hi := after+1, last+1 // the answer is in [lo, hi]; hi: none
	for lo < hi {
		mid := lo + (hi-lo)/2
		if !it.SeekGE(keys.Log(mid)) {
			return storageError(it.Error())
		}
		e, err := r.decode(it)
		if err != nil {
			return err
		}
		if e.Time.Before(since) {
			lo = e.Seq + 1
		} else {
			hi = mid
		}
	}
	it.SeekGE(keys.Log(lo))
	return nil
}

// byID calls fn for the entries of id after sequence number after, until
// fn returns false.
func (r logReader) byID(ctx context.Context, id string, after uint64, fn func(*LogEntry) (bool, error)) error {
	lo, hi := keys.LogByIDRange(id)
	if after > 0 {
		if after == math.MaxUint64 {
			return nil
		}
		lo = keys.LogByID(id, after+1)
	}
	it, err := r.snap.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return storageError(err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, seq, err := keys.ParseLogByID(it.Key())
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		v, closer, err := r.snap.Get(keys.Log(seq))
		if errors.Is(err, pebble.ErrNotFound) {
			return fmt.Errorf("%w: the log's id index names entry %d of %q, which is missing", ErrCorrupt, seq, id)
		}
		if err != nil {
			return storageError(err)
		}
		e, err := decodeLogEntry(v, r.k)
		_ = closer.Close()
		if err != nil {
			return fmt.Errorf("log entry %d: %w", seq, err)
		}
		e.Seq = seq
		if e.ID != id {
			return fmt.Errorf("%w: the log's id index names entry %d under %q, which is about %q", ErrCorrupt, seq, id, e.ID)
		}
		if more, err := fn(&e); err != nil || !more {
			return err
		}
	}
	return storageError(it.Error())
}

// decode decodes the entry it is at.
func (r logReader) decode(it *pebble.Iterator) (LogEntry, error) {
	seq, err := keys.ParseLog(it.Key())
	if err != nil {
		return LogEntry{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return LogEntry{}, storageError(err)
	}
	e, err := decodeLogEntry(v, r.k)
	if err != nil {
		return LogEntry{}, fmt.Errorf("log entry %d: %w", seq, err)
	}
	e.Seq = seq
	return e, nil
}

// logEntryVersion is the first byte of an audit-log entry.
const logEntryVersion = 1

// Flag bits of an encoded entry.
const (
	logFlagReject = 1 << iota
	logFlagReplaceUnchanged
	logFlagHash
	logFlagThreshold
	logFlagsKnown = logFlagReject | logFlagReplaceUnchanged | logFlagHash | logFlagThreshold
)

// appendLogEntry encodes e (all but Seq, the key, and the matches'
// similarities, computed from their Hamming distances):
//
//	version:u8 ‖ decision:u8 ‖ op:u8 ‖ flags:u8 ‖ varint time (Unix ns)
//	‖ uvarint len ‖ id ‖ [flags&4: content hash, 16 B] ‖ uvarint len ‖ source
//	‖ [flags&8: threshold, float64 bits, u64le] ‖ uvarint more matches
//	‖ uvarint n ‖ n × (uvarint len ‖ id ‖ uvarint hamming ‖ exact:u8)
func appendLogEntry(dst []byte, e *LogEntry) []byte {
	flags := byte(0)
	if e.Reject {
		flags |= logFlagReject
	}
	if e.ReplaceUnchanged {
		flags |= logFlagReplaceUnchanged
	}
	if e.ContentHash != ([16]byte{}) {
		flags |= logFlagHash
	}
	if e.Threshold != 0 {
		flags |= logFlagThreshold
	}
	dst = append(dst, logEntryVersion, byte(e.Decision), byte(e.Op), flags)
	dst = binary.AppendVarint(dst, e.Time.UnixNano())
	dst = appendString(dst, e.ID)
	if flags&logFlagHash != 0 {
		dst = append(dst, e.ContentHash[:]...)
	}
	dst = appendString(dst, e.Source)
	if flags&logFlagThreshold != 0 {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e.Threshold))
	}
	dst = binary.AppendUvarint(dst, uint64(e.MoreMatches))
	dst = binary.AppendUvarint(dst, uint64(len(e.Matches)))
	for _, m := range e.Matches {
		dst = appendString(dst, m.ID)
		dst = binary.AppendUvarint(dst, uint64(m.Hamming))
		exact := byte(0)
		if m.Exact {
			exact = 1
		}
		dst = append(dst, exact)
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decodeLogEntry is the inverse of appendLogEntry for a database of k-bit
// fingerprints (Seq is left 0). Every error wraps ErrCorrupt.
func decodeLogEntry(b []byte, k int) (LogEntry, error) {
	bad := func(what string) (LogEntry, error) {
		return LogEntry{}, fmt.Errorf("%w: log entry: bad %s", ErrCorrupt, what)
	}
	if len(b) < 4 || b[0] != logEntryVersion {
		return bad("version")
	}
	e := LogEntry{Decision: Decision(b[1]), Op: LogOp(b[2])}
	flags := b[3]
	if e.Decision == 0 || int(e.Decision) >= len(decisionNames) {
		return bad("decision")
	}
	if e.Op == 0 || int(e.Op) >= len(opNames) {
		return bad("op")
	}
	if flags&^logFlagsKnown != 0 {
		return bad("flags")
	}
	e.Reject, e.ReplaceUnchanged = flags&logFlagReject != 0, flags&logFlagReplaceUnchanged != 0
	b = b[4:]
	t, n := binary.Varint(b)
	if n <= 0 || n != len(binary.AppendVarint(nil, t)) {
		return bad("time")
	}
	e.Time = time.Unix(0, t).UTC()
	b = b[n:]
	str := func() (string, bool) {
		l, n := canonUvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return "", false
		}
		s := string(b[n : n+int(l)])
		b = b[n+int(l):]
		return s, true
	}
	var ok bool
	if e.ID, ok = str(); !ok || validID(e.ID) != nil {
		return bad("id")
	}
	if flags&logFlagHash != 0 {
		if len(b) < 16 {
			return bad("content hash")
		}
		copy(e.ContentHash[:], b)
		b = b[16:]
	}
	if e.Source, ok = str(); !ok {
		return bad("source")
	}
	if flags&logFlagThreshold != 0 {
		if len(b) < 8 {
			return bad("threshold")
		}
		e.Threshold = math.Float64frombits(binary.LittleEndian.Uint64(b))
		b = b[8:]
		if validThreshold(e.Threshold) != nil {
			return bad("threshold")
		}
	}
	more, n := canonUvarint(b)
	if n <= 0 || more > math.MaxInt32 {
		return bad("match count")
	}
	e.MoreMatches = int(more)
	b = b[n:]
	count, n := canonUvarint(b)
	if n <= 0 || count > MaxLogMatches {
		return bad("match count")
	}
	b = b[n:]
	if count > 0 {
		e.Matches = make([]LogMatch, count)
	}
	for i := range e.Matches {
		m := &e.Matches[i]
		if m.ID, ok = str(); !ok || (m.ID != "" && validID(m.ID) != nil) {
			return bad("match id")
		}
		h, n := canonUvarint(b)
		if n <= 0 || h > uint64(k) || n >= len(b) || b[n] > 1 {
			return bad("match")
		}
		m.Hamming, m.Exact = int(h), b[n] == 1
		m.Similarity = 1 - 2*float64(h)/float64(k)
		b = b[n+1:]
	}
	if len(b) != 0 {
		return bad("length")
	}
	return e, nil
}

// canonUvarint is binary.Uvarint refusing (n = 0) the longer encodings of
// a number that encodes shorter, so that every entry has one encoding.
func canonUvarint(b []byte) (uint64, int) {
	v, n := binary.Uvarint(b)
	if n > 0 && n != len(binary.AppendUvarint(nil, v)) {
		return 0, 0
	}
	return v, n
}

// logState is the audit log's write state: the next sequence number and
// the time of the last entry. It is read from the store at the first
// write (writeMu held).
type logState struct {
	loaded bool
	next   uint64
	last   time.Time
}

// loadLog reads the log's write state once. writeMu is held.
func (d *DB) loadLog() error {
	s := &d.log
	if s.loaded {
		return nil
	}
	next, last, err := readLogState(d.pdb, d.params.K)
	if err != nil {
		return err
	}
	s.next, s.last, s.loaded = next, last, true
	return nil
}

// readLogState returns the next sequence number (the stored counter, or
// beyond the last entry if that is further) and the time of the last entry.
func readLogState(r pebble.Reader, k int) (uint64, time.Time, error) {
	next := uint64(1)
	v, closer, err := r.Get(keys.LogNext())
	switch {
	case err == nil:
		if len(v) == 8 {
			next = max(next, binary.BigEndian.Uint64(v))
		}
		_ = closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		return 0, time.Time{}, storageError(err)
	}
	lo, hi := keys.Range(keys.PrefixLog)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, time.Time{}, storageError(err)
	}
	defer it.Close()
	var last time.Time
	if it.Last() {
		e, err := logReader{k: k}.decode(it)
		if err != nil {
			return 0, time.Time{}, err
		}
		if e.Seq == math.MaxUint64 {
			return 0, time.Time{}, fmt.Errorf("%w: log sequence numbers exhausted", ErrCorrupt)
		}
		next, last = max(next, e.Seq+1), e.Time
	}
	return next, last, storageError(it.Error())
}

// logWrite is what stageLog staged: the log state after the commit.
type logWrite struct {
	next uint64
	last time.Time
	n    int
}

// stageLog adds entries to b, numbering them from the next sequence number
// and timing them now (never before the last entry), with their id index
// keys and the new counter. writeMu is held; apply the result once b is
// committed. A database without the log stages nothing.
func (d *DB) stageLog(b *pebble.Batch, entries []LogEntry) (logWrite, error) {
	if !d.params.AuditLog || len(entries) == 0 {
		return logWrite{}, nil
	}
	if err := d.loadLog(); err != nil {
		return logWrite{}, fmt.Errorf("audit log: %w", err)
	}
	now := time.Now().UTC()
	if now.Before(d.log.last) {
		now = d.log.last
	}
	next := d.log.next
	buf := make([]byte, 0, 128)
	for i := range entries {
		e := &entries[i]
		e.Seq, e.Time = next, now
		next++
		buf = appendLogEntry(buf[:0], e)
		_ = b.Set(keys.Log(e.Seq), buf, nil)
		_ = b.Set(keys.LogByID(e.ID, e.Seq), nil, nil)
	}
	_ = b.Set(keys.LogNext(), binary.BigEndian.AppendUint64(nil, next), nil)
	return logWrite{next: next, last: now, n: len(entries)}, nil
}

// applyLog records a committed logWrite. writeMu is held.
func (d *DB) applyLog(w logWrite) {
	if w.n > 0 {
		d.log.next, d.log.last = w.next, w.last
	}
}

// writeLog writes entries alone, in one batch (a rejection, an unchanged
// document). writeMu is held.
func (d *DB) writeLog(entries []LogEntry, later *pendingSync) error {
	if !d.params.AuditLog || len(entries) == 0 {
		return nil
	}
	b := d.pdb.NewBatch()
	w, err := d.stageLog(b, entries)
	if err != nil {
		b.Close()
		return err
	}
	ps, err := d.commitNoSyncWait(b)
	if err != nil {
		b.Close()
		return fmt.Errorf("audit log: %w", storageError(err))
	}
	d.applyLog(w)
	if ps.b == nil {
		b.Close()
		return nil
	}
	later.hold(ps)
	return nil
}

// addEntry returns the entry of an add of doc decided as x after a check
// (o) that found matches.
func addEntry(doc *Doc, x Decision, op LogOp, o *AddOptions, replaceUnchanged bool, matches []Match) LogEntry {
	e := LogEntry{ID: doc.ID, Decision: x, Op: op, ContentHash: doc.ContentHash, Source: doc.Source,
		ReplaceUnchanged: replaceUnchanged}
	if o != nil {
		e.Threshold, e.Reject = o.Threshold, o.Reject
	}
	n := min(len(matches), MaxLogMatches)
	if n > 0 {
		e.Matches = make([]LogMatch, n)
	}
	for i, m := range matches[:n] {
		e.Matches[i] = LogMatch{ID: m.ID, Similarity: m.Similarity, Hamming: m.Hamming, Exact: m.Exact}
	}
	e.MoreMatches = len(matches) - n
	return e
}

// deleteEntries returns the entries of the deletion of vs, or nil when
// the database keeps no log. writeMu is held.
func (d *DB) deleteEntries(vs []victim) []LogEntry {
	if !d.params.AuditLog {
		return nil
	}
	out := make([]LogEntry, len(vs))
	for i, v := range vs {
		out[i] = LogEntry{ID: v.ext, Decision: DecisionDeleted, Op: OpDelete, ContentHash: d.docs.hash(v.iid)}
	}
	return out
}

// ForgetResult is the outcome of Forget.
type ForgetResult struct {
	// Deleted is the number of documents deleted.
	Deleted int
	// Erased is the number of audit-log entries erased: those about the
	// forgotten ids.
	Erased int
	// Redacted is the number of other entries that listed a forgotten id
	// as a match, and now list it without its id.
	Redacted int
	// NotFound are the ids given that were neither stored nor in the log,
	// in the order given (each once).
	NotFound []string
}

// Forget deletes the documents with the given ids, like DeleteMany, and
// erases every trace of them from the audit log, for privacy requests:
// the entries about them (their adds, rejections and deletions, stored or
// not now) are removed, and the entries of other documents that list one
// of them as a match keep the match without its id (LogMatch.ID empty).
// Nothing records the forgetting; the sequence numbers of the erased
// entries are not reused. Delete, by contrast, keeps a document's entries
// and records its deletion. Each batch of deleteChunkDocs ids is one
// atomic write; finding the matches to redact reads the whole log once per
// batch. On a database without the log, Forget is DeleteMany.
func (d *DB) Forget(ctx context.Context, ids []string) (_ *ForgetResult, err error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	ctx, leave, err := d.enterWriter(ctx, "forget", true, changer)
	if err != nil {
		return nil, err
	}
	defer leave(&err)
	for _, id := range ids {
		if err := validID(id); err != nil {
			return nil, fmt.Errorf("fpdb: forget: %w", err)
		}
	}
	seen := make(map[string]struct{}, len(ids))
	uniq := make([]string, 0, len(ids))
	for _, id := range ids {
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			uniq = append(uniq, id)
		}
	}
	res := &ForgetResult{}
	for len(uniq) > 0 {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		chunk := uniq[:min(deleteChunkDocs, len(uniq))]
		uniq = uniq[len(chunk):]
		if err := d.forgetChunk(ctx, chunk, res); err != nil {
			return res, fmt.Errorf("fpdb: forget: %w", err)
		}
	}
	return res, nil
}

// forgetChunk forgets ids in one atomic batch. writeMu is held.
func (d *DB) forgetChunk(ctx context.Context, ids []string, res *ForgetResult) error {
	iids, err := d.lookupMany(ids)
	if err != nil {
		return err
	}
	c := &change{}
	for i, id := range ids {
		if iids[i] != noIID {
			c.removes = append(c.removes, victim{ext: id, iid: iids[i]})
			c.unmap = append(c.unmap, id)
		}
	}
	erased := map[string]int{}
	if d.params.AuditLog {
		if err := d.stageForget(ctx, c, ids, erased); err != nil {
			return err
		}
	}
	if len(c.removes) > 0 || len(c.logDel) > 0 {
		if err := d.write(c, nil); err != nil {
			return err
		}
	}
	for i, id := range ids {
		if iids[i] == noIID && erased[id] == 0 {
			res.NotFound = append(res.NotFound, id)
		}
		res.Erased += erased[id]
	}
	res.Deleted += len(c.removes)
	res.Redacted += len(c.logSet)
	return nil
}

// stageForget adds to c the deletion of the entries of ids (counted in
// erased) and the rewriting of the entries that list one of them as a
// match. writeMu is held, so the log does not change meanwhile.
func (d *DB) stageForget(ctx context.Context, c *change, ids []string, erased map[string]int) error {
	gone := make(map[uint64]bool)
	forgotten := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		forgotten[id] = struct{}{}
		lo, hi := keys.LogByIDRange(id)
		err := d.scanLocked(ctx, lo, hi, func(k, _ []byte) (bool, error) {
			_, seq, err := keys.ParseLogByID(k)
			if err != nil {
				return false, fmt.Errorf("%w: %w", ErrCorrupt, err)
			}
			c.logDel = append(c.logDel, bytes.Clone(k), keys.Log(seq))
			gone[seq] = true
			erased[id]++
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	lo, hi := keys.Range(keys.PrefixLog)
	return d.scanLocked(ctx, lo, hi, func(k, v []byte) (bool, error) {
		seq, err := keys.ParseLog(k)
		if err != nil {
			return false, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if gone[seq] {
			return true, nil
		}
		e, err := decodeLogEntry(v, d.params.K)
		if err != nil {
			return false, fmt.Errorf("log entry %d: %w", seq, err)
		}
		changed := false
		for i := range e.Matches {
			if _, ok := forgotten[e.Matches[i].ID]; ok {
				e.Matches[i].ID, changed = "", true
			}
		}
		if changed {
			c.logSet = append(c.logSet, logKV{key: bytes.Clone(k), value: appendLogEntry(nil, &e)})
		}
		return true, nil
	})
}

// logKV is an entry rewritten by Forget.
type logKV struct{ key, value []byte }

// stageLogChange adds the log part of c to b: its new entries, the keys it
// erases and the entries it rewrites.
func (d *DB) stageLogChange(b *pebble.Batch, c *change) (logWrite, error) {
	for _, k := range c.logDel {
		_ = b.Delete(k, nil)
	}
	for _, kv := range c.logSet {
		_ = b.Set(kv.key, kv.value, nil)
	}
	return d.stageLog(b, c.log)
}

// formatLogMatches writes the matches of e as "id 0.914, id2 0.8 exact";
// a forgotten match reads "(forgotten)".
func formatLogMatches(e *LogEntry) string {
	var sb strings.Builder
	for i, m := range e.Matches {
		if i > 0 {
			sb.WriteString(", ")
		}
		id := m.ID
		if id == "" {
			id = "(forgotten)"
		}
		fmt.Fprintf(&sb, "%s %.3f", id, m.Similarity)
		if m.Exact {
			sb.WriteString(" exact")
		}
	}
	if e.MoreMatches > 0 {
		fmt.Fprintf(&sb, ", and %d more", e.MoreMatches)
	}
	return sb.String()
}

// String describes the entry on one line: sequence number, time, decision,
// id, then the parameters and matches.
func (e LogEntry) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "#%d %s %s %q via %s", e.Seq, e.Time.Format(time.RFC3339Nano), e.Decision, e.ID, e.Op)
	if e.Threshold > 0 {
		fmt.Fprintf(&sb, " threshold %g", e.Threshold)
	}
	if e.Reject {
		sb.WriteString(" reject")
	}
	if e.ReplaceUnchanged {
		sb.WriteString(" replace")
	}
	if len(e.Matches) > 0 {
		sb.WriteString(" matches: " + formatLogMatches(&e))
	}
	return sb.String()
}

// logJSON is the JSON form of a LogEntry: a line of `fpdb log --json` and
// of the log section of an export.
type logJSON struct {
	Seq              uint64         `json:"seq"`
	Time             string         `json:"time"`
	ID               string         `json:"id"`
	Decision         string         `json:"decision"`
	Op               string         `json:"op"`
	Threshold        float64        `json:"threshold,omitempty"`
	Reject           bool           `json:"reject,omitempty"`
	ReplaceUnchanged bool           `json:"replace_unchanged,omitempty"`
	Matches          []logMatchJSON `json:"matches,omitempty"`
	MoreMatches      int            `json:"more_matches,omitempty"`
	ContentHash      string         `json:"content_hash,omitempty"`
	Source           string         `json:"source,omitempty"`
}

// logMatchJSON is the JSON form of a LogMatch.
type logMatchJSON struct {
	ID         string  `json:"id"`
	Similarity float64 `json:"similarity"`
	Hamming    int     `json:"hamming"`
	Exact      bool    `json:"exact,omitempty"`
}

// MarshalJSON encodes the entry as one JSON object: seq, time (RFC 3339
// with nanoseconds), id, decision, op, and when set threshold, reject,
// replace_unchanged, matches ({"id", "similarity", "hamming", "exact"};
// an empty id is a forgotten document), more_matches, content_hash (hex)
// and source. Export writes the log in this form.
func (e LogEntry) MarshalJSON() ([]byte, error) {
	j := logJSON{Seq: e.Seq, Time: e.Time.UTC().Format(time.RFC3339Nano), ID: e.ID, Decision: e.Decision.String(),
		Op: e.Op.String(), Threshold: e.Threshold, Reject: e.Reject, ReplaceUnchanged: e.ReplaceUnchanged,
		MoreMatches: e.MoreMatches, Source: e.Source}
	if e.ContentHash != ([16]byte{}) {
		j.ContentHash = hex.EncodeToString(e.ContentHash[:])
	}
	for _, m := range e.Matches {
		j.Matches = append(j.Matches, logMatchJSON{ID: m.ID, Similarity: m.Similarity, Hamming: m.Hamming, Exact: m.Exact})
	}
	return json.Marshal(j)
}

// parseLogJSON decodes one log line of an export for a database of k-bit
// fingerprints, checking it as the store's decoder would.
func parseLogJSON(line []byte, k int) (LogEntry, error) {
	var j logJSON
	if err := strictUnmarshal(line, &j); err != nil {
		return LogEntry{}, err
	}
	e := LogEntry{Seq: j.Seq, ID: j.ID, Threshold: j.Threshold, Reject: j.Reject, ReplaceUnchanged: j.ReplaceUnchanged,
		MoreMatches: j.MoreMatches, Source: j.Source}
	var err error
	if e.Time, err = time.Parse(time.RFC3339Nano, j.Time); err != nil {
		return LogEntry{}, fmt.Errorf("time: %w", err)
	}
	if y := e.Time.Year(); y < minAddedYear || y > maxAddedYear {
		return LogEntry{}, fmt.Errorf("time %s: out of range", j.Time)
	}
	e.Time = e.Time.UTC()
	if e.Decision, err = ParseDecision(j.Decision); err != nil {
		return LogEntry{}, err
	}
	if e.Op, err = parseLogOp(j.Op); err != nil {
		return LogEntry{}, err
	}
	if j.ContentHash != "" {
		hb, err := hex.DecodeString(j.ContentHash)
		if err != nil || len(hb) != len(e.ContentHash) {
			return LogEntry{}, fmt.Errorf("content_hash %q: want %d hex bytes", j.ContentHash, len(e.ContentHash))
		}
		copy(e.ContentHash[:], hb)
	}
	if len(j.Matches) > MaxLogMatches || j.MoreMatches < 0 {
		return LogEntry{}, fmt.Errorf("%d matches and %d more: at most %d listed", len(j.Matches), j.MoreMatches, MaxLogMatches)
	}
	for _, m := range j.Matches {
		if m.Hamming < 0 || m.Hamming > k {
			return LogEntry{}, fmt.Errorf("match %q: hamming %d outside [0, %d]", m.ID, m.Hamming, k)
		}
		sim := 1 - 2*float64(m.Hamming)/float64(k)
		if math.Abs(sim-m.Similarity) > 1e-9 {
			return LogEntry{}, fmt.Errorf("match %q: similarity %v, but hamming %d gives %v", m.ID, m.Similarity, m.Hamming, sim)
		}
		e.Matches = append(e.Matches, LogMatch{ID: m.ID, Similarity: sim, Hamming: m.Hamming, Exact: m.Exact})
	}
	// The store's decoder checks the rest (id, threshold, match ids).
	if _, err := decodeLogEntry(appendLogEntry(nil, &e), k); err != nil {
		return LogEntry{}, err
	}
	return e, nil
}

// restoreLog writes entries read from an export with their own sequence
// numbers and times, in one batch (Import).
func (d *DB) restoreLog(entries []LogEntry) error {
	if len(entries) == 0 {
		return nil
	}
	if err := d.enter(context.Background()); err != nil {
		return err
	}
	defer d.leave()
	if err := d.lockWriter(importer); err != nil { // ImportInto's own
		return err
	}
	defer d.writeMu.Unlock()
	if err := d.loadLog(); err != nil {
		return err
	}
	b := d.pdb.NewBatch()
	defer b.Close()
	var buf []byte
	for i := range entries {
		e := &entries[i]
		buf = appendLogEntry(buf[:0], e)
		_ = b.Set(keys.Log(e.Seq), buf, nil)
		_ = b.Set(keys.LogByID(e.ID, e.Seq), nil, nil)
	}
	last := entries[len(entries)-1]
	next := max(d.log.next, last.Seq+1)
	_ = b.Set(keys.LogNext(), binary.BigEndian.AppendUint64(nil, next), nil)
	if err := d.commit(b); err != nil {
		return storageError(err)
	}
	d.log.next, d.log.last = next, last.Time
	return nil
}

// checkLog verifies the audit log's keys: every entry key and value
// decodes and is indexed under its id, every index key names an entry of
// that id, the counter decodes and is beyond every entry, and a database
// without the log has none of these keys. Undecodable keys and index keys
// naming no entry go to bad (Repair deletes them). It returns the number
// of entries.
func checkLog(ctx context.Context, pdb *pebble.DB, params Params, p *problems, bad func([]byte)) (int, error) {
	has := func(k []byte) (bool, error) {
		_, closer, err := pdb.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, storageError(err)
		}
		return true, closer.Close()
	}
	var last uint64
	entries := 0
	var rerr error
	err := eachKV(ctx, pdb, keys.PrefixLog, "audit log", func(k, v []byte) {
		seq, err := keys.ParseLog(k)
		if err == nil {
			var e LogEntry
			if e, err = decodeLogEntry(v, params.K); err == nil && !params.AuditLog {
				err = errors.New("the database keeps no audit log")
			}
			if err == nil {
				entries, last = entries+1, seq
				ok, herr := has(keys.LogByID(e.ID, seq))
				switch {
				case herr != nil:
					rerr = herr
				case !ok:
					p.add("log entry %d (%q) is not in the log's id index", seq, e.ID)
				}
				return
			}
		}
		p.add("log entry key %x: %v", k, err)
		bad(k)
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return entries, err
	}
	err = eachKV(ctx, pdb, keys.PrefixLogByID, "audit log index", func(k, _ []byte) {
		id, seq, err := keys.ParseLogByID(k)
		if err == nil && !params.AuditLog {
			err = errors.New("the database keeps no audit log")
		}
		if err == nil {
			v, closer, gerr := pdb.Get(keys.Log(seq))
			switch {
			case errors.Is(gerr, pebble.ErrNotFound):
				err = fmt.Errorf("names entry %d of %q, which is missing", seq, id)
			case gerr != nil:
				rerr = storageError(gerr)
				return
			default:
				e, derr := decodeLogEntry(v, params.K)
				_ = closer.Close()
				if derr != nil || e.ID != id {
					err = fmt.Errorf("names entry %d under %q, which is not about it", seq, id)
				}
			}
			if err == nil {
				return
			}
		}
		p.add("log index key %x: %v", k, err)
		bad(k)
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return entries, err
	}
	v, closer, err := pdb.Get(keys.LogNext())
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if entries > 0 {
			p.add("the audit log has %d entries but no sequence counter", entries)
		}
	case err != nil:
		return entries, storageError(err)
	default:
		next := uint64(0)
		if len(v) == 8 {
			next = binary.BigEndian.Uint64(v)
		}
		_ = closer.Close()
		switch {
		case !params.AuditLog:
			p.add("log sequence counter: the database keeps no audit log")
			bad(keys.LogNext())
		case len(v) != 8:
			p.add("log sequence counter is %d bytes, want 8", len(v))
			bad(keys.LogNext())
		case entries > 0 && next <= last:
			p.add("log sequence counter %d is not beyond the last entry %d", next, last)
		}
	}
	return entries, nil
}

// logStats counts the audit-log entries and their bytes into st.
func (d *DB) logStats(ctx context.Context, st *StorageStats) error {
	err := eachKV(ctx, d.pdb, keys.PrefixLog, "audit log", func(k, v []byte) {
		st.LogEntries++
		st.LogBytes += int64(len(k) + len(v))
	})
	if err != nil {
		return err
	}
	return eachKV(ctx, d.pdb, keys.PrefixLogByID, "audit log index", func(k, v []byte) {
		st.LogBytes += int64(len(k) + len(v))
	})
}
