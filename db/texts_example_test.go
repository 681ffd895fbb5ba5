package db_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/fpdb/fpdb/db"
)

// Keep each document's text, to read it back later (to show the passages
// two documents share, say).
func ExampleDB_Text() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	ctx := context.Background()
	d, err := db.Open(filepath.Join(dir, "fpdb"), &db.Options{KeepTexts: true})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	// A Latin-1 page: the text kept is the one its words were read from,
	// decoded to UTF-8, with the format it was read as.
	page := "<html><body><p>Caf\xe9 au lait, cr\xe8me br\xfbl\xe9e.</p></body></html>"
	if _, err := d.Add(ctx, db.Input{ID: "menu", Reader: strings.NewReader(page)}, nil); err != nil {
		log.Fatal(err)
	}
	st, err := d.Text(ctx, "menu")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s (%v)\n", st.Text, st.Format)

	// A document added by fingerprint has no text.
	doc, err := d.Get(ctx, "menu")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := d.Add(ctx, db.Input{ID: "copy", Fingerprint: doc.Fingerprint}, nil); err != nil {
		log.Fatal(err)
	}
	_, err = d.Text(ctx, "copy")
	fmt.Println(errors.Is(err, db.ErrNoText))
	// Output:
	// <html><body><p>Café au lait, crème brûlée.</p></body></html> (html)
	// true
}
