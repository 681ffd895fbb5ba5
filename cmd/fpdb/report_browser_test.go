package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/net/html"

	"github.com/fpdb/fpdb/internal/browsertest"
)

// browserTimeout bounds the whole browser session.
const browserTimeout = 90 * time.Second

// browser starts headless Chromium and returns a context to run actions in.
// The test is skipped without Chromium, unless $FPDB_REQUIRE_BROWSER is 1
// (see internal/browsertest); $FPDB_UPDATE_SCREENSHOT=1 rewrites
// docs/report.png.
func browser(t *testing.T) context.Context {
	t.Helper()
	return browsertest.Start(t, "the report is not rendered in a browser", 1100, 1500, browserTimeout)
}

func TestReportInBrowser(t *testing.T) {
	ctx := browser(t)
	// The shipped example corpus (grant proposals and their
	// resubmissions) and a third version of one, under relative names: the
	// screenshot shows no path of the machine.
	shot, err := filepath.Abs("../../docs/report.png")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.CopyFS(filepath.Join(work, "proposals"), os.DirFS("../../examples/corpus")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	orig, err := os.ReadFile("proposals/2024-017-soil-microbiome.txt")
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields(string(orig))
	third := strings.Join(words[:len(words)*4/5], " ") + "\n\nThe budget of this version pays for two field technicians and a mobile laboratory.\n"
	if err := os.WriteFile("proposals/2026-002-soil-microbiome-third.txt", []byte(third), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := "fpdb-data"
	runFPDB(t, "", "--db", dir, "add", "proposals").mustCode(t, exitDuplicates)
	const threshold = "0.5"
	sims := map[string]float64{}
	for _, p := range jsonLines(t, runFPDB(t, "", "--db", dir, "pairs", "--threshold", threshold, "--json").mustCode(t, exitOK).stdout) {
		sims[pairKey(p["a"].(string), p["b"].(string))] = p["similarity"].(float64)
	}
	clusters := jsonLines(t, runFPDB(t, "", "--db", dir, "clusters", "--threshold", threshold, "--json").mustCode(t, exitOK).stdout)
	if len(clusters) < 3 {
		t.Fatalf("%d clusters in the example corpus", len(clusters))
	}
	out := filepath.Join(work, "report.html")
	runFPDB(t, "", "--db", dir, "report", "--threshold", threshold, "--passages", "3", "--out", out).mustCode(t, exitOK)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := parsePage(t, string(b))

	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+out), chromedp.WaitVisible(chromedp.ID("summary"))); err != nil {
		t.Fatalf("rendering %s: %v", out, err)
	}
	visible := browsertest.Eval[string](ctx, t, `document.body.innerText`)
	cells := browsertest.Eval[[]int](ctx, t, `Array.from(document.querySelectorAll("svg.matrix")).map(s => s.querySelectorAll("rect.cell").length)`)
	requests := browsertest.Eval[int](ctx, t, `performance.getEntriesByType("resource").length`)
	if requests != 0 {
		t.Errorf("the page loaded %d resources", requests)
	}
	// Every cluster's ids, size and cohesion, and every pair's similarity,
	// as the browser shows them.
	for i, c := range clusters {
		for _, id := range c["ids"].([]any) {
			if !strings.Contains(visible, id.(string)) {
				t.Errorf("cluster %d: %s not on the screen", i+1, id)
			}
		}
		if size := int(c["size"].(float64)); i >= len(cells) || cells[i] != size*size {
			t.Errorf("cluster %d: pictures of %v cells, want %d", i+1, cells, size*size)
		}
		if want := fmt.Sprintf("Cluster %d: %d documents", i+1, int(c["size"].(float64))); !strings.Contains(visible, want) {
			t.Errorf("%q not on the screen", want)
		}
	}
	for _, s := range sims {
		if want := fmt.Sprintf("estimated resemblance %.3f", s); !strings.Contains(visible, want) {
			t.Errorf("%q not on the screen", want)
		}
	}
	// A pair opens on a click: its passages, as the page holds them, then
	// show.
	passage := strings.TrimSpace(nodeText(elements(page.ids["c1-p1-passages"], func(n *html.Node) bool {
		return htmlAttr(n, "class") == "ptext"
	})[0]))
	if len(passage) < 40 {
		t.Fatalf("first passage %q", passage)
	}
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if browsertest.Eval[bool](ctx, t, `document.getElementById("c1-p1-passages").checkVisibility()`) || strings.Contains(flat(visible), flat(passage)) {
		t.Fatal("a closed pair's passages are visible")
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#c1-p1 > summary")), chromedp.WaitVisible(chromedp.ID("c1-p1-passages"))); err != nil {
		t.Fatalf("opening the first pair: %v", err)
	}
	if !browsertest.Eval[bool](ctx, t, `document.getElementById("c1-p1").open`) {
		t.Fatal("the first pair did not open")
	}
	table := browsertest.Eval[string](ctx, t, `document.getElementById("c1-p1-passages").innerText`)
	if browsertest.Eval[bool](ctx, t, `document.getElementById("c2-p1-passages").checkVisibility()`) {
		t.Error("opening one pair opened another")
	}
	if !strings.Contains(flat(table), flat(passage)) {
		t.Errorf("the opened pair shows\n%s\nwithout its passage %q", table, passage)
	}
	if os.Getenv(browsertest.EnvUpdateScreenshot) != "1" {
		return
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1100, 1500)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
