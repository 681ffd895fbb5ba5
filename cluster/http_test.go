package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/client"
	"github.com/fpdb/fpdb/server"
	"github.com/fpdb/fpdb/server/httpapi"
)

// Texts of the HTTP tests: each base text, and a near duplicate of it made
// by changing a few words.
const (
	riverText = `The old mill stood at the bend of the river for more than two hundred years. Farmers from the valley
brought their grain in autumn, and the miller weighed every sack on an iron scale that his grandfather had bought in the city.
In the spring floods the water rose above the lower door, and the family carried the flour up to the loft before dawn.
Children from the village came to watch the great wheel turn, and the miller told them stories about the winter when the
river froze solid and the wheel stopped for six weeks. When the railway reached the valley, the farmers began to send their
grain to the large mills in the north, and the old mill slowly fell silent. Today the building is a small museum, and on
summer weekends volunteers open the sluice so that visitors can hear the wheel creak and groan as it did long ago.`

	notesText = `Release notes for version four of the scheduling service. The configuration file now accepts durations
written with units, so a timeout of thirty seconds may be given as 30s instead of a bare number. Jobs that fail three
times in a row are moved to a separate queue, where an operator can inspect them, retry them by hand, or discard them.
The command line tool prints a table of the next ten runs of every job, with the host each run is assigned to. Metrics
are exported in the Prometheus text format on a port of their own, and the old statistics page has been removed. Upgrading
from version three requires no change to existing job definitions, but the database schema is migrated on first start.`

	shipText = `The harbour master kept a ledger of every ship that entered the bay during the long summer of that year.
Most were fishing boats returning with herring and cod, but each week a tall sailing ship arrived from the south with
wine, oranges and bolts of bright cloth. Merchants crowded the quay to bargain with the captains, and porters carried the
barrels up the steep lanes to the warehouses behind the church. In August a storm drove three ships onto the rocks beyond
the lighthouse; the crews were saved by rowers from the village, whose names the harbour master wrote at the foot of the page.`

	birdText = `Migratory birds navigate by a combination of cues: the position of the sun during the day, the pattern of
stars at night, the Earth's magnetic field, and familiar landmarks such as coastlines and mountain ranges. Young birds on
their first journey often follow older members of the flock, learning the route and the resting places along the way.
Researchers fit lightweight transmitters to individual birds and track them across continents, discovering that some
species fly for days without landing, crossing deserts and open seas in a single effort.`
)

// nearDup changes words of text: each pair of replaced, replacement.
func nearDup(t *testing.T, text string, pairs ...string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(text, pairs[i]) {
			t.Fatalf("nearDup: %q not in the text", pairs[i])
		}
		text = strings.Replace(text, pairs[i], pairs[i+1], 1)
	}
	return text
}

