package posting

import (
	"bytes"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// MergerName is the name of fpdb's posting merge operator. Pebble records it
// on disk and refuses to open a database with a merger of another name; a
// change of the encoding or of the merge semantics needs a new name.
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
	addB, remB, err := split(value)
	if err == nil && len(addB) > 0 {
		if err = walk(addB, nil); err != nil {
			err = fmt.Errorf("add set: %w", err)
		}
	}
	if err == nil && len(remB) > 0 {
		if err = walk(remB, nil); err != nil {
			err = fmt.Errorf("remove set: %w", err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("posting: merge key %x: %w", key, err)
	}
	return &valueMerger{raw: bytes.Clone(value), rawRemove: len(remB)}, nil
}

// valueMerger accumulates the composition of the operands seen so far in op,
// whose Add and Remove are always disjoint and owned by the merger. Until a
// second operand arrives, the first is kept undecoded in raw (the last
// rawRemove bytes of which are its Remove set).
type valueMerger struct {
	op        Op
	raw       []byte
	rawRemove int
	// In slice mode (sliceMode), the composition is kept in the sorted,
	// disjoint lists sa (Add) and sr (Remove) instead of op, while short
	// (see mergeslices.go).
	sliceMode bool
	sa, sr    []uint32
}

// decodeRaw decodes the kept first operand: into sorted slices when it is
// short, else into op.
func (m *valueMerger) decodeRaw() error {
	if m.raw == nil {
		return nil
	}
	addB, remB, err := split(m.raw)
	if err == nil && len(addB)+len(remB) <= 2*maxSliceIDs {
		if m.sa, err = sortedIDs(nil, addB); err == nil {
			m.sr, err = sortedIDs(nil, remB)
		}
		if err == nil {
			m.sr = minus(m.sr, m.sa)
			m.sliceMode, m.raw = true, nil
			return nil
		}
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
	addB, remB, err := split(value)
	if err != nil {
		return false, fmt.Errorf("posting: merge operand: %w", err)
	}
	add, rem := m.op.Add, m.op.Remove
	switch {
	case len(addB) == 0 && len(remB) == 0:
		return true, nil // identity
	case len(remB) == 0 && len(addB) <= smallOperand:
		if newer { // Add ∪= A_n, Remove \= A_n
			err = walk(addB, func(x uint32) {
				add.Add(x)
				rem.Remove(x)
			})
		} else { // Add ∪= A_o \ Remove
			err = walk(addB, func(x uint32) {
				if !rem.Contains(x) {
					add.Add(x)
				}
			})
		}
	case len(addB) == 0 && len(remB) <= smallOperand:
		if newer { // Add \= R_n, Remove ∪= R_n
			err = walk(remB, func(x uint32) {
				add.Remove(x)
				rem.Add(x)
			})
		} else { // Remove ∪= R_o \ Add
			err = walk(remB, func(x uint32) {
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
			return AppendSorted(nil, m.sa, nil), nil, nil
		}
		return AppendSorted(nil, m.sa, m.sr), nil, nil
	}
	if includesBase {
		m.op.Remove.Clear()
	}
	return appendOp(nil, m.op.Add, m.op.Remove, true), nil, nil
}
