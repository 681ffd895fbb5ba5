package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

// compactOptions are the flags of "fpdb compact".
type compactOptions struct {
	*globalOptions
}

func newCompactCommand(g *globalOptions) *cobra.Command {
	o := &compactOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "compact",
		Short: "Reclaim the space of deleted documents",
		Long: `Compact rewrites the whole store: every posting list is folded into one
value (the removals of deleted documents disappear from it) and the records of
deleted documents are dropped. Run it after large deletes; "fpdb stats" shows
how many deleted documents are not compacted yet. The store also compacts
itself in the background as it grows. Prints the size of the store's tables
before and after.`,
		Example: `  fpdb delete --older-than 720h && fpdb compact`,
		Args:    noArgs("compact"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	return cmd
}

func (o *compactOptions) run(ctx context.Context, stdout io.Writer) (err error) {
	d, err := o.openDB(openExisting)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)
	res, err := d.Compact(ctx)
	if err != nil {
		return failure(newOpError("compact", err, "compact"))
	}
	fmt.Fprintf(stdout, "compacted in %v: %d → %d bytes of tables\n", res.Elapsed.Round(time.Millisecond), res.BytesBefore, res.BytesAfter)
	return nil
}
