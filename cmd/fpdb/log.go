package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/db"
)

// logOptions are the flags of "fpdb log".
type logOptions struct {
	*globalOptions
	id    string
	since string
	after uint64
	limit int
	json  bool
}

func newLogCommand(g *globalOptions) *cobra.Command {
	o := &logOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "log [--id ID] [--since T] [--after SEQ] [--limit N] [--json]",
		Short: "Show the audit log: what each add and delete decided",
		Long: `Log prints the audit log of the database, oldest first: one line per decision
an add or a delete made about a document,

  SEQ<TAB>TIME<TAB>DECISION<TAB>ID<TAB>HOW<TAB>MATCHES

SEQ is the entry's sequence number (never reused: a gap shows entries erased
by "delete --forget"), TIME when the decision was made (RFC 3339, UTC),
DECISION one of stored, replaced, unchanged, rejected or deleted, ID the
document's id (Go-quoted when it holds a control character such as a tab
or a newline, as "fpdb list" writes it). HOW is the call and its parameters: add (with threshold=R when
it checked for near duplicates, reject and replace when given), batch (add
--bulk: no check), import or delete. MATCHES are the near duplicates the
check found, most similar first, as "ID SIMILARITY[ exact]" separated by
", " (at most 16, then "and N more"); a match whose document was forgotten
since reads "(forgotten)".

--id ID shows the entries of one document (read through the log's id index,
however long the log); --since T those made at or after T, an RFC 3339 time
(2026-01-02T15:04:05Z) or an age (24h, 90m, 30d); --after SEQ those after
sequence number SEQ (the last SEQ of one page gives the next); --limit N at
most N entries.

With --json, one object per entry:

  {"seq": 12, "time": "2026-01-02T15:04:05.123456789Z", "id": "c.txt",
   "decision": "rejected", "op": "add", "threshold": 0.7, "reject": true,
   "matches": [{"id": "a.txt", "similarity": 1, "hamming": 0, "exact": true}],
   "content_hash": "…", "source": "c.txt"}

Databases that "fpdb add" creates keep the log unless created with
--no-log. A database created without it (or by a version of fpdb before the
log existed) has none: its adds and deletes were never recorded, and log
says so and exits with status 2. Deleting a document keeps its entries and
records the deletion; "delete --forget" erases them.

Exit status: 0 on success (also when no entry is selected); 2 on error.`,
		Example: `  fpdb log --since 24h
  fpdb log --id proposals/2024-017.txt
  fpdb log --json --limit 100 | jq -r 'select(.decision == "rejected") | .id'`,
		Args: noArgs("log"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.id, "id", "", "show the entries of the document `ID`")
	f.StringVar(&o.since, "since", "", "show the entries made at or after `T` (RFC 3339, or an age: 24h, 30d)")
	f.Uint64Var(&o.after, "after", 0, "show the entries after sequence number `SEQ`")
	f.IntVar(&o.limit, "limit", 0, "show at most `N` entries (0: all)")
	f.BoolVar(&o.json, "json", false, "print one JSON object per entry")
	return cmd
}

// parseSince parses --since: an RFC 3339 time or an age before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if age, err := parseAge(s); err == nil {
		return now.Add(-age), nil
	}
	return time.Time{}, &flagValueError{flag: "since", value: s,
		reason: "want an RFC 3339 time (2026-01-02T15:04:05Z) or a positive age (24h, 30d)"}
}

func (o *logOptions) run(ctx context.Context, stdout io.Writer) (err error) {
	lo := db.LogOptions{ID: o.id, After: o.after, Limit: o.limit}
	if o.limit < 0 {
		return usageError(&flagValueError{flag: "limit", value: strconv.Itoa(o.limit), reason: "must not be negative"})
	}
	if o.since != "" {
		if lo.Since, err = parseSince(o.since, time.Now()); err != nil {
			return usageError(err)
		}
	}
	d, err := o.openDB(openReadOnly)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)
	if !d.Params().AuditLog {
		return failure(fmt.Errorf("log: %w", errNoLog))
	}
	bw := bufio.NewWriter(stdout)
	enc := newJSONEncoder(bw)
	err = d.Log(ctx, lo, func(e db.LogEntry) error {
		if o.json {
			return enc.Encode(e)
		}
		_, err := fmt.Fprintln(bw, logLine(&e))
		return err
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return failure(newOpError("log", err, "log"))
	}
	return nil
}

// errNoLog explains a database without an audit log.
var errNoLog = errors.New("the database keeps no audit log: it was created without one (with add --no-log, " +
	"or by a version of fpdb before the log existed), so its adds and deletes were never recorded")

// logLine formats an entry as the tab-separated line of "fpdb log".
func logLine(e *db.LogEntry) string {
	how := []string{e.Op.String()}
	if e.Threshold > 0 {
		how = append(how, "threshold="+strconv.FormatFloat(e.Threshold, 'g', -1, 64))
	}
	if e.Reject {
		how = append(how, "reject")
	}
	if e.ReplaceUnchanged {
		how = append(how, "replace")
	}
	var ms []string
	for _, m := range e.Matches {
		id := "(forgotten)"
		if m.ID != "" {
			id = tsvField(m.ID)
		}
		s := fmt.Sprintf("%s %.3f", id, m.Similarity)
		if m.Exact {
			s += " exact"
		}
		ms = append(ms, s)
	}
	if e.MoreMatches > 0 {
		ms = append(ms, fmt.Sprintf("and %d more", e.MoreMatches))
	}
	return fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s", e.Seq, e.Time.Format(time.RFC3339Nano), e.Decision, tsvField(e.ID),
		strings.Join(how, " "), strings.Join(ms, ", "))
}
