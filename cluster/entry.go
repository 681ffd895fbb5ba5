package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"time"
	"unicode/utf8"
)

// Kind is the kind of a log entry.
type Kind byte

const (
	// KindAdd stores (or replaces) a document.
	KindAdd Kind = 1
	// KindDelete deletes a document by id.
	KindDelete Kind = 2
	// KindPin asks every replica to keep a checkpoint of its shard at the
	// entry's log sequence (for all-pairs at a pinned sequence).
	KindPin Kind = 3
)

// logVersion is the version byte every log message starts with.
const logVersion = 1

// ErrBadEntry is wrapped by the errors of DecodeBatch: a log message that
// is not a valid batch.
var ErrBadEntry = errors.New("fpdb cluster: bad log entry")

// Entry is one write of the log.
type Entry struct {
	Kind Kind
	// ID is the document id (add, delete).
	ID string
	// Fingerprint, ContentHash, Size, Words, Shingles, Source and Added
	// describe an added document.
	Fingerprint []uint64
	ContentHash [16]byte
	Size        int64
	Words       int
	Shingles    int
	Source      string
	Added       time.Time
}

// Shard returns the virtual shard of a document id among v shards: FNV-1a
// 64 of the id modulo v. It is part of the cluster's format: changing it
// moves documents.
func Shard(id string, v int) int {
	h := fnv.New64a()
	h.Write([]byte(id))
	return int(h.Sum64() % uint64(v))
}

// EncodeBatch encodes entries as one log message: a version byte, the
// number of entries, then each entry (kind byte; add: id, fingerprint
// words, content hash, size, words, shingles, source, added unix
// nanoseconds (addedNanos); delete: id; pin: nothing), integers as
// varints, strings length-prefixed, fingerprint words little-endian.
func EncodeBatch(entries []Entry) []byte {
	b := []byte{logVersion}
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for i := range entries {
		e := &entries[i]
		b = append(b, byte(e.Kind))
		switch e.Kind {
		case KindAdd:
			b = appendString(b, e.ID)
			b = binary.AppendUvarint(b, uint64(len(e.Fingerprint)))
			for _, w := range e.Fingerprint {
				b = binary.LittleEndian.AppendUint64(b, w)
			}
			b = append(b, e.ContentHash[:]...)
			b = binary.AppendVarint(b, e.Size)
			b = binary.AppendUvarint(b, uint64(e.Words))
			b = binary.AppendUvarint(b, uint64(e.Shingles))
			b = appendString(b, e.Source)
			b = binary.AppendVarint(b, addedNanos(e.Added))
		case KindDelete:
			b = appendString(b, e.ID)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// noTime and epoch are how an entry's Added is encoded when it is the
// zero time (none: the replica's database stamps its own) and when it is
// 1970-01-01T00:00:00Z exactly, whose Unix nanoseconds are 0 too. The
// minimum int64 is a time in 1677, which no document can have (its
// database refuses years before 1678).
const (
	noTime = 0
	epoch  = math.MinInt64
)

// addedNanos encodes an entry's Added.
func addedNanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return noTime
	case t.UnixNano() == 0:
		return epoch
	}
	return t.UnixNano()
}

// addedTime decodes what addedNanos encoded.
func addedTime(n int64) time.Time {
	switch n {
	case noTime:
		return time.Time{}
	case epoch:
		n = 0
	}
	return time.Unix(0, n).UTC()
}

// maxCount bounds a decoded word or shingle count: the bound of the
// document record a database stores (words and shingles up to 2^62), so
// that every document a database accepts can go through the log.
const maxCount = 1 << 62

// maxWords bounds a decoded fingerprint's length (k ≤ 4096 bits).
const maxWords = 64

// DecodeBatch decodes a log message written by EncodeBatch; any other
// bytes give an error wrapping ErrBadEntry (never a panic).
func DecodeBatch(b []byte) ([]Entry, error) {
	d := decoder{b: b}
	if v := d.byte(); v != logVersion {
		return nil, fmt.Errorf("%w: version %d (want %d)", ErrBadEntry, v, logVersion)
	}
	n := d.uvarint()
	if d.err != nil || n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: entry count", ErrBadEntry)
	}
	entries := make([]Entry, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		e := Entry{Kind: Kind(d.byte())}
		switch e.Kind {
		case KindAdd:
			e.ID = d.string()
			nw := d.uvarint()
			if nw == 0 || nw > maxWords {
				d.fail("fingerprint of %d words", nw)
				break
			}
			e.Fingerprint = make([]uint64, nw)
			for j := range e.Fingerprint {
				e.Fingerprint[j] = binary.LittleEndian.Uint64(d.take(8))
			}
			copy(e.ContentHash[:], d.take(16))
			e.Size = d.varint()
			e.Words = d.int()
			e.Shingles = d.int()
			e.Source = d.string()
			e.Added = addedTime(d.varint())
		case KindDelete:
			e.ID = d.string()
		case KindPin:
		default:
			d.fail("kind %d", e.Kind)
		}
		if d.err == nil && e.Kind != KindPin && (e.ID == "" || !utf8.ValidString(e.ID)) {
			d.fail("id %q", e.ID)
		}
		if d.err == nil && e.Size < 0 {
			d.fail("size %d", e.Size)
		}
		entries = append(entries, e)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return entries, nil
}

type decoder struct {
	b   []byte
	err error
	buf [16]byte
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrBadEntry}, args...)...)
	}
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || len(d.b) < n {
		d.fail("truncated")
		return d.buf[:n]
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) byte() byte { return d.take(1)[0] }

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int() int {
	v := d.uvarint()
	if v > maxCount {
		d.fail("count %d", v)
		return 0
	}
	return int(v)
}

func (d *decoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("truncated string")
		return ""
	}
	return string(d.take(int(n)))
}
