package posting

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// MergerName is the name of fpdb's posting merge operator. Pebble records it
// on disk and refuses to open a database with a merger of another name; a
// change of the merge semantics needs a new name. A new encoding of the
// values does not (tag 2 kept it): a merger writes it only into a store
// whose operands have it, and the database's format version keeps older
// builds from opening such a store.
const MergerName = "fpdb.posting.v1"

// Merger returns fpdb's merge operator for posting keys: a fresh
// *pebble.Merger named MergerName whose value mergers compose Op operands
// (see the package documentation). It holds no state shared between calls.
func Merger() *pebble.Merger {
	return &pebble.Merger{Name: MergerName, Merge: newValueMerger}
}

// newValueMerger validates the first operand and keeps a copy of its bytes:
// most merges (every flush of a key written once since the last flush) see
// just one operand, which Finish then returns as it is, without decoding
// it into bitmaps and encoding it again.
func newValueMerger(key, value []byte) (pebble.ValueMerger, error) {
	addB, remB, tag, err := split(value)
	if err == nil {
		if err = walkSet(tag, addB, nil); err != nil {
			err = fmt.Errorf("add set: %w", err)
		}
	}
	if err == nil {
		if err = walkSet(tag, remB, nil); err != nil {
			err = fmt.Errorf("remove set: %w", err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("posting: merge key %x: %w", key, err)
	}
	m := &valueMerger{raw: bytes.Clone(value), rawRemove: len(remB)}
	m.noteTag(tag)
	m.rawRun = addRunOf(tag, addB, remB)
	return m, nil
}

// addRun describes a value that only adds ids, in the compact encoding:
// their number and the largest (ok false for any other value).
type addRun struct {
	ok     bool
	count  int
	follow int // ids that follow their predecessor
	last   uint32
}

// addRunOf returns the addRun of a value whose sets (validated) are addB
// and remB.
func addRunOf(tag byte, addB, remB []byte) addRun {
	if tag != tagV2 || len(remB) > 0 || len(addB) == 0 {
		return addRun{}
	}
	r := addRun{ok: true}
	_ = walkDelta(addB, r.add)
	return r
}

// add counts id, the next of the run.
func (r *addRun) add(id uint32) {
	if r.count > 0 && id == r.last+1 {
		r.follow++
	}
	r.count++
	r.last = id
}

// concat merges value into the kept first operand when both only add ids
// in the compact encoding and every id of the older lies below every id of
// the newer, as when the postings of a bulk load's later documents meet
// those of its earlier ones: the union is then the older's bytes followed
// by the newer's, whose first gap is counted again from the older's last
// id, without decoding either into a list. It reports false, leaving m
// untouched, for other operands, for results above maxSliceIDs ids
// (roaring's bitmap containers may be shorter then) and for runs of
// consecutive ids (runsMayWin): the general path picks the shorter.
func (m *valueMerger) concat(value []byte, newer bool) (bool, error) {
	if m.raw == nil || !m.rawRun.ok {
		return false, nil
	}
	addB, remB, tag, err := split(value)
	if err != nil || tag != tagV2 || len(remB) > 0 || len(addB) == 0 {
		return false, nil // the general path reports the error
	}
	run := addRun{ok: true}
	if err := walkDelta(addB, run.add); err != nil {
		return true, fmt.Errorf("posting: merge operand: %w", err)
	}
	rawAdd, _, _, _ := split(m.raw) // validated when kept
	lo, hi := rawAdd, addB          // the older's set, the newer's
	loRun, hiRun := m.rawRun, run
	if !newer {
		lo, hi = addB, rawAdd
		loRun, hiRun = run, m.rawRun
	}
	first, k := binary.Uvarint(hi) // the newer's first id, written again as a gap
	if uint64(loRun.last) >= first || loRun.count+hiRun.count > maxSliceIDs {
		return false, nil
	}
	gap := first - uint64(loRun.last) - 1
	follow := loRun.follow + hiRun.follow
	if gap == 0 {
		follow++
	}
	if runsMayWin(loRun.count+hiRun.count, follow) {
		return false, nil // roaring's runs may be shorter: the general path picks
	}
	size := len(lo) + uvarintLen(gap) + len(hi) - k
	out := make([]byte, 0, 1+uvarintLen(uint64(size))+size)
	out = binary.AppendUvarint(append(out, tagV2), uint64(size))
	out = binary.AppendUvarint(append(out, lo...), gap)
	m.raw = append(out, hi[k:]...)
	m.rawRemove = 0
	m.rawRun = addRun{ok: true, count: loRun.count + hiRun.count, follow: follow, last: hiRun.last}
	return true, nil
}

// valueMerger accumulates the composition of the operands seen so far in op,
// whose Add and Remove are always disjoint and owned by the merger. Until a
// second operand arrives, the first is kept undecoded in raw (the last
// rawRemove bytes of which are its Remove set).
type valueMerger struct {
	op        Op
	raw       []byte
	rawRemove int
	rawRun    addRun // of raw
	// In slice mode (sliceMode), the composition is kept in the sorted,
	// disjoint lists sa (Add) and sr (Remove) instead of op, while short
	// (see mergeslices.go).
	sliceMode bool
	sa, sr    []uint32
	// enc is Compact once an operand in the compact encoding was seen:
	// only a store written with it may get it from a merge.
	enc Encoding
}

// noteTag records the tag of an operand merged.
func (m *valueMerger) noteTag(tag byte) {
	if tag == tagV2 {
		m.enc = Compact
	}
}

// decodeRaw decodes the kept first operand: into sorted slices when it is
// short, else into op.
func (m *valueMerger) decodeRaw() error {
	if m.raw == nil {
		return nil
	}
	addB, remB, tag, err := split(m.raw)
	if err == nil && len(addB)+len(remB) <= 2*maxSliceIDs {
		if m.sa, err = sortedIDs(nil, tag, addB); err == nil {
			m.sr, err = sortedIDs(nil, tag, remB)
		}
		if err == nil && len(m.sa)+len(m.sr) <= maxSliceIDs {
			m.sr = minus(m.sr, m.sa)
			m.sliceMode, m.raw = true, nil
			return nil
		}
		m.sa, m.sr = nil, nil
	}
	op, err := Decode(m.raw)
	if err != nil {
		return fmt.Errorf("posting: merge operand: %w", err)
	}
	m.op, m.raw = *op, nil
	return nil
}

// merge adds operand value (newer or older than all seen) in slice mode
// when it can; otherwise it leaves slice mode and reports false.
func (m *valueMerger) merge(value []byte, newer bool) (bool, error) {
	if done, err := m.concat(value, newer); done || err != nil {
		return true, err
	}
	if err := m.decodeRaw(); err != nil {
		return true, err
	}
	done, err := m.mergeSlices(value, newer)
	if err != nil {
		return true, fmt.Errorf("posting: merge operand: %w", err)
	}
	if !done {
		m.leaveSliceMode()
	}
	return done, nil
}

// valueMerger deliberately does not implement pebble.DeletableValueMerger:
// in Pebble v2.1.7 a deletable result of a merge that reached a SET makes
// the compaction iterator panic ("compaction iterator has skip=true, but
// iterator is at iterPosNext") in a background goroutine, killing the
// process and every later open. An empty posting list therefore stays as a
// small empty value. See docs/RELIABILITY.md and db.TestPostingChurn.
var _ pebble.ValueMerger = (*valueMerger)(nil)

// MergeNewer composes a newer operand n after the accumulated op m:
// Add = (Add_m \ Remove_n) ∪ Add_n, Remove = (Remove_m \ Add_n) ∪ Remove_n.
func (m *valueMerger) MergeNewer(value []byte) error {
	if done, err := m.merge(value, true); done || err != nil {
		return err
	}
	if done, err := m.mergeSmall(value, true); done || err != nil {
		return err
	}
	n, err := Decode(value)
	if err != nil {
		return fmt.Errorf("posting: merge newer operand: %w", err)
	}
	if !n.Remove.IsEmpty() {
		m.op.Add.AndNot(n.Remove)
	}
	if !n.Add.IsEmpty() {
		m.op.Add.Or(n.Add)
		m.op.Remove.AndNot(n.Add)
	}
	m.op.Remove.Or(n.Remove)
	return nil
}

// MergeOlder composes the accumulated op m after an older operand o:
// Add = (Add_o \ Remove_m) ∪ Add_m, Remove = (Remove_o \ Add_m) ∪ Remove_m.
// Both are computed in place in m; since Remove_o ∩ Add_o = ∅,
// Remove_o \ Add_m equals Remove_o \ Add (the new Add).
func (m *valueMerger) MergeOlder(value []byte) error {
	if done, err := m.merge(value, false); done || err != nil {
		return err
	}
	if done, err := m.mergeSmall(value, false); done || err != nil {
		return err
	}
	o, err := Decode(value)
	if err != nil {
		return fmt.Errorf("posting: merge older operand: %w", err)
	}
	if !o.Add.IsEmpty() {
		o.Add.AndNot(m.op.Remove)
		m.op.Add.Or(o.Add)
	}
	if !o.Remove.IsEmpty() {
		o.Remove.AndNot(m.op.Add)
		m.op.Remove.Or(o.Remove)
	}
	return nil
}

// smallOperand is the largest serialized set (in bytes) that mergeSmall
// applies id by id rather than decoding it into a bitmap.
const smallOperand = 512

// mergeSmall applies a small add-only or remove-only operand id by id,
// walking its serialization in place instead of decoding it (the common
// case: operands of a few ids each). It reports done=false, leaving m
// untouched, for other operands. On error m may be partly updated; the
// merge is then aborted anyway.
func (m *valueMerger) mergeSmall(value []byte, newer bool) (done bool, err error) {
	addB, remB, tag, err := split(value)
	if err != nil {
		return false, fmt.Errorf("posting: merge operand: %w", err)
	}
	m.noteTag(tag)
	add, rem := m.op.Add, m.op.Remove
	switch {
	case len(addB) == 0 && len(remB) == 0:
		return true, nil // identity
	case len(remB) == 0 && len(addB) <= smallOperand:
		if newer { // Add ∪= A_n, Remove \= A_n
			err = walkSet(tag, addB, func(x uint32) {
				add.Add(x)
				rem.Remove(x)
			})
		} else { // Add ∪= A_o \ Remove
			err = walkSet(tag, addB, func(x uint32) {
				if !rem.Contains(x) {
					add.Add(x)
				}
			})
		}
	case len(addB) == 0 && len(remB) <= smallOperand:
		if newer { // Add \= R_n, Remove ∪= R_n
			err = walkSet(tag, remB, func(x uint32) {
				add.Remove(x)
				rem.Add(x)
			})
		} else { // Remove ∪= R_o \ Add
			err = walkSet(tag, remB, func(x uint32) {
				if !add.Contains(x) {
					rem.Add(x)
				}
			})
		}
	default:
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("posting: merge operand: %w", err)
	}
	return true, nil
}

// Finish returns the encoded composition; when includesBase, Remove is
// dropped since nothing lies below the oldest operand.
func (m *valueMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	if m.raw != nil {
		// One operand: as written, without its Remove set at the base
		// (Remove is the suffix of the encoding).
		if includesBase {
			return m.raw[:len(m.raw)-m.rawRemove], nil, nil
		}
		return m.raw, nil, nil
	}
	if m.sliceMode {
		if includesBase {
			return AppendSorted(nil, m.sa, nil, m.enc), nil, nil
		}
		return AppendSorted(nil, m.sa, m.sr, m.enc), nil, nil
	}
	if includesBase {
		m.op.Remove.Clear()
	}
	return appendOp(nil, m.op.Add, m.op.Remove, true, m.enc), nil, nil
}
