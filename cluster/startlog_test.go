package cluster

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// logLine is what TestStartingHandlerLog reads of a JSON log line.
type logLine struct {
	Level  string `json:"level"`
	Msg    string `json:"msg"`
	Path   string `json:"path"`
	Status int    `json:"status"`
	Node   string `json:"node"`
}

// logLines decodes the JSON lines of s.
func logLines(t *testing.T, s string) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l == "" {
			continue
		}
		var ll logLine
		if err := json.Unmarshal([]byte(l), &ll); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, ll)
	}
	return out
}

// TestStartingHandlerLog: a starting node's 503s are not logged at ERROR:
// its /readyz answer ("forming the cluster"), asked again and again by a
// readiness probe, once at INFO and then at DEBUG; another route's at
// WARN. A line at ERROR that is not a starting node's answer stays at
// ERROR.
func TestStartingHandlerLog(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var buf syncBuffer
		logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level}))
		srv := httptest.NewServer(StartingHandler("n1", &HTTPOptions{Logger: logger}))
		for range 6 {
			if st, _, b := httpDo(t, "GET", srv.URL+"/readyz", "", ""); st != http.StatusServiceUnavailable {
				t.Fatalf("readyz while starting: %d %s", st, b)
			}
		}
		if st, _, b := httpDo(t, "GET", srv.URL+"/v1/stats", "", ""); st != http.StatusServiceUnavailable {
			t.Fatalf("stats while starting: %d %s", st, b)
		}
		if st, _, b := httpDo(t, "GET", srv.URL+"/healthz", "", ""); st != http.StatusOK {
			t.Fatalf("healthz while starting: %d %s", st, b)
		}
		srv.Close()
		count := map[string]int{} // "LEVEL path status"
		for _, l := range logLines(t, buf.String()) {
			if l.Msg != "request" || l.Node != "n1" {
				t.Errorf("log line %+v, want a request line of node n1", l)
			}
			count[l.Level+" "+l.Path+" "+http.StatusText(l.Status)]++
		}
		want := map[string]int{"INFO /readyz Service Unavailable": 1, "WARN /v1/stats Service Unavailable": 1, "INFO /healthz OK": 1}
		if level == slog.LevelDebug {
			want["DEBUG /readyz Service Unavailable"] = 5
		}
		if len(count) != len(want) {
			t.Errorf("logged at %v: %v, want %v\n%s", level, count, want, buf.String())
		}
		for k, n := range want {
			if count[k] != n {
				t.Errorf("logged at %v: %d lines %q, want %d\n%s", level, count[k], k, n, buf.String())
			}
		}
	}

	// A line of the starting handler's log that is not a starting node's
	// answer keeps its level.
	var buf syncBuffer
	l := newStartingLog(slog.New(slog.NewJSONHandler(&buf, nil)))
	l.Log(context.Background(), slog.LevelError, "request", "status", 500)
	if ls := logLines(t, buf.String()); len(ls) != 1 || ls[0].Level != "ERROR" {
		t.Errorf("an error logged through the starting log: %s, want it at ERROR", buf.String())
	}
}
