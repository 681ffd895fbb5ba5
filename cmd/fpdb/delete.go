package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
	"github.com/spf13/cobra"
)

// deleteOptions are the arguments of "fpdb delete".
type deleteOptions struct {
	*globalOptions
	ids       []string
	prefix    string
	olderThan string
	dryRun    bool
	null      bool
	forget    bool
}

func newDeleteCommand(g *globalOptions) *cobra.Command {
	o := &deleteOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "delete ID...|-|--prefix P|--older-than AGE",
		Short: "Delete stored documents",
		Long: `Delete removes documents, in one of four ways:

  delete ID...           the documents with these ids; prints "ID: deleted" for
                         each, and reports an id that is not stored on
                         standard error (the other ids are still deleted)
  delete -               the ids read from standard input, one per line (or,
                         with -0, separated by NUL bytes); a line in double
                         quotes is unquoted as Go does (how "fpdb pairs" and
                         "clusters" write ids that hold a control character
                         such as a tab or a newline)
  delete --prefix P      every document whose id starts with P
  delete --older-than D  every document added more than D ago (a Go duration
                         such as 720h or 90m, or a number of days such as 30d)

The last three delete in atomic batches of 10 000 documents (100 000 documents
take seconds) and print "N documents deleted"; ids read from standard input
that are not stored are reported on standard error. Deleted documents are
removed from every answer at once; their space is reclaimed by compaction
("fpdb compact"). The database must exist. Standard input is read to its end
before the database is opened, so that "fpdb clusters … | fpdb delete -" works:
the first command has released the database when the second opens it.

In a database with an audit log ("fpdb log"), a delete records the deletion
and keeps the document's earlier entries. --forget (with ids or -) also
erases every entry about the documents — their adds, rejections and
deletions, also of ids no longer stored — and removes their ids from the
matches other entries list, for privacy requests; nothing records it, and it
prints "N documents deleted, M log entries erased, K entries redacted". It
reads the whole log once per 10 000 ids.

--dry-run lists the ids that would be deleted, one per line (an id given
twice once), and the count on standard error, and changes nothing; an id
that is not stored is reported as the delete reports it, with its exit
status (but with --forget, whose dry run does not read the audit log,
an id not stored is reported not found with exit 0). An age of zero or
less is refused.

Through a cluster (--server URL of a node of "fpdb serve --cluster"), the
delete of an id whose shard has no live replica is logged and applied when
a replica returns: it is reported pending, neither deleted nor missing
("ID: pending (its shard has no live replica; applied when one returns)",
or "1 document deleted, 1 pending (…)" and each pending id on standard
error), and counts as deleted for the exit status.

Exit status: 0 when every id given was deleted (with --dry-run: is stored);
2 otherwise.`,
		Example: `  fpdb delete corpus/a.txt corpus/b.txt
  fpdb delete - < stale-ids.txt
  fpdb delete --prefix https://old.example.org/
  fpdb delete --older-than 720h --dry-run
  fpdb clusters --threshold 0.9 --keep oldest --json | jq -r '.drop[] | @json' | fpdb delete -`,
		Args: func(cmd *cobra.Command, args []string) error {
			bulk := o.prefix != "" || cmd.Flags().Changed("prefix") || o.olderThan != ""
			switch {
			case cmd.Flags().Changed("prefix") && o.prefix == "":
				return usageErrorf("delete: --prefix must not be empty")
			case o.prefix != "" && o.olderThan != "":
				return usageErrorf("delete: give either --prefix or --older-than, not both")
			case bulk && len(args) > 0:
				return usageErrorf("delete: no ID may be given with --prefix or --older-than")
			case !bulk && len(args) == 0:
				return usageErrorf("delete: no ID given (use - to read ids from standard input)")
			case len(args) > 1 && slices.Contains(args, "-"):
				return usageErrorf("delete: - (standard input) must be the only argument")
			case o.forget && bulk:
				return usageErrorf("delete: --forget takes ids (or -), not --prefix or --older-than")
			case o.null && (len(args) != 1 || args[0] != "-"):
				return usageErrorf("delete: -0 needs - (ids read from standard input)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ids = args
			return o.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.prefix, "prefix", "", "delete every document whose id starts with `P`")
	f.StringVar(&o.olderThan, "older-than", "", "delete every document added more than `AGE` ago (720h, 30d)")
	f.BoolVar(&o.dryRun, "dry-run", false, "list what would be deleted, change nothing")
	f.BoolVarP(&o.null, "null", "0", false, "with -: ids are separated by NUL bytes, not newlines")
	f.BoolVar(&o.forget, "forget", false, "also erase the documents' audit-log entries and their ids from other entries (privacy requests)")
	return cmd
}

// parseAge parses a Go duration or a whole number of days ("30d").
func parseAge(s string) (time.Duration, error) {
	d, err := apiconv.ParseAge(s)
	if err != nil {
		return 0, fmt.Errorf("invalid --older-than %w", err)
	}
	return d, nil
}

func (o *deleteOptions) run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	var age time.Duration
	if o.olderThan != "" {
		if age, err = parseAge(o.olderThan); err != nil {
			return usageError(err)
		}
	}
	stdinIDs := len(o.ids) == 1 && o.ids[0] == "-"
	if stdinIDs {
		// All of it before the database is opened: in a pipeline, the
		// command that writes the ids holds the database until it ends.
		if o.ids, err = readIDs(stdin, o.null); err != nil {
			return failure(fmt.Errorf("delete: read standard input: %w", err))
		}
	}
	var d deleter
	if o.remote() {
		c, err := o.client()
		if err != nil {
			return failure(err)
		}
		d = &remoteStore{c: c, prefix: o.prefix, olderThan: o.olderThan}
	} else {
		var ld *db.DB
		if ld, err = o.openDB(openExisting); err != nil {
			return failure(err)
		}
		defer closeDB(ld, &err)
		d = localDeleter{ld}
	}
	cutoff := time.Now().Add(-age)
	if o.dryRun {
		return o.dryRunList(ctx, d, cutoff, stdout, stderr)
	}
	var n int
	switch {
	case o.prefix != "":
		n, err = d.DeletePrefix(ctx, o.prefix)
	case o.olderThan != "":
		n, err = d.DeleteOlderThan(ctx, cutoff)
	case o.forget:
		return o.forgetIDs(ctx, d, stdout, stderr)
	case stdinIDs:
		return o.deleteMany(ctx, d, stdout, stderr)
	default:
		return o.deleteArgs(ctx, d, stdout, stderr)
	}
	if err != nil {
		if n > 0 {
			fmt.Fprintln(stdout, countDocs(n, "deleted"))
		}
		return failure(newOpError("delete", err, "delete"))
	}
	fmt.Fprintln(stdout, countDocs(n, "deleted"))
	return nil
}

// deleter carries out the deletes: the database (localDeleter), or a
// server (remoteStore).
type deleter interface {
	// Delete deletes id; pending reports that a cluster logged the delete
	// without applying it (see deleteResult.Pending).
	Delete(ctx context.Context, id string) (pending bool, err error)
	DeleteMany(ctx context.Context, ids []string) (*deleteResult, error)
	DeletePrefix(ctx context.Context, prefix string) (int, error)
	DeleteOlderThan(ctx context.Context, t time.Time) (int, error)
	Forget(ctx context.Context, ids []string) (*db.ForgetResult, error)
	Has(ctx context.Context, id string) (bool, error)
	Docs(ctx context.Context, fn func(db.Doc) error) error
}

// deleteResult is the outcome of the delete of ids.
type deleteResult struct {
	db.DeleteResult
	// Pending are the ids a cluster logged the delete of without applying
	// it, their shard having no live replica: a replica applies it when
	// one returns. Whether each was stored is not known: they are neither
	// in Deleted nor in NotFound. A database leaves it empty.
	Pending []string
}

// localDeleter is the deleter of a local database: nothing is pending.
type localDeleter struct{ *db.DB }

// Delete deletes id.
func (l localDeleter) Delete(ctx context.Context, id string) (bool, error) {
	return false, l.DB.Delete(ctx, id)
}

// DeleteMany deletes the documents ids.
func (l localDeleter) DeleteMany(ctx context.Context, ids []string) (*deleteResult, error) {
	res, err := l.DB.DeleteMany(ctx, ids)
	if res == nil {
		return nil, err
	}
	return &deleteResult{DeleteResult: *res}, err
}

// pendingWhy says why a delete is pending, after its count or id.
const pendingWhy = "has no live replica; applied when one returns"

// pendingNote is what follows "N documents deleted" when n deletes are
// pending (none: "").
func pendingNote(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return ", 1 pending (its shard " + pendingWhy + ")"
	}
	return fmt.Sprintf(", %d pending (their shards have no live replica; applied when one returns)", n)
}

