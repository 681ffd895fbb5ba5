package db

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Document record versions, the first byte of a record. Version 2 (in
// format 3 databases) adds the number of distinct shingles; a document
// without one (Shingles 0) is written as version 1.
const (
	docRecordV1 = 1
	docRecordV2 = 2
)

// appendDocRecord encodes the metadata of d (everything but the
// fingerprint, which the index stores): version, ext id, content hash,
// source, size, words, (version 2) distinct shingles, time added.
func appendDocRecord(dst []byte, d *Doc) []byte {
	version := byte(docRecordV1)
	if d.Shingles > 0 {
		version = docRecordV2
	}
	dst = append(dst, version)
	dst = binary.AppendUvarint(dst, uint64(len(d.ID)))
	dst = append(dst, d.ID...)
	dst = append(dst, d.ContentHash[:]...)
	dst = binary.AppendUvarint(dst, uint64(len(d.Source)))
	dst = append(dst, d.Source...)
	dst = binary.AppendVarint(dst, d.Size)
	dst = binary.AppendUvarint(dst, uint64(d.Words))
	if version == docRecordV2 {
		dst = binary.AppendUvarint(dst, uint64(d.Shingles))
	}
	dst = binary.AppendVarint(dst, d.Added.UnixNano())
	return dst
}

// decodeDocRecord is the inverse of appendDocRecord. It copies what it keeps.
func decodeDocRecord(b []byte) (Doc, error) {
	var d Doc
	bad := func(what string) (Doc, error) {
		return Doc{}, fmt.Errorf("%w: document record: bad %s", ErrCorrupt, what)
	}
	if len(b) == 0 || b[0] != docRecordV1 && b[0] != docRecordV2 {
		return bad("version")
	}
	version := b[0]
	b = b[1:]
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	var ok bool
	if d.ID, ok = str(); !ok {
		return bad("id")
	}
	if len(b) < len(d.ContentHash) {
		return bad("content hash")
	}
	copy(d.ContentHash[:], b)
	b = b[len(d.ContentHash):]
	if d.Source, ok = str(); !ok {
		return bad("source")
	}
	size, k := binary.Varint(b)
	if k <= 0 {
		return bad("size")
	}
	b = b[k:]
	words, k := binary.Uvarint(b)
	if k <= 0 || words > maxCount {
		return bad("words")
	}
	b = b[k:]
	if version == docRecordV2 {
		sh, k := binary.Uvarint(b)
		if k <= 0 || sh == 0 || sh > maxCount {
			return bad("shingles")
		}
		d.Shingles = int(sh)
		b = b[k:]
	}
	added, k := binary.Varint(b)
	if k <= 0 || k != len(b) {
		return bad("time")
	}
	d.Size, d.Words, d.Added = size, int(words), time.Unix(0, added).UTC()
	return d, nil
}

// SetSize returns the shingle set size containment is estimated with (see
// Match.QueryInDoc) for a document of shingles distinct shingles and words
// words (Doc.Shingles, Doc.Words), with shingles of w words (the
// database's Params.ShingleWidth): shingles when known, else the number of
// shingles counted with repeats (at least 1), else 0 (unknown: added by
// fingerprint).
func SetSize(shingles, words, w int) int {
	switch {
	case shingles > 0:
		return shingles
	case words > 0:
		return max(words-w+1, 1)
	}
	return 0
}

// Doc is a stored document.
type Doc struct {
	// ID is the caller-given id, unique in the database.
	ID string
	// iid is the internal document number (a replaced document gets a new
	// one); it is not part of the API.
	iid uint32
	// Fingerprint is the K-bit fingerprint: bit j is bit j%64 of word j/64.
	Fingerprint []uint64
	// ContentHash is a 128-bit hash of the normalized text; all zero for a
	// document added by fingerprint without one.
	ContentHash [16]byte
	// Source names where the document came from (a path, a URL); may be empty.
	Source string
	// Size is the size of the original text in bytes (0 when added by
	// fingerprint).
	Size int64
	// Words is the number of normalized words (0 when added by fingerprint).
	Words int
	// Shingles is the number of distinct shingles of the text, the set
	// size containment is estimated with (see Match.QueryInDoc); 0 when
	// unknown: added by fingerprint without it, or stored in a database
	// of format 2 or older.
	Shingles int
	// Added is when the document was stored.
	Added time.Time
	// text is the stored value of the document's text (see textCodec) to
	// write with it, or nil; only set on a document being stored.
	text []byte
}
