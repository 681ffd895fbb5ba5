package db_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/fpdb/fpdb/db"
)

// proposal returns a text of n distinct words, the words from..from+n-1 of
// a fixed vocabulary, so that two proposals share the words they overlap on.
func proposal(from, n int) []byte {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("word%d", from+i)
	}
	return []byte(strings.Join(w, " "))
}

// tempDir returns a new directory for an example's database; remove it
// when done.
func tempDir() string {
	dir, err := os.MkdirTemp("", "fpdb-example")
	if err != nil {
		log.Fatal(err)
	}
	return dir
}

// Store documents, checking each new one against those stored, then query.
func Example() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	ctx := context.Background()
	d, err := db.Open(filepath.Join(dir, "fpdb"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	if _, err := d.Add(ctx, db.Input{ID: "proposal-1", Text: proposal(0, 400)}, nil); err != nil {
		log.Fatal(err)
	}
	// A revision sharing 390 of its 400 words: found by the check of Add.
	res, err := d.Add(ctx, db.Input{ID: "proposal-2", Text: proposal(10, 400)}, &db.AddOptions{Threshold: 0.8})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range res.Matches {
		fmt.Printf("proposal-2 resembles %s at %.2f\n", m.ID, m.Similarity)
	}
	// A query with the first text: its copy is flagged Exact.
	q, err := d.Query(ctx, proposal(0, 400), db.QueryOptions{Threshold: 0.9})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range q.Matches {
		fmt.Printf("query: %s exact=%v\n", m.ID, m.Exact)
	}
	// Output:
	// proposal-2 resembles proposal-1 at 0.97
	// query: proposal-1 exact=true
	// query: proposal-2 exact=false
}

// Load many documents in one atomic batch.
func ExampleDB_AddBatch() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	ctx := context.Background()
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	var in []db.Input
	for i := range 5 {
		in = append(in, db.Input{ID: fmt.Sprint("page-", i), Text: proposal(1000*i, 300), Source: "crawl-17"})
	}
	in = append(in, db.Input{ID: "empty", Text: nil})
	res, err := d.AddBatch(ctx, in)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored", res.Stored, "skipped", len(res.Skipped), "documents:", d.Len())
	// Output:
	// stored 5 skipped 1 documents: 5
}

// Check and store a crawl's pages in one write: the third page repeats
// the first, which the batch stored before it, and is rejected.
func ExampleDB_AddEach() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	ctx := context.Background()
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	in := []db.Input{
		{ID: "page-1", Text: proposal(0, 300)},
		{ID: "page-2", Text: proposal(5000, 300)},
		{ID: "page-3", Text: proposal(3, 300)}, // page-1 shifted by 3 words
	}
	res, err := d.AddEach(ctx, in, &db.AddOptions{Threshold: 0.8, Reject: true})
	if err != nil {
		log.Fatal(err)
	}
	for i, r := range res.Results {
		fmt.Println(in[i].ID, "stored:", r.Stored, "matches:", len(r.Matches))
	}
	// Output:
	// page-1 stored: true matches: 0
	// page-2 stored: true matches: 0
	// page-3 stored: false matches: 1
}

// Find every near-duplicate pair, then group them into clusters and keep
// the oldest of each.
func ExampleDB_Pairs() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	ctx := context.Background()
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	for i, from := range []int{0, 5, 10, 5000} {
		if _, err := d.Add(ctx, db.Input{ID: fmt.Sprint("doc-", i), Text: proposal(from, 400)}, nil); err != nil {
			log.Fatal(err)
		}
	}
	st, err := d.Pairs(ctx, db.PairsOptions{Threshold: 0.8}, func(p db.Pair) error {
		fmt.Printf("%s ~ %s\n", p.A, p.B)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.Pairs, "pairs among", st.Docs, "documents")
	clusters, _, err := d.Clusters(ctx, db.ClusterOptions{PairsOptions: db.PairsOptions{Threshold: 0.8}, Keep: db.KeepOldest})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range clusters {
		fmt.Println("keep", c.Keep, "drop", c.Drop)
	}
	// Unordered output:
	// doc-0 ~ doc-1
	// doc-0 ~ doc-2
	// doc-1 ~ doc-2
	// 3 pairs among 4 documents
	// keep doc-0 drop [doc-1 doc-2]
}

// Iterate over the stored documents, delete one, and back the database up
// while it stays open.
func ExampleDB_Backup() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	ctx := context.Background()
	d, err := db.Open(filepath.Join(dir, "live"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	for i := range 3 {
		if _, err := d.Add(ctx, db.Input{ID: fmt.Sprint("paper-", i), Text: proposal(1000*i, 200)}, nil); err != nil {
			log.Fatal(err)
		}
	}
	if err := d.Delete(ctx, "paper-1"); err != nil {
		log.Fatal(err)
	}
	if err := d.Docs(ctx, func(doc db.Doc) error {
		fmt.Println(doc.ID, doc.Words, "words")
		return nil
	}); err != nil {
		log.Fatal(err)
	}
	res, err := d.Backup(ctx, filepath.Join(dir, "backup"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("backed up:", res.Docs, "documents")
	b, err := db.Open(filepath.Join(dir, "backup"), &db.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	has, _ := b.Has(ctx, "paper-2")
	fmt.Println("backup holds", b.Len(), "documents; paper-2:", has)
	// Output:
	// paper-0 200 words
	// paper-2 200 words
	// backed up: 2 documents
	// backup holds 2 documents; paper-2: true
}
