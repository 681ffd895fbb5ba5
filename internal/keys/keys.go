package keys

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Key range prefixes. Each range holds one kind of record.
const (
	// PrefixSystem holds singleton records (meta, next id).
	PrefixSystem byte = 0x00
	// PrefixDoc maps an internal id to the document record.
	PrefixDoc byte = 'd'
	// PrefixExtID maps a caller-given id to its internal id.
	PrefixExtID byte = 'e'
	// PrefixFingerprint maps an internal id to its fingerprint bytes.
	PrefixFingerprint byte = 'f'
	// PrefixHash indexes documents by content hash: 'h' ‖ hash ‖ internal id
	// (format 1 only; format 2 keeps the hash in the document record).
	PrefixHash byte = 'h'
	// PrefixPosting maps a merged group value y to a posting list (merge operand).
	PrefixPosting byte = 'p'
	// PrefixText maps an internal id to the document's stored text (format
	// 3: databases that keep texts).
	PrefixText byte = 't'
	// PrefixLog maps a sequence number to an audit-log entry (format 4:
	// databases created with the audit log): 'l' ‖ seq:u64be.
	PrefixLog byte = 'l'
	// PrefixLogByID indexes the audit log by document id: 'i' ‖ id ‖ 0x00
	// ‖ seq:u64be, with an empty value. Ids hold no NUL byte, so the
	// entries of one id are one contiguous range, in sequence order.
	PrefixLogByID byte = 'i'
)

// HashLen is the length of a content hash in bytes.
const HashLen = 16

// ErrBadKey is returned when a key does not have the expected layout.
var ErrBadKey = errors.New("keys: malformed key")

// Meta is the key of the meta record (the creation parameters).
func Meta() []byte { return []byte{PrefixSystem, 'm', 'e', 't', 'a'} }

// NextID is the key of the next internal id counter.
func NextID() []byte { return []byte{PrefixSystem, 'n', 'e', 'x', 't'} }

// Tail is the key of the index's deferred mark: the smallest internal id whose
// postings are not yet written (format version 2).
func DeferredMark() []byte { return []byte{PrefixSystem, 't', 'a', 'i', 'l'} }

// LogNext is the key of the audit log's next sequence number (format 4).
func LogNext() []byte { return []byte{PrefixSystem, 'l', 's', 'e', 'q'} }

// TemplatePrefix is the prefix of the template records (format 4):
// TemplatePrefix ‖ name.
func TemplatePrefix() []byte { return []byte{PrefixSystem, 't', 'm', 'p', 'l'} }

// TemplateRange returns the bounds [start, end) of the template records.
func TemplateRange() (start, end []byte) {
	return TemplatePrefix(), []byte{PrefixSystem, 't', 'm', 'p', 'l' + 1}
}

// Template is the key of the template named name.
func Template(name string) []byte { return append(TemplatePrefix(), name...) }

// ReindexMark is the key of the mark of an unfinished template change
// (format 4): end and next internal id (u32be each); the documents in
// [next, end) still hold fingerprints made with the templates before it.
func ReindexMark() []byte { return []byte{PrefixSystem, 'r', 'i', 'd', 'x'} }

// ImportMark is the key of the mark of an unfinished import: a version
// byte and the digest of the export's header. Import writes it before
// anything else and deletes it after the last entry; while it is present
// the database refuses other writes, and an import of the same export
// resumes. Older builds ignore it.
func ImportMark() []byte { return []byte{PrefixSystem, 'i', 'm', 'p', 't'} }

// MarkPrefix is the prefix of the callers' marks (see db.Mark): MarkPrefix
// ‖ name. Older builds ignore the range.
func MarkPrefix() []byte { return []byte{PrefixSystem, 'm', 'a', 'r', 'k'} }

// Mark is the key of the mark named name.
func Mark(name string) []byte { return append(MarkPrefix(), name...) }

func prefixed32(p byte, v uint32) []byte {
	k := make([]byte, 5)
	k[0] = p
	binary.BigEndian.PutUint32(k[1:], v)
	return k
}

func parse32(p byte, k []byte) (uint32, error) {
	if len(k) != 5 || k[0] != p {
		return 0, fmt.Errorf("%w: want %q + 4 bytes, got %x", ErrBadKey, p, k)
	}
	return binary.BigEndian.Uint32(k[1:]), nil
}

// Doc is the key of the document record of internal id id.
func Doc(id uint32) []byte { return prefixed32(PrefixDoc, id) }

// ParseDoc returns the internal id of a document record key.
func ParseDoc(k []byte) (uint32, error) { return parse32(PrefixDoc, k) }

// Fingerprint is the key of the fingerprint of internal id id.
func Fingerprint(id uint32) []byte { return prefixed32(PrefixFingerprint, id) }

