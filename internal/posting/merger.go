package posting

import (
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

func newValueMerger(key, value []byte) (pebble.ValueMerger, error) {
	op, err := Decode(value)
	if err != nil {
		return nil, fmt.Errorf("posting: merge key %x: %w", key, err)
	}
	return &valueMerger{op: *op}, nil
}

// valueMerger accumulates the composition of the operands seen so far in op,
// whose Add and Remove are always disjoint and owned by the merger.
type valueMerger struct {
	op Op
}

var _ pebble.DeletableValueMerger = (*valueMerger)(nil)

// MergeNewer composes a newer operand n after the accumulated op m:
// Add = (Add_m \ Remove_n) ∪ Add_n, Remove = (Remove_m \ Add_n) ∪ Remove_n.
func (m *valueMerger) MergeNewer(value []byte) error {
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

// Finish returns the encoded composition; when includesBase, Remove is
// dropped since nothing lies below the oldest operand.
func (m *valueMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	if includesBase {
		m.op.Remove.Clear()
	}
	return appendOp(nil, m.op.Add, m.op.Remove, true), nil, nil
}

// DeletableFinish is Finish that also reports delete=true when the result is
// the empty set (includesBase and Add empty) or the identity op (Add and
// Remove both empty), either of which can be dropped without changing what
// readers see.
func (m *valueMerger) DeletableFinish(includesBase bool) ([]byte, bool, io.Closer, error) {
	if m.op.Add.IsEmpty() && (includesBase || m.op.Remove.IsEmpty()) {
		return nil, true, nil, nil
	}
	v, c, err := m.Finish(includesBase)
	return v, false, c, err
}
