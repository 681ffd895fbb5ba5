package cluster

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fpdb/fpdb/internal/browsertest"
)

// TestWebInBrowserOnCluster drives the review page a cluster node serves
// in headless Chromium (skipped without it, unless
// $FPDB_REQUIRE_BROWSER is 1): documents added through one node's page
// are found through another's, with their near duplicates; the clusters
// view lists them; a comparison with a stored document says that a
// cluster keeps no texts.
func TestWebInBrowserOnCluster(t *testing.T) {
	ctx := browsertest.Start(t, "the review page of a cluster node is not tried in a browser", 1280, 800, 2*time.Minute)
	tc := startCluster(t, 3, 4, 2, nil)
	var urls []string
	for _, nd := range tc.nodes[:2] {
		srv := httptest.NewServer(nd.Handler(nil))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	riverNear := nearDup(t, riverText, "two hundred", "three hundred", "iron scale", "brass scale")

	browsertest.Do(ctx, t, "opening n1's page", chromedp.Navigate(urls[0]+"/"), chromedp.WaitVisible(chromedp.ID("#text")),
		chromedp.Poll[chromedp.Void](`document.getElementById("stats").textContent.includes("0 documents")`))
	for _, d := range []struct{ id, text string }{{"river", riverText}, {"ship", shipText}} {
		browsertest.Fill(ctx, t, "#text", d.text)
		browsertest.Fill(ctx, t, "#doc-id", d.id)
		if msg, bad := browsertest.Press(ctx, t, "#add", "results-status"); bad || msg != "Stored "+d.id+"." {
			t.Fatalf("adding %s: the page says %q", d.id, msg)
		}
	}
	browsertest.Fill(ctx, t, "#text", riverNear)
	browsertest.Fill(ctx, t, "#doc-id", "river-near")
	browsertest.Do(ctx, t, "checking first", chromedp.Click(chromedp.ID("#check-first")))
	if msg, bad := browsertest.Press(ctx, t, "#add", "results-status"); bad || msg != "Stored river-near. Near duplicates found:" {
		t.Fatalf("adding a near duplicate, checked first: the page says %q", msg)
	}

	// Through n2's page: the query finds both river documents.
	browsertest.Do(ctx, t, "opening n2's page", chromedp.Navigate(urls[1]+"/"), chromedp.WaitVisible(chromedp.ID("#text")),
		chromedp.Poll[chromedp.Void](`document.getElementById("stats").textContent.includes("3 documents")`))
	browsertest.Fill(ctx, t, "#text", riverNear)
	browsertest.Fill(ctx, t, "#threshold", "0.5")
	if msg, bad := browsertest.Press(ctx, t, "#find", "results-status"); bad {
		t.Fatalf("finding: the page says %q", msg)
	}
	ids := browsertest.Eval[[]string](ctx, t, `Array.from(document.querySelectorAll("#matches tbody tr")).map(r => r.dataset.id)`)
	if !slices.Equal(ids, []string{"river-near", "river"}) {
		t.Fatalf("matches on n2's page: %v", ids)
	}

	// A comparison needs the stored text: the page says why there is none.
	browsertest.Do(ctx, t, "opening a match", chromedp.Click(chromedp.CSS("#matches tbody tr .compare-open")),
		chromedp.Poll[chromedp.Void](`(() => { const t = document.getElementById("compare-body").textContent; return t !== "" && !t.endsWith("…"); })()`,
			chromedp.WithPollingInterval(20*time.Millisecond)))
	if got := browsertest.Eval[string](ctx, t, `document.getElementById("compare-body").textContent`); !strings.Contains(got, "keeps no texts") {
		t.Fatalf("comparison on a cluster: the page says %q", got)
	}
	browsertest.Do(ctx, t, "closing the comparison", chromedp.Click(chromedp.ID("#compare-close")))

	// The clusters view.
	browsertest.Do(ctx, t, "opening the clusters", chromedp.Click(chromedp.ID("#show-clusters")), chromedp.WaitVisible(chromedp.ID("#cluster-threshold")))
	browsertest.Fill(ctx, t, "#cluster-threshold", "0.5")
	if msg, bad := browsertest.Press(ctx, t, "#show-cluster-list", "clusters-status"); bad {
		t.Fatalf("clusters: the page says %q", msg)
	}
	members := browsertest.Eval[[]string](ctx, t, `Array.from(document.querySelectorAll("#cluster-list > li .members li")).map(m => m.textContent)`)
	if len(members) != 2 || !strings.Contains(strings.Join(members, " "), "river-near") {
		t.Fatalf("clusters on the page: %q", members)
	}
}
