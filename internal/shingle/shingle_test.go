package shingle

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// shingles returns the hashes emitted for the words of text.
func shingles(t testing.TB, s *Shingler, text string) ([]uint64, int) {
	t.Helper()
	var out []uint64
	emit := func(h uint64) { out = append(out, h) }
	s.Reset()
	for _, w := range strings.Fields(text) {
		s.Add([]byte(w), emit)
	}
	return out, s.Finish(emit)
}

func mustNew(t testing.TB, w int, seed uint64) *Shingler {
	t.Helper()
	s, err := New(w, seed)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewValidates(t *testing.T) {
	for _, w := range []int{0, -1, MaxWidth + 1} {
		if _, err := New(w, 1); err == nil {
			t.Errorf("New(%d) succeeded", w)
		}
	}
	for _, w := range []int{1, 4, MaxWidth} {
		s, err := New(w, 1)
		if err != nil || s.Width() != w {
			t.Errorf("New(%d): %v", w, err)
		}
	}
}

func TestCount(t *testing.T) {
	words := strings.Fields(strings.Repeat("alpha beta gamma delta epsilon zeta eta theta ", 5))
	for _, w := range []int{1, 2, 3, 4, 7} {
		s := mustNew(t, w, 42)
		for n := 0; n <= len(words); n++ {
			hs, seen := shingles(t, s, strings.Join(words[:n], " "))
			want := max(n-w+1, 0)
			if n > 0 && n < w {
				want = 1
			}
			if len(hs) != want || seen != n {
				t.Fatalf("w=%d n=%d: %d shingles, %d words; want %d, %d", w, n, len(hs), seen, want, n)
			}
		}
	}
}

func TestShinglesAreWindows(t *testing.T) {
	// The i-th shingle of a long text equals the only shingle of its window.
	words := strings.Fields("the quick brown fox jumps over the lazy dog and runs far away")
	s := mustNew(t, 4, 7)
	all, _ := shingles(t, s, strings.Join(words, " "))
	for i := range all {
		one, _ := shingles(t, s, strings.Join(words[i:i+4], " "))
		if len(one) != 1 || one[0] != all[i] {
			t.Fatalf("shingle %d differs from its window", i)
		}
	}
	// Repeated windows hash equally: "the quick" vs "the lazy" differ.
	s2 := mustNew(t, 2, 7)
	hs, _ := shingles(t, s2, "a b a b")
	if hs[0] != hs[2] || hs[0] == hs[1] {
		t.Fatalf("window equality broken: %x", hs)
	}
}

func TestShortDocument(t *testing.T) {
	s := mustNew(t, 4, 1)
	short, n := shingles(t, s, "one two three")
	if len(short) != 1 || n != 3 {
		t.Fatalf("short doc: %d shingles, %d words", len(short), n)
	}
	full, _ := shingles(t, s, "one two three four")
	if short[0] == full[0] {
		t.Fatal("short shingle equals a full shingle")
	}
	// A 3-word document with w=3 is a full shingle; with w=4 a short one.
	// They use the same chain with the same n, so they are equal: the only
	// difference between short and full shingles is n.
	s3 := mustNew(t, 3, 1)
	full3, _ := shingles(t, s3, "one two three")
	if full3[0] != short[0] {
		t.Fatal("short shingle of n words should equal the full n-shingle of the same seed")
	}
	one, _ := shingles(t, s, "one")
	two, _ := shingles(t, s, "one one")
	if one[0] == two[0] {
		t.Fatal("word count not bound into the short shingle")
	}
	none, n := shingles(t, s, "")
	if len(none) != 0 || n != 0 {
		t.Fatal("empty document emitted a shingle")
	}
}

func TestOrderSensitive(t *testing.T) {
	s := mustNew(t, 3, 9)
	a, _ := shingles(t, s, "red green blue")
	b, _ := shingles(t, s, "blue green red")
	c, _ := shingles(t, s, "green red blue")
	if a[0] == b[0] || a[0] == c[0] || b[0] == c[0] {
		t.Fatal("shingle hash is not order-sensitive")
	}
	// Word boundaries matter: "ab c" != "a bc".
	s2 := mustNew(t, 2, 9)
	x, _ := shingles(t, s2, "ab c")
	y, _ := shingles(t, s2, "a bc")
	if x[0] == y[0] {
		t.Fatal("word boundary not bound into the hash")
	}
}

func TestSeed(t *testing.T) {
	a, _ := shingles(t, mustNew(t, 4, 1), "a b c d")
	b, _ := shingles(t, mustNew(t, 4, 2), "a b c d")
	if a[0] == b[0] {
		t.Fatal("seed has no effect")
	}
	if HashBytes([]byte("word"), 1) == HashBytes([]byte("word"), 2) {
		t.Fatal("HashBytes ignores the seed")
	}
}

// TestGolden pins the hash values: they are part of the stored format
// (fingerprint.HashVersion), so they must not change across runs, machines or
// refactorings.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"", 0x6e01c0317d5c53d0},
		{"a", 0xd4d9ebda0073284a},
		{"hello", 0x1ea4092fcdd48b84},
		{"abcdefgh", 0x95890e7f2de536be},
		{"internationalization", 0x744201a21eff3de1},
		{"café", 0x5536b50074762ec2},
	} {
		if got := HashBytes([]byte(tc.in), 0x1234); got != tc.want {
			t.Errorf("HashBytes(%q) = %#x, want %#x", tc.in, got, tc.want)
		}
	}
	hs, _ := shingles(t, mustNew(t, 4, 0x1234), "the quick brown fox jumps")
	want := []uint64{0x6fcac596501ccd0c, 0x360df1512a557bd1}
	if !slices.Equal(hs, want) {
		t.Errorf("shingles = %#x, want %#x", hs, want)
	}
}

