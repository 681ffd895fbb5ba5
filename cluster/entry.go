package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
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
// nanoseconds; delete: id; pin: nothing), integers as varints, strings
// length-prefixed, fingerprint words little-endian.
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
			var t int64
			if !e.Added.IsZero() {
				t = e.Added.UnixNano()
			}
			b = binary.AppendVarint(b, t)
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
			if t := d.varint(); t != 0 {
				e.Added = time.Unix(0, t).UTC()
			}
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
	if v > 1<<40 {
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
