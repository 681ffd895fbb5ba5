package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// exportOptions are the flags of "fpdb export".
type exportOptions struct {
	*globalOptions
	output string
}

func newExportCommand(g *globalOptions) *cobra.Command {
	o := &exportOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "export [-o FILE]",
		Short: "Write every stored document as JSON Lines",
		Long: `Export writes the database as JSON Lines to standard output (or to the file
given by -o): first a header line with the creation parameters

  {"fpdb_export": 1, "format_version": 2, "k": 512, "group_widths": [...],
   "shingle_width": 4, "seed": "439972291121", "hash_version": 1,
   "normalize_version": 1, "created": "...", "docs": 2}

then one line per document, in the order they were stored:

  {"id": "ID", "fingerprint": "HEX", "content_hash": "HEX", "source": "S",
   "size": 1234, "words": 210, "added": "2025-01-02T03:04:05.123456789Z"}

"fpdb import" reads it into a new database that answers every query as this one
does; it is also the way to move a database to a newer format version. The
database is read on a snapshot.`,
		Example: `  fpdb export > backup.jsonl
  fpdb --db old export | fpdb --db new import -`,
		Args: noArgs("export"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "write to `FILE` instead of standard output")
	return cmd
}

func (o *exportOptions) run(ctx context.Context, stdout, stderr io.Writer) (err error) {
	d, err := openDB(o.dbDir, openReadOnly)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)
	w := stdout
	if o.output != "" {
		f, err := os.Create(o.output)
		if err != nil {
			return failure(fmt.Errorf("export: %w", err))
		}
		defer func() {
			if cerr := f.Close(); err == nil && cerr != nil {
				err = failure(fmt.Errorf("export: %w", cerr))
			}
		}()
		w = f
	}
	n, err := d.Export(ctx, w)
	if err != nil {
		return failure(newOpError("export", err, "export"))
	}
	if o.output != "" {
		fmt.Fprintf(stderr, "exported %d documents to %s\n", n, o.output)
	}
	return nil
}
