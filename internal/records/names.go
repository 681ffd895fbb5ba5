package records

import (
	"fmt"
	"slices"
)

// Names is an ordered set of field names, in the order they were first
// added: the columns a CSV/TSV or Parquet output needs to hold every
// member of heterogeneous JSON Lines records (Options.Names collects them,
// Writer.SetColumns takes them). The zero value is an empty set ready to
// use. A Names is not safe for concurrent use.
type Names struct {
	// Max, if positive, is the most names the set takes: adding another
	// is an error wrapping ErrSchema (records whose members are data,
	// such as ids as keys, would make an output of that many columns).
	Max int

	list []string
	set  map[string]struct{}
}

// Add adds the names not yet in the set, in order; past Max it adds no
// more and returns an error wrapping ErrSchema.
func (n *Names) Add(names ...string) error {
	for _, s := range names {
		if _, ok := n.set[s]; ok {
			continue
		}
		if n.Max > 0 && len(n.list) >= n.Max {
			return fmt.Errorf("%w: the records have more than %d different fields (%q is one more), which a CSV, TSV or Parquet output would each make a column of", ErrSchema, n.Max, s)
		}
		if n.set == nil {
			n.set = make(map[string]struct{})
		}
		n.set[s] = struct{}{}
		n.list = append(n.list, s)
	}
	return nil
}

// addBytes adds one name given as bytes; it allocates only for a new name.
func (n *Names) addBytes(b []byte) error {
	if _, ok := n.set[string(b)]; ok {
		return nil
	}
	return n.Add(string(b))
}

// List returns a copy of the names in the order they were first added.
func (n *Names) List() []string { return slices.Clone(n.list) }

// Len returns the number of names.
func (n *Names) Len() int { return len(n.list) }
