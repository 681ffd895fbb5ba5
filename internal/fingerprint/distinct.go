package fingerprint

// MaxDistinct is how many distinct shingles a Builder counts exactly; the
// shingles of a longer document that are not among its first MaxDistinct
// distinct ones are counted with their repeats.
const MaxDistinct = 1 << 20

// distinctSmall is the table size a distinctSet starts with and keeps
// between documents.
const distinctSmall = 1 << 10

// distinctSet counts distinct 64-bit hashes: an open-addressing table
// (linear probing, 0 marks an empty slot; the hash 0 is tracked apart) at
// most half full.
type distinctSet struct {
	slots []uint64
	used  []uint32 // filled slots, to reset them
	zero  bool     // the hash 0 was added
	n     int      // distinct hashes counted exactly
	over  int      // hashes past MaxDistinct, repeats included
}

func (s *distinctSet) reset() {
	if len(s.slots) > distinctSmall*64 {
		s.slots, s.used = nil, nil // a huge document's table is not kept
	}
	for _, i := range s.used {
		s.slots[i] = 0
	}
	s.used = s.used[:0]
	s.zero, s.n, s.over = false, 0, 0
}

// count returns the number of distinct hashes added since reset.
func (s *distinctSet) count() int { return s.n + s.over }

func (s *distinctSet) add(h uint64) {
	if h == 0 {
		if !s.zero {
			s.zero = true
			s.n++
		}
		return
	}
	if s.slots == nil {
		s.slots = make([]uint64, distinctSmall)
	}
	if 2*(s.n+1) > len(s.slots) {
		if s.n >= MaxDistinct {
			if !s.has(h) {
				s.over++
			}
			return
		}
		s.grow()
	}
	mask := uint64(len(s.slots) - 1)
	for i := (h * 0x9e3779b97f4a7c15) >> 20 & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case h:
			return
		case 0:
			s.slots[i] = h
			s.used = append(s.used, uint32(i))
			s.n++
			return
		}
	}
}

func (s *distinctSet) has(h uint64) bool {
	mask := uint64(len(s.slots) - 1)
	for i := (h * 0x9e3779b97f4a7c15) >> 20 & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case h:
			return true
		case 0:
			return false
		}
	}
}

// grow doubles the table.
func (s *distinctSet) grow() {
	old := s.slots
	s.slots = make([]uint64, 2*len(old))
	s.used = s.used[:0]
	mask := uint64(len(s.slots) - 1)
	for _, h := range old {
		if h == 0 {
			continue
		}
		i := (h * 0x9e3779b97f4a7c15) >> 20 & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = h
		s.used = append(s.used, uint32(i))
	}
}
