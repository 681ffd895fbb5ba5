package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestDeleteDryRunIDs: a dry run of ids lists an id given twice once and
// exits as the delete would, 2 when an id is not stored; the delete then
// does what the dry run said.
func TestDeleteDryRunIDs(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt").mustCode(t, exitOK)
	id := corpus + "bees.txt"

	r := runFPDB(t, "", "--db", dir, "delete", "--dry-run", id, id).mustCode(t, exitOK)
	if r.stdout != id+"\n" || !strings.Contains(r.stderr, "1 document would be deleted") {
		t.Errorf("dry run of an id given twice: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	dry := runFPDB(t, "", "--db", dir, "delete", "--dry-run", "nope", id)
	del := runFPDB(t, "", "--db", dir, "delete", "nope", id)
	if dry.code != exitFailure || del.code != dry.code {
		t.Errorf("exit code %d with --dry-run, %d without; want %d both", dry.code, del.code, exitFailure)
	}
	if !strings.Contains(dry.stderr, `delete "nope": document not found`) || dry.stdout != id+"\n" {
		t.Errorf("dry run with an unknown id: stdout %q, stderr %q", dry.stdout, dry.stderr)
	}
	r = runFPDB(t, "nope\n", "--db", dir, "delete", "--dry-run", "-").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "0 documents would be deleted") {
		t.Errorf("dry run of standard input: stderr %q", r.stderr)
	}
}

// TestDeleteNoIDsRemote: "delete -" with no ids on standard input (a
// pipeline from "clusters … --json | jq" when there are no clusters)
// deletes nothing and exits 0, through a server as locally, and sends the
// server no request (it refuses a delete that names nothing).
func TestDeleteNoIDsRemote(t *testing.T) {
	var requests atomic.Int64
	url := testServerWrapped(t, nil, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			h.ServeHTTP(w, r)
		})
	})
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt").mustCode(t, exitOK)
	for _, tc := range []struct {
		stdin  string
		args   []string
		stdout string
	}{
		{"", []string{"delete", "-"}, "0 documents deleted\n"},
		{"\n\r\n\n", []string{"delete", "-"}, "0 documents deleted\n"},
		{"\"\"\n", []string{"delete", "-"}, "0 documents deleted\n"},
		{"", []string{"delete", "-0", "-"}, "0 documents deleted\n"},
		{"", []string{"delete", "--forget", "-"}, "0 documents deleted, 0 log entries erased, 0 entries redacted\n"},
		{"", []string{"delete", "--dry-run", "-"}, ""},
	} {
		name := fmt.Sprintf("%s with standard input %q", strings.Join(tc.args, " "), tc.stdin)
		local := runFPDB(t, tc.stdin, append([]string{"--db", dir}, tc.args...)...)
		requests.Store(0)
		remote := runFPDB(t, tc.stdin, append([]string{"--server", url}, tc.args...)...)
		if local.code != exitOK || local.stdout != tc.stdout {
			t.Errorf("%s: local exit code %d, stdout %q; want %d, %q\nstderr:\n%s", name, local.code, local.stdout, exitOK, tc.stdout, local.stderr)
		}
		if remote.code != local.code || remote.stdout != local.stdout || remote.stderr != local.stderr {
			t.Errorf("%s: through the server exit code %d, stdout %q, stderr %q; locally %d, %q, %q",
				name, remote.code, remote.stdout, remote.stderr, local.code, local.stdout, local.stderr)
		}
		if n := requests.Load(); n != 0 {
			t.Errorf("%s: %d requests sent to the server, want none", name, n)
		}
	}
	// The document stored is still there.
	runFPDB(t, "", "--db", dir, "get", corpus+"bees.txt").mustCode(t, exitOK)
	// $FPDB_SERVER is --server's default: the same.
	t.Setenv(envServer, url)
	requests.Store(0)
	r := runFPDB(t, "", "delete", "-").mustCode(t, exitOK)
	if r.stdout != "0 documents deleted\n" || r.stderr != "" || requests.Load() != 0 {
		t.Errorf("delete - with $FPDB_SERVER and no ids: stdout %q, stderr %q, %d requests", r.stdout, r.stderr, requests.Load())
	}
}

// TestDeleteNullNeedsStdin: -0 says how ids read from standard input are
// separated, so it is refused (as add -0 without --files-from is) with ids
// given as arguments, --prefix or --older-than, and nothing is deleted.
func TestDeleteNullNeedsStdin(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt").mustCode(t, exitOK)
	id := corpus + "bees.txt"
	for _, args := range [][]string{
		{"delete", "-0", "--dry-run", id},
		{"delete", "-0", id},
		{"delete", "-0", "--prefix", "testdata/"},
		{"delete", "-0", "--older-than", "1h"},
	} {
		r := runFPDB(t, "", append([]string{"--db", dir}, args...)...).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, "fpdb: delete: -0 needs - (ids read from standard input)") || r.stdout != "" {
			t.Errorf("%v: stdout %q, stderr %q", args, r.stdout, r.stderr)
		}
	}
	runFPDB(t, "", "--db", dir, "get", id).mustCode(t, exitOK)
	r := runFPDB(t, id+"\x00", "--db", dir, "delete", "-0", "-").mustCode(t, exitOK)
	if r.stdout != "1 document deleted\n" {
		t.Errorf("delete -0 -: stdout %q, stderr %q", r.stdout, r.stderr)
	}
}
