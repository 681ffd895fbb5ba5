package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/httpapi"
)

// Options configure a Server. The zero value is usable: see the defaults.
type Options struct {
	// MaxBodyBytes is the largest request body accepted; a larger one is
	// answered 413. Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxImportBytes is the largest export POST /v1/import accepts (its
	// time is bounded by StreamTimeout). Default DefaultMaxImportBytes.
	MaxImportBytes int64
	// BackupRoot, when not empty, is the directory POST /v1/backup writes
	// in: a destination that is not inside it, after symbolic links and
	// ".." are resolved, is refused (403, without naming the root, which
	// the log does), and a relative one is taken relative to it. The
	// backup is written to the destination as resolved; a local user who
	// may change symbolic links under the root while a backup runs could
	// still redirect it (the check and the copy are not one step), so the
	// root should be writable by the server's user alone. It must be an
	// existing directory; a relative BackupRoot is taken from the working
	// directory at New. Empty (the default): an absolute destination
	// anywhere the server's user may write, outside the database's
	// directory.
	BackupRoot string
	// RequestTimeout bounds a request, reading its body included; a
	// request that takes longer is answered 408 (its body too slow) or
	// 503, and its write, if any, is not made. Streams (pairs, clusters,
	// export, the log) are bounded by StreamTimeout instead. Default
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// StreamTimeout bounds a streamed response. Default
	// DefaultStreamTimeout. A write of a response, streamed or not, that
	// the client does not take within the request's timeout (at most a
	// minute) gives up, so a client that stops reading cannot hold a
	// request; an answer sent after the timeout (a backup that had begun)
	// still goes out.
	StreamTimeout time.Duration
	// MaxConcurrent is the number of requests served at once; more are
	// answered 429 at once. Default DefaultMaxConcurrent.
	MaxConcurrent int
	// Tokens, when not nil, requires a bearer token on every /v1 request:
	// read-only tokens may read, read-write tokens may also write.
	Tokens *Tokens
	// AllowedHosts are the host names, besides localhost and the loopback
	// addresses, that a server listening on a loopback address answers
	// (httpapi.LoopbackHosts; "*": any): the public name a reverse proxy
	// in front of it passes on in the Host header. Default: none.
	AllowedHosts []string
	// Logger receives one line per request (with its request id) and the
	// server's events. Default: discard.
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxBodyBytes   = 64 << 20
	DefaultMaxImportBytes = 64 << 30
	DefaultRequestTimeout = 60 * time.Second
	DefaultStreamTimeout  = 30 * time.Minute
	DefaultMaxConcurrent  = 64
)

// ErrInvalidOptions is returned by New for options out of range.
var ErrInvalidOptions = errors.New("server: invalid options")

// Server serves one database over HTTP. It is safe for concurrent use.
type Server struct {
	d     *db.DB
	o     Options
	mux   *http.ServeMux
	ready chan struct{} // closed when Serve begins to shut down
	// metrics are served at /metrics, from a registry of this server's.
	metrics *metricSet
	// compareSlots bound the comparisons run at once.
	compareSlots CompareSlots
	// importing is set while POST /v1/import runs: another is refused at
	// once, before its body is read.
	importing atomic.Bool
}

// New returns a server of d; opts may be nil (the defaults). The caller
// keeps ownership of d: close it after Serve returns.
func New(d *db.DB, opts *Options) (*Server, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.MaxImportBytes == 0 {
		o.MaxImportBytes = DefaultMaxImportBytes
	}
	if o.MaxBodyBytes < 0 || o.MaxImportBytes < 0 || o.RequestTimeout < 0 || o.StreamTimeout < 0 || o.MaxConcurrent < 0 {
		return nil, fmt.Errorf("%w: negative limit", ErrInvalidOptions)
	}
	if o.BackupRoot != "" {
		root, err := checkBackupRoot(o.BackupRoot)
		if err != nil {
			return nil, fmt.Errorf("%w: backup root: %w", ErrInvalidOptions, err)
		}
		o.BackupRoot = root
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.StreamTimeout == 0 {
		o.StreamTimeout = DefaultStreamTimeout
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(d)
	if err != nil {
		return nil, fmt.Errorf("server: metrics: %w", err)
	}
	s := &Server{d: d, o: o, ready: make(chan struct{}), metrics: m, compareSlots: NewCompareSlots()}
	s.mux = httpapi.NewMux(s.routes(), httpapi.Options{Tokens: o.Tokens, MaxBodyBytes: o.MaxBodyBytes, MaxImportBytes: o.MaxImportBytes,
		RequestTimeout: o.RequestTimeout, StreamTimeout: o.StreamTimeout, MaxConcurrent: o.MaxConcurrent,
		Logger: o.Logger, Errors: errorClasses, Observe: m.http.Observe})
	return s, nil
}

// Handler returns the server's HTTP handler, to mount in another server.
func (s *Server) Handler() http.Handler { return s.mux }

// Serve serves on ln until ctx is done, then shuts down gracefully: it
// stops accepting, answers /readyz 503, lets the requests in flight finish
// (for up to grace; those still running then have their connections
// closed), flushes the database's deferred postings, and returns. It
// returns nil after a shutdown asked for by ctx, unless the flush fails.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	var h http.Handler = s.mux
	if httpapi.IsLoopback(ln.Addr()) {
		h = httpapi.LoopbackHosts(h, s.o.AllowedHosts, s.o.Logger) // DNS rebinding
	}
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.o.Logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	close(s.ready)
	s.o.Logger.Info("shutting down: draining requests", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// The shutdown was asked for: requests still running after the
		// grace period are cut off (their connections closed, their
		// contexts cancelled; a write stops between atomic batches), not
		// a failure of the server.
		s.o.Logger.Warn("shutting down: grace period over, closing the connections of the requests still in flight", "grace", grace)
		_ = hs.Close()
		err = nil
	}
	// The flush is not bounded by the grace period, which may be over:
	// deferred postings are written whatever the requests did.
	if ferr := s.d.Flush(context.WithoutCancel(ctx)); ferr != nil && !errors.Is(ferr, db.ErrReadOnly) && !errors.Is(ferr, db.ErrImportRunning) {
		err = errors.Join(err, ferr)
	}
	<-errc
	return err
}
