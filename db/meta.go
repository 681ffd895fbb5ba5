package db

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"time"

	"github.com/fpdb/fpdb/internal/posting"
)

// Format versions of the on-disk layout (docs/format.md). Numbers are never
// reused.
const (
	// formatV1 is the first format: meta, next id, doc records, ext-id map,
	// fingerprints, content-hash index ('h' keys) and posting lists with
	// add/remove merge operands.
	formatV1 = 1
	// formatV2 adds the deferred mark (key 0x00 "tail": documents added in
	// bulk-load mode whose postings are not yet written) and drops the
	// content-hash index ('h' keys; the hash stays in the document record
	// and exact duplicates are found in memory). Open upgrades a format-1
	// database in place unless it is read-only.
	formatV2 = 2
	// formatV3 adds stored texts (the text range, 't' keys: a document's
	// text, compressed; the meta record's keep_texts field) and document
	// records of version 2, which hold the number of distinct shingles. A
	// build that does not know them refuses a format-3 database, so that it
	// never deletes a document and leaves its text behind. A format-2
	// database stays at format 2 (and writes version 1 records).
	formatV3 = 3
	// formatV4 adds what changes how a document is read or what an add
	// records, which an older build must not ignore: templates (the
	// template range, 0x00 "tmpl" keys, whose shingles every fingerprint
	// leaves out, and the reindex mark, 0x00 "ridx").
	// A format-3 database becomes format 4 in place when its first
	// template is added; a new database is created at format 4. Other
	// additions of format 4 are listed with their keys in docs/format.md.
	formatV4 = 4
	// formatV5 adds the compact encoding of posting values (tag 2: ids as
	// uvarint gaps), written wherever it is shorter than roaring's format:
	// about 3 bytes per id against 10 for the sparse lists of a large
	// database, which Pebble's compactions rewrite after every flush of a
	// bulk load's postings. A new database is created at format 5; an older one keeps its
	// format and writes roaring's format only (index.SetPostingEncoding),
	// so the builds that made it still open it.
	formatV5 = 5

	// formatNewest is the newest format this build writes, the format of
	// a new database (formatFor).
	formatNewest = formatV5
	// formatMinSupported is the oldest format this build opens.
	formatMinSupported = formatV1
)

// postingEncoding returns the encodings of posting values a database of
// p's format may hold: the compact one from format 5 on.
func (p Params) postingEncoding() posting.Encoding {
	if p.FormatVersion >= formatV5 {
		return posting.Compact
	}
	return posting.Roaring
}

// formatFor returns the format a new database is created with.
func formatFor() int { return formatV5 }

// metaRecord is the stored form of Params: JSON followed by a CRC-32C of
// the JSON, so that a damaged record is detected, not misread. Fields added
// after format 2 are omitted when zero, so that a database without texts
// has the meta record of format 2, and a record written before they
// existed decodes to their zero value (KeepTexts false: no texts).
type metaRecord struct {
	FormatVersion    int       `json:"format_version"`
	K                int       `json:"k"`
	GroupWidths      []int     `json:"group_widths"`
	ShingleWidth     int       `json:"shingle_width"`
	Seed             uint64    `json:"seed"`
	HashVersion      int       `json:"hash_version"`
	NormalizeVersion int       `json:"normalize_version"`
	Merger           string    `json:"merger"`
	Created          time.Time `json:"created"`
	KeepTexts        bool      `json:"keep_texts,omitempty"`
	AuditLog         bool      `json:"audit_log,omitempty"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeMeta(p Params) []byte {
	b, _ := json.Marshal(metaRecord(p)) // cannot fail: plain fields
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeMeta(b []byte) (Params, error) {
	if len(b) < 5 {
		return Params{}, fmt.Errorf("%w: meta record is %d bytes", ErrCorrupt, len(b))
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return Params{}, fmt.Errorf("%w: meta record checksum mismatch", ErrCorrupt)
	}
	var m metaRecord
	if err := json.Unmarshal(body, &m); err != nil {
		return Params{}, fmt.Errorf("%w: meta record: %w", ErrCorrupt, err)
	}
	if m.KeepTexts && m.FormatVersion < formatV3 {
		return Params{}, fmt.Errorf("%w: meta record: keep_texts in format %d (texts need format %d)", ErrCorrupt, m.FormatVersion, formatV3)
	}
	if m.AuditLog && m.FormatVersion < formatV4 {
		return Params{}, fmt.Errorf("%w: meta record: audit_log in format %d (the audit log needs format %d)", ErrCorrupt, m.FormatVersion, formatV4)
	}
	return Params(m), nil
}

// checkParams compares the creation parameters asked for in o (zero means
// "whatever is stored") with the stored ones.
func checkParams(stored Params, o *Options) error {
	if o.K != 0 && o.K != stored.K {
		return &ParamsError{Param: "K", Stored: strconv.Itoa(stored.K), Given: strconv.Itoa(o.K)}
	}
	if len(o.GroupWidths) != 0 && !slices.Equal(o.GroupWidths, stored.GroupWidths) {
		return &ParamsError{Param: "GroupWidths", Stored: fmt.Sprint(stored.GroupWidths), Given: fmt.Sprint(o.GroupWidths)}
	}
	if o.ShingleWidth != 0 && o.ShingleWidth != stored.ShingleWidth {
		return &ParamsError{Param: "ShingleWidth", Stored: strconv.Itoa(stored.ShingleWidth), Given: strconv.Itoa(o.ShingleWidth)}
	}
	if o.Seed != 0 && o.Seed != stored.Seed {
		return &ParamsError{Param: "Seed", Stored: strconv.FormatUint(stored.Seed, 10), Given: strconv.FormatUint(o.Seed, 10)}
	}
	if o.NormalizeVersion != 0 && o.NormalizeVersion != stored.NormalizeVersion {
		return &ParamsError{Param: "NormalizeVersion", Stored: strconv.Itoa(stored.NormalizeVersion), Given: strconv.Itoa(o.NormalizeVersion)}
	}
	if o.KeepTexts && !stored.KeepTexts {
		return &ParamsError{Param: "KeepTexts", Stored: "false", Given: "true"}
	}
	if o.AuditLog && !stored.AuditLog {
		return &ParamsError{Param: "AuditLog", Stored: "false", Given: "true"}
	}
	return nil
}

// Params are the creation parameters of a database.
type Params struct {
	// FormatVersion is the on-disk format version.
	FormatVersion int
	// K is the fingerprint length in bits.
	K int
	// GroupWidths are the index group widths.
	GroupWidths []int
	// ShingleWidth is the number of words per shingle.
	ShingleWidth int
	// Seed seeds the hash functions.
	Seed uint64
	// HashVersion is the version of the shingle-hash and min-hash scheme.
	HashVersion int
	// NormalizeVersion is the version of the text normalization.
	NormalizeVersion int
	// Merger is the name of the posting merge operator.
	Merger string
	// Created is when the database was created.
	Created time.Time
	// KeepTexts reports that the database stores each document's text
	// (Options.KeepTexts); false for every database created before texts
	// could be kept.
	KeepTexts bool
	// AuditLog reports that the database records every add and delete
	// in its audit log (Options.AuditLog, DB.Log); false for every
	// database created before the log existed.
	AuditLog bool
}
