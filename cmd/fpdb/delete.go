package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/spf13/cobra"
)

// deleteOptions are the arguments of "fpdb delete".
type deleteOptions struct {
	*globalOptions
	ids       []string
	prefix    string
	olderThan string
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
  delete -               the ids read from standard input, one per line
  delete --prefix P      every document whose id starts with P
  delete --older-than D  every document added more than D ago (a Go duration
                         such as 720h or 90m, or a number of days such as 30d)

The last three delete in atomic batches of 10 000 documents (100 000 documents
take seconds) and print "N documents deleted"; ids read from standard input
that are not stored are reported on standard error. Deleted documents are
removed from every answer at once; their space is reclaimed by compaction
("fpdb compact"). The database must exist.

Exit status: 0 when every id given was deleted; 2 otherwise.`,
		Example: `  fpdb delete corpus/a.txt corpus/b.txt
  fpdb delete - < stale-ids.txt
  fpdb delete --prefix https://old.example.org/
  fpdb delete --older-than 720h`,
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
	return cmd
}

// parseAge parses a Go duration or a whole number of days ("30d").
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 32)
		if err != nil || n > 100_000 {
			return 0, fmt.Errorf("invalid --older-than %q: want a duration (720h) or a number of days (30d)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid --older-than %q: want a duration (720h) or a number of days (30d)", s)
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
	d, err := openDB(o.dbDir, openExisting)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)

	var n int
	switch {
	case o.prefix != "":
		n, err = d.DeletePrefix(ctx, o.prefix)
	case o.olderThan != "":
		n, err = d.DeleteOlderThan(ctx, time.Now().Add(-age))
	case len(o.ids) == 1 && o.ids[0] == "-":
		return o.deleteStdin(ctx, d, stdin, stdout, stderr)
	default:
		return o.deleteArgs(ctx, d, stdout, stderr)
	}
	if err != nil {
		if n > 0 {
			fmt.Fprintf(stdout, "%d documents deleted\n", n)
		}
		return failure(newOpError("delete", err, "delete"))
	}
	fmt.Fprintf(stdout, "%d documents deleted\n", n)
	return nil
}

// deleteStdin deletes the ids read from stdin, one per line.
func (o *deleteOptions) deleteStdin(ctx context.Context, d *db.DB, stdin io.Reader, stdout, stderr io.Writer) error {
	var ids []string
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 4*db.MaxIDLen)
	for sc.Scan() {
		if id := strings.TrimSuffix(sc.Text(), "\r"); id != "" {
			ids = append(ids, id)
		}
	}
	if err := sc.Err(); err != nil {
		return failure(fmt.Errorf("delete: read standard input: %w", err))
	}
	res, err := d.DeleteMany(ctx, ids)
	if res != nil {
		for _, id := range res.NotFound {
			fmt.Fprintf(stderr, "fpdb: delete %q: %s\n", id, errorText(db.ErrNotFound))
		}
		fmt.Fprintf(stdout, "%d documents deleted\n", res.Deleted)
	}
	if err != nil {
		return failure(newOpError("delete", err, "delete"))
	}
	if len(res.NotFound) > 0 {
		return &exitError{code: exitFailure}
	}
	return nil
}

// deleteArgs deletes the ids given as arguments, one at a time.
func (o *deleteOptions) deleteArgs(ctx context.Context, d *db.DB, stdout, stderr io.Writer) error {
	failed := 0
	for _, id := range o.ids {
		if ctx.Err() != nil {
			return failure(fmt.Errorf("delete: interrupted"))
		}
		if err := d.Delete(ctx, id); err != nil {
			failed++
			op := fmt.Sprintf("delete %q", id)
			fmt.Fprintf(stderr, "fpdb: %s\n", errorText(newOpError(op, err, op, "delete")))
			continue
		}
		fmt.Fprintf(stdout, "%s: deleted\n", id)
	}
	if failed > 0 {
		return &exitError{code: exitFailure}
	}
	return nil
}
