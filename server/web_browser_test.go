package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/internal/browsertest"
	"github.com/fpdb/fpdb/server/httpapi"
)

// The browser tests drive the review page in headless Chromium, at a
// laptop's size (1280×800). They are skipped without Chromium, unless
// $FPDB_REQUIRE_BROWSER is 1 (see internal/browsertest);
// $FPDB_UPDATE_SCREENSHOT=1 rewrites docs/web-query.png and
// docs/web-compare.png.
func webBrowser(t *testing.T) context.Context {
	t.Helper()
	ctx := browsertest.Start(t, "the review page is not tried in a browser", 1280, 800, 2*time.Minute)
	run(ctx, t, "starting the browser", chromedp.EmulateViewport(1280, 800))
	return ctx
}

// run runs actions, failing the test on an error.
func run(ctx context.Context, t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	browsertest.Do(ctx, t, what, actions...)
}

// press clicks a button whose work reports in the element statusID, waits
// for the work to end and returns the report; it fails on an error
// reported.
func press(ctx context.Context, t *testing.T, button, statusID string) string {
	t.Helper()
	msg, bad := browsertest.Press(ctx, t, button, statusID)
	if bad {
		t.Fatalf("pressing %s: the page says %q", button, msg)
	}
	return msg
}

// setValue sets a field's value as typing would.
func setValue(ctx context.Context, t *testing.T, sel, value string) {
	t.Helper()
	browsertest.Fill(ctx, t, sel, value)
}

// fixed3 prints x as the page does: 3 decimals, halves rounded up.
func fixed3(x float64) string { return fmt.Sprintf("%.3f", math.Round(x*1000)/1000) }

// share3 prints a containment as the page does ("–" when unknown).
func share3(x float64) string {
	if x == 0 {
		return "–"
	}
	return fixed3(x)
}

// served reports whether the server has the route "METHOD PATTERN" (the
// compare and clusters endpoints are added beside this page).
func served(op string) bool {
	return slices.ContainsFunc((&Server{}).routes(), func(rt httpapi.Route) bool { return rt.Method+" "+rt.Pattern == op })
}

