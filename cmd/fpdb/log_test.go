package main

import (
	"strings"
	"testing"

	"github.com/fpdb/fpdb/db"
)

// TestLogCommand: a database add creates records each decision; fpdb log
// prints them (text and JSON), --id, --since, --after and --limit select,
// delete keeps the trail and records the deletion, delete --forget erases
// it, and exit codes and messages follow the rules.
func TestLogCommand(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt", corpus+"volcano.txt").mustCode(t, exitOK)
	runFPDB(t, "", "--db", dir, "add", "--reject", corpus+"bees-edited.txt").mustCode(t, exitDuplicates)
	runFPDB(t, "", "--db", dir, "add", corpus+"volcano.txt").mustCode(t, exitOK) // unchanged
	runFPDB(t, "", "--db", dir, "delete", corpus+"volcano.txt").mustCode(t, exitOK)

	r := runFPDB(t, "", "--db", dir, "log").mustCode(t, exitOK)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	want := [][2]string{{"stored", "bees.txt"}, {"stored", "volcano.txt"}, {"rejected", "bees-edited.txt"},
		{"unchanged", "volcano.txt"}, {"deleted", "volcano.txt"}}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), r.stdout)
	}
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 6 || f[0] != string(rune('1'+i)) || f[2] != want[i][0] || f[3] != corpus+want[i][1] {
			t.Fatalf("line %d: %q, want %v", i, l, want[i])
		}
	}
	if f := strings.Split(lines[2], "\t"); f[4] != "add threshold=0.7 reject" || !strings.HasPrefix(f[5], corpus+"bees.txt 0.") {
		t.Fatalf("rejection line %q", lines[2])
	}

	r = runFPDB(t, "", "--db", dir, "log", "--json", "--id", corpus+"volcano.txt").mustCode(t, exitOK)
	objs := jsonLines(t, r.stdout)
	if len(objs) != 3 || objs[0]["decision"] != "stored" || objs[2]["decision"] != "deleted" || objs[2]["op"] != "delete" {
		t.Fatalf("--id --json: %s", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "log", "--json", "--after", "2", "--limit", "1").mustCode(t, exitOK)
	if objs := jsonLines(t, r.stdout); len(objs) != 1 || objs[0]["seq"] != 3.0 || objs[0]["matches"] == nil {
		t.Fatalf("--after 2 --limit 1: %s", r.stdout)
	}
	if r := runFPDB(t, "", "--db", dir, "log", "--since", "1h").mustCode(t, exitOK); strings.Count(r.stdout, "\n") != 5 {
		t.Fatalf("--since 1h: %s", r.stdout)
	}
	if r := runFPDB(t, "", "--db", dir, "log", "--since", "2999-01-01T00:00:00Z").mustCode(t, exitOK); r.stdout != "" {
		t.Fatalf("--since in the future: %s", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "log", "--since", "yesterday").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, `invalid value "yesterday" for --since`) {
		t.Fatalf("bad --since: %s", r.stderr)
	}
	if st := cliStats(t, dir); !st.AuditLog || st.LogEntries != 5 || st.LogBytes <= 0 {
		t.Fatalf("stats: %+v", st)
	}

	// --forget erases the trail of bees.txt and its id from the rejection.
	r = runFPDB(t, "", "--db", dir, "delete", "--forget", corpus+"bees.txt", corpus+"volcano.txt").mustCode(t, exitOK)
	if r.stdout != "1 document deleted, 4 log entries erased, 1 entry redacted\n" {
		t.Fatalf("forget: %q", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "log").mustCode(t, exitOK)
	if strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, "\t(forgotten) 0.") || strings.Contains(r.stdout, corpus+"bees.txt") {
		t.Fatalf("log after forget: %q", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "delete", "--forget", "nobody").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, `"nobody"`) {
		t.Fatalf("forget unknown: %q", r.stderr)
	}
	runFPDB(t, "", "--db", dir, "delete", "--forget", "--prefix", "x").mustCode(t, exitFailure)
	runFPDB(t, "", "--db", dir, "log", "extra").mustCode(t, exitFailure)
	runFPDB(t, "", "--db", dbDir(t), "log").mustCode(t, exitFailure) // no database
}

// TestNoLogFlag: add --no-log creates a database without a log, which log
// reports clearly (exit 2); on a database with a log --no-log is refused;
// an old database (made without the log) gets none.
func TestNoLogFlag(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", "--no-log", corpus+"bees.txt").mustCode(t, exitOK)
	if st := cliStats(t, dir); st.AuditLog || st.LogEntries != 0 {
		t.Fatalf("--no-log: %+v", st)
	}
	r := runFPDB(t, "", "--db", dir, "log").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "keeps no audit log") || !strings.Contains(r.stderr, "never recorded") {
		t.Fatalf("log without a log: %q", r.stderr)
	}
	runFPDB(t, "", "--db", dir, "add", corpus+"tides.txt").mustCode(t, exitOK) // no flag: keeps what it has
	withLog := dbDir(t)
	runFPDB(t, "", "--db", withLog, "add", corpus+"bees.txt").mustCode(t, exitOK)
	r = runFPDB(t, "", "--db", withLog, "add", "--no-log", corpus+"tides.txt").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "keeps an audit log") {
		t.Fatalf("--no-log on a database with a log: %q", r.stderr)
	}
	old := dbDir(t)
	d, err := db.Open(old, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	runFPDB(t, "", "--db", old, "add", corpus+"bees.txt").mustCode(t, exitOK)
	if st := cliStats(t, old); st.AuditLog {
		t.Fatalf("an old database got a log: %+v", st)
	}
}

// TestLogLine: the text form of an entry with every part.
func TestLogLine(t *testing.T) {
	e := db.LogEntry{Seq: 7, ID: "a\tb", Decision: db.DecisionRejected, Op: db.OpAdd, Threshold: 0.8, Reject: true,
		ReplaceUnchanged: true, MoreMatches: 2, Matches: []db.LogMatch{{ID: "x", Similarity: 1, Exact: true}, {Similarity: 0.8125}}}
	want := "7\t0001-01-01T00:00:00Z\trejected\t\"a\\tb\"\tadd threshold=0.8 reject replace\tx 1.000 exact, (forgotten) 0.812, and 2 more"
	if got := logLine(&e); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}
