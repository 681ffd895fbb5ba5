package normalize

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// TestV3InlineTags: in markup, version 3 reads the tags of inline
// elements and comments as a browser shows them, joining the text on both
// sides; every other tag still separates words, and version 2 is as it was.
func TestV3InlineTags(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		v3, v2 []string
	}{
		{"empty span inside a word", "<p>P<span></span>layful</p>", []string{"playful"}, []string{"p", "layful"}},
		{"drop cap", `<p><span class="dropcap">T</span>he end</p>`, []string{"the", "end"}, []string{"t", "he", "end"}},
		{"comment inside a word", "<p>pla<!-- x -->yful</p>", []string{"playful"}, []string{"pla", "yful"}},
		{"wbr", "<p>super<wbr>cali<wbr/>fragile</p>", []string{"supercalifragile"}, []string{"super", "cali", "fragile"}},
		{"bold and link", `<p>re<b>sub</b>mit <a href="x">l</a>ink</p>`, []string{"resubmit", "link"}, []string{"re", "sub", "mit", "l", "ink"}},
		{"upper-case tags", "<P>A<SPAN>B</SPAN>C</P>", []string{"abc"}, []string{"a", "b", "c"}},
		{"block tags separate", "<div>a</div><div>b</div><p>c<br>d</p><ul><li>e<li>f</ul><table><tr><td>g<td>h</table>", []string{"a", "b", "c", "d", "e", "f", "g", "h"}, nil},
		{"image separates", "<p>a<img src=x.png>b</p>", []string{"a", "b"}, nil},
		{"unknown and custom elements separate", "<p>a<foo>b</foo>c<my-el>d</my-el></p>", []string{"a", "b", "c", "d"}, nil},
		{"a longer name is not an inline one", "<p>a<spanner>b<bb>c</p>", []string{"a", "b", "c"}, nil},
		{"prefixed and custom names are not inline ones", "<a:p><a:t>Hello</a:t></a:p><a:p><a:t>world</a:t></a:p>one<b-card>two</b-card>x<span-foo>y<q-btn>z</q-btn>w<b:Book>v",
			[]string{"hello", "world", "one", "two", "x", "y", "z", "w", "v"}, nil},
		{"attributes and self-closing still read the name", "<p>a<span class=x>b</span >c<wbr/>d<b\n>e</p>", []string{"abcde"}, []string{"a", "b", "c", "d", "e"}},
		{"declaration separates", "<html>a<!DOCTYPE x>b</html>", []string{"a", "b"}, nil},
		{"processing instruction separates", "<html>a<?php x ?>b</html>", []string{"a", "b"}, nil},
		{"punctuation '<' separates", "<html>a<3 b< c</html>", []string{"a", "3", "b", "c"}, nil},
		{"unterminated tag is text", "<html>a<b c", []string{"a", "b", "c"}, nil},
		{"'<' inside a tag cancels it", "<html>x<b <y>z", []string{"x", "b", "z"}, nil},
		{"entity still separates", "<p>a<b>&amp;</b>c</p>", []string{"a", "c"}, nil},
		{"script joins, its text dropped", "<p>a<script>var x;</script>b</p>", []string{"ab"}, []string{"a", "b"}},
		{"end tags never start a script", "<p>a</script>b c</p>", []string{"ab", "c"}, []string{"a", "b", "c"}},
		{"cjk", "<p>日<b>本</b>語</p>", []string{"日", "本", "語"}, nil},
		{"accents across a tag", "<p>caf<i>é</i> Cr<b>È</b>me</p>", []string{"café", "crème"}, []string{"caf", "é", "cr", "è", "me"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.v2 == nil {
				tc.v2 = tc.v3
			}
			for _, c := range []struct {
				v    int
				want []string
			}{{3, tc.v3}, {2, tc.v2}} {
				if got := wordsVersion(t, c.v, FormatMarkup, tc.in); !slices.Equal(got, c.want) {
					t.Errorf("version %d: Words(%q)\n got %q\nwant %q", c.v, tc.in, got, c.want)
				}
			}
		})
	}
	// Plain text is not markup: tags are words there, as before.
	if got := wordsVersion(t, 3, FormatText, "P<span></span>layful"); !slices.Equal(got, []string{"p", "span", "span", "layful"}) {
		t.Errorf("plain text: %q", got)
	}
}

// TestV3Spans: a word joined across tags spans from its first character to
// its last, tags included; the words around it keep their own spans.
func TestV3Spans(t *testing.T) {
	in := "<p>one P<span></span>lay<!-- c -->ful two</p>"
	type span struct {
		w          string
		start, end int64
	}
	var got []span
	tk := &Tokenizer{Version: 3, Format: FormatMarkup}
	if err := tk.WordSpans(strings.NewReader(in), func(w []byte, s, e int64) { got = append(got, span{string(w), s, e}) }); err != nil {
		t.Fatal(err)
	}
	p := int64(strings.Index(in, "P<"))
	want := []span{
		{"one", 3, 6},
		{"playful", p, int64(strings.Index(in, "ful") + 3)},
		{"two", int64(strings.Index(in, "two")), int64(strings.Index(in, "two") + 3)},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("spans of %q:\n got %v\nwant %v", in, got, want)
	}
}

// TestV3Streaming: random markup gives the same words whether read in
// place, through the buffered reader or one byte at a time (a tag or a
// word cut between reads).
func TestV3Streaming(t *testing.T) {
	pieces := []string{"a", "Bc", "dé", "日", " ", "\n", "<span>", "</span>", "<b>", "</B>", "<wbr>", "<!-- x -->", "<p>", "</div>",
		"<br/>", "<", ">", "&amp;", "&eacute;", "<script>x</script>", "</script>", "<!x>", "<?y?>", "<a href='<'>", "<3"}
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 2000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		in := b.String()
		tk := &Tokenizer{Version: 3, Format: FormatMarkup}
		want, err := words(t, tk, strings.NewReader(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		inPlace(t, tk, []byte(in), want, err)
		got, err := words(t, tk, iotest.OneByteReader(bytes.NewReader([]byte(in))))
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("case %d: one byte at a time %q: %q (%v), want %q", i, in, got, err, want)
		}
	}
}

// TestV3Markers: the inline elements named in JoiningElements are those
// the tokenizer joins on, and no other.
func TestV3Markers(t *testing.T) {
	for _, name := range strings.Fields(JoiningElements) {
		if name == "script" || name == "style" {
			continue // their content is dropped: checked in TestV3InlineTags
		}
		in := fmt.Sprintf("<p>x<%s>y</%s>z</p>", name, strings.ToUpper(name))
		if got := wordsVersion(t, 3, FormatMarkup, in); !slices.Equal(got, []string{"xyz"}) {
			t.Errorf("%s: %q", in, got)
		}
	}
	for _, name := range []string{"p", "div", "br", "li", "td", "h1", "img", "input", "button", "select", "hr", "section"} {
		in := fmt.Sprintf("<p>x<%s>y</%s>z</p>", name, name)
		if got := wordsVersion(t, 3, FormatMarkup, in); !slices.Equal(got, []string{"x", "y", "z"}) {
			t.Errorf("%s: %q", in, got)
		}
	}
}
