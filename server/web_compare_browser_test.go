package server

import (
	"context"
	"encoding/binary"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/chromedp/chromedp"
	"golang.org/x/text/encoding/charmap"

	"github.com/fpdb/fpdb/internal/browsertest"
)

// comparePage presses the Compare button of the first match and waits for
// the comparison: it returns the figures shown (label, value) and the
// passages (words, the text in the query's side, in the stored one), or
// fails on an error shown. The page asks the server for one comparison.
func comparePage(ctx context.Context, t *testing.T) (figures [][]string, passages [][]string) {
	t.Helper()
	run(ctx, t, "comparing with the first match",
		chromedp.Evaluate[chromedp.Void](`performance.clearResourceTimings()`),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("compare-body").replaceChildren()`),
		chromedp.Click(chromedp.CSS("#matches tbody tr .compare-open")),
		chromedp.Poll[chromedp.Void](`(() => { const b = document.getElementById("compare-body");
			return b.querySelector("#compare-figures") !== null || b.className === "error"; })()`))
	if msg := browsertest.Eval[string](ctx, t, `(b => b.className === "error" ? b.textContent : "")(document.getElementById("compare-body"))`); msg != "" {
		t.Fatalf("comparing: the page says %q", msg)
	}
	if n := browsertest.Eval[int](ctx, t, `performance.getEntriesByType("resource").filter(e => new URL(e.name).pathname.endsWith("/v1/compare")).length`); n != 1 {
		t.Errorf("the page asked for %d comparisons, want 1", n)
	}
	if save := browsertest.Eval[string](ctx, t, `document.getElementById("compare-save").href`); !strings.HasPrefix(save, "blob:") {
		t.Errorf("the comparison's page is not offered to save: %q", save)
	}
	figures = browsertest.Eval[[][]string](ctx, t, `Array.from(document.querySelectorAll("#compare-figures tr")).map(r => Array.from(r.cells).map(c => c.textContent))`)
	passages = browsertest.Eval[[][]string](ctx, t, `Array.from(document.querySelectorAll("#compare-passages tbody tr")).map(r =>
		[r.cells[1].textContent, r.cells[2].querySelector(".ptext").textContent, r.cells[3].querySelector(".ptext").textContent])`)
	return figures, passages
}

// storeText stores a text under id through the API.
func storeText(t *testing.T, base, id, text string) {
	t.Helper()
	if st := call(t, "POST", base+"/v1/documents", "application/json", jsonBody(map[string]string{"id": id, "text": text}), nil); st != http.StatusCreated {
		t.Fatalf("storing %s: %d", id, st)
	}
}

// TestWebCompareOverlapInBrowser: two passages that overlap in one text
// are each shown whole in the comparison's table (the page's marks give
// the words they share to the first only).
func TestWebCompareOverlapInBrowser(t *testing.T) {
	if !served("POST /v1/compare") {
		t.Skip("the server has no POST /v1/compare")
	}
	ctx := webBrowser(t)
	ts, _ := testServer(t, nil)
	const (
		x = "apple banana cherry date elder fig grape honeydew iris jasmine"
		y = "kiwi lemon mango nectarine orange papaya quince raspberry sage thyme"
		z = "ugli vanilla walnut xigua yam zucchini acorn bean corn dill"
	)
	a := x + " " + y + " " + z + "\n"
	b := x + " " + y + " filler words go right here now okay. " + y + " " + z + "\n"
	storeText(t, ts.URL, "b.txt", b)
	run(ctx, t, "opening the page", chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.ID("#text")),
		chromedp.Poll[chromedp.Void](`document.getElementById("stats").textContent.includes("1 document")`))
	setValue(ctx, t, "#text", a)
	setValue(ctx, t, "#threshold", "0.1")
	press(ctx, t, "#find", "results-status")
	_, shown := comparePage(ctx, t)

	var cmp struct {
		Passages []struct {
			A, B struct{ Start, End, Words int }
		} `json:"passages"`
	}
	apiJSON(t, "POST", ts.URL+"/v1/compare", map[string]any{"a": map[string]string{"text": a}, "b": map[string]string{"id": "b.txt"}}, &cmp)
	var want [][]string
	for _, p := range cmp.Passages {
		want = append(want, []string{strconv.Itoa(p.A.Words), a[p.A.Start:p.A.End], b[p.B.Start:p.B.End]})
	}
	if len(want) < 2 || !strings.Contains(want[0][1]+want[1][1], y+" "+z) {
		t.Fatalf("the comparison's passages %q have not the overlap the test is about", want)
	}
	if !slices.EqualFunc(shown, want, slices.Equal) {
		t.Errorf("the page shows the passages\n%q\nthe API answers\n%q", shown, want)
	}

	// The other way round, with the overlap in a stored HTML document
	// (in place of b.txt): its passages are shown whole as readable text.
	if st := call(t, "DELETE", ts.URL+"/v1/documents/b.txt", "", nil, nil); st != http.StatusOK {
		t.Fatalf("deleting b.txt: %d", st)
	}
	storeText(t, ts.URL, "c.html", "<p>"+x+" &amp; <b>"+y+"</b> "+z+"</p>\n")
	setValue(ctx, t, "#text", b)
	press(ctx, t, "#find", "results-status")
	_, shown = comparePage(ctx, t)
	var html struct {
		Passages []struct {
			A, B struct {
				Start, End, Words int
				Readable          string
			}
		} `json:"passages"`
	}
	apiJSON(t, "POST", ts.URL+"/v1/compare", map[string]any{"a": map[string]string{"text": b}, "b": map[string]string{"id": "c.html"}, "texts": true}, &html)
	want = nil
	for _, p := range html.Passages {
		want = append(want, []string{strconv.Itoa(p.A.Words), b[p.A.Start:p.A.End], p.B.Readable})
	}
	if len(want) < 2 || !strings.Contains(want[0][2], y) || !strings.Contains(want[1][2], y) || !strings.Contains(want[0][2]+want[1][2], " & ") || strings.Contains(want[0][2]+want[1][2], "<") {
		t.Fatalf("the HTML comparison's passages %q have not the overlap the test is about, as readable text", want)
	}
	if !slices.EqualFunc(shown, want, slices.Equal) {
		t.Errorf("the page shows the HTML passages\n%q\nthe API answers\n%q", shown, want)
	}
}

// TestWebCompareEncodingsInBrowser: a file that is not UTF-8 (Latin-1,
// UTF-16 with a byte-order mark, HTML that declares its charset, a text
// file that looks like HTML and declares one), or is markup by its name
// (.xml), is compared as the query reads it: the stored copy of its text is an exact duplicate in the
// query and in the comparison, which shows the whole text as one passage
// on both sides.
func TestWebCompareEncodingsInBrowser(t *testing.T) {
	if !served("POST /v1/compare") {
		t.Skip("the server has no POST /v1/compare")
	}
	ctx := webBrowser(t)
	ts, _ := testServer(t, nil)
	latin := "Le café du marché était fermé, mais la crème brûlée préférée de Noël restait à goûter. " +
		"Où étaient les élèves français ? À l'hôtel, près du lycée, où l'on déjeûne à côté de la forêt. " +
		"Ça coûte cher, répète-t-il: « Déjà vu, naïveté, façade, rôle, âge, piñata, señor, über, Øre, Ærø. »\n"
	cyrillic := "Съешь же ещё этих мягких французских булок да выпей чаю. Широкая электрификация южных губерний " +
		"даст мощный толчок подъёму сельского хозяйства. Любя, съешь щипцы, - вздохнёт мэр, - кайф жгуч.\n"
	storeText(t, ts.URL, "latin-utf8.txt", latin)
	storeText(t, ts.URL, "cyrillic-utf8.txt", cyrillic)

	encode := func(e *charmap.Charmap, s string) []byte {
		b, err := e.NewEncoder().Bytes([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	utf16With := func(order binary.AppendByteOrder, s string) []byte {
		b := order.AppendUint16(nil, 0xFEFF)
		for _, u := range utf16.Encode([]rune(s)) {
			b = order.AppendUint16(b, u)
		}
		return b
	}
	dir := t.TempDir()
	files := []struct {
		name   string
		data   []byte
		stored string
	}{
		{"latin1.txt", encode(charmap.ISO8859_1, latin), "latin-utf8.txt"},
		{"windows-1252-mixed.txt", append([]byte("Le café "), encode(charmap.Windows1252, strings.TrimPrefix(latin, "Le café "))...), "latin-utf8.txt"},
		{"utf16le.txt", utf16With(binary.LittleEndian, latin), "latin-utf8.txt"},
		{"utf16be.txt", utf16With(binary.BigEndian, cyrillic), "cyrillic-utf8.txt"},
		{"koi8.html", encode(charmap.KOI8R, `<html><head><meta charset="koi8-r"><title></title></head><body><p>`+cyrillic+`</p></body></html>`), "cyrillic-utf8.txt"},
		// Markup by its name, as the CLI and the comparison read it, not
		// by its first bytes (an <item> does not start HTML).
		{"notes.xml", []byte("<item>" + latin + "</item>"), "latin-utf8.txt"},
		{"cp1251-page.txt", encode(charmap.Windows1251, "<!DOCTYPE html>\n<!-- <meta charset=\"utf-8\"> -->\n<meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1251\">\n<p>"+cyrillic), "cyrillic-utf8.txt"},
	}
	run(ctx, t, "opening the page", chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.ID("#text")),
		chromedp.Poll[chromedp.Void](`document.getElementById("stats").textContent.includes("2 documents")`))
	setValue(ctx, t, "#threshold", "0.5")
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		run(ctx, t, "choosing "+f.name, chromedp.SetUploadFiles(chromedp.ID("#file"), []string{path}))
		press(ctx, t, "#find", "results-status")
		if m := browsertest.Eval[[]string](ctx, t, `Array.from(document.querySelector("#matches tbody tr").cells).map(c => c.textContent)`); len(m) < 6 || m[1] != f.stored || m[2] != "1.000" || m[5] != "yes" {
			t.Fatalf("%s: the query's first match is %q, want %s, an exact duplicate", f.name, m, f.stored)
		}
		figures, passages := comparePage(ctx, t)
		var values []string
		for _, fig := range figures {
			values = append(values, fig[len(fig)-1])
		}
		if want := []string{"1.000", "1.000", "100.0 %", "100.0 %"}; !slices.Equal(values, want) {
			t.Errorf("%s: the comparison with its stored copy shows the figures %q, want %q", f.name, values, want)
		}
		if len(passages) != 1 || passages[0][1] != passages[0][2] || len(strings.Fields(passages[0][1])) < 25 {
			t.Errorf("%s: the comparison shows the passages %q, want one, the same on both sides", f.name, passages)
		}
	}
}
