package normalize

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/iotest"
)

// span is a word and the input bytes it came from.
type span struct {
	word       string
	start, end int64
}

func spansOf(t testing.TB, tk *Tokenizer, r interface{ Read([]byte) (int, error) }) []span {
	t.Helper()
	var out []span
	err := tk.WordSpans(r, func(w []byte, start, end int64) {
		out = append(out, span{string(w), start, end})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWordSpansTable(t *testing.T) {
	for _, tc := range []struct {
		version int
		format  Format
		in      string
		want    []string // the input text of each word's span
	}{
		{2, FormatText, "Hello, WORLD!", []string{"Hello", "WORLD"}},
		{2, FormatText, "  don't\tstop\n", []string{"don", "t", "stop"}},
		{2, FormatText, "日本語 text", []string{"日", "本", "語", "text"}},
		{2, FormatText, "e\u0301cole café", []string{"e\u0301cole", "café"}},
		{2, FormatText, "ﬁne ﬂow", []string{"ﬁne", "ﬂow"}},
		{2, FormatText, "soft\u00adhyphen x", []string{"soft\u00adhyphen", "x"}},
		{2, FormatMarkup, "<p>caf&eacute; <b>bold</b>er</p>", []string{"caf&eacute;", "bold", "er"}},
		{2, FormatMarkup, "a &lt; b &amp;&amp; c", []string{"a", "b", "c"}},
		{2, FormatMarkup, "x <notatag y", []string{"x", "notatag", "y"}},
		{2, FormatMarkup, "<script>var a</script>ok", []string{"ok"}},
		{1, FormatAuto, "R&D <i>is</i> fun", []string{"R", "D", "is", "fun"}},
		{2, FormatText, "ΣΑΣ Ωμέγα", []string{"ΣΑΣ", "Ωμέγα"}},
	} {
		tk := &Tokenizer{Version: tc.version, Format: tc.format}
		got := spansOf(t, tk, bytes.NewReader([]byte(tc.in)))
		var texts []string
		for _, s := range got {
			texts = append(texts, tc.in[s.start:s.end])
		}
		if !slices.Equal(texts, tc.want) {
			t.Errorf("v%d %v %q: spans %q, want %q (words %v)", tc.version, tc.format, tc.in, texts, tc.want, got)
		}
	}
}

// TestWordSpansProperties checks on random documents with every construct
// that WordSpans gives the words of Words, with spans inside the input, in
// order, the same however the input is read, and that the text of each
// span alone gives back its word.
func TestWordSpansProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 60; trial++ {
		doc := mixedDoc(rng, 100+rng.IntN(2000))
		if trial == 0 {
			doc = mixedDoc(rng, 2*bufSize+33)
		}
		version := 1 + trial%2
		format := []Format{FormatText, FormatMarkup}[trial/2%2]
		tk := &Tokenizer{Version: version, Format: format}
		got := spansOf(t, tk, bytes.NewReader(doc))
		ws, err := words(t, &Tokenizer{Version: version, Format: format}, bytes.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		var gw []string
		for _, s := range got {
			gw = append(gw, s.word)
		}
		if !slices.Equal(gw, ws) {
			t.Fatalf("trial %d: WordSpans words differ from Words", trial)
		}
		oneByte := spansOf(t, &Tokenizer{Version: version, Format: format}, iotest.OneByteReader(bytes.NewReader(doc)))
		if !slices.Equal(got, oneByte) {
			t.Fatalf("trial %d: spans differ with a one-byte reader", trial)
		}
		chunked := spansOf(t, &Tokenizer{Version: version, Format: format}, &chunkReader{data: doc, rng: rng, max: 1 + rng.IntN(50)})
		if !slices.Equal(got, chunked) {
			t.Fatalf("trial %d: spans differ with a chunked reader", trial)
		}
		prevEnd := int64(0)
		for i, s := range got {
			if s.start < 0 || s.start >= s.end || s.end > int64(len(doc)) {
				t.Fatalf("trial %d: word %d %q has span [%d, %d) in %d bytes", trial, i, s.word, s.start, s.end, len(doc))
			}
			if s.start < prevEnd && !(i > 0 && got[i-1].start == s.start && got[i-1].end == s.end) {
				t.Fatalf("trial %d: word %d %q at %d overlaps the previous word ending at %d", trial, i, s.word, s.start, prevEnd)
			}
			prevEnd = s.end
			alone, err := words(t, &Tokenizer{Version: version, Format: format}, bytes.NewReader(doc[s.start:s.end]))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.word) < MaxWordLen && !slices.Equal(alone, []string{s.word}) {
				t.Fatalf("trial %d: word %d %q: its span %q alone gives %q", trial, i, s.word, doc[s.start:s.end], alone)
			}
		}
	}
}