// ParseFingerprint returns the internal id of a fingerprint key.
func ParseFingerprint(k []byte) (uint32, error) { return parse32(PrefixFingerprint, k) }

// Text is the key of the stored text of internal id id.
func Text(id uint32) []byte { return prefixed32(PrefixText, id) }

// ParseText returns the internal id of a text key.
func ParseText(k []byte) (uint32, error) { return parse32(PrefixText, k) }

// Posting is the key of the posting list of merged group value y.
func Posting(y uint32) []byte { return prefixed32(PrefixPosting, y) }

// AppendPosting appends the posting key of y to dst.
func AppendPosting(dst []byte, y uint32) []byte {
	dst = append(dst, PrefixPosting)
	return binary.BigEndian.AppendUint32(dst, y)
}

// ParsePosting returns the merged group value of a posting key.
func ParsePosting(k []byte) (uint32, error) { return parse32(PrefixPosting, k) }

// ExtID is the key that maps caller-given id ext to its internal id.
func ExtID(ext string) []byte {
	k := make([]byte, 1+len(ext))
	k[0] = PrefixExtID
	copy(k[1:], ext)
	return k
}

// ParseExtID returns the caller-given id of an ext-id key.
func ParseExtID(k []byte) (string, error) {
	if len(k) < 2 || k[0] != PrefixExtID {
		return "", fmt.Errorf("%w: want %q + id, got %x", ErrBadKey, PrefixExtID, k)
	}
	return string(k[1:]), nil
}

// Hash is the key that records that internal id id has content hash h.
func Hash(h [HashLen]byte, id uint32) []byte {
	k := make([]byte, 1+HashLen+4)
	k[0] = PrefixHash
	copy(k[1:], h[:])
	binary.BigEndian.PutUint32(k[1+HashLen:], id)
	return k
}

// ParseHash returns the content hash and internal id of a hash key.
func ParseHash(k []byte) (h [HashLen]byte, id uint32, err error) {
	if len(k) != 1+HashLen+4 || k[0] != PrefixHash {
		return h, 0, fmt.Errorf("%w: want %q + %d bytes, got %x", ErrBadKey, PrefixHash, HashLen+4, k)
	}
	copy(h[:], k[1:])
	return h, binary.BigEndian.Uint32(k[1+HashLen:]), nil
}

// Range returns the [start, end) bounds of the key range with prefix p.
func Range(p byte) (start, end []byte) { return []byte{p}, []byte{p + 1} }

// HashRange returns the [start, end) bounds of the hash keys of content hash h.
func HashRange(h [HashLen]byte) (start, end []byte) {
	start = make([]byte, 1+HashLen)
	start[0] = PrefixHash
	copy(start[1:], h[:])
	end = append(Hash(h, 0)[:1+HashLen:1+HashLen], 0xff, 0xff, 0xff, 0xff, 0xff)
	return start, end
}

// Log is the key of the audit-log entry with sequence number seq.
func Log(seq uint64) []byte {
	k := make([]byte, 9)
	k[0] = PrefixLog
	binary.BigEndian.PutUint64(k[1:], seq)
	return k
}

// ParseLog returns the sequence number of an audit-log entry key.
func ParseLog(k []byte) (uint64, error) {
	if len(k) != 9 || k[0] != PrefixLog {
		return 0, fmt.Errorf("%w: want %q + 8 bytes, got %x", ErrBadKey, PrefixLog, k)
	}
	return binary.BigEndian.Uint64(k[1:]), nil
}

// LogByID is the key that indexes the audit-log entry seq under document
// id ext (which must not hold a NUL byte).
func LogByID(ext string, seq uint64) []byte {
	k := make([]byte, 0, 1+len(ext)+1+8)
	k = append(k, PrefixLogByID)
	k = append(k, ext...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

// LogByIDRange returns the [start, end) bounds of the index keys of id
// ext: its entries, in sequence order.
func LogByIDRange(ext string) (start, end []byte) {
	start = make([]byte, 0, 1+len(ext)+1)
	start = append(start, PrefixLogByID)
	start = append(start, ext...)
	end = append(slices.Clone(start), 1)
	return append(start, 0), end
}

// ParseLogByID returns the document id and sequence number of an index
// key of the audit log.
func ParseLogByID(k []byte) (string, uint64, error) {
	n := len(k) - 9
	if n < 2 || k[0] != PrefixLogByID || k[n] != 0 || bytes.IndexByte(k[1:n], 0) >= 0 {
		return "", 0, fmt.Errorf("%w: want %q + id + 0x00 + 8 bytes, got %x", ErrBadKey, PrefixLogByID, k)
	}
	return string(k[1:n]), binary.BigEndian.Uint64(k[n+1:]), nil
}