// corpus reads a text of the example corpus.
func corpus(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", "corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// apiJSON sends a JSON request to the API and decodes the answer.
func apiJSON(t *testing.T, method, u string, in, out any, hdr ...string) {
	t.Helper()
	if st := call(t, method, u, "application/json", jsonBody(in), out, hdr...); st != http.StatusOK {
		t.Fatalf("%s %s: %d", method, u, st)
	}
}

// TestWebInBrowser adds documents through the page (pasted and as a file),
// finds the ones like a text and checks every row the page shows against
// POST /v1/query, opens a match's shared passages, and lists the clusters
// (checked against GET /v1/clusters when the server has it).
func TestWebInBrowser(t *testing.T) {
	ctx := webBrowser(t)
	ts, _ := testServer(t, nil)
	run(ctx, t, "opening the page", chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.ID("#text")),
		chromedp.Poll[chromedp.Void](`document.getElementById("stats").textContent.includes("0 documents")`))

	soil := corpus(t, "2024-017-soil-microbiome.txt")
	docs := []struct{ id, text string }{
		{"2024-017-soil-microbiome.txt", soil},
		{"2025-003-soil-microbiome-resubmitted.txt", corpus(t, "2025-003-soil-microbiome-resubmitted.txt")},
		{"2024-021-coastal-flood-forecasting.txt", corpus(t, "2024-021-coastal-flood-forecasting.txt")},
	}
	for _, d := range docs {
		setValue(ctx, t, "#text", d.text)
		setValue(ctx, t, "#doc-id", d.id)
		if msg := press(ctx, t, "#add", "results-status"); msg != "Stored "+d.id+"." {
			t.Fatalf("adding %s: the page says %q", d.id, msg)
		}
	}
	// The fourth as a file, under its name, checked first: its near
	// duplicate is reported.
	file := filepath.Join(t.TempDir(), "2025-011-coastal-flood-forecasting-copy.txt")
	if err := os.WriteFile(file, []byte(corpus(t, "2025-011-coastal-flood-forecasting-copy.txt")), 0o600); err != nil {
		t.Fatal(err)
	}
	setValue(ctx, t, "#doc-id", "")
	run(ctx, t, "choosing a file", chromedp.SetUploadFiles(chromedp.ID("#file"), []string{file}),
		chromedp.Click(chromedp.ID("#check-first")))
	if msg := press(ctx, t, "#add", "results-status"); msg != "Stored 2025-011-coastal-flood-forecasting-copy.txt. Near duplicates found:" {
		t.Fatalf("adding a file: the page says %q", msg)
	}
	if ids := browsertest.Eval[[]string](ctx, t, `Array.from(document.querySelectorAll("#matches tbody tr")).map(r => r.dataset.id)`); !slices.Equal(ids, []string{docs[2].id}) {
		t.Errorf("adding a file: matches %v", ids)
	}
	run(ctx, t, "back to the text", chromedp.Click(chromedp.ID("#clear-file")),
		chromedp.Poll[chromedp.Void](`document.getElementById("stats").textContent.includes("4 documents")`))

	// Find the documents like a new version of the soil proposal, at a
	// threshold and with a containment.
	words := strings.Fields(soil)
	query := strings.Join(words[:len(words)*4/5], " ") + "\n\nThis version adds two field technicians and a mobile laboratory."
	setValue(ctx, t, "#text", query)
	field := func(x float64) string {
		if x == 0 {
			return ""
		}
		return fmt.Sprint(x)
	}
	for _, c := range []api.QueryRequest{{Threshold: 0.3}, {Containment: 0.5}, {Threshold: 0.6, Containment: 0.3}} {
		c.Text = query
		setValue(ctx, t, "#threshold", field(c.Threshold))
		setValue(ctx, t, "#containment", field(c.Containment))
		press(ctx, t, "#find", "results-status")
		shown := browsertest.Eval[[][]string](ctx, t, `Array.from(document.querySelectorAll("#matches tbody tr")).map(r => Array.from(r.cells).slice(0, 6).map(c => c.textContent))`)
		var want api.QueryResult
		apiJSON(t, "POST", ts.URL+"/v1/query", c, &want)
		if len(want.Matches) == 0 {
			t.Fatalf("query %+v: no match: the test shows nothing", c)
		}
		var rows [][]string
		for i, m := range want.Matches {
			exact := ""
			if m.Exact {
				exact = "yes"
			}
			rows = append(rows, []string{fmt.Sprint(i + 1), m.ID, fixed3(m.Similarity), share3(m.QueryInDoc), share3(m.DocInQuery), exact})
		}
		if !slices.EqualFunc(shown, rows, slices.Equal) {
			t.Errorf("threshold %v, containment %v: the page shows\n%q\nthe API answers\n%q", c.Threshold, c.Containment, shown, rows)
		}
	}
	// The keyboard: Tab leads from the containment to "Find similar",
	// which shows its focus, and Enter presses it.
	setValue(ctx, t, "#threshold", "0.3")
	setValue(ctx, t, "#containment", "")
	run(ctx, t, "tabbing to Find similar", chromedp.Evaluate[chromedp.Void](`document.getElementById("results-status").textContent = ""`),
		chromedp.Focus(chromedp.ID("containment")), chromedp.KeyEvent("\t"))
	if got := browsertest.Eval[string](ctx, t, `document.activeElement.id + " " + getComputedStyle(document.activeElement).outlineStyle`); got != "find solid" {
		t.Errorf("after Tab from the containment: %q has the focus, want a visible focus on find", got)
	}
	run(ctx, t, "pressing Enter", chromedp.KeyEvent("\r"),
		chromedp.Poll[chromedp.Void](`document.getElementById("results-status").className === "ok"`))
	if n := browsertest.Eval[int](ctx, t, `document.querySelectorAll("#matches tbody tr").length`); n != 2 {
		t.Errorf("Enter on Find similar: %d rows", n)
	}
	if os.Getenv(browsertest.EnvUpdateScreenshot) == "1" {
		run(ctx, t, "scrolling to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
		screenshot(ctx, t, "web-query.png")
	}

	// The shared passages of the first match.
	if served("POST /v1/compare") {
		first := browsertest.Eval[string](ctx, t, `document.querySelector("#matches tbody tr").dataset.id`)
		run(ctx, t, "opening a match", chromedp.Click(chromedp.CSS("#matches tbody tr .compare-open")),
			chromedp.WaitVisible(chromedp.ID("#compare-passages")))
		var cmp struct {
			Estimated float64 `json:"estimated"`
			Passages  []struct {
				A struct{ Start, End int } `json:"a"`
			} `json:"passages"`
		}
		in := map[string]any{"a": map[string]string{"text": query}, "b": map[string]string{"id": first}}
		apiJSON(t, "POST", ts.URL+"/v1/compare", in, &cmp)
		if len(cmp.Passages) == 0 {
			t.Fatal("the comparison has no passage")
		}
		flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
		p := cmp.Passages[0].A
		passage := flat(query[p.Start:p.End])
		shown := flat(browsertest.Eval[string](ctx, t, `document.getElementById("compare-passages").innerText`))
		if len(passage) < 60 || !strings.Contains(shown, passage) {
			t.Errorf("the page shows the passages\n%s\nwithout the first, %q", shown, passage)
		}
		if got := browsertest.Eval[string](ctx, t, `document.querySelector("#compare-figures tr td.num").textContent`); got != fmt.Sprintf("%.3f", cmp.Estimated) {
			t.Errorf("estimated resemblance %q on the page, %.3f from the API", got, cmp.Estimated)
		}
		if os.Getenv(browsertest.EnvUpdateScreenshot) == "1" {
			screenshot(ctx, t, "web-compare.png")
		}
		run(ctx, t, "closing the comparison", chromedp.Click(chromedp.ID("#compare-close")))
		if !browsertest.Eval[bool](ctx, t, `document.activeElement.classList.contains("compare-open") && document.getElementById("compare").hidden`) {
			t.Error("closing the comparison does not give the focus back to its button")
		}
	} else {
		t.Log("the server has no POST /v1/compare yet: the shared passages are not tried")
	}

	// The clusters.
	run(ctx, t, "opening the clusters", chromedp.Click(chromedp.ID("#show-clusters")), chromedp.WaitVisible(chromedp.ID("#cluster-threshold")))
	setValue(ctx, t, "#cluster-threshold", "0.3")
	if !served("GET /v1/clusters") {
		t.Log("the server has no GET /v1/clusters yet: the clusters are not tried")
		return
	}
	press(ctx, t, "#show-cluster-list", "clusters-status")
	shown := browsertest.Eval[[][]string](ctx, t, `Array.from(document.querySelectorAll("#cluster-list > li")).map(li =>
		[li.querySelector(".cluster-head").textContent].concat(Array.from(li.querySelectorAll(".members li")).map(m => m.textContent)))`)
	resp, err := http.Get(ts.URL + "/v1/clusters?threshold=0.3")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var want [][]string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var c struct {
			Cluster, Size, Pairs int
			IDs                  []string
			Center               string
			Cohesion             float64
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", sc.Bytes(), err)
		}
		row := []string{fmt.Sprintf("Cluster %d: %d documents, %d pair%s, cohesion %s (least similarity to %s)",
			c.Cluster, c.Size, c.Pairs, map[bool]string{true: "", false: "s"}[c.Pairs == 1], fixed3(c.Cohesion), c.Center)}
		for _, id := range c.IDs {
			if id == c.Center {
				id += " (center)"
			}
			row = append(row, id)
		}
		want = append(want, row)
	}
	if len(want) != 2 || !slices.EqualFunc(shown, want, slices.Equal) {
		t.Errorf("the page shows the clusters\n%q\nthe API answers\n%q", shown, want)
	}
}

