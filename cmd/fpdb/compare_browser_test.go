package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/fpdb/fpdb/internal/browsertest"
)

// TestCompareInBrowser: on a compare page where one passage covers another
// whole in text A, every passage's table link and click-to-jump reach it.
func TestCompareInBrowser(t *testing.T) {
	ctx := browsertest.Start(t, "the compare page is not tried in a browser", 1100, 900, browserTimeout)
	const x = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"
	work := t.TempDir()
	a, b, page := filepath.Join(work, "r1.txt"), filepath.Join(work, "r2.txt"), filepath.Join(work, "c.html")
	if err := os.WriteFile(a, []byte("Start of r1. "+x+" End of r1.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	filler := strings.Repeat("Lines of r2 that differ from r1.\n", 60)
	if err := os.WriteFile(b, []byte("Head of r2. "+x+"\n"+filler+x+" Tail.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runFPDB(t, "", "--db", dbDir(t), "compare", "--html", page, a, b).mustCode(t, exitOK)
	browsertest.Do(ctx, t, "rendering the page", chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.ID("text-a")))

	// jump clicks (or presses Enter on) the element sel and returns the id
	// of the element focused then.
	jump := func(sel string, enter bool) string {
		t.Helper()
		action := `e.click()`
		if enter {
			action = `e.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", bubbles: true}))`
		}
		return browsertest.Eval[string](ctx, t, `(() => { document.activeElement.blur(); const e = document.querySelector(`+
			"`"+sel+"`"+`); if (!e) return "no " + `+"`"+sel+"`"+`; `+action+`; return document.activeElement.id; })()`)
	}
	for _, tc := range []struct {
		sel   string
		enter bool
		want  string
	}{
		{`#text-b mark[data-p="2"]`, false, "a2"},
		{`#text-b mark[data-p="2"]`, true, "a2"},
		{`#text-b mark[data-p="1"]`, false, "a1"},
		{`#text-a mark[data-p="1"]`, false, "b1"},
		{`#a2`, false, "b2"}, // passage 2's start, inside passage 1's mark
		{`#a2`, true, "b2"},
	} {
		if got := jump(tc.sel, tc.enter); got != tc.want {
			t.Errorf("%s (Enter %v) focused %q, want %q", tc.sel, tc.enter, got, tc.want)
		}
	}
	// The table's links lead to elements, and passage 2's brings its
	// anchor in A to the screen.
	links := browsertest.Eval[[]string](ctx, t, `Array.from(document.querySelectorAll('a[href^="#"]')).map(a => a.getAttribute("href"))`)
	if len(links) != 2 {
		t.Fatalf("links %v", links)
	}
	for _, l := range links {
		if !browsertest.Eval[bool](ctx, t, `document.getElementById("`+l[1:]+`") !== null`) {
			t.Errorf("link %s: no such element", l)
		}
	}
	browsertest.Do(ctx, t, "following the link to passage 2", chromedp.Click(chromedp.CSS(`a[href="#a2"]`)))
	if !browsertest.Eval[bool](ctx, t, `location.hash === "#a2" && document.getElementById("a2").checkVisibility()`) {
		t.Error("the link to passage 2 shows no anchor")
	}
}
