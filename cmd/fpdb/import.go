package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/fpdb/fpdb/db"
	"github.com/spf13/cobra"
)

// importOptions are the arguments of "fpdb import".
type importOptions struct {
	*globalOptions
	path string
}

func newImportCommand(g *globalOptions) *cobra.Command {
	o := &importOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "import FILE|-",
		Short: "Create a database from an export",
		Long: `Import reads the JSON Lines written by "fpdb export" (from FILE, or standard
input for -) into a new database at --db, created with the export's creation
parameters; ids, fingerprints, content hashes, metadata and the order of
storing are kept, so the new database answers every query as the exported one
did. The new database keeps texts when the exported one did ("keep_texts" in
the export's header), with each document's text from the export; an export
without texts makes a database without texts, as the exported one was. The
target must not hold any document. The export's hash and
normalization versions must be this build's; its format version may be older
(import is the migration path between format versions).

Each document's text, when the export carries one, is fingerprinted again
with the export's parameters and templates (on all cores): a line whose text
does not give its "content_hash", "fingerprint" or "words" (an edited text,
a flipped digit) is refused as a bad line, naming it and what differs. A line without a text (an export of a database created with
--no-texts, or of a cluster) is taken as it is: the format carries no
checksum, so keep exports where they cannot be changed, or checksum them.

Documents are written in atomic batches of 10 000. On an error (a bad line,
such as a text that does not match its line; a truncated export), an
interrupt (Ctrl-C: "interrupted: N documents imported") or a crash, the
database holds the whole batches written so far, never part of one (the
batch of a bad line is not stored), and is marked as unfinished: it refuses
other writes, and "fpdb check" and "fpdb stats" say so. Import the same
export into it again to finish: the import resumes after the documents
stored (a bad line may be mended first; the header line must stay the
same). Or remove it. One that stored nothing in a database it created (a
bad line in the first batch) leaves no database.

With --server URL, import sends the export to that server ("fpdb serve"), into
its database, or to the whole cluster when URL is a cluster node; the database
or cluster must hold no document and have the export's parameters. This is
how a local database moves into a cluster. A cluster keeps no texts, templates
or audit log: it refuses an export with templates, and reads the texts and log
entries without keeping them (their numbers are printed) nor checking the
texts against their lines.
It stores the documents 10 000 at a time; an error after some were stored
says how many.`,
		Example: `  fpdb --db restored import backup.jsonl
  fpdb --db old export | fpdb --db new import -
  fpdb --db local export | fpdb --server http://node1:7700 import -`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("import: want one FILE or -, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.path = args[0]
			return o.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	return cmd
}

func (o *importOptions) run(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	dir := ""
	if !o.remote() {
		var err error
		if dir, err = o.dir(); err != nil {
			return err
		}
	}
	r := stdin
	if o.path != "-" {
		f, err := os.Open(o.path)
		if err != nil {
			return failure(fmt.Errorf("import: %w", err))
		}
		defer f.Close()
		r = f
	}
	if o.remote() {
		return o.runRemote(ctx, r, stdout)
	}
	n, err := db.Import(ctx, dir, r, &db.Options{LockWait: o.wait})
	switch {
	case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// Batches are atomic: the database holds the first n documents
		// of the export, whole.
		return failure(fmt.Errorf("import: interrupted: %s imported into %s (import the same export again to finish: it resumes)", nDocs(n), dir))
	case err != nil:
		return failure(importError(err, o.path, dir, n))
	}
	fmt.Fprintf(stdout, "imported %s into %s\n", nDocs(n), dir)
	return nil
}

// runRemote sends the export to the server, into its database or cluster.
func (o *importOptions) runRemote(ctx context.Context, r io.Reader, stdout io.Writer) error {
	c, err := o.client()
	if err != nil {
		return failure(err)
	}
	res, err := c.Import(ctx, r)
	if err != nil {
		return failure(newOpError("import", fromServer(err), "import"))
	}
	fmt.Fprintf(stdout, "imported %s into %s\n", nDocs(res.Imported), o.server)
	if res.DroppedTexts > 0 || res.DroppedLogEntries > 0 {
		fmt.Fprintf(stdout, "not kept (a cluster keeps neither): %d texts, %d audit-log entries\n", res.DroppedTexts, res.DroppedLogEntries)
	}
	return nil
}

// importError is the error of a local import that failed after n
// documents: one of the export is named by its input (FILE, or "-"), one
// of the target says what to give instead, and one after documents were
// stored says what the target holds and what to do.
func importError(err error, path, dir string, n int) error {
	op := "import"
	switch {
	case errors.Is(err, db.ErrBadExport):
		op += " " + path
	case errors.Is(err, db.ErrNotEmpty) && !errors.Is(err, db.ErrImportIncomplete):
		err = fmt.Errorf("%w (import makes a new database: give --db a directory that holds none)", err)
	}
	if n > 0 {
		err = fmt.Errorf("%w; %s holds the %s imported before it: import the same export again to finish (it resumes), or remove it", err, dir, nDocs(n))
	}
	return newOpError(op, err, "import")
}
