package index

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// MergerName is the name of the merge operator the posting keys are
// written with; Pebble records it, and a store written with another one is
// not an fpdb index.
const MergerName = posting.MergerName

// Merger returns the merge operator a Pebble store holding an index must
// be opened with (a new value at each call).
func Merger() *pebble.Merger { return posting.Merger() }

// PostingStats describe the posting lists as stored.
type PostingStats struct {
	// Keys is the number of non-empty posting lists and IDs the sum of
	// their lengths (documents × m when every posting is written).
	Keys int
	IDs  int64
	// Max is the length of the longest list.
	Max int
	// Lengths[b] is the number of lists whose length is in
	// [2^b, 2^(b+1)−1].
	Lengths [33]int
}

// ReadPostingStats reads every posting list of the store (or of a snapshot of
// it: r is the Pebble DB or a *pebble.Snapshot) and describes them. A list
// that does not decode is reported as ErrCorrupt.
func ReadPostingStats(ctx context.Context, r pebble.Reader) (*PostingStats, error) {
	lo, hi := keys.Range(keys.PrefixPosting)
	it, err := r.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	st := &PostingStats{}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		n := 0
		if err := posting.ForEach(v, func(uint32) { n++ }); err != nil {
			return nil, fmt.Errorf("%w: posting %x: %w", ErrCorrupt, it.Key(), err)
		}
		if n == 0 {
			continue
		}
		st.Keys++
		st.IDs += int64(n)
		st.Max = max(st.Max, n)
		st.Lengths[bits.Len(uint(n))-1]++
	}
	return st, it.Error()
}
