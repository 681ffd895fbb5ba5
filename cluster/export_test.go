package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
)

// exportLines splits an export into its header and its document lines.
func exportLines(t *testing.T, exp []byte) (db.ExportHeader, []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(exp), "\n"), "\n")
	var h db.ExportHeader
	if err := json.Unmarshal([]byte(lines[0]), &h); err != nil {
		t.Fatalf("header %q: %v", lines[0], err)
	}
	return h, lines[1:]
}

// TestExportImport moves a single database into a 3-node cluster and back
// through the HTTP API: the single database's export (replaced and
// deleted documents, times added in the past, long sources that cut pages
// short) is imported into the cluster through one node and exported
// through another; the cluster's export holds the same lines, sorted by
// id, under a header with the same parameters, and imports into a new
// single database that answers queries as the first. Imports the cluster
// must refuse leave it unchanged: into a cluster that holds documents,
// with other fingerprint parameters, with templates, a malformed export.
// An export with texts and an audit log imports without them, counted.
func TestExportImport(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, 2, 2, nil)
	nodes := httpNodes(t, tc, nil, "")
	one, _ := singleServer(t)
	rng := rand.New(rand.NewPCG(5, 6))
	past := time.Now().Add(-72 * time.Hour).UTC()
	var ins []db.Input
	for i := range 4000 {
		in := db.Input{ID: fmt.Sprintf("doc-%05d", rng.IntN(1_000_000)), Fingerprint: randomFP(rng, 512),
			ContentHash: [16]byte{byte(i), byte(i >> 8), 1}, Size: int64(100 + i), Words: 20 + i%50, Shingles: 18 + i%50,
			Added: past.Add(time.Duration(i) * time.Second)}
		if i%3 == 0 {
			in.Source = "https://example.org/" + strings.Repeat("p", 3000) + fmt.Sprint(i)
		}
		if i%10 == 0 && i > 0 { // a near duplicate of the document before
			in.Fingerprint = nearFP(rng, ins[i-1].Fingerprint, 8)
		}
		ins = append(ins, in)
	}
	for lo := 0; lo < len(ins); lo += 1000 {
		if _, err := one.AddBatch(ctx, ins[lo:lo+1000]); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < len(ins); i += 17 { // replaced: a new place in storing order
		if _, err := one.Add(ctx, db.Input{ID: ins[i].ID, Fingerprint: randomFP(rng, 512)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 5; i < len(ins); i += 23 {
		if err := one.Delete(ctx, ins[i].ID); err != nil && !strings.Contains(err.Error(), "not found") {
			t.Fatal(err)
		}
	}
	var src bytes.Buffer
	if _, err := one.Export(ctx, &src); err != nil {
		t.Fatal(err)
	}
	srcHeader, srcDocs := exportLines(t, src.Bytes())
	t.Logf("the single database exports %d documents", len(srcDocs))

	res, err := nodes[0].Import(ctx, bytes.NewReader(src.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != len(srcDocs) || res.Imported != one.Len() {
		t.Fatalf("imported %d, export holds %d", res.Imported, len(srcDocs))
	}

	var got bytes.Buffer
	if n, err := nodes[1].Export(ctx, &got); err != nil || n != len(srcDocs) {
		t.Fatalf("export: %d, %v", n, err)
	}
	h, docs := exportLines(t, got.Bytes())
	if h.K != srcHeader.K || !slices.Equal(h.GroupWidths, srcHeader.GroupWidths) || h.ShingleWidth != srcHeader.ShingleWidth ||
		h.Seed != srcHeader.Seed || h.HashVersion != srcHeader.HashVersion || h.NormalizeVersion != srcHeader.NormalizeVersion ||
		h.Docs != len(srcDocs) || h.AuditLog || h.KeepTexts || len(h.Templates) > 0 {
		t.Fatalf("cluster export header %+v, single database's %+v", h, srcHeader)
	}
	want := slices.Clone(srcDocs)
	slices.SortFunc(want, func(a, b string) int {
		var ra, rb db.ExportRecord
		json.Unmarshal([]byte(a), &ra)
		json.Unmarshal([]byte(b), &rb)
		return strings.Compare(ra.ID, rb.ID)
	})
	if !slices.Equal(docs, want) {
		for i := range min(len(docs), len(want)) {
			if docs[i] != want[i] {
				t.Fatalf("%d lines, want %d; line %d:\n%s\nwant\n%s", len(docs), len(want), i+2, docs[i], want[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(docs), len(want))
	}

	// An export with texts and an audit log, into an empty cluster: the
	// documents are kept, texts and entries counted as dropped.
	logged, err := db.Open(filepath.Join(t.TempDir(), "logged"), &db.Options{NoSync: true, KeepTexts: true, AuditLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logged.Close()
	for i := range 5 {
		if _, err := logged.Add(ctx, db.Input{ID: fmt.Sprintf("text-%d", i), Text: []byte(nearDup(t, fmt.Sprintf("words of document %d and some more", i)))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := logged.Add(ctx, db.Input{ID: "fp-only", Fingerprint: randomFP(rng, 512)}, nil); err != nil {
		t.Fatal(err)
	}
	var lexp bytes.Buffer
	if _, err := logged.Export(ctx, &lexp); err != nil {
		t.Fatal(err)
	}
	tc2 := startCluster(t, 1, 2, 1, nil)
	n2 := httpNodes(t, tc2, nil, "")[0]
	lres, err := n2.Import(ctx, bytes.NewReader(lexp.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if lres.Imported != 6 || lres.DroppedTexts != 5 || lres.DroppedLogEntries != 6 {
		t.Fatalf("import of an export with texts and a log: %+v, want 6 imported, 5 texts and 6 entries dropped", lres)
	}
	var lback bytes.Buffer
	if _, err := n2.Export(ctx, &lback); err != nil {
		t.Fatal(err)
	}
	if _, ldocs := exportLines(t, lback.Bytes()); len(ldocs) != 6 || strings.Contains(lback.String(), `"text"`) {
		t.Fatalf("the cluster exports %d documents:\n%s", len(ldocs), lback.String())
	}

	// Back into a single database: the same answers as the first.
	back, err := db.Open(filepath.Join(t.TempDir(), "back"), &db.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if n, err := back.ImportInto(ctx, bytes.NewReader(got.Bytes())); err != nil || n != len(srcDocs) {
		t.Fatalf("import of the cluster's export: %d, %v", n, err)
	}
	for i := 0; i < len(ins); i += 97 {
		for _, thr := range []float64{0.8, 0.95} {
			a, err := one.QueryFingerprint(ctx, ins[i].Fingerprint, db.QueryOptions{Threshold: thr})
			if err != nil {
				t.Fatal(err)
			}
			b, err := back.QueryFingerprint(ctx, ins[i].Fingerprint, db.QueryOptions{Threshold: thr})
			if err != nil {
				t.Fatal(err)
			}
			// Ids with Hamming distances; ties may come in another
			// order (the storing orders differ).
			got, want := slices.Sorted(slices.Values(ids(b.Matches))), slices.Sorted(slices.Values(ids(a.Matches)))
			if !slices.Equal(got, want) {
				t.Fatalf("query %d at %v: %v, the first database %v", i, thr, got, want)
			}
		}
	}

	// Refused imports change nothing.
	edit := func(f func(*db.ExportHeader)) []byte {
		hh := srcHeader
		f(&hh)
		b, _ := json.Marshal(hh)
		return append(append(b, '\n'), []byte(strings.Join(srcDocs, "\n")+"\n")...)
	}
	for _, c := range []struct {
		name, says string
		body       []byte
	}{
		{"not empty", "not empty", src.Bytes()},
		{"another K", "k is 512", edit(func(h *db.ExportHeader) { h.K, h.GroupWidths = 256, db.EqualWidths(256, 16) })},
		{"inconsistent header", "invalid export", edit(func(h *db.ExportHeader) { h.K = 256 })},
		{"seed differs", "seed", edit(func(h *db.ExportHeader) { h.Seed++ })},
		{"templates", "templates", edit(func(h *db.ExportHeader) {
			h.Templates = []db.ExportTemplate{{Name: "t", Text: "a b c", Format: "text", Added: past.Format(time.RFC3339)}}
		})},
		{"not an export", "invalid export", []byte("{\"hello\": 1}\n")},
		{"empty", "invalid export", nil},
	} {
		_, err := nodes[2].Import(ctx, bytes.NewReader(c.body))
		ce := wantStatus(t, c.name, err, http.StatusBadRequest, api.CodeBadRequest)
		if !strings.Contains(strings.ToLower(ce.Message), c.says) {
			t.Errorf("%s: %q does not say %q", c.name, ce.Message, c.says)
		}
	}
	var again bytes.Buffer
	if _, err := nodes[2].Export(ctx, &again); err != nil {
		t.Fatal(err)
	}
	if _, docs2 := exportLines(t, again.Bytes()); !slices.Equal(docs2, docs) {
		t.Fatalf("after refused imports the cluster exports %d lines, before %d", len(docs2), len(docs))
	}
}

// fillCluster stores n documents of random fingerprints through tc's
// first node, 1 000 per add.
func fillCluster(t *testing.T, tc *testCluster, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	for lo := 0; lo < n; lo += 1000 {
		var ins []db.Input
		for i := lo; i < min(lo+1000, n); i++ {
			ins = append(ins, db.Input{ID: fmt.Sprintf("doc-%06d", i), Fingerprint: randomFP(rng, 512)})
		}
		if _, err := tc.nodes[0].Router().Add(context.Background(), ins, AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// stallWriter holds its first Write until release is closed.
type stallWriter struct {
	once             sync.Once
	started, release chan struct{}
	bytes.Buffer
}

func (w *stallWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.started); <-w.release })
	return w.Buffer.Write(p)
}

// TestExportKeepsItsPin takes more pins than a replica keeps while an
// export waits between pages (its writer held): the export's pin is kept,
// and the export is whole.
func TestExportKeepsItsPin(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, 2, 2, nil)
	fillCluster(t, tc, 10000) // 5 pages a shard: pages are asked after the pins
	r := tc.nodes[0].Router()
	w := &stallWriter{started: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		n, err := r.Export(ctx, w)
		if err == nil && n != 10000 {
			err = fmt.Errorf("%d documents exported", n)
		}
		done <- err
	}()
	<-w.started
	var last uint64
	for range keepPins + 1 {
		seq, err := r.Pin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last = seq
	}
	// Every shard past the pins: each pin is a checkpoint on every
	// replica, which a loaded machine can take longer over than one
	// request waits; this test is about the export, so it waits longer.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		_, err := r.Len(ctx, last)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	close(w.release)
	if err := <-done; err != nil {
		t.Fatalf("export with %d pins taken meanwhile: %v", keepPins+1, err)
	}
	if h, docs := exportLines(t, w.Bytes()); h.Docs != 10000 || len(docs) != 10000 {
		t.Fatalf("export of %d lines, header %d", len(docs), h.Docs)
	}
}

// TestExportPageFromAnotherReplica asks a page of the replica that lacks
// the pin (as one copied from a checkpoint taken after it) first: the
// page comes from the other replica, which then serves the next.
func TestExportPageFromAnotherReplica(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 2, 1, 2, nil)
	fillCluster(t, tc, 1500)
	r := tc.nodes[0].Router()
	pin, err := r.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Len(ctx, pin); err != nil {
		t.Fatal(err)
	}
	var without string
	for _, nd := range tc.nodes {
		rp := nd.replicas[0]
		if err := rp.waitFor(ctx, pin); err != nil {
			t.Fatal(err)
		}
		if nd == tc.nodes[1] {
			rp.mu.Lock()
			rp.pins = slices.DeleteFunc(rp.pins, func(p uint64) bool { return p == pin })
			delete(rp.pinUse, pin)
			rp.mu.Unlock()
			without = nd.Name()
		}
	}
	c := &exportCursor{shard: 0, node: without}
	rep, err := r.exportPageOf(ctx, c, pin, "")
	if err != nil {
		t.Fatalf("first page asked of the replica without the pin: %v", err)
	}
	if c.node == without || len(rep.IDs) != exportPageDocs || len(rep.lines) != exportPageDocs || rep.Total != 1500 || !rep.More {
		t.Fatalf("page from %s: %d documents of %d, more %v", c.node, len(rep.IDs), rep.Total, rep.More)
	}
	rep, err = r.exportPageOf(ctx, c, pin, rep.IDs[len(rep.IDs)-1])
	if err != nil || len(rep.IDs) != 500 || rep.More {
		t.Fatalf("second page: %v", err)
	}
}

// TestImportRefusesRepeatedIDs imports an export whose id is given twice
// within a chunk: refused, naming both lines, and nothing of that chunk
// stored.
func TestImportRefusesRepeatedIDs(t *testing.T) {
	ctx := context.Background()
	ins := randomInputs(1, 10)
	body := importBody(t, ins, 3)
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	res, err := r.Import(ctx, strings.NewReader(body))
	if !errors.Is(err, db.ErrBadExport) || !strings.Contains(err.Error(), "line 12") || !strings.Contains(err.Error(), "line 5") || res.Imported != 0 {
		t.Fatalf("import with an id twice: %+v, %v", res, err)
	}
	if n, err := r.Len(ctx, r.Written()); err != nil || n != 0 {
		t.Fatalf("the cluster holds %d documents (%v)", n, err)
	}
}

// TestPinsCapped takes more pins than maxPins within their lease: a
// replica keeps maxPins, and closes no pin a task holds; a pin's database
// is read-only.
func TestPinsCapped(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 1, 1, 1, nil)
	fillCluster(t, tc, 100)
	r := tc.nodes[0].Router()
	rp := tc.nodes[0].replicas[0]
	first, err := r.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pd, release, err := rp.pinDB(ctx, first) // held by a task
	if err != nil {
		t.Fatal(err)
	}
	// A pin's checkpoint is opened read-only: a writable open would
	// compact it (the cost of an export right after a load).
	if err := pd.Delete(ctx, "any"); !errors.Is(err, db.ErrReadOnly) {
		t.Fatalf("delete in a pin's database: %v, want db.ErrReadOnly", err)
	}
	var last uint64
	for range 3 * maxPins {
		if last, err = r.Pin(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := rp.waitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	rp.mu.Lock()
	pins := slices.Clone(rp.pins)
	rp.mu.Unlock()
	if len(pins) > maxPins || !slices.Contains(pins, first) || !slices.Contains(pins, last) {
		t.Fatalf("pins kept %v (first %d held, last %d)", pins, first, last)
	}
	if n, err := pd.Len(), pd.Check(ctx); n != 100 || err != nil {
		t.Fatalf("the held pin's database: %d documents, %v", n, err)
	}
	release()
	dirs, _ := filepath.Glob(filepath.Join(tc.opts[0].Dir, "pins", "shard-000-*"))
	if len(dirs) != len(pins) {
		t.Fatalf("%d pin directories for %d pins", len(dirs), len(pins))
	}
}

// TestExportPageDecode reads export pages as a replica sends them: a
// status alone (an error, or behind), a page whose lines its head
// names, and pages whose lines do not match their head.
func TestExportPageDecode(t *testing.T) {
	var p exportPage
	if st, err := p.decodeReply([]byte(`{"seq":3,"err":"no pin","behind":true}`)); err != nil || !st.Behind || st.Err != "no pin" {
		t.Fatalf("behind: %+v, %v", st, err)
	}
	page := "{\"ids\":[\"a\",\"b\"],\"total\":5,\"more\":true,\"seq\":4}\n{\"id\":\"a\"}\n{\"id\":\"b\"}\n"
	if st, err := p.decodeReply([]byte(page)); err != nil || st.Seq != 4 || len(p.lines) != 2 || string(p.lines[1]) != "{\"id\":\"b\"}\n" || p.Total != 5 || !p.More {
		t.Fatalf("page: %+v %q, %v", st, p.lines, err)
	}
	for _, bad := range []string{
		"{\"ids\":[\"a\",\"b\"],\"total\":5}\n{\"id\":\"a\"}\n", // a line short
		"{\"ids\":[\"a\"],\"total\":5}\n{\"id\":\"a\"}\n{}\n",   // a line more
		"{\"ids\":[\"a\"],\"total\":5}\n{\"id\":\"a\"}",         // cut
		"not json\n{}\n",
	} {
		if _, err := p.decodeReply([]byte(bad)); err == nil {
			t.Errorf("page %q read without error", bad)
		}
	}
}

// TestExportLongIDs exports documents whose ids are 1 KiB of characters
// that JSON may escape (as HTML's): a page's ids are sent twice, in its
// head and in its lines, and the page is cut to fit a message. A
// document too large for a message alone is named.
func TestExportLongIDs(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 1, 1, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(9, 9))
	for lo := 0; lo < 1000; lo += 100 {
		var ins []db.Input
		for i := lo; i < lo+100; i++ {
			ins = append(ins, db.Input{ID: strings.Repeat("<", 1019) + fmt.Sprintf("%05d", i), Fingerprint: randomFP(rng, 512)})
		}
		if _, err := r.Add(ctx, ins, AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	n, err := r.Export(ctx, &out)
	if err != nil || n != 1000 {
		t.Fatalf("export: %d documents, %v", n, err)
	}
	_, docs := exportLines(t, out.Bytes())
	if len(docs) != 1000 || !strings.HasPrefix(docs[0], `{"id":"<<<`) {
		t.Fatalf("%d lines, the first %.40q", len(docs), docs[0])
	}
	d := tc.nodes[0].replicas[0].d
	all, err := d.DocsAfter(ctx, "", exportPageDocs)
	if err != nil {
		t.Fatal(err)
	}
	page, err := exportPageBytesOf(d.Params(), all, 1, d.Len())
	if err != nil {
		t.Fatal(err)
	}
	var p exportPage
	if _, err := p.decodeReply(page); err != nil || !p.More || len(p.IDs) >= len(all) || len(page) > exportPageBytes+256 || p.IDs[0] != all[0].ID {
		t.Fatalf("a page of %d bytes, %d of %d documents, more %v: %v", len(page), len(p.IDs), len(all), p.More, err)
	}
	// A document whose line alone is more than a message holds is named.
	huge := all[0]
	huge.Source = strings.Repeat("\x01", maxReply/6+1) // escaped as \u0001
	if _, err := exportPageBytesOf(d.Params(), []db.Doc{huge}, 1, d.Len()); err == nil || !strings.Contains(err.Error(), huge.ID) {
		t.Fatalf("a page of one document too large: %v", err)
	}
}

// randomInputs returns n documents d-00, d-01… of random fingerprints.
func randomInputs(seed uint64, n int) []db.Input {
	rng := rand.New(rand.NewPCG(seed, seed))
	ins := make([]db.Input, n)
	for i := range ins {
		ins[i] = db.Input{ID: fmt.Sprintf("d-%02d", i), Fingerprint: randomFP(rng, 512)}
	}
	return ins
}

// importBody returns an export of docs, from a single database, with the
// lines of the documents at positions again given once more at its end.
func importBody(t *testing.T, docs []db.Input, again ...int) string {
	t.Helper()
	ctx := context.Background()
	one, _ := singleServer(t)
	if _, err := one.AddBatch(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var exp bytes.Buffer
	if _, err := one.Export(ctx, &exp); err != nil {
		t.Fatal(err)
	}
	h, lines := exportLines(t, exp.Bytes())
	for _, i := range again {
		lines = append(lines, lines[i])
	}
	h.Docs += len(again)
	hb, _ := json.Marshal(h)
	return string(hb) + "\n" + strings.Join(lines, "\n") + "\n"
}

// TestImportRefusesRepeatedIDsAcrossChunks imports, four documents a
// chunk, an export whose second document is given again on its last line
// (line 12): refused (db.ErrBadExport, naming the line) before the third
// chunk is appended, as a single database refuses it, with the two chunks
// before it imported and counted. The ids of earlier chunks are kept as
// hashes: with every id of the same hash, each later id is looked up in
// the shards, and an export without a repeated id is imported whole.
func TestImportRefusesRepeatedIDsAcrossChunks(t *testing.T) {
	ctx := context.Background()
	ins := randomInputs(3, 10)
	clean, repeated := importBody(t, ins), importBody(t, ins, 1)
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	r.importChunk = 4

	r.importHash = func(string) uint64 { return 1 }
	res, err := r.Import(ctx, strings.NewReader(clean))
	if err != nil || res.Imported != len(ins) {
		t.Fatalf("import with every id of one hash: %+v, %v", res, err)
	}
	ids := make([]string, len(ins))
	for i, in := range ins {
		ids[i] = in.ID
	}
	if _, err := r.Delete(ctx, ids); err != nil {
		t.Fatal(err)
	}

	r.importHash = nil
	res, err = r.Import(ctx, strings.NewReader(repeated))
	if !errors.Is(err, db.ErrBadExport) || !strings.Contains(err.Error(), "line 12") || res.Imported != 8 {
		t.Fatalf("import with an id repeated in a later chunk: %+v, %v; want ErrBadExport at line 12 after 8 imported", res, err)
	}
	if n, err := r.Len(ctx, r.Written()); err != nil || n != 8 {
		t.Fatalf("the cluster holds %d documents (%v), want 8", n, err)
	}
	if d, err := r.Get(ctx, "d-01", r.Written()); err != nil || !slices.Equal(d.Fingerprint, ins[1].Fingerprint) {
		t.Fatalf("d-01: %v", err)
	}
}

// TestImportCountsPartsStored imports an export whose one chunk takes
// three log messages, the second of which the servers refuse (it exceeds
// their 8 MiB): the error counts the documents of the first message,
// which are stored.
func TestImportCountsPartsStored(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(4, 4))
	docs := overLimitDocs(rng, "d")
	body := importBody(t, docs)
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	r.maxMessage = 9 << 20
	res, err := r.Import(ctx, strings.NewReader(body))
	if err == nil || res.Imported != 7 {
		t.Fatalf("import: %+v, %v; want an error after 7 imported", res, err)
	}
	storedIDs(t, r, docs, func(i int) bool { return i < 7 })
}

// TestIDHashes adds ids in chunks of various sizes: each is found, in
// runs each at least twice as long as the next, and ids never added are
// not (a collision of 64-bit hashes among so few is all but impossible).
func TestIDHashes(t *testing.T) {
	s := newIDHashes(nil)
	n := 0
	for chunk := 1; chunk < 300; chunk = chunk*3/2 + 1 {
		var docs []db.Input
		for range chunk {
			docs = append(docs, db.Input{ID: fmt.Sprintf("id-%d", n)})
			n++
		}
		s.add(docs)
		for i := 1; i < len(s.runs); i++ {
			if len(s.runs[i-1]) < 2*len(s.runs[i]) {
				t.Fatalf("runs of %d then %d ids", len(s.runs[i-1]), len(s.runs[i]))
			}
		}
	}
	total := 0
	for _, run := range s.runs {
		if !slices.IsSorted(run) {
			t.Fatal("a run is not sorted")
		}
		total += len(run)
	}
	if total != n {
		t.Fatalf("%d hashes kept of %d ids", total, n)
	}
	for i := range n {
		if !s.has(fmt.Sprintf("id-%d", i)) {
			t.Fatalf("id-%d not found", i)
		}
	}
	for i := n; i < n+1000; i++ {
		if s.has(fmt.Sprintf("id-%d", i)) {
			t.Fatalf("id-%d found, never added", i)
		}
	}
}
