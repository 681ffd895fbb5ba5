package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/db"
)

// exportOptions are the flags of "fpdb export".
type exportOptions struct {
	*globalOptions
	output  string
	salvage bool
}

func newExportCommand(g *globalOptions) *cobra.Command {
	o := &exportOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "export [-o FILE]",
		Short: "Write every stored document as JSON Lines",
		Long: `Export writes the database as JSON Lines to standard output (or to the file
given by -o): first a header line with the creation parameters

  {"fpdb_export": 2, "format_version": 5, "k": 512, "group_widths": [...],
   "shingle_width": 4, "seed": "439972291121", "hash_version": 1,
   "normalize_version": 3, "created": "...", "docs": 2, "keep_texts": true,
   "audit_log": true, "log_entries": 5}

then one line per document, in the order they were stored:

  {"id": "ID", "fingerprint": "HEX", "content_hash": "HEX", "source": "S",
   "size": 1234, "words": 210, "shingles": 208,
   "added": "2025-01-02T03:04:05.123456789Z", "text": "...",
   "text_format": "text"}

then, when "audit_log" is there, the "log_entries" entries of the audit log
in sequence order, one line each as "fpdb log --json" prints them. A
database created with --no-log has neither field and writes "fpdb_export":
1, which older versions read. "templates" lists the templates ("fpdb
template") when there are any.

A source that is not UTF-8 (a file's path in another encoding) is also
given as "source_base64", its bytes in base64, which an import restores
("source" then shows them with U+FFFD for each invalid byte).

"keep_texts" is there when the database keeps the documents' texts; then
"text" holds a document's text (UTF-8, as its words were read from it) and
"text_format" how it was read ("text" or "html"), for each document that has
one (not those added by fingerprint). Exports without them (of databases
created with --no-texts, or made by older versions) import as well.

"fpdb import" reads it into a new database that answers every query as this one
does; it is also the way to move a database to a newer format version. The
database is read on a snapshot.

With --salvage, export reads a database that open or "fpdb check --repair"
refuse because parts of its files are damaged (a checksum mismatch in a
block, say): it writes every document whose record and fingerprint can still
be read, skips the damaged blocks, and lists on standard error what it could
not read. It carries no audit log ("not salvaged: the audit log"). Import
the output into a new database.

A database that an import is filling, or that an import did not finish,
is not exported (its export would import as a whole database): finish the
import first (import the same export again).

With --server URL, export writes the export of that server's database
("fpdb serve"), or of the whole cluster when URL is a cluster node: a
cluster's export lists its documents sorted by id, as they were at one point
of its log, without texts (a cluster keeps none). "fpdb import" reads it into
a local database, or into another server or cluster.`,
		Example: `  fpdb export > backup.jsonl
  fpdb --db old export | fpdb --db new import -
  fpdb --db damaged export --salvage -o rescued.jsonl && fpdb --db new import rescued.jsonl
  fpdb --server http://node1:7700 export -o cluster.jsonl`,
		Args: noArgs("export"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "write to `FILE` instead of standard output (\"-\": standard output)")
	cmd.Flags().BoolVar(&o.salvage, "salvage", false, "read a damaged database: write every readable document, skip damaged blocks")
	return cmd
}

func (o *exportOptions) run(ctx context.Context, stdout, stderr io.Writer) (err error) {
	if o.salvage && o.remote() {
		return usageErrorf("export: --salvage reads a local database: give --db, not --server")
	}
	if !o.remote() {
		if _, err := o.dir(); err != nil {
			return err
		}
	}
	w := stdout
	var out *outputFile
	if o.output != "" && o.output != "-" { // "-" is standard output, as everywhere
		// A failed export leaves FILE as it was (or removes the file it
		// created).
		if out, err = createOutput(o.output); err != nil {
			return failure(fmt.Errorf("export: %w", err))
		}
		defer out.abort()
		w = out
	}
	done := func(msg string) error { // the output is whole: commit it, then say so
		if out != nil {
			if err := out.commit(); err != nil {
				return failure(fmt.Errorf("export: %w", err))
			}
			if msg != "" {
				fmt.Fprintln(stderr, msg)
			}
		}
		return nil
	}
	if o.salvage {
		if err := o.runSalvage(ctx, w, stderr); err != nil {
			return err
		}
		return done("") // runSalvage reported what it wrote
	}
	if o.remote() {
		n, err := o.runRemote(ctx, w)
		if err != nil {
			return err
		}
		return done(fmt.Sprintf("exported %s from %s to %s", nDocs(n), o.server, o.output))
	}
	d, err := o.openDB(openReadOnly)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)
	n, err := d.Export(ctx, w)
	if err != nil {
		return failure(newOpError("export", err, "export"))
	}
	return done(fmt.Sprintf("exported %s to %s", nDocs(n), o.output))
}

// runRemote writes the export of the server (a single database's, or a
// cluster's: sorted by id, without texts or log).
func (o *exportOptions) runRemote(ctx context.Context, w io.Writer) (int, error) {
	c, err := o.client()
	if err != nil {
		return 0, failure(err)
	}
	n, err := c.Export(ctx, w)
	if err != nil {
		if o.output == "" {
			return 0, failure(fmt.Errorf("export: %w (the output is cut short)", fromServer(err)))
		}
		return 0, failure(fmt.Errorf("export: %w (%s is left as it was)", fromServer(err), o.output))
	}
	return n, nil
}

// runSalvage writes what db.Salvage can read and reports the rest.
func (o *exportOptions) runSalvage(ctx context.Context, w, stderr io.Writer) error {
	rep, err := db.Salvage(ctx, o.dbDir, w, &db.Options{LockWait: o.wait})
	if rep != nil {
		for _, u := range rep.Unreadable {
			fmt.Fprintf(stderr, "unreadable: %v\n", u)
		}
		for _, s := range rep.Dropped {
			fmt.Fprintf(stderr, "dropped: %s\n", s)
		}
		for _, s := range rep.Left {
			fmt.Fprintf(stderr, "not salvaged: %s\n", s)
		}
	}
	if err != nil {
		return failure(newOpError("export", err, "export"))
	}
	fmt.Fprintf(stderr, "salvaged %s (%s, %d dropped)\n", nDocs(rep.Docs), plural(len(rep.Unreadable), "unreadable range"), len(rep.Dropped))
	return nil
}
