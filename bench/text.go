package bench

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fpdb/fpdb/internal/normalize"
	"github.com/fpdb/fpdb/internal/shingle"
)

// Zipf draws words from a vocabulary of V synthetic words with
// Pr[rank i] ∝ 1/(i+1)^s, deterministically from its seed.
type Zipf struct {
	rng   *rand.Rand
	cdf   []float64
	words []string
}

// NewZipf returns a Zipf word source over v words with exponent s.
func NewZipf(v int, s float64, seed uint64) *Zipf {
	z := &Zipf{rng: rand.New(rand.NewPCG(seed, 0x7a697066)), cdf: make([]float64, v), words: make([]string, v)}
	total := 0.0
	for i := range v {
		total += 1 / math.Pow(float64(i+1), s)
		z.cdf[i] = total
	}
	for i := range z.cdf {
		z.cdf[i] /= total
	}
	// Words are pronounceable letter strings, distinct by construction.
	const cons, vow = "bcdfghjklmnprstvwz", "aeiou"
	for i := range z.words {
		var b []byte
		x := i
		for {
			b = append(b, cons[x%len(cons)], vow[(x/len(cons))%len(vow)])
			x /= len(cons) * len(vow)
			if x == 0 {
				break
			}
		}
		z.words[i] = string(b)
	}
	return z
}

// Fork returns a word source over the same vocabulary with its own random
// stream, drawn from seed: forks can be used on different goroutines.
func (z *Zipf) Fork(seed uint64) *Zipf {
	return &Zipf{rng: rand.New(rand.NewPCG(seed, 0x7a697066)), cdf: z.cdf, words: z.words}
}

// Word returns the next random word.
func (z *Zipf) Word() string {
	i, _ := slices.BinarySearch(z.cdf, z.rng.Float64())
	return z.words[min(i, len(z.words)-1)]
}

// Doc returns a document of about size bytes: random words separated by
// spaces, with a full stop and a line break every dozen words or so.
func (z *Zipf) Doc(size int) []string {
	var words []string
	n := 0
	for n < size {
		w := z.Word()
		words = append(words, w)
		n += len(w) + 1
	}
	return words
}

// EditKind is a kind of word edit.
type EditKind int

// Edit kinds.
const (
	Substitute EditKind = iota
	Insert
	Delete
	Move
)

// String names the edit kind.
func (e EditKind) String() string {
	return [...]string{"substitute", "insert", "delete", "move"}[e]
}

// Edit returns a copy of words with edits random edits of the given kind:
// substitute or insert a random word, delete a word, or move a run of 1–20
// words to another position.
func (z *Zipf) Edit(words []string, kind EditKind, edits int) []string {
	out := slices.Clone(words)
	for range edits {
		if len(out) < 2 {
			break
		}
		i := z.rng.IntN(len(out))
		switch kind {
		case Substitute:
			out[i] = z.Word()
		case Insert:
			out = slices.Insert(out, i, z.Word())
		case Delete:
			out = slices.Delete(out, i, i+1)
		case Move:
			l := 1 + z.rng.IntN(min(20, len(out)-i))
			run := slices.Clone(out[i : i+l])
			out = slices.Delete(out, i, i+l)
			j := z.rng.IntN(len(out) + 1)
			out = slices.Insert(out, j, run...)
		}
	}
	return out
}

// Render joins words into a text: spaces between words, a full stop and a
// line break every 12 words.
func Render(words []string) []byte {
	var b bytes.Buffer
	for i, w := range words {
		b.WriteString(w)
		switch {
		case i%12 == 11:
			b.WriteString(".\n")
		default:
			b.WriteByte(' ')
		}
	}
	return b.Bytes()
}

// ShingleSet returns the sorted, distinct w-word shingle hashes of text,
// normalized and shingled exactly as fpdb fingerprints it
// (internal/normalize, internal/shingle). The Jaccard resemblance of two
// such sets is the ground truth the fingerprints estimate; with 64-bit
// hashes, collisions are negligible.
func ShingleSet(text []byte, w int) ([]uint64, error) {
	sh, err := shingle.New(w, 0x6a616363617264)
	if err != nil {
		return nil, err
	}
	var set []uint64
	emit := func(h uint64) { set = append(set, h) }
	tok := normalize.NewTokenizer()
	if err := tok.Words(bytes.NewReader(text), func(word []byte) { sh.Add(word, emit) }); err != nil {
		return nil, fmt.Errorf("bench: shingle: %w", err)
	}
	sh.Finish(emit)
	slices.Sort(set)
	return slices.Compact(set), nil
}

// Jaccard returns |a ∩ b| / |a ∪ b| of two sorted sets without repeats
// (1 when both are empty).
func Jaccard(a, b []uint64) float64 {
	inter := 0
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			inter++
			i++
			j++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 1
	}
	return float64(inter) / float64(union)
}

// SimilarPairs returns every pair (i < j) of sets with Jaccard ≥ minJ and
// its resemblance, exactly, using an inverted index of the shingles (pairs
// sharing no shingle have resemblance 0).
func SimilarPairs(sets [][]uint64, minJ float64) map[[2]int]float64 {
	inv := map[uint64][]int32{}
	for i, s := range sets {
		for _, h := range s {
			inv[h] = append(inv[h], int32(i))
		}
	}
	out := map[[2]int]float64{}
	shared := map[int32]int{}
	for i, s := range sets {
		clear(shared)
		for _, h := range s {
			for _, j := range inv[h] {
				if int(j) > i {
					shared[j]++
				}
			}
		}
		for j, c := range shared {
			union := len(s) + len(sets[j]) - c
			if jac := float64(c) / float64(union); jac >= minJ {
				out[[2]int{i, int(j)}] = jac
			}
		}
	}
	return out
}