// errQuotedID is the error of an id that starts with a double quote but
// is not a Go-quoted string.
var errQuotedID = errors.New(`not a Go-quoted string (\" for a quote, \t for a tab)`)

// countDocs says "1 document deleted", "2 documents deleted".
func countDocs(n int, what string) string {
	if n == 1 {
		return "1 document " + what
	}
	return fmt.Sprintf("%d documents %s", n, what)
}

// readIDs reads ids one per line (NUL-separated with null), unquoting a
// line in double quotes, and skipping empty ones.
func readIDs(r io.Reader, null bool) ([]string, error) {
	ids, err := readLines(r, null)
	if err != nil || null {
		return ids, err
	}
	for i, id := range ids {
		if len(id) >= 2 && id[0] == '"' {
			u, err := strconv.Unquote(id)
			if err != nil {
				// strconv's "invalid syntax" says nothing to the user.
				return nil, fmt.Errorf("bad quoted id %s: %w", id, errQuotedID)
			}
			ids[i] = u
		}
	}
	// An id unquoted to "" is skipped as an empty line is.
	return slices.DeleteFunc(ids, func(id string) bool { return id == "" }), nil
}

// readLines reads the lines of r as they are (NUL-separated with null),
// without their line ending ("\n" or "\r\n"), skipping empty ones.
func readLines(r io.Reader, null bool) ([]string, error) {
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8*db.MaxIDLen)
	if null {
		sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
			if i := bytes.IndexByte(data, 0); i >= 0 {
				return i + 1, data[:i], nil
			}
			if atEOF && len(data) > 0 {
				return len(data), data, nil
			}
			return 0, nil, nil
		})
	}
	for sc.Scan() {
		line := sc.Text()
		if !null {
			line = strings.TrimSuffix(line, "\r")
		}
		if line != "" {
			lines = append(lines, line)
		}
	}
	return lines, sc.Err()
}