// httpNodes mounts each node's handler on a test server on 127.0.0.1 and
// returns a client of each.
func httpNodes(t *testing.T, tc *testCluster, o *HTTPOptions, token string) []*client.Client {
	t.Helper()
	var out []*client.Client
	for _, nd := range tc.nodes {
		srv := httptest.NewServer(nd.Handler(o))
		t.Cleanup(srv.Close)
		c, err := client.New(srv.URL, &client.Options{Token: token, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// wantStatus checks that err is a client error of the status and code.
func wantStatus(t *testing.T, what string, err error, status int, code string) *client.Error {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) {
		t.Fatalf("%s: error %v, want a %d", what, err, status)
	}
	if ce.Status != status || ce.Code != code {
		t.Fatalf("%s: %d %s (%s), want %d %s", what, ce.Status, ce.Code, ce.Message, status, code)
	}
	return ce
}

func matchIDs(ms []api.Match) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// TestHTTP drives a 3-node cluster through its nodes' HTTP handlers with
// the Go client: adds, check-then-add across nodes, queries, get, delete,
// batch, stats, pairs, clusters, routes not served, limits and tokens.
func TestHTTP(t *testing.T) {
	tc := startCluster(t, 3, 4, 2, nil)
	cs := httpNodes(t, tc, nil, "")
	ctx := context.Background()
	riverNear := nearDup(t, riverText, "two hundred", "three hundred", "iron scale", "brass scale")
	shipNear := nearDup(t, shipText, "long summer", "hot summer", "bright cloth", "fine cloth")

	t.Run("Health", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			resp, err := http.Get(cs[1].URL() + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
			}
		}
	})

	t.Run("AddCheckQuery", func(t *testing.T) {
		res, err := cs[0].Add(ctx, api.AddRequest{ID: "river-1", Text: riverText, Source: "mill.txt"})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Stored || res.Replaced || res.Rejected || res.Unchanged {
			t.Fatalf("add river-1: %+v", res)
		}
		// Check-then-add through another node sees the first add.
		res, err = cs[1].Add(ctx, api.AddRequest{ID: "river-2", Text: riverNear, Threshold: 0.7, Reject: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stored || !res.Rejected || len(res.Matches) != 1 || res.Matches[0].ID != "river-1" || res.Matches[0].Similarity < 0.7 {
			t.Fatalf("check-then-add river-2 with reject: %+v", res)
		}
		t.Logf("river-2 resembles river-1 at %.3f", res.Matches[0].Similarity)
		res, err = cs[1].Add(ctx, api.AddRequest{ID: "river-2", Text: riverNear, Threshold: 0.7})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Stored || res.Rejected || !slices.Equal(matchIDs(res.Matches), []string{"river-1"}) {
			t.Fatalf("check-then-add river-2 without reject: %+v", res)
		}
		// The same content again, with Reject: it stays stored, so it is
		// unchanged (with its match), not rejected.
		res, err = cs[0].Add(ctx, api.AddRequest{ID: "river-2", Text: riverNear, Threshold: 0.7, Reject: true})
		if err != nil || res.Stored || res.Rejected || !res.Unchanged || !slices.Equal(matchIDs(res.Matches), []string{"river-1"}) {
			t.Fatalf("re-add of river-2 unchanged, with reject: %+v, %v", res, err)
		}
		// A write through the third node, then its query sees every
		// earlier write (read-your-writes: MinSeq is its last append).
		if res, err = cs[2].Add(ctx, api.AddRequest{ID: "notes-1", Text: notesText}); err != nil || !res.Stored {
			t.Fatalf("add notes-1: %+v, %v", res, err)
		}
		qr, err := cs[2].Query(ctx, api.QueryRequest{Text: riverText})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(matchIDs(qr.Matches), []string{"river-1", "river-2"}) || !qr.Matches[0].Exact || qr.Matches[0].Similarity != 1 || qr.Matches[1].Exact {
			t.Fatalf("query through node 3: %+v", qr.Matches)
		}
		qr, err = cs[2].Query(ctx, api.QueryRequest{Text: riverText, Threshold: 0.99, Limit: 1})
		if err != nil || !slices.Equal(matchIDs(qr.Matches), []string{"river-1"}) {
			t.Fatalf("query threshold 0.99: %+v, %v", qr, err)
		}
		// The same query by the fingerprint that get returns.
		doc, err := cs[2].Get(ctx, "river-1")
		if err != nil {
			t.Fatal(err)
		}
		if doc.ID != "river-1" || doc.Source != "mill.txt" || doc.Words < 100 || doc.Shingles == 0 || doc.Size != int64(len(riverText)) ||
			len(doc.Fingerprint) != 512/4 || len(doc.ContentHash) != 32 {
			t.Fatalf("get river-1: %+v", doc)
		}
		if _, err := time.Parse(time.RFC3339Nano, doc.Added); err != nil {
			t.Fatalf("added %q: %v", doc.Added, err)
		}
		qr, err = cs[0].Query(ctx, api.QueryRequest{Fingerprint: doc.Fingerprint, Threshold: 0.7})
		if err != nil || !slices.Equal(matchIDs(qr.Matches), []string{"river-1", "river-2"}) {
			t.Fatalf("query by fingerprint: %+v, %v", qr, err)
		}
		// Nothing like a text not stored.
		qr, err = cs[1].Query(ctx, api.QueryRequest{Text: birdText})
		if err != nil || len(qr.Matches) != 0 {
			t.Fatalf("query birds: %+v, %v", qr, err)
		}
	})

	t.Run("UnchangedReplaced", func(t *testing.T) {
		res, err := cs[0].Add(ctx, api.AddRequest{ID: "river-1", Text: riverText, Source: "mill.txt"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stored || !res.Unchanged || res.Rejected {
			t.Fatalf("add river-1 again: %+v", res)
		}
		res, err = cs[2].Add(ctx, api.AddRequest{ID: "notes-1", Text: nearDup(t, notesText, "version four", "version five")})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Stored || !res.Replaced {
			t.Fatalf("add notes-1 changed: %+v", res)
		}
		_, err = cs[0].Add(ctx, api.AddRequest{ID: "river-1", Text: riverText, Replace: true})
		ce := wantStatus(t, "replace", err, http.StatusNotImplemented, codeNotImplemented)
		if !strings.Contains(ce.Message, "not served by a cluster node") {
			t.Fatalf("replace: %q", ce.Message)
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		_, err := cs[0].Add(ctx, api.AddRequest{ID: "empty-1", Text: ""})
		ce := wantStatus(t, "empty text", err, http.StatusBadRequest, api.CodeBadRequest)
		if ce.Reason != "no_words" {
			t.Fatalf("empty text: reason %q", ce.Reason)
		}
		_, err = cs[0].Query(ctx, api.QueryRequest{Text: riverText, Threshold: 2})
		ce = wantStatus(t, "threshold 2", err, http.StatusBadRequest, api.CodeBadRequest)
		if ce.Reason != "invalid_threshold" {
			t.Fatalf("threshold 2: reason %q", ce.Reason)
		}
		_, err = cs[0].Add(ctx, api.AddRequest{ID: "x", Text: riverText, Reject: true})
		wantStatus(t, "reject without threshold", err, http.StatusBadRequest, api.CodeBadRequest)
		_, err = cs[0].Query(ctx, api.QueryRequest{Text: riverText, Plan: "scan"})
		wantStatus(t, "plan scan", err, http.StatusNotImplemented, codeNotImplemented)
		_, err = cs[0].Query(ctx, api.QueryRequest{Text: riverText, Recall: 0.99})
		wantStatus(t, "recall without plan approx", err, http.StatusBadRequest, api.CodeBadRequest)
		_, err = cs[0].Query(ctx, api.QueryRequest{Text: riverText, Limit: -1})
		if ce := wantStatus(t, "negative limit", err, http.StatusBadRequest, api.CodeBadRequest); ce.Reason != "invalid_options" {
			t.Errorf("negative limit: reason %q, want invalid_options as one database gives", ce.Reason)
		}
		resp, err := http.Post(cs[0].URL()+"/v1/delete", "application/json", strings.NewReader(`{"prefix": ""}`))
		if err != nil {
			t.Fatal(err)
		}
		var ae api.ErrorBody
		if err := json.NewDecoder(resp.Body).Decode(&ae); err != nil || resp.StatusCode != http.StatusBadRequest || ae.Error.Reason != "empty_prefix" {
			t.Errorf("delete of an empty prefix: %d %+v (%v), want 400 empty_prefix", resp.StatusCode, ae, err)
		}
		resp.Body.Close()
		_, err = cs[0].BatchChecked(ctx, []api.AddRequest{{ID: "b-1", Text: riverText, Replace: true}}, api.BatchCheck{Threshold: 0.8})
		wantStatus(t, "checked batch with replace", err, http.StatusNotImplemented, codeNotImplemented)
	})

	// The documents of one batch are added in their order, as one
	// database adds them: keep oldest chooses the first, not the least id.
	t.Run("BatchOrder", func(t *testing.T) {
		var words []string
		for i := range 120 {
			words = append(words, fmt.Sprintf("ordw%d", i*7919%1000))
		}
		text := strings.Join(words, " ")
		if _, err := cs[1].Batch(ctx, []api.AddRequest{{ID: "order-z", Text: text}, {ID: "order-a", Text: text + " tail"}}); err != nil {
			t.Fatal(err)
		}
		for keep, want := range map[string]string{"oldest": "order-z", "newest": "order-a"} {
			var got *api.Cluster
			err := cs[0].Clusters(ctx, client.ClustersOptions{Threshold: 0.8, Keep: keep}, func(c api.Cluster) error {
				if slices.Contains(c.IDs, "order-z") {
					got = &c
				}
				return nil
			})
			if err != nil || got == nil {
				t.Fatalf("clusters keep %s: %v, cluster %v", keep, err, got)
			}
			if got.Keep != want || !slices.Equal(got.IDs, []string{"order-z", "order-a"}) {
				t.Errorf("keep %s: ids %q keep %q, want [order-z order-a] keep %q", keep, got.IDs, got.Keep, want)
			}
		} // The other subtests do not expect them.
		if _, err := cs[1].DeleteMany(ctx, api.DeleteRequest{IDs: []string{"order-z", "order-a"}}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		if _, err := cs[0].Add(ctx, api.AddRequest{ID: "gone/1", Text: birdText}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs[0].Get(ctx, "gone/1"); err != nil {
			t.Fatal(err)
		}
		// Deleted through another node than the add's: the check reads
		// at the log's last sequence.
		dr, err := cs[1].Delete(ctx, "gone/1", nil)
		if err != nil || dr.Deleted != 1 {
			t.Fatalf("delete: %+v, %v", dr, err)
		}
		_, err = cs[1].Get(ctx, "gone/1")
		if !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("get after delete: %v", err)
		}
		_, err = cs[1].Delete(ctx, "gone/1", nil)
		wantStatus(t, "delete again", err, http.StatusNotFound, api.CodeNotFound)
	})

	t.Run("Batch", func(t *testing.T) {
		br, err := cs[1].Batch(ctx, []api.AddRequest{
			{ID: "ship-1", Text: shipText, Source: "ledger"},
			{ID: "ship-2", Text: shipNear},
			{ID: "bird-1", Text: birdText},
			// The id again, a text without words, and an unchanged document.
			{ID: "ship-1", Text: birdText},
			{ID: "empty-1", Text: "  "},
			{ID: "notes-1", Text: nearDup(t, notesText, "version four", "version five")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if br.Stored != 3 || br.Replaced != 0 || br.Unchanged != 1 || len(br.Skipped) != 2 || br.Skipped[0].Line != 4 || br.Skipped[1].Line != 5 {
			t.Fatalf("batch: %+v", br)
		}
		if br.Skipped[0].Reason != "duplicate_in_batch" || br.Skipped[1].Reason != "no_words" {
			t.Errorf("batch: skipped for reasons %q and %q, want duplicate_in_batch and no_words", br.Skipped[0].Reason, br.Skipped[1].Reason)
		}
		st, err := cs[1].Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// river-1, river-2, notes-1, ship-1, ship-2, bird-1.
		if st.Docs != 6 || st.K != 512 || st.ShingleWidth == 0 || len(st.GroupWidths) == 0 || st.Seed == 0 {
			t.Fatalf("stats: %+v", st)
		}
		if c, err := time.Parse(time.RFC3339, st.Created); err != nil || time.Since(c) > time.Hour {
			t.Errorf("stats: created %q (%v), want the log's creation time", st.Created, err)
		}
		ss, err := cs[2].StorageStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Each shard counted once: the posting ids are docs × m.
		if ss.Docs != 6 || ss.DiskBytes <= 0 || ss.PostingIDs != int64(6*len(st.GroupWidths)) || len(ss.PostingLengths) == 0 {
			t.Fatalf("storage stats: %+v", ss)
		}
	})

	t.Run("PairsClusters", func(t *testing.T) {
		var pairs []api.Pair
		err := cs[0].Pairs(ctx, 0.7, func(p api.Pair) error { pairs = append(pairs, p); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if len(pairs) != 2 || pairs[0].A != "river-1" || pairs[0].B != "river-2" || pairs[1].A != "ship-1" || pairs[1].B != "ship-2" ||
			pairs[0].Similarity < 0.7 || pairs[0].Exact {
			t.Fatalf("pairs: %+v", pairs)
		}
		var cls []api.Cluster
		err = cs[2].Clusters(ctx, client.ClustersOptions{Threshold: 0.7, Keep: "oldest"}, func(c api.Cluster) error {
			cls = append(cls, c)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(cls) != 2 {
			t.Fatalf("clusters: %+v", cls)
		}
		river := cls[0]
		if river.IDs[0] != "river-1" {
			river = cls[1]
		}
		if river.Size != 2 || river.Pairs != 1 || !slices.Equal(river.IDs, []string{"river-1", "river-2"}) || river.Keep != "river-1" ||
			!slices.Equal(river.Drop, []string{"river-2"}) || river.Center != "river-1" || river.Cohesion < 0.7 || river.Cohesion >= 1 {
			t.Fatalf("river cluster: %+v", river)
		}
		if cls[0].Cluster != 1 || cls[1].Cluster != 2 {
			t.Fatalf("cluster numbers: %+v", cls)
		}
		err = cs[2].Clusters(ctx, client.ClustersOptions{Threshold: 0.7, Centers: true}, func(api.Cluster) error { return nil })
		wantStatus(t, "centers", err, http.StatusNotImplemented, codeNotImplemented)
		err = cs[2].Pairs(ctx, 0, func(api.Pair) error { return nil })
		wantStatus(t, "pairs threshold 0", err, http.StatusBadRequest, api.CodeBadRequest)
	})

	t.Run("DeleteMany", func(t *testing.T) {
		dr, err := cs[2].DeleteMany(ctx, api.DeleteRequest{IDs: []string{"bird-1", "nope", "bird-1"}, DryRun: true})
		if err != nil || dr.Deleted != 1 || !dr.DryRun || !slices.Equal(dr.NotFound, []string{"nope"}) {
			t.Fatalf("dry run: %+v, %v", dr, err)
		}
		dr, err = cs[2].DeleteMany(ctx, api.DeleteRequest{IDs: []string{"bird-1", "nope"}})
		if err != nil || dr.Deleted != 1 || !slices.Equal(dr.NotFound, []string{"nope"}) {
			t.Fatalf("delete many: %+v, %v", dr, err)
		}
		if _, err := cs[2].Get(ctx, "bird-1"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("get bird-1: %v", err)
		}
		// By prefix and by age (TestDeleteWhere compares them with one
		// database's): the dry run names, the delete leaves the others.
		dr, err = cs[2].DeleteMany(ctx, api.DeleteRequest{Prefix: "ship-", DryRun: true})
		if err != nil || dr.Deleted != 2 || !slices.Equal(dr.IDs, []string{"ship-1", "ship-2"}) {
			t.Fatalf("dry run by prefix: %+v, %v", dr, err)
		}
		dr, err = cs[2].DeleteMany(ctx, api.DeleteRequest{OlderThan: "30d"})
		if err != nil || dr.Deleted != 0 {
			t.Fatalf("delete by age: %+v, %v", dr, err)
		}
		_, err = cs[2].DeleteMany(ctx, api.DeleteRequest{Prefix: "ship-", Forget: true})
		wantStatus(t, "forget by prefix", err, http.StatusBadRequest, api.CodeBadRequest)
	})

	t.Run("NotServed", func(t *testing.T) {
		for _, rq := range []struct{ method, path string }{
			{"GET", "/v1/templates"}, {"GET", "/v1/log"}, {"POST", "/v1/backup"},
		} {
			req, _ := http.NewRequest(rq.method, cs[0].URL()+rq.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var eb api.ErrorBody
			err = json.NewDecoder(resp.Body).Decode(&eb)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusNotImplemented || eb.Error.Code != codeNotImplemented ||
				!strings.Contains(eb.Error.Message, "not served by a cluster node") || eb.Error.RequestID == "" {
				t.Fatalf("%s %s: %d %+v (%v)", rq.method, rq.path, resp.StatusCode, eb, err)
			}
		}
		resp, err := http.Get(cs[0].URL() + "/no/such/path")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("unrouted path: %d", resp.StatusCode)
		}
	})

	t.Run("PageAndCompare", func(t *testing.T) {
		// The review page and its assets, as the single-node server serves
		// them (its script calls the API a node serves), and the API's
		// OpenAPI document.
		for path, ctype := range map[string]string{"/": "text/html", "/web/app.js": "text/javascript", "/web/style.css": "text/css",
			"/v1/openapi.json": "application/json"} {
			resp, err := http.Get(cs[2].URL() + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) || len(b) == 0 {
				t.Fatalf("GET %s: %d %s, %d bytes", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(b))
			}
			if path == "/" && resp.Header.Get("Content-Security-Policy") == "" {
				t.Fatalf("GET /: no Content-Security-Policy")
			}
		}
		for _, path := range []string{"/web/nope.js", "/no/such/page"} {
			resp, err := http.Get(cs[2].URL() + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("GET %s: %d, want 404", path, resp.StatusCode)
			}
		}
		// Two texts: the single-node server's answer, in JSON and HTML.
		_, single := singleServer(t)
		post := func(base, query string, body any) (int, []byte) {
			t.Helper()
			b, _ := json.Marshal(body)
			resp, err := http.Post(base+"/v1/compare"+query, "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, out
		}
		texts := api.CompareRequest{A: api.CompareText{Text: riverText, Name: "river"},
			B: api.CompareText{Text: riverNear, Name: "near"}}
		status, got := post(cs[1].URL(), "", texts)
		wstatus, want := post(single.URL(), "", texts)
		if status != http.StatusOK || wstatus != http.StatusOK || !bytes.Equal(got, want) {
			t.Fatalf("compare of two texts: %d %s\nthe single-node server: %d %s", status, got, wstatus, want)
		}
		status, got = post(cs[1].URL(), "?html=true", texts)
		if status != http.StatusOK || !bytes.Contains(got, []byte("<html")) || !bytes.Contains(got, []byte("river")) {
			t.Fatalf("compare of two texts, html: %d %.300s", status, got)
		}
		// A stored document: a cluster keeps no texts.
		for id, want := range map[string]int{"river-1": http.StatusBadRequest, "no-such-doc": http.StatusNotFound} {
			status, got := post(cs[0].URL(), "", api.CompareRequest{A: api.CompareText{Text: riverNear}, B: api.CompareText{ID: id}})
			if status != want || (want == http.StatusBadRequest && !bytes.Contains(got, []byte("keeps no texts"))) {
				t.Fatalf("compare with stored %q: %d %s, want %d", id, status, got, want)
			}
		}
	})

	t.Run("Limits", func(t *testing.T) {
		small := httpNodes(t, tc, &HTTPOptions{MaxBodyBytes: 256}, "")
		_, err := small[2].Add(ctx, api.AddRequest{ID: "big", Text: riverText})
		wantStatus(t, "body over the limit", err, http.StatusRequestEntityTooLarge, api.CodeTooLarge)
	})

	t.Run("Tokens", func(t *testing.T) {
		const ro, rw = "read-only-token-0123456789", "read-write-token-0123456789"
		tokens, err := server.ParseTokens(strings.NewReader("# the node's tokens\nro " + ro + "\nrw " + rw + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		o := &HTTPOptions{Tokens: tokens}
		reader := httpNodes(t, tc, o, ro)
		writer := httpNodes(t, tc, o, rw)
		anon := httpNodes(t, tc, o, "")
		stranger := httpNodes(t, tc, o, "not-a-token-of-this-cluster")

		_, err = reader[0].Add(ctx, api.AddRequest{ID: "tok-1", Text: birdText})
		ce := wantStatus(t, "add with a read token", err, http.StatusForbidden, api.CodeForbidden)
		if !errors.Is(err, client.ErrForbidden) || ce.Message != "this token may only read" {
			t.Fatalf("add with a read token: %v", err)
		}
		if _, err := reader[1].Query(ctx, api.QueryRequest{Text: riverText}); err != nil {
			t.Fatalf("query with a read token: %v", err)
		}
		_, err = anon[1].Query(ctx, api.QueryRequest{Text: riverText})
		wantStatus(t, "query without token", err, http.StatusUnauthorized, api.CodeUnauthorized)
		_, err = stranger[1].Stats(ctx)
		wantStatus(t, "stats with an unknown token", err, http.StatusUnauthorized, api.CodeUnauthorized)
		res, err := writer[2].Add(ctx, api.AddRequest{ID: "tok-1", Text: birdText})
		if err != nil || !res.Stored {
			t.Fatalf("add with a write token: %+v, %v", res, err)
		}
		if _, err := writer[2].Get(ctx, "tok-1"); err != nil {
			t.Fatalf("get with a write token: %v", err)
		}
		// Health checks need no token.
		resp, err := http.Get(anon[0].URL() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz without token: %d", resp.StatusCode)
		}
	})

	// Last: it leaves shard 0 without a replica.
	t.Run("ShardDown", func(t *testing.T) {
		// Shard 0's replicas are on n1 and n2 (the map assigns shard s to
		// nodes s and s+1 of the sorted names).
		id := "doc-0"
		for i := 1; Shard(id, 4) != 0; i++ {
			id = "doc-" + strconv.Itoa(i)
		}
		for _, nd := range tc.nodes[:2] {
			if _, ok := nd.Replica(0); !ok {
				t.Fatalf("node %s holds no replica of shard 0", nd.Name())
			}
			if err := nd.stopReplica(0); err != nil {
				t.Fatal(err)
			}
		}
		down := httpNodes(t, tc, &HTTPOptions{ReadyTimeout: 300 * time.Millisecond, RequestTimeout: time.Second}, "")
		resp, err := http.Get(down[2].URL() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		var eb api.ErrorBody
		err = json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || eb.Error.Code != api.CodeUnavailable ||
			!strings.Contains(eb.Error.Message, "shard unavailable") {
			t.Fatalf("readyz with shard 0 down: %d %+v (%v)", resp.StatusCode, eb, err)
		}
		_, err = down[2].Get(ctx, id)
		ce := wantStatus(t, "get with shard 0 down", err, http.StatusServiceUnavailable, api.CodeUnavailable)
		if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(ce.Message, "shard 0") {
			t.Fatalf("get with shard 0 down: %v", err)
		}
		// A query waits for the shards as long as the router's
		// RequestTimeout (5s here): the HTTP request's time must be longer,
		// else it ends first, a 408.
		_, err = cs[2].Query(ctx, api.QueryRequest{Text: riverText})
		ce = wantStatus(t, "query with shard 0 down", err, http.StatusServiceUnavailable, api.CodeUnavailable)
		if !strings.Contains(ce.Message, "shard 0") {
			t.Fatalf("query with shard 0 down: %v", err)
		}
	})
}

// httpDo sends a request of method to url with body (JSON unless ct says
// otherwise) and returns the answer's status, Retry-After and body.
func httpDo(t *testing.T, method, url, ct, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), b
}

// idsOfShard returns n ids prefix-0, prefix-1, … of shard s of shards.
func idsOfShard(prefix string, s, shards, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if id := prefix + "-" + strconv.Itoa(i); Shard(id, shards) == s {
			out = append(out, id)
		}
	}
	return out
}

// TestHTTPWritesWithShardDown: with no live replica of a shard, plain
// adds, deletes and unchecked batches of its documents are appended to
// the log all the same and answered 202 with what is pending (the Pending
// fields of the api types, which the Go client returns); a replica that
// returns applies them. What needs the shard's answer (a check, a dry run,
// a read) is a 503.
func TestHTTPWritesWithShardDown(t *testing.T) {
	tc := startCluster(t, 3, 4, 2, nil)
	cs := httpNodes(t, tc, nil, "")
	ctx := context.Background()
	down := idsOfShard("down", 0, 4, 8) // shard 0: on n1 and n2
	up := idsOfShard("up", 1, 4, 3)     // up[2] is never stored
	text := func(i int) string { return fmt.Sprintf("%s Number %d of the test.", birdText, i) }
	for i, id := range []string{down[1], down[2], up[0]} {
		if _, err := cs[2].Add(ctx, api.AddRequest{ID: id, Text: text(i)}); err != nil {
			t.Fatalf("add %s: %v", id, err)
		}
	}
	for _, nd := range tc.nodes[:2] {
		if err := nd.stopReplica(0); err != nil {
			t.Fatal(err)
		}
	}
	base := cs[2].URL()

	// A plain add: logged, pending.
	st, _, b := httpDo(t, "POST", base+"/v1/documents?id="+down[0], "text/plain", text(10))
	var add api.AddResult
	if err := json.Unmarshal(b, &add); err != nil || st != http.StatusAccepted || !add.Pending || !add.Stored || add.Replaced || add.Unchanged || add.ID != down[0] {
		t.Fatalf("plain add with its shard down: %d %s (%v), want 202 pending", st, b, err)
	}
	// A checked add needs every shard: 503.
	st, retry, b := httpDo(t, "POST", base+"/v1/documents?threshold=0.8&id="+down[3], "text/plain", text(11))
	if st != http.StatusServiceUnavailable || retry == "" || !strings.Contains(string(b), "shard 0") {
		t.Fatalf("checked add with shard 0 down: %d (Retry-After %q) %s, want 503", st, retry, b)
	}
	// A delete by id: logged, pending; its dry run: 503.
	if st, _, b = httpDo(t, "DELETE", base+"/v1/documents/"+down[1]+"?dry_run=true", "", ""); st != http.StatusServiceUnavailable {
		t.Fatalf("dry-run delete with its shard down: %d %s, want 503", st, b)
	}
	st, _, b = httpDo(t, "DELETE", base+"/v1/documents/"+down[1], "", "")
	var del api.DeleteResult
	if err := json.Unmarshal(b, &del); err != nil || st != http.StatusAccepted || del.Deleted != 0 || !slices.Equal(del.Pending, []string{down[1]}) {
		t.Fatalf("delete with its shard down: %d %s (%v), want 202 pending", st, b, err)
	}
	// Deletes of several ids: the shards up answer as usual, the ids of
	// shard 0 are pending.
	req := fmt.Sprintf(`{"ids":[%q,%q,%q]}`, down[2], up[0], up[1])
	if st, _, b = httpDo(t, "POST", base+"/v1/delete", "", `{"dry_run":true,`+req[1:]); st != http.StatusServiceUnavailable {
		t.Fatalf("dry-run delete of ids of shard 0: %d %s, want 503", st, b)
	}
	st, _, b = httpDo(t, "POST", base+"/v1/delete", "", req)
	del.Pending, del.NotFound = nil, nil
	if err := json.Unmarshal(b, &del); err != nil || st != http.StatusAccepted || del.Deleted != 1 ||
		!slices.Equal(del.NotFound, []string{up[1]}) || !slices.Equal(del.Pending, []string{down[2]}) {
		t.Fatalf("delete of ids of shards up and down: %d %s (%v), want 202: 1 deleted, %s not found, %s pending", st, b, err, up[1], down[2])
	}
	// An unchecked batch: stored, one of them pending.
	batch := fmt.Sprintf("{\"id\":%q,\"text\":%q}\n{\"id\":%q,\"text\":%q}\n", down[4], text(12), up[1], text(13))
	st, _, b = httpDo(t, "POST", base+"/v1/batch", "application/x-ndjson", batch)
	var br api.BatchResult
	if err := json.Unmarshal(b, &br); err != nil || st != http.StatusAccepted || br.Stored != 2 || br.Pending != 1 {
		t.Fatalf("batch with a shard down: %d %s (%v), want 202: 2 stored, 1 pending", st, b, err)
	}
	// The Go client returns what is pending.
	if res, err := cs[2].Add(ctx, api.AddRequest{ID: down[5], Text: text(14)}); err != nil || !res.Pending || !res.Stored {
		t.Fatalf("client add with its shard down: %+v, %v; want stored, pending", res, err)
	}
	if res, err := cs[2].Delete(ctx, down[3], nil); err != nil || res.Deleted != 0 || !slices.Equal(res.Pending, []string{down[3]}) {
		t.Fatalf("client delete with its shard down: %+v, %v; want %s pending", res, err, down[3])
	}
	if res, err := cs[2].DeleteMany(ctx, api.DeleteRequest{IDs: []string{down[6], up[0], up[2]}}); err != nil || res.Deleted != 0 ||
		!slices.Equal(res.NotFound, []string{up[0], up[2]}) || !slices.Equal(res.Pending, []string{down[6]}) {
		t.Fatalf("client delete of ids of shards up and down: %+v, %v; want %s pending, %s and %s not found", res, err, down[6], up[0], up[2])
	}
	if res, err := cs[2].Batch(ctx, []api.AddRequest{{ID: down[7], Text: text(15)}}); err != nil || res.Stored != 1 || res.Pending != 1 {
		t.Fatalf("client batch with its shard down: %+v, %v; want 1 stored, 1 pending", res, err)
	}
	// An answer with nothing pending has no "pending" (as a single-node
	// server's).
	if st, _, b = httpDo(t, "POST", base+"/v1/delete", "", fmt.Sprintf(`{"ids":[%q]}`, up[1])); st != http.StatusOK || strings.Contains(string(b), "pending") {
		t.Fatalf("delete of an id of a shard up: %d %s, want 200 without pending", st, b)
	}
	// A read of the shard: 503.
	_, err := cs[2].Get(ctx, down[0])
	wantStatus(t, "get with shard 0 down", err, http.StatusServiceUnavailable, api.CodeUnavailable)

	// A replica returns and applies what was logged.
	if err := tc.node(0).startReplica(ctx, 0); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{down[0], down[4], down[5], down[7]} {
		if _, err := cs[2].Get(ctx, id); err != nil {
			t.Errorf("get %s once shard 0 is back: %v", id, err)
		}
	}
	for _, id := range []string{down[1], down[2], down[3], down[6], up[0], up[1]} {
		_, err := cs[2].Get(ctx, id)
		wantStatus(t, "get of "+id+" deleted", err, http.StatusNotFound, api.CodeNotFound)
	}
}

// TestStartingHandler: while a node starts, /healthz answers 200,
// /readyz 503 saying that it forms the cluster, and the API 503 with
// Retry-After and the API's error body.
func TestStartingHandler(t *testing.T) {
	srv := httptest.NewServer(StartingHandler("n1", nil))
	defer srv.Close()
	if st, _, b := httpDo(t, "GET", srv.URL+"/healthz", "", ""); st != http.StatusOK || string(b) != "ok\n" {
		t.Errorf("healthz: %d %q", st, b)
	}
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/readyz", "forming the cluster"},
		{"GET", "/v1/stats", "is starting"},
		{"POST", "/v1/documents?id=a", "is starting"},
		{"GET", "/metrics", "is starting"},
	} {
		st, retry, b := httpDo(t, c.method, srv.URL+c.path, "text/plain", "some words")
		var eb api.ErrorBody
		if err := json.Unmarshal(b, &eb); err != nil || st != http.StatusServiceUnavailable || retry == "" ||
			eb.Error.Code != api.CodeUnavailable || !strings.Contains(eb.Error.Message, c.want) || !strings.Contains(eb.Error.Message, "n1") {
			t.Errorf("%s %s while starting: %d (Retry-After %q) %s (%v), want 503 saying %q", c.method, c.path, st, retry, b, err, c.want)
		}
	}
}

// TestHTTPImportLineBound: POST /v1/import refuses an export's line past
// its bound (HTTPOptions.MaxImportText) with a 413 that names the line and
// the bound, before it reads the line further, and stores nothing.
func TestHTTPImportLineBound(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 1, 2, 1, nil)
	c := httpNodes(t, tc, &HTTPOptions{MaxImportText: 1000}, "")[0]
	var exp bytes.Buffer
	if _, err := c.Export(ctx, &exp); err != nil {
		t.Fatal(err)
	}
	header, _, _ := bytes.Cut(exp.Bytes(), []byte("\n"))
	lim := httpapi.ImportLineLimits(1000)
	line := `{"id":"long","text":"` + strings.Repeat("a", int(lim.Line)) + `"}`
	_, err := c.Import(ctx, strings.NewReader(string(header)+"\n"+line+"\n"))
	ce := wantStatus(t, "a line past its bound", err, http.StatusRequestEntityTooLarge, api.CodeTooLarge)
	if want := fmt.Sprintf("line 2 is longer than %d bytes, the most a cluster node reads", lim.Line); !strings.Contains(ce.Message, want) ||
		!strings.Contains(ce.Message, "remove its lines' \"text\" fields") {
		t.Fatalf("a line past its bound: %q, want %q", ce.Message, want)
	}
	if n, err := tc.nodes[0].Router().Len(ctx, 0); err != nil || n != 0 {
		t.Fatalf("after the refusal: %d documents, %v", n, err)
	}
}
