package cluster

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

func sampleEntries() []Entry {
	rng := rand.New(rand.NewPCG(3, 4))
	return []Entry{
		{Kind: KindAdd, ID: "a", Fingerprint: randomFP(rng, 512), ContentHash: [16]byte{1, 2, 3}, Size: 2048, Words: 300, Shingles: 290, Source: "https://example.org/a", Added: time.Unix(1700000000, 123).UTC()},
		{Kind: KindAdd, ID: "b ü", Fingerprint: randomFP(rng, 256)},
		{Kind: KindDelete, ID: "old"},
		{Kind: KindPin},
	}
}

func TestBatchRoundTrip(t *testing.T) {
	in := sampleEntries()
	out, err := DecodeBatch(EncodeBatch(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n%+v\n%+v", in, out)
	}
	if out, err := DecodeBatch(EncodeBatch(nil)); err != nil || len(out) != 0 {
		t.Fatalf("empty batch: %v %v", out, err)
	}
}

func TestBatchCorrupt(t *testing.T) {
	b := EncodeBatch(sampleEntries())
	for n := 0; n < len(b); n++ { // every truncation fails cleanly
		if _, err := DecodeBatch(b[:n]); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
	bad := append([]byte{}, b...)
	bad[0] = 9
	if _, err := DecodeBatch(bad); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("version 9: %v", err)
	}
	if _, err := DecodeBatch(append(b, 0)); !errors.Is(err, ErrBadEntry) {
		t.Fatal("trailing byte accepted")
	}
}

func TestShardStable(t *testing.T) {
	// The shard function is part of the cluster's format: FNV-1a 64
	// (a = 0xaf63dc4c8601ec8c, foobar = 0x85944171f73967e8) modulo V.
	for _, c := range []struct {
		id       string
		v, shard int
	}{{"a", 4, 0}, {"a", 1000, 996}, {"foobar", 1000, 968}, {"doc00001", 1000, 236}, {"g001-v3", 4, 3}} {
		if got := Shard(c.id, c.v); got != c.shard {
			t.Errorf("Shard(%q, %d) = %d, want %d", c.id, c.v, got, c.shard)
		}
	}
}

func FuzzDecodeBatch(f *testing.F) {
	f.Add(EncodeBatch(sampleEntries()))
	f.Add([]byte{1, 1, 3})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := DecodeBatch(b)
		if err != nil {
			if !errors.Is(err, ErrBadEntry) {
				t.Fatalf("error not wrapping ErrBadEntry: %v", err)
			}
			return
		}
		again, err := DecodeBatch(EncodeBatch(entries))
		if err != nil || !reflect.DeepEqual(entries, again) {
			t.Fatalf("re-encoding changed the batch: %v", err)
		}
	})
}
