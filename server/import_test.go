package server

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
)

// TestImport: an export posted to /v1/import fills the empty served
// database; posted again it is refused with 400 and nothing changes.
func TestImport(t *testing.T) {
	src, err := db.Open(t.TempDir(), &db.Options{KeepTexts: true, AuditLog: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for i := range 20 {
		if _, err := src.Add(context.Background(), db.Input{ID: "d" + strings.Repeat("x", i), Text: []byte(text(uint64(i), 100))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var exp bytes.Buffer
	if _, err := src.Export(context.Background(), &exp); err != nil {
		t.Fatal(err)
	}
	ts, d := testServer(t, nil)
	var res api.ImportResult
	if st := call(t, "POST", ts.URL+"/v1/import", "application/x-ndjson", bytes.NewReader(exp.Bytes()), &res); st != 200 || res.Imported != 20 || d.Len() != 20 {
		t.Fatalf("import: %d %+v, %d documents", st, res, d.Len())
	}
	var e api.ErrorBody
	if st := call(t, "POST", ts.URL+"/v1/import", "application/x-ndjson", bytes.NewReader(exp.Bytes()), &e); st != 400 || !strings.Contains(e.Error.Message, "not empty") || d.Len() != 20 {
		t.Fatalf("second import: %d %+v", st, e)
	}
	if st := call(t, "POST", ts.URL+"/v1/import", "application/x-ndjson", strings.NewReader("{\"fpdb_export\": 99}\n"), &e); st != 400 {
		t.Fatalf("bad export: %d %+v", st, e)
	}
}