// TestWebTokensInBrowser: with tokens, the page asks for one when the API
// answers 401, asks again when it is refused, then works; ids are shown
// as text.
func TestWebTokensInBrowser(t *testing.T) {
	ctx := webBrowser(t)
	const token = "web-test-token-0123456789"
	tokens, err := ParseTokens(strings.NewReader("rw " + token + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, &Options{Tokens: tokens})
	run(ctx, t, "opening the page", chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("#token")))
	if !browsertest.Eval[bool](ctx, t, `document.getElementById("token-dialog").open && document.activeElement.id === "token"`) {
		t.Fatal("the token prompt is not open, or its field has not the focus")
	}
	run(ctx, t, "giving a wrong token", chromedp.SendKeys(chromedp.ID("#token"), "not-the-token-at-all"), chromedp.Click(chromedp.ID("#token-ok")),
		chromedp.Poll[chromedp.Void](`document.getElementById("token-dialog").open && document.getElementById("token-reason").textContent.includes("refused")`))
	run(ctx, t, "giving the token", chromedp.SendKeys(chromedp.ID("#token"), token+"\n"),
		chromedp.Poll[chromedp.Void](`document.getElementById("stats").textContent.includes("0 documents")`))
	if browsertest.Eval[string](ctx, t, `sessionStorage.getItem("fpdb-token")`) != token {
		t.Error("the token is not in the session storage")
	}
	hostile := `<img src=x onerror="document.title='owned'">.txt`
	text := corpus(t, "2024-042-bird-migration-tracking.txt")
	setValue(ctx, t, "#text", text)
	setValue(ctx, t, "#doc-id", hostile)
	press(ctx, t, "#add", "results-status")
	press(ctx, t, "#find", "results-status")
	var want api.QueryResult
	apiJSON(t, "POST", ts.URL+"/v1/query", api.QueryRequest{Text: text}, &want, "Authorization", "Bearer "+token)
	shown := browsertest.Eval[[]string](ctx, t, `Array.from(document.querySelectorAll("#matches tbody td.id")).map(c => c.textContent)`)
	if len(want.Matches) != 1 || !slices.Equal(shown, []string{want.Matches[0].ID}) || want.Matches[0].ID != hostile {
		t.Errorf("the page shows %q, the API answers %+v", shown, want.Matches)
	}
	if n := browsertest.Eval[int](ctx, t, `document.querySelectorAll("main img").length`); n != 0 || browsertest.Eval[string](ctx, t, `document.title`) == "owned" {
		t.Error("an id became markup")
	}
	run(ctx, t, "forgetting the token", chromedp.Click(chromedp.ID("#forget-token")))
	if browsertest.Eval[string](ctx, t, `sessionStorage.getItem("fpdb-token") || ""`) != "" {
		t.Error("the token is still stored")
	}
}

// screenshot writes the page as it is shown to docs/NAME.
func screenshot(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