// deleteMany deletes the ids read from standard input, in batches.
func (o *deleteOptions) deleteMany(ctx context.Context, d deleter, stdout, stderr io.Writer) error {
	// No ids (empty standard input: "clusters … | fpdb delete -" when there
	// are no clusters) delete nothing, locally and through a server alike:
	// a server refuses a delete request that names nothing.
	var (
		res = &deleteResult{}
		err error
	)
	if len(o.ids) > 0 {
		res, err = d.DeleteMany(ctx, o.ids)
	}
	if res != nil {
		for _, id := range res.NotFound {
			fmt.Fprintf(stderr, "fpdb: delete %q: %s\n", id, errorText(db.ErrNotFound))
		}
		for _, id := range res.Pending {
			fmt.Fprintf(stderr, "fpdb: delete %q: pending: its shard %s\n", id, pendingWhy)
		}
		fmt.Fprintln(stdout, countDocs(res.Deleted, "deleted")+pendingNote(len(res.Pending)))
	}
	if err != nil {
		return failure(newOpError("delete", err, "delete"))
	}
	if len(res.NotFound) > 0 {
		return &exitError{code: exitFailure}
	}
	return nil
}

// dryRunList prints the ids a delete would remove and their count.
func (o *deleteOptions) dryRunList(ctx context.Context, d deleter, cutoff time.Time, stdout, stderr io.Writer) error {
	bw := bufio.NewWriter(stdout)
	n, missing := 0, 0
	var err error
	if o.prefix != "" || o.olderThan != "" {
		err = d.Docs(ctx, func(doc db.Doc) error {
			if (o.prefix != "" && strings.HasPrefix(doc.ID, o.prefix)) || (o.olderThan != "" && doc.Added.Before(cutoff)) {
				n++
				_, err := fmt.Fprintln(bw, tsvField(doc.ID))
				return err
			}
			return nil
		})
	} else {
		seen := make(map[string]bool, len(o.ids))
		for _, id := range o.ids {
			if seen[id] { // given twice: deleted once
				continue
			}
			seen[id] = true
			has, herr := d.Has(ctx, id)
			if herr != nil {
				err = herr
				break
			}
			if has {
				n++
				fmt.Fprintln(bw, tsvField(id))
			} else {
				missing++
				fmt.Fprintf(stderr, "fpdb: delete %q: %s\n", id, errorText(db.ErrNotFound))
			}
		}
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return failure(newOpError("delete", err, "delete", "docs"))
	}
	fmt.Fprintf(stderr, "%s (dry run: nothing changed)\n", countDocs(n, "would be deleted"))
	if missing > 0 && !o.forget { // --forget also erases ids only the log holds
		// The exit status the delete itself would have.
		return &exitError{code: exitFailure}
	}
	return nil
}

