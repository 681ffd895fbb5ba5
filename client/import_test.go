package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/client"
)

// countedZeros reads as n bytes 'a', counting those read.
type countedZeros struct {
	left int64
	read atomic.Int64
}

func (z *countedZeros) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), z.left)]
	for i := range p {
		p[i] = 'a'
	}
	z.left -= int64(len(p))
	z.read.Add(int64(len(p)))
	return len(p), nil
}

// TestImportExpectContinue: Import asks for leave to send the export
// (Expect: 100-continue), so that a server that refuses the import before
// it reads (a database that is not empty) answers with nothing of a 64 MB
// export sent (the first bytes at most, which net/http reads to see
// whether a body of unknown length is empty), and the answer is the
// server's refusal.
func TestImportExpectContinue(t *testing.T) {
	url := serve(t, nil)
	c := newClient(t, url, nil)
	if _, err := c.Add(context.Background(), api.AddRequest{ID: "a", Text: textA}); err != nil {
		t.Fatal(err)
	}
	body := &countedZeros{left: 64 << 20}
	_, err := c.Import(context.Background(), body)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest || !strings.Contains(ce.Message, "database is not empty") {
		t.Fatalf("import into a database that is not empty: %v, want the server's 400", err)
	}
	if n := body.read.Load(); n > 64<<10 {
		t.Errorf("the refused import read %d bytes of the export to send it", n)
	}

	// The header itself; an import the server takes sends its body.
	var expect atomic.Value
	var got atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		expect.Store(r.Header.Get("Expect"))
		n, _ := io.Copy(io.Discard, r.Body)
		got.Store(n)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"imported":0}`)
	}))
	defer ts.Close()
	if _, err := newClient(t, ts.URL, nil).Import(context.Background(), strings.NewReader("{}\n")); err != nil {
		t.Fatal(err)
	}
	if got.Load() != 3 {
		t.Errorf("the server read %d bytes of a body of 3", got.Load())
	}
	if got, _ := expect.Load().(string); got != "100-continue" {
		t.Errorf("Import sent Expect %q, want 100-continue", got)
	}
}
