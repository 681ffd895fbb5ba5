package cluster

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
)

// A starting node's answers are not failures: a readiness probe asks
// /readyz about twice a second until the node has joined the cluster, and
// each answer is a 503, which the API's request log (httpapi.NewMux)
// writes at level ERROR. StartingHandler marks its own answers in the
// request's context (startingMark) and logs through a startingLog, which
// writes the first /readyz answer at INFO and the next ones at DEBUG, and
// each other route's "is starting" answer at WARN (a client's request was
// refused); every other line, an error included, is written as it is.

// startingKind says which answer of a starting node a request got.
type startingKind int32

const (
	// notStarting: an answer other than a starting node's 503.
	notStarting startingKind = iota
	// startingReady: /readyz's "forming the cluster".
	startingReady
	// startingAPI: another route's "is starting".
	startingAPI
)

// startingKey keys a request's *startingMark in its context.
type startingKey struct{}

// startingMark is filled in by a StartingHandler's route with the answer
// it gives, for startingLog to read when the request's line is logged.
type startingMark struct{ kind atomic.Int32 }

// withStartingMark returns r with a new, empty startingMark in its
// context.
func withStartingMark(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), startingKey{}, new(startingMark)))
}

// markStarting records in ctx's startingMark (if any) that the request is
// answered k.
func markStarting(ctx context.Context, k startingKind) {
	if m, ok := ctx.Value(startingKey{}).(*startingMark); ok {
		m.kind.Store(int32(k))
	}
}

// startingOf returns the answer recorded in ctx's startingMark.
func startingOf(ctx context.Context) startingKind {
	if m, ok := ctx.Value(startingKey{}).(*startingMark); ok {
		return startingKind(m.kind.Load())
	}
	return notStarting
}

// startingLog is the slog.Handler of a StartingHandler's request log: h's,
// with the levels of the starting node's answers lowered (see above).
type startingLog struct {
	h slog.Handler
	// readyLogged is set once a /readyz answer was logged at INFO; it is
	// shared by the handlers WithAttrs and WithGroup return.
	readyLogged *atomic.Bool
}

// newStartingLog returns the logger of a StartingHandler's requests, which
// writes to l's handler (nil: nothing).
func newStartingLog(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(&startingLog{h: l.Handler(), readyLogged: new(atomic.Bool)})
}

// Enabled reports whether h takes records of level in ctx; a starting
// node's answer is checked again at its own level by Handle.
func (s *startingLog) Enabled(ctx context.Context, level slog.Level) bool {
	return s.h.Enabled(ctx, level)
}

// Handle writes r to h, at a lower level when it is the line of a starting
// node's answer.
func (s *startingLog) Handle(ctx context.Context, r slog.Record) error {
	kind := startingOf(ctx)
	if kind == notStarting || r.Level < slog.LevelWarn {
		return s.h.Handle(ctx, r)
	}
	r = r.Clone()
	switch {
	case kind == startingAPI:
		r.Level = slog.LevelWarn
	case s.readyLogged.CompareAndSwap(false, true):
		r.Level = slog.LevelInfo
		r.AddAttrs(slog.String("note", "the node answers /readyz 503 until it has joined the cluster; the next such answers are logged at DEBUG"))
	default:
		r.Level = slog.LevelDebug
	}
	if !s.h.Enabled(ctx, r.Level) {
		return nil
	}
	return s.h.Handle(ctx, r)
}

// WithAttrs returns the startingLog of h.WithAttrs(as).
func (s *startingLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &startingLog{h: s.h.WithAttrs(as), readyLogged: s.readyLogged}
}

// WithGroup returns the startingLog of h.WithGroup(name).
func (s *startingLog) WithGroup(name string) slog.Handler {
	return &startingLog{h: s.h.WithGroup(name), readyLogged: s.readyLogged}
}
