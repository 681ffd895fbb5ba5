package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

// backupOptions are the flags of "fpdb backup".
type backupOptions struct {
	*globalOptions
}

func newBackupCommand(g *globalOptions) *cobra.Command {
	o := &backupOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "backup DIR",
		Short: "Copy the database to a new directory, consistently",
		Long: `Backup writes a consistent copy of the database to DIR, which must not exist:
every document stored before the backup began is in it, each write whole or
not at all. The copy is a database like the original: open it with
--db DIR, or move it in place of a damaged one. Table files are hard-linked
when DIR is on the same file system, so a backup costs little space at first.
The copy is made in a hidden directory beside DIR (.incomplete-backup-…) and
renamed to DIR once complete: DIR never holds a copy cut short, and a crash
midway leaves only that hidden directory, which may be removed.

In a Go program, DB.Backup does the same while the database stays open and
serves reads and writes.`,
		Example: `  fpdb backup /backups/fpdb-$(date +%F)
  fpdb --db /backups/fpdb-2026-11-22 check`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("backup: takes one directory, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args[0], cmd.OutOrStdout())
		},
	}
	return cmd
}

func (o *backupOptions) run(ctx context.Context, dir string, stdout io.Writer) (err error) {
	d, err := o.openDB(openExisting)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)
	start := time.Now()
	res, err := d.Backup(ctx, dir)
	if err != nil {
		return failure(newOpError("backup "+dir, err, "backup "+dir, "backup"))
	}
	fmt.Fprintf(stdout, "backed up %s to %s in %v\n", nDocs(res.Docs), dir, time.Since(start).Round(time.Millisecond))
	return nil
}
