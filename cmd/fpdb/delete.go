package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// deleteOptions are the arguments of "fpdb delete".
type deleteOptions struct {
	*globalOptions
	ids []string
}

func newDeleteCommand(g *globalOptions) *cobra.Command {
	o := &deleteOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "delete ID...",
		Short: "Delete stored documents",
		Long: `Delete removes the documents with the given ids and prints "ID: deleted" for
each. An id that is not stored is reported on standard error; the other ids
are still deleted. The database must exist.

Exit status: 0 when every id was deleted; 2 otherwise.`,
		Example: `  fpdb delete corpus/a.txt corpus/b.txt`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("delete: no ID given")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ids = args
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	return cmd
}

func (o *deleteOptions) run(ctx context.Context, stdout, stderr io.Writer) (err error) {
	d, err := openDB(o.dbDir, openExisting)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)

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
