package keys

import (
	"bytes"
	"errors"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, id := range []uint32{0, 1, 255, 256, 1<<32 - 1} {
		if got, err := ParseDoc(Doc(id)); err != nil || got != id {
			t.Fatalf("doc %d: got %d, %v", id, got, err)
		}
		if got, err := ParseFingerprint(Fingerprint(id)); err != nil || got != id {
			t.Fatalf("fingerprint %d: got %d, %v", id, got, err)
		}
		if got, err := ParseText(Text(id)); err != nil || got != id {
			t.Fatalf("text %d: got %d, %v", id, got, err)
		}
		if got, err := ParsePosting(Posting(id)); err != nil || got != id {
			t.Fatalf("posting %d: got %d, %v", id, got, err)
		}
		if !bytes.Equal(AppendPosting(nil, id), Posting(id)) {
			t.Fatalf("AppendPosting differs from Posting")
		}
		h := [HashLen]byte{1, 2, 3, 15: 9}
		gh, gid, err := ParseHash(Hash(h, id))
		if err != nil || gh != h || gid != id {
			t.Fatalf("hash %d: got %x %d %v", id, gh, gid, err)
		}
		s, e := HashRange(h)
		if k := Hash(h, id); bytes.Compare(k, s) < 0 || bytes.Compare(k, e) >= 0 {
			t.Fatalf("hash key %x outside its range [%x, %x)", k, s, e)
		}
	}
	if got, err := ParseExtID(ExtID("a/b.txt")); err != nil || got != "a/b.txt" {
		t.Fatalf("ext: %q %v", got, err)
	}
}

func TestOrder(t *testing.T) {
	// Big-endian ids sort numerically.
	if bytes.Compare(Posting(255), Posting(256)) >= 0 {
		t.Fatal("posting keys do not sort numerically")
	}
	// Ranges are disjoint and ordered.
	if bytes.Compare(Text(255), Text(256)) >= 0 {
		t.Fatal("text keys do not sort numerically")
	}
	for _, p := range []byte{PrefixDoc, PrefixExtID, PrefixFingerprint, PrefixHash, PrefixPosting, PrefixText} {
		s, e := Range(p)
		if bytes.Compare(Meta(), s) >= 0 || bytes.Compare(s, e) >= 0 {
			t.Fatalf("range %q is not after the system keys", p)
		}
	}
}

func TestBadKeys(t *testing.T) {
	for _, k := range [][]byte{nil, {PrefixDoc}, {PrefixPosting, 1, 2, 3, 4}, {PrefixDoc, 1, 2, 3, 4, 5}} {
		if _, err := ParseDoc(k); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseDoc(%x) = %v, want ErrBadKey", k, err)
		}
	}
	for _, k := range [][]byte{nil, {PrefixText}, {PrefixDoc, 1, 2, 3, 4}, {PrefixText, 1, 2, 3, 4, 5}, Doc(7)} {
		if _, err := ParseText(k); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseText(%x) = %v, want ErrBadKey", k, err)
		}
	}
	if _, err := ParseExtID([]byte{PrefixExtID}); !errors.Is(err, ErrBadKey) {
		t.Error("empty ext id accepted")
	}
	if _, _, err := ParseHash([]byte{PrefixHash, 1}); !errors.Is(err, ErrBadKey) {
		t.Error("short hash key accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte{PrefixDoc, 0, 0, 0, 1})
	f.Add(Hash([HashLen]byte{}, 7))
	f.Fuzz(func(t *testing.T, k []byte) {
		if id, err := ParseDoc(k); err == nil && !bytes.Equal(Doc(id), k) {
			t.Fatalf("doc round trip %x", k)
		}
		if id, err := ParseText(k); err == nil && !bytes.Equal(Text(id), k) {
			t.Fatalf("text round trip %x", k)
		}
		if id, err := ParsePosting(k); err == nil && !bytes.Equal(Posting(id), k) {
			t.Fatalf("posting round trip %x", k)
		}
		if h, id, err := ParseHash(k); err == nil && !bytes.Equal(Hash(h, id), k) {
			t.Fatalf("hash round trip %x", k)
		}
		if s, err := ParseExtID(k); err == nil && !bytes.Equal(ExtID(s), k) {
			t.Fatalf("ext round trip %x", k)
		}
	})
}

// TestLogKeys: audit-log keys round-trip, sort by sequence number, and an
// id's index keys lie in its range and in no other id's (not even an id it
// is a prefix of).
func TestLogKeys(t *testing.T) {
	for _, seq := range []uint64{0, 1, 1 << 40, 1<<64 - 1} {
		if got, err := ParseLog(Log(seq)); err != nil || got != seq {
			t.Fatalf("log %d: got %d, %v", seq, got, err)
		}
		id, got, err := ParseLogByID(LogByID("a/b.txt", seq))
		if err != nil || id != "a/b.txt" || got != seq {
			t.Fatalf("log by id %d: got %q %d %v", seq, id, got, err)
		}
	}
	if bytes.Compare(Log(255), Log(256)) >= 0 {
		t.Fatal("log keys do not sort by sequence number")
	}
	lo, hi := LogByIDRange("a")
	for _, k := range [][]byte{LogByID("a", 0), LogByID("a", 1<<64-1)} {
		if bytes.Compare(k, lo) < 0 || bytes.Compare(k, hi) >= 0 {
			t.Fatalf("key %x outside [%x, %x)", k, lo, hi)
		}
	}
	for _, other := range []string{"ab", "a\x01", "`"} {
		if k := LogByID(other, 5); bytes.Compare(k, lo) >= 0 && bytes.Compare(k, hi) < 0 {
			t.Fatalf("key of %q inside the range of \"a\"", other)
		}
	}
	for _, bad := range [][]byte{nil, {PrefixLog}, Log(1)[:8], LogByID("", 1), append([]byte{PrefixLogByID, 'a', 0, 'b', 0}, 0, 0, 0, 0, 0, 0, 0, 1)} {
		if _, err := ParseLog(bad); err == nil && len(bad) != 9 {
			t.Fatalf("ParseLog(%x) accepted", bad)
		}
		if _, _, err := ParseLogByID(bad); !errors.Is(err, ErrBadKey) {
			t.Fatalf("ParseLogByID(%x): %v", bad, err)
		}
	}
}