// deleteArgs deletes the ids given as arguments, one at a time.
func (o *deleteOptions) deleteArgs(ctx context.Context, d deleter, stdout, stderr io.Writer) error {
	failed := 0
	seen := make(map[string]bool, len(o.ids))
	for _, id := range o.ids {
		if ctx.Err() != nil {
			return failure(fmt.Errorf("delete: interrupted"))
		}
		if seen[id] { // given twice: deleted once, as delete - does
			continue
		}
		seen[id] = true
		pending, err := d.Delete(ctx, id)
		switch {
		case err != nil:
			failed++
			op := fmt.Sprintf("delete %q", id)
			fmt.Fprintf(stderr, "fpdb: %s\n", errorText(newOpError(op, err, op, "delete")))
		case pending:
			fmt.Fprintf(stdout, "%s: pending (its shard %s)\n", tsvField(id), pendingWhy)
		default:
			fmt.Fprintf(stdout, "%s: deleted\n", tsvField(id))
		}
	}
	if failed > 0 {
		return &exitError{code: exitFailure}
	}
	return nil
}

// forgetIDs deletes the ids given and erases them from the audit log.
func (o *deleteOptions) forgetIDs(ctx context.Context, d deleter, stdout, stderr io.Writer) error {
	// No ids: nothing to delete or erase (see deleteMany).
	var (
		res = &db.ForgetResult{}
		err error
	)
	if len(o.ids) > 0 {
		res, err = d.Forget(ctx, o.ids)
	}
	if res != nil {
		for _, id := range res.NotFound {
			fmt.Fprintf(stderr, "fpdb: delete %q: %s (and not in the audit log)\n", id, errorText(db.ErrNotFound))
		}
		if res.Erased < 0 { // a server's answer: it does not count them
			fmt.Fprintf(stdout, "%s, their log entries erased\n", countDocs(res.Deleted, "deleted"))
		} else {
			fmt.Fprintf(stdout, "%s, %s erased, %s redacted\n", countDocs(res.Deleted, "deleted"),
				entries(res.Erased, "log "), entries(res.Redacted, ""))
		}
	}
	if err != nil {
		return failure(newOpError("delete", err, "forget"))
	}
	if len(res.NotFound) > 0 {
		return &exitError{code: exitFailure}
	}
	return nil
}

// entries says "1 log entry", "2 log entries" (adj "log ").
func entries(n int, adj string) string {
	if n == 1 {
		return "1 " + adj + "entry"
	}
	return fmt.Sprintf("%d %sentries", n, adj)
}