func TestDeterministicAndReusable(t *testing.T) {
	text := strings.Repeat("lorem ipsum dolor sit amet consectetur ", 20)
	s := mustNew(t, 4, 5)
	a, _ := shingles(t, s, text)
	shingles(t, s, "something else entirely here today")
	b, _ := shingles(t, s, text)
	c, _ := shingles(t, mustNew(t, 4, 5), text)
	if !slices.Equal(a, b) || !slices.Equal(a, c) {
		t.Fatal("not deterministic")
	}
}

func TestHashQuality(t *testing.T) {
	// No collisions among 200 000 distinct short words, and every output bit
	// set about half the time.
	seen := make(map[uint64]string, 200000)
	var ones [64]int
	const n = 200000
	for i := 0; i < n; i++ {
		w := fmt.Sprintf("w%d", i)
		h := HashBytes([]byte(w), 77)
		if prev, ok := seen[h]; ok {
			t.Fatalf("collision: %q and %q", prev, w)
		}
		seen[h] = w
		for b := 0; b < 64; b++ {
			ones[b] += int(h >> b & 1)
		}
	}
	// Binomial(n, 1/2): sd = sqrt(n)/2 ≈ 224; allow 5 sd.
	for b, c := range ones {
		if c < n/2-1120 || c > n/2+1120 {
			t.Errorf("bit %d set %d times of %d", b, c, n)
		}
	}
	// Avalanche: flipping one input bit flips about half the output bits.
	in := []byte("avalanche test 0123456789")
	base := HashBytes(in, 3)
	total, flips := 0, 0
	for i := range in {
		for b := 0; b < 8; b++ {
			in[i] ^= 1 << b
			flips += bits.OnesCount64(base ^ HashBytes(in, 3))
			total += 64
			in[i] ^= 1 << b
		}
	}
	if frac := float64(flips) / float64(total); frac < 0.47 || frac > 0.53 {
		t.Errorf("avalanche fraction %.3f", frac)
	}
}

func FuzzShingler(f *testing.F) {
	f.Add("the quick brown fox", 4, uint64(1))
	f.Add("a", 3, uint64(0))
	f.Add("", 1, uint64(99))
	f.Add("x y z x y z x y z", 2, uint64(5))
	f.Fuzz(func(t *testing.T, text string, w int, seed uint64) {
		s, err := New(w, seed)
		if err != nil {
			if w >= 1 && w <= MaxWidth {
				t.Fatalf("New(%d): %v", w, err)
			}
			return
		}
		a, n := shingles(t, s, text)
		b, m := shingles(t, s, text)
		if !slices.Equal(a, b) || n != m {
			t.Fatal("not deterministic")
		}
		want := max(n-w+1, 0)
		if n > 0 && n < w {
			want = 1
		}
		if len(a) != want || n != len(strings.Fields(text)) {
			t.Fatalf("%d shingles for %d words, w=%d", len(a), n, w)
		}
	})
}

func BenchmarkAdd(b *testing.B) {
	s := mustNew(b, 4, 1)
	word := []byte("example")
	var sink uint64
	emit := func(h uint64) { sink ^= h }
	for b.Loop() {
		s.Add(word, emit)
	}
	_ = sink
}

// TestAddHashesSameAsAdd: words given to AddHashes in chunks of any size,
// mixed with calls of Add, give the shingles (and the Finish) that Add
// gives word by word.
func TestAddHashesSameAsAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, w := range []int{1, 2, 3, 4, 5, 9} {
		ref, s := mustNew(t, w, 7), mustNew(t, w, 7)
		for trial := range 200 {
			n := rng.IntN(40)
			if trial%50 == 0 {
				n = 1000
			}
			words := make([][]byte, n)
			for i := range words {
				words[i] = fmt.Appendf(nil, "w%d", rng.IntN(30))
			}
			var want, got []uint64
			emitW := func(h uint64) { want = append(want, h) }
			emitG := func(h uint64) { got = append(got, h) }
			ref.Reset()
			s.Reset()
			for _, word := range words {
				ref.Add(word, emitW)
			}
			for i := 0; i < n; {
				if rng.IntN(4) == 0 {
					s.Add(words[i], emitG)
					i++
					continue
				}
				j := min(n, i+rng.IntN(12))
				var hs []uint64
				for _, word := range words[i:j] {
					hs = append(hs, s.WordHash(word))
				}
				got = s.AddHashes(got, hs)
				i = j
			}
			if a, b := ref.Finish(emitW), s.Finish(emitG); a != b || !slices.Equal(got, want) {
				t.Fatalf("w=%d trial %d: AddHashes gave %d shingles (Finish %d), Add %d (Finish %d)", w, trial, len(got), b, len(want), a)
			}
		}
	}
}
