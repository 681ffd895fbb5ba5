package db

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// FuzzDecodeMeta: any bytes decode to Params or to an error wrapping
// ErrCorrupt, never a panic; what decodes re-encodes to a record that
// decodes to the same Params.
func FuzzDecodeMeta(f *testing.F) {
	good := encodeMeta(Params{FormatVersion: 1, K: 512, GroupWidths: EqualWidths(512, 16), ShingleWidth: 4, Seed: DefaultSeed,
		HashVersion: 1, NormalizeVersion: 1, Merger: "fpdb.posting.v1", Created: time.Unix(1700000000, 0).UTC()})
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte{})
	f.Add([]byte("{}\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeMeta(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		p2, err := decodeMeta(encodeMeta(p))
		if err != nil || !bytes.Equal(encodeMeta(p2), encodeMeta(p)) {
			t.Fatalf("round trip: %+v %v", p2, err)
		}
	})
}

// FuzzDecodeDocRecord: any bytes decode to a Doc or to an error wrapping
// ErrCorrupt, never a panic; a decoded Doc re-encodes and decodes to
// itself.
func FuzzDecodeDocRecord(f *testing.F) {
	d := Doc{ID: "proposals/2024-017.txt", ContentHash: [16]byte{1, 2, 3}, Source: "a.txt", Size: 1234, Words: 200, Added: time.Unix(0, 1700000000123456789).UTC()}
	good := appendDocRecord(nil, &d)
	f.Add(good)
	f.Add(good[:len(good)-1])
	d2 := d
	d2.Shingles = 197
	f.Add(appendDocRecord(nil, &d2)) // version 2
	f.Add([]byte{1})
	f.Add([]byte{2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := decodeDocRecord(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		doc2, err := decodeDocRecord(appendDocRecord(nil, &doc))
		if err != nil || doc2.ID != doc.ID || doc2.ContentHash != doc.ContentHash || doc2.Source != doc.Source ||
			doc2.Size != doc.Size || doc2.Words != doc.Words || !doc2.Added.Equal(doc.Added) {
			t.Fatalf("round trip: %+v vs %+v (%v)", doc2, doc, err)
		}
	})
}

// FuzzDocRecordRoundTrip: every Doc encodes and decodes to itself.
func FuzzDocRecordRoundTrip(f *testing.F) {
	f.Add("a", []byte{1, 2}, "src", int64(10), uint32(3), int64(1700000000123456789))
	f.Add("", []byte{}, "", int64(-1), uint32(0), int64(-5))
	f.Fuzz(func(t *testing.T, id string, hash []byte, source string, size int64, words uint32, added int64) {
		d := Doc{ID: id, Source: source, Size: size, Words: int(words), Added: time.Unix(0, added).UTC()}
		copy(d.ContentHash[:], hash)
		got, err := decodeDocRecord(appendDocRecord(nil, &d))
		if err != nil || got.ID != d.ID || got.ContentHash != d.ContentHash || got.Source != d.Source ||
			got.Size != d.Size || got.Words != d.Words || !got.Added.Equal(d.Added) {
			t.Fatalf("round trip of %+v: %+v %v", d, got, err)
		}
	})
}

// FuzzDecodeIID: internal id values decode only at 4 bytes.
func FuzzDecodeIID(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1})
	f.Add([]byte{0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		iid, err := decodeIID(b)
		if (err == nil) != (len(b) == 4) {
			t.Fatalf("decodeIID(%x): %v", b, err)
		}
		if err == nil && !bytes.Equal(encodeIID(iid), b) {
			t.Fatalf("round trip of %x: %x", b, encodeIID(iid))
		}
	})
}
