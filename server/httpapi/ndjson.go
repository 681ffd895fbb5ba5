package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// flushEvery is how often a stream sends what it has buffered.
const flushEvery = 100 * time.Millisecond

// NDJSON writes a streamed response of JSON lines (application/x-ndjson):
// buffered, sent at least every 100ms while lines come. Nothing is sent
// before the first buffer is flushed, so an error before then is still
// answered with its status; a stream that fails later is cut off (see
// End).
type NDJSON struct {
	w       http.ResponseWriter
	sink    *sink
	bw      *bufio.Writer
	enc     *json.Encoder
	flushed time.Time
}

// sink is the response body under a stream's buffer; it notes whether
// anything was written.
type sink struct {
	w     http.ResponseWriter
	wrote bool
}

func (s *sink) Write(p []byte) (int, error) {
	s.wrote = true
	return s.w.Write(p)
}

// NewNDJSON begins a stream on w (its headers, not yet sent).
func NewNDJSON(w http.ResponseWriter) *NDJSON {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	sk := &sink{w: w}
	s := &NDJSON{w: w, sink: sk, bw: bufio.NewWriterSize(sk, 32<<10), flushed: time.Now()}
	s.enc = json.NewEncoder(s.bw)
	s.enc.SetEscapeHTML(false)
	return s
}

// Send writes v as one line, unless ctx is done (the client went away, or
// the stream's time is up).
func (s *NDJSON) Send(ctx context.Context, v any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enc.Encode(v); err != nil {
		return fmt.Errorf("write the stream: %w", err)
	}
	return s.Tick()
}

// Write writes p (whole lines, as db.Export writes them) to the stream.
func (s *NDJSON) Write(p []byte) (int, error) {
	n, err := s.bw.Write(p)
	if err == nil {
		err = s.Tick()
	}
	return n, err
}

// Tick sends what is buffered when the last send is 100ms old: a long
// run calls it as it goes, so that what it found does not wait.
func (s *NDJSON) Tick() error {
	if time.Since(s.flushed) < flushEvery || s.bw.Buffered() == 0 {
		return nil
	}
	return s.flush()
}

// flush sends what is buffered.
func (s *NDJSON) flush() error {
	if err := s.bw.Flush(); err != nil {
		return fmt.Errorf("write the stream: %w", err)
	}
	s.flushed = time.Now()
	if err := http.NewResponseController(s.w).Flush(); err != nil {
		return fmt.Errorf("write the stream: %w", err)
	}
	return nil
}

// End ends the stream with the run's error. Without error it sends the
// rest (an empty stream is a 200 with an empty body). With an error before
// anything was sent, it returns the error, to be answered as any other;
// after, it cuts the connection off, so that the client sees a broken
// response rather than a short list that looks complete, and returns the
// error for the log. When ctx is done, the error says so (the client
// left, or the time is up).
func (s *NDJSON) End(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	if err == nil {
		if !s.sink.wrote && s.bw.Buffered() == 0 {
			s.w.WriteHeader(http.StatusOK)
		}
		return s.flush()
	}
	if !s.sink.wrote {
		return err
	}
	if conn, _, herr := http.NewResponseController(s.w).Hijack(); herr == nil {
		_ = conn.Close()
	}
	return err
}

// ServeExport serves GET /v1/export (no parameters): export writes the
// export's lines to the stream, as db.DB.Export does; a failure after the
// first line ends the stream with its error.
func ServeExport(w http.ResponseWriter, r *http.Request, export func(context.Context, io.Writer) (int, error)) error {
	p := Params{Values: r.URL.Query()}
	if p.Only(); p.Err != nil {
		return p.Err
	}
	ctx := r.Context()
	out := NewNDJSON(w)
	_, err := export(ctx, out)
	return out.End(ctx, err)
}
