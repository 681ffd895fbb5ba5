package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/api"
)

// downPrefix starts the ids that shardDown's server takes for ids of a
// shard with no live replica.
const downPrefix = "down/"

// shardDown wraps a server's handler to answer as a cluster node does for
// the ids of a shard with no live replica (those starting with
// downPrefix): their delete is logged, not applied, and answered 202 with
// the ids under "pending" (package cluster's deleteOne and deleteMany);
// the other ids are the server's.
func shardDown(t *testing.T, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accepted := func(res api.DeleteResult) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusAccepted)
			if err := json.NewEncoder(w).Encode(res); err != nil {
				t.Error(err)
			}
		}
		switch {
		case r.Method == http.MethodDelete && strings.HasPrefix(strings.TrimPrefix(r.URL.Path, "/v1/documents/"), downPrefix):
			accepted(api.DeleteResult{Pending: []string{strings.TrimPrefix(r.URL.Path, "/v1/documents/")}})
			return
		case r.Method != http.MethodPost || r.URL.Path != "/v1/delete":
			h.ServeHTTP(w, r)
			return
		}
		var req api.DeleteRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("delete request: %v", err)
		}
		var up, down []string
		for _, id := range req.IDs {
			if strings.HasPrefix(id, downPrefix) {
				down = append(down, id)
			} else {
				up = append(up, id)
			}
		}
		var res api.DeleteResult
		if len(up) > 0 || len(down) == 0 {
			req.IDs = up
			b, err := json.Marshal(req)
			if err != nil {
				t.Error(err)
			}
			rr := httptest.NewRecorder()
			h.ServeHTTP(rr, httptest.NewRequestWithContext(r.Context(), http.MethodPost, "/v1/delete", bytes.NewReader(b)))
			if rr.Code != http.StatusOK || len(down) == 0 {
				for k, v := range rr.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rr.Code)
				_, _ = io.Copy(w, rr.Body)
				return
			}
			if err := json.Unmarshal(rr.Body.Bytes(), &res); err != nil {
				t.Errorf("the server's answer %s: %v", rr.Body, err)
			}
		}
		res.Pending = down
		accepted(res)
	})
}

// TestDeletePending: through a cluster node, a delete of an id whose shard
// has no live replica is reported pending, neither deleted nor missing,
// and counts as deleted for the exit status; a server with nothing
// pending is answered as before.
func TestDeletePending(t *testing.T) {
	url := testServerWrapped(t, nil, func(h http.Handler) http.Handler { return shardDown(t, h) })
	bees, tides, coffee, bread := corpus+"bees.txt", corpus+"tides.txt", corpus+"coffee.txt", corpus+"bread.txt"
	runFPDB(t, "", "--server", url, "add", bees, tides, coffee, bread).mustCode(t, exitOK)
	const why = "has no live replica; applied when one returns"
	for _, tc := range []struct {
		name           string
		stdin          string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"stdin, one pending", bees + "\n" + downPrefix + "a\n", []string{"delete", "-"}, exitOK,
			"1 document deleted, 1 pending (its shard " + why + ")\n",
			`fpdb: delete "down/a": pending: its shard ` + why + "\n"},
		{"stdin, two pending and one missing", tides + "\n" + downPrefix + "b\nnope\n" + downPrefix + "c\n", []string{"delete", "-"}, exitFailure,
			"1 document deleted, 2 pending (their shards have no live replica; applied when one returns)\n",
			`fpdb: delete "nope": document not found` + "\n" +
				`fpdb: delete "down/b": pending: its shard ` + why + "\n" + `fpdb: delete "down/c": pending: its shard ` + why + "\n"},
		{"stdin, pending only", downPrefix + "d\n", []string{"delete", "-"}, exitOK,
			"0 documents deleted, 1 pending (its shard " + why + ")\n", `fpdb: delete "down/d": pending: its shard ` + why + "\n"},
		{"arguments", "", []string{"delete", coffee, downPrefix + "e"}, exitOK,
			coffee + ": deleted\n" + downPrefix + "e: pending (its shard " + why + ")\n", ""},
		{"nothing pending", bread + "\n", []string{"delete", "-"}, exitOK, "1 document deleted\n", ""},
	} {
		r := runFPDB(t, tc.stdin, append([]string{"--server", url}, tc.args...)...)
		if r.code != tc.code || r.stdout != tc.stdout || r.stderr != tc.stderr {
			t.Errorf("%s: exit code %d, stdout %q, stderr %q; want %d, %q, %q", tc.name, r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}
