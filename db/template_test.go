package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// templateCorpus returns a template of 600 words and n documents that each
// hold it with their own words around it; documents 0 and 1 also share a
// paragraph of their own.
func templateCorpus(n int) (template string, docs []string) {
	template = text(900, 600)
	shared := text(901, 120)
	for i := range n {
		own := text(uint64(1000+i), 80+i%50)
		body := "Proposal " + fmt.Sprint(i) + ". " + own + "\n\n" + template + "\n\n" + text(uint64(2000+i), 40)
		if i < 2 {
			body += "\n\n" + shared
		}
		docs = append(docs, body)
	}
	return template, docs
}

// fingerprints returns every document's fingerprint, by id.
func fingerprints(t *testing.T, d *DB) map[string][]uint64 {
	t.Helper()
	out := map[string][]uint64{}
	if err := d.Docs(ctx, func(doc Doc) error {
		out[doc.ID] = doc.Fingerprint
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// pairsAt returns the pairs at threshold r.
func pairsAt(t *testing.T, d *DB, r float64) []Pair {
	t.Helper()
	var out []Pair
	if _, err := d.Pairs(ctx, PairsOptions{Threshold: r}, func(p Pair) error {
		out = append(out, p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func addAll(t *testing.T, d *DB, docs []string) {
	t.Helper()
	for i, s := range docs {
		if _, err := d.Add(ctx, Input{ID: fmt.Sprint("doc", i), Text: []byte(s)}, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTemplateSharedByAll: a template every document holds makes every
// pair similar; once added, no pair is but the one that shares its own
// paragraph, and the stored documents' new fingerprints are exactly those
// of a database that had the template from the start.
func TestTemplateSharedByAll(t *testing.T) {
	template, docs := templateCorpus(40)
	d := openTest(t, "", &Options{KeepTexts: true, NoSync: true})
	addAll(t, d, docs)
	before := fingerprints(t, d)
	if n := len(pairsAt(t, d, 0.5)); n < 40*39/2 {
		t.Fatalf("without the template, %d pairs at 0.5, want all %d", n, 40*39/2)
	}
	res, err := d.AddTemplate(ctx, "call", []byte(template), TextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Documents != 40 || res.Changed != 40 || res.Template.Shingles < 590 || res.Excluded != res.Template.Shingles || res.Replaced {
		t.Fatalf("result %+v", res)
	}
	got := pairsAt(t, d, 0.2)
	if len(got) != 1 || got[0].A != "doc0" || got[0].B != "doc1" {
		t.Fatalf("with the template, pairs at 0.2: %+v, want only doc0–doc1", got)
	}
	// The same documents added to a database that had the template first.
	fresh := openTest(t, "", &Options{KeepTexts: true, NoSync: true})
	if _, err := fresh.AddTemplate(ctx, "call", []byte(template), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	addAll(t, fresh, docs)
	after, want := fingerprints(t, d), fingerprints(t, fresh)
	for id, fp := range want {
		if !slices.Equal(after[id], fp) {
			t.Fatalf("%s: fingerprint after the template change differs from one made with the template", id)
		}
	}
	// Storing order is kept: the documents are listed in the same order.
	var order []string
	_ = d.Docs(ctx, func(doc Doc) error { order = append(order, doc.ID); return nil })
	var wantOrder []string
	_ = fresh.Docs(ctx, func(doc Doc) error { wantOrder = append(wantOrder, doc.ID); return nil })
	if !slices.Equal(order, wantOrder) {
		t.Fatalf("order %v, want %v", order[:5], wantOrder[:5])
	}
	// Queries read texts with the template left out: the template alone
	// matches nothing; a document's own words find it.
	qr, err := d.Query(ctx, []byte(template), QueryOptions{Threshold: 0.1})
	if err != nil || len(qr.Matches) != 0 {
		t.Fatalf("the template as a query: %v matches, %v", qr, err)
	}
	qr, err = d.Query(ctx, []byte(template+"\n\n"+docs[7][:len(docs[7])/4]), QueryOptions{Threshold: 0.1})
	if err != nil || len(qr.Matches) == 0 || qr.Matches[0].ID != "doc7" {
		t.Fatalf("template + part of doc7: %+v, %v", qr, err)
	}
	// The templates survive a reopen, and remove restores the fingerprints.
	dir := d.dir
	closeChecked(t, d)
	d = openTest(t, dir, nil)
	ts, err := d.Templates(ctx)
	if err != nil || len(ts) != 1 || ts[0].Name != "call" || string(ts[0].Text) != template || ts[0].Format != FormatText {
		t.Fatalf("templates after reopen: %+v, %v", ts, err)
	}
	if _, err := d.Add(ctx, Input{ID: "late", Text: []byte(docs[3])}, nil); err != nil {
		t.Fatal(err)
	}
	if fp := fingerprints(t, d)["late"]; !slices.Equal(fp, want["doc3"]) {
		t.Fatal("a document added after reopen is fingerprinted without the template")
	}
	if err := d.Delete(ctx, "late"); err != nil {
		t.Fatal(err)
	}
	res, err = d.RemoveTemplate(ctx, "call")
	if err != nil || res.Changed != 40 || res.Excluded != 0 {
		t.Fatalf("remove: %+v, %v", res, err)
	}
	if got := fingerprints(t, d); !mapsEqual(got, before) {
		t.Fatal("removing the template does not restore the fingerprints")
	}
	if _, err := d.RemoveTemplate(ctx, "call"); !errors.Is(err, ErrNoTemplate) {
		t.Fatalf("removing it again: %v, want ErrNoTemplate", err)
	}
}

func mapsEqual(a, b map[string][]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestTemplateNeedsTexts: a database with documents but without their
// texts refuses templates and is left unchanged; an empty one takes them.
func TestTemplateNeedsTexts(t *testing.T) {
	template, docs := templateCorpus(3)
	d := openTest(t, "", &Options{NoSync: true})
	if _, err := d.AddTemplate(ctx, "call", []byte(template), TextOptions{}); err != nil {
		t.Fatalf("empty database without texts: %v", err)
	}
	if _, err := d.RemoveTemplate(ctx, "call"); err != nil {
		t.Fatal(err)
	}
	addAll(t, d, docs)
	was := dump(t, d)
	if _, err := d.AddTemplate(ctx, "call", []byte(template), TextOptions{}); !errors.Is(err, ErrTemplateNeedsTexts) {
		t.Fatalf("got %v, want ErrTemplateNeedsTexts", err)
	}
	if dump(t, d) != was {
		t.Fatal("a refused template changed the database")
	}
	// In a database that keeps texts, one document added by fingerprint
	// is enough to refuse.
	k := openTest(t, "", &Options{KeepTexts: true, NoSync: true})
	addAll(t, k, docs)
	if _, err := k.Add(ctx, Input{ID: "fp", Fingerprint: make([]uint64, 8)}, nil); err != nil {
		t.Fatal(err)
	}
	was = dump(t, k)
	if _, err := k.AddTemplate(ctx, "call", []byte(template), TextOptions{}); !errors.Is(err, ErrTemplateNeedsTexts) {
		t.Fatalf("got %v, want ErrTemplateNeedsTexts", err)
	}
	if dump(t, k) != was {
		t.Fatal("a refused template changed the database")
	}
	// Bad templates.
	for _, c := range []struct {
		name, text string
		want       error
	}{
		{"", template, ErrInvalidID},
		{"empty", " ... ", nil},
	} {
		if _, err := d.AddTemplate(ctx, c.name, []byte(c.text), TextOptions{}); err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Fatalf("template %q: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestTemplateInterrupted: a template change cut short (as by a crash)
// leaves a mark; a read-only open refuses the half-changed database, a
// writable open finishes the change. A cancelled context does not cut it
// short once it is committed.
func TestTemplateInterrupted(t *testing.T) {
	template, docs := templateCorpus(600)
	dir := t.TempDir()
	d, err := Open(dir, &Options{KeepTexts: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, d, docs)
	batches := 0
	d.testStopReindex = func() bool { batches++; return batches == 3 } // as a crash after two batches
	if _, err := d.AddTemplate(ctx, "call", []byte(template), TextOptions{}); !errors.Is(err, errTestStop) {
		t.Fatalf("got %v, want the test's stop", err)
	}
	d.testStopReindex = nil
	if err := d.Check(ctx); err == nil || !strings.Contains(err.Error(), "template change is unfinished") {
		t.Fatalf("Check of the half-changed database: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, &Options{ReadOnly: true}); !errors.Is(err, ErrReindexPending) {
		t.Fatalf("read-only open: %v, want ErrReindexPending", err)
	}
	d = openTest(t, dir, nil)
	fresh := openTest(t, "", &Options{KeepTexts: true, NoSync: true})
	if _, err := fresh.AddTemplate(ctx, "call", []byte(template), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	addAll(t, fresh, docs)
	if !mapsEqual(fingerprints(t, d), fingerprints(t, fresh)) {
		t.Fatal("the finished change differs from a database that had the template first")
	}
	// A cancelled context: the change still runs to its end.
	cctx, cancel := context.WithCancel(ctx)
	d.hook = func(point string) {
		if point == "reindex" {
			cancel()
		}
	}
	res, err := d.RemoveTemplate(cctx, "call")
	d.hook = nil
	if err != nil || res.Changed != len(docs) {
		t.Fatalf("remove with a cancelled context: %+v, %v", res, err)
	}
	if end, next, pending, err := reindexMark(d.pdb); err != nil || pending {
		t.Fatalf("mark left: %d %d %v %v", end, next, pending, err)
	}
}

// TestSuggestTemplate: the suggestion is the boilerplate every document
// holds, cut from a stored text; added as a template, it leaves no pair
// similar but the planted one. Comparing two documents then shows no
// passage of it.
func TestSuggestTemplate(t *testing.T) {
	template, docs := templateCorpus(30)
	d := openTest(t, "", &Options{KeepTexts: true, NoSync: true})
	addAll(t, d, docs)
	was := dump(t, d)
	b, err := d.SuggestTemplate(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(b.Text) != template || len(b.Passages) != 1 || b.Passages[0].ID != "doc0" || b.Documents != 30 || b.MinDocuments != 15 {
		t.Fatalf("suggestion: %d bytes, %+v, %d docs, min %d", len(b.Text), b.Passages, b.Documents, b.MinDocuments)
	}
	if dump(t, d) != was {
		t.Fatal("SuggestTemplate changed the database")
	}
	if _, err := d.AddTemplate(ctx, "suggested", b.Text, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := pairsAt(t, d, 0.2); len(got) != 1 {
		t.Fatalf("pairs after the suggested template: %+v", got)
	}
	c, err := d.Compare(ctx, CompareInput{ID: "doc0"}, CompareInput{ID: "doc1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Passages {
		if p.A.Words > 130 {
			t.Fatalf("a passage of %d words: the template is shown as shared", p.A.Words)
		}
	}
	if len(c.Passages) != 1 {
		t.Fatalf("%d passages, want the shared paragraph only", len(c.Passages))
	}
	// Nothing more to suggest; a sample of 10 reads 10 documents.
	b, err = d.SuggestTemplate(ctx, &BoilerplateOptions{Sample: 10})
	if err != nil || len(b.Text) != 0 || b.Documents != 10 {
		t.Fatalf("second suggestion: %+v, %v", b, err)
	}
	// Any sample reads that many (it read every ceil(30/7)-th: 6 of 7).
	for _, n := range []int{1, 7, 11, 29, 30, 31} {
		b, err := d.SuggestTemplate(ctx, &BoilerplateOptions{Sample: n})
		if err != nil || b.Documents != min(n, 30) {
			t.Fatalf("a sample of %d read %d documents (%v)", n, b.Documents, err)
		}
	}
	if _, err := d.SuggestTemplate(ctx, &BoilerplateOptions{MinShare: 1.5}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("MinShare 1.5: %v", err)
	}
	nt := openTest(t, "", nil)
	if _, err := nt.SuggestTemplate(ctx, nil); !errors.Is(err, ErrNoText) {
		t.Fatalf("without texts: %v", err)
	}
}

// TestSuggestTemplateMarkup: the template suggested from HTML documents is
// their readable text, no tag in it, and added as a plain-text template it
// excludes the call's words from the HTML documents' resemblance.
func TestSuggestTemplateMarkup(t *testing.T) {
	template, docs := templateCorpus(30)
	// The call has markup of its own: every tenth word bold, references.
	words := strings.Fields(template)
	for i := range words {
		if i%10 == 5 {
			words[i] = "<b>" + words[i] + "</b> &amp;"
		}
	}
	call := strings.Join(words, " ")
	for i, s := range docs {
		s = strings.Replace(s, template, call, 1)
		docs[i] = "<html><body><h1>Call &amp; proposal</h1><p>" + strings.ReplaceAll(s, "\n\n", "</p>\n<p>") + "</p></body></html>"
	}
	d := openTest(t, "", &Options{KeepTexts: true, NoSync: true})
	addAll(t, d, docs)
	b, err := d.SuggestTemplate(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Text) == 0 || bytes.ContainsAny(b.Text, "<>") || bytes.Contains(b.Text, []byte("&amp;")) {
		t.Fatalf("suggestion %q: want the readable text", b.Text)
	}
	if _, err := d.AddTemplate(ctx, "suggested", b.Text, TextOptions{Format: FormatText}); err != nil {
		t.Fatal(err)
	}
	if got := pairsAt(t, d, 0.2); len(got) != 1 {
		t.Fatalf("pairs after the suggested template: %+v, want the one pair sharing its own paragraph", got)
	}
}

// TestTemplateExportImport: an export carries the templates; the imported
// database fingerprints new texts as the exported one does.
func TestTemplateExportImport(t *testing.T) {
	template, docs := templateCorpus(6)
	d := openTest(t, "", &Options{KeepTexts: true, NoSync: true})
	if _, err := d.AddTemplate(ctx, "call", []byte(template), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	addAll(t, d, docs[:5])
	var buf bytes.Buffer
	if _, err := d.Export(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if n, err := Import(ctx, dir, bytes.NewReader(buf.Bytes()), nil); err != nil || n != 5 {
		t.Fatalf("import: %d, %v", n, err)
	}
	e := openTest(t, dir, nil)
	ts, err := e.Templates(ctx)
	if err != nil || len(ts) != 1 || string(ts[0].Text) != template || !ts[0].Added.Equal(mustTemplates(t, d)[0].Added) {
		t.Fatalf("imported templates %+v, %v", ts, err)
	}
	for _, db := range []*DB{d, e} {
		if _, err := db.Add(ctx, Input{ID: "new", Text: []byte(docs[5])}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(fingerprints(t, d)["new"], fingerprints(t, e)["new"]) {
		t.Fatal("the imported database fingerprints a new text otherwise")
	}
}

func mustTemplates(t *testing.T, d *DB) []Template {
	t.Helper()
	ts, err := d.Templates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestTemplateConcurrentAdds: adds and queries running while a template is
// added either finish before it or are fingerprinted with it: afterwards
// every stored fingerprint is the one its text has under the templates.
func TestTemplateConcurrentAdds(t *testing.T) {
	template, docs := templateCorpus(300)
	d := openTest(t, "", &Options{KeepTexts: true, NoSync: true})
	addAll(t, d, docs[:250])
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if _, err := d.AddTemplate(ctx, "call", []byte(template), TextOptions{}); err != nil {
			t.Error(err)
		}
	}()
	go func() {
		defer wg.Done()
		for i, s := range docs[250:] {
			if _, err := d.Add(ctx, Input{ID: fmt.Sprint("late", i), Text: []byte(s)}, &AddOptions{Threshold: 0.5}); err != nil {
				t.Error(err)
			}
			if _, err := d.Query(ctx, []byte(s), QueryOptions{Threshold: 0.5}); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()
	for id, fp := range fingerprints(t, d) {
		st, err := d.Text(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want, err := d.Fingerprint(ctx, bytes.NewReader(st.Text), TextOptions{Format: st.Format, Encoding: "utf-8"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fp, want) {
			t.Fatalf("%s: stored fingerprint is not its text's under the templates", id)
		}
	}
}

// TestTemplateOnlyContainment: a document made only of template text
// contains no query, and a query made only of template text is contained
// in nothing.
func TestTemplateOnlyContainment(t *testing.T) {
	template, docs := templateCorpus(3)
	d := openTest(t, "", &Options{KeepTexts: true, NoSync: true})
	if _, err := d.AddTemplate(ctx, "call", []byte(template), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	addAll(t, d, docs)
	if _, err := d.Add(ctx, Input{ID: "only", Text: []byte(template)}, nil); err != nil {
		t.Fatal(err)
	}
	doc, err := d.Get(ctx, "only")
	if err != nil || doc.Shingles != 1 {
		t.Fatalf("template-only document: %+v, %v", doc, err)
	}
	for _, q := range []string{text(77, 20), template} {
		res, err := d.Query(ctx, []byte(q), QueryOptions{Containment: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Matches {
			if m.ID == "only" || q == template {
				t.Fatalf("query %.20q: match %+v", q, m)
			}
		}
	}
}
