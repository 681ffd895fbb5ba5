package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/fpdb/fpdb/db"
	"github.com/spf13/cobra"
)

// exitProblems is the exit status of "fpdb check" when the database
// violates an invariant (and --repair was not given or did not fix it).
const exitProblems = 1

// checkOptions are the flags of "fpdb check".
type checkOptions struct {
	*globalOptions
	repair bool
}

func newCheckCommand(g *globalOptions) *cobra.Command {
	o := &checkOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "check [--repair]",
		Short: "Verify the database's invariants, and repair them",
		Long: `Check verifies every on-disk invariant of the database: the meta record is
valid; each stored document has its record, its fingerprint, its id-map entry
and exactly its m posting entries (none while a bulk load defers them); no map
entry or posting names a document that is not stored; the next internal id is
beyond every stored one; every stored text decodes and, its words read again,
gives its document's content hash (a damaged text, or one an older fpdb
imported from a damaged export, is found; this reads all the texts, about a
quarter of the time it took to fingerprint them, on all cores). Each violation
found is printed on its own line.

With --repair, the id map, every posting list, the next id and the tail mark
are rebuilt from the document records and fingerprints, in one atomic write;
a document whose record or fingerprint is unreadable cannot be kept and is
listed as dropped; a stored text that cannot be read or does not give its
document's content hash is removed (the document stays, without its text). No other fpdb may have the database open.
A damaged meta record, or damage inside Pebble's own files that makes the
database unreadable, cannot be repaired: restore a backup.

An import that did not finish ("fpdb import" stopped by an error, an interrupt
or a crash) is a problem too, which --repair does not mend: import the same
export again to finish it (it resumes), or remove the database.

Exit status: 0 when the database is consistent (after --repair: when it is
consistent now); 1 when problems were found; 2 on any other error.`,
		Example: `  fpdb check
  fpdb check --repair`,
		Args: noArgs("check"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&o.repair, "repair", false, "rebuild the id map, postings, next id and deferred mark from the document records and fingerprints")
	return cmd
}

func (o *checkOptions) run(ctx context.Context, stdout io.Writer) error {
	if o.repair {
		if err := o.runRepair(ctx, stdout); err != nil {
			return err
		}
	}
	return o.verify(ctx, stdout)
}

// runRepair runs db.Repair and prints what it found and did.
func (o *checkOptions) runRepair(ctx context.Context, stdout io.Writer) error {
	if err := o.requireDB(); err != nil {
		return failure(err)
	}
	rep, err := db.Repair(ctx, o.dbDir, &db.Options{LockWait: o.wait})
	if err != nil {
		o.command += " --repair"
		err = o.openError(err, openExisting, o.dbDir)
		return failure(newOpError("repair", err, "repair", "repair "+o.dbDir))
	}
	if !rep.Changed {
		fmt.Fprintln(stdout, "nothing to repair")
		return nil
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(stdout, "found: %s\n", p)
	}
	if rep.Omitted > 0 {
		fmt.Fprintf(stdout, "found: %d more %s\n", rep.Omitted, pluralWord(rep.Omitted, "problem"))
	}
	for _, p := range rep.Dropped {
		fmt.Fprintf(stdout, "dropped: %s\n", p)
	}
	fmt.Fprintf(stdout, "repaired: %s kept, %d dropped, %s rewritten\n", nDocs(rep.Kept), len(rep.Dropped), plural(rep.Postings, "posting key"))
	return nil
}

// verify opens the database read-only, runs Check and prints the result.
func (o *checkOptions) verify(ctx context.Context, stdout io.Writer) (err error) {
	d, err := o.openDB(openReadOnly)
	if errors.Is(err, db.ErrCorrupt) {
		fmt.Fprintf(stdout, "problem: %s\n", errorText(err))
		fmt.Fprintln(stdout, "1 problem; run 'fpdb check --repair' with no other fpdb using the database")
		return &exitError{code: exitProblems}
	}
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)
	err = d.Check(ctx)
	var ce *db.CheckError
	switch {
	case errors.As(err, &ce):
		for _, p := range ce.Problems {
			fmt.Fprintf(stdout, "problem: %s\n", p)
		}
		n := len(ce.Problems) + ce.Omitted
		if ce.Omitted > 0 {
			fmt.Fprintf(stdout, "problem: %d more not listed\n", ce.Omitted)
		}
		fmt.Fprintf(stdout, "%s; run 'fpdb check --repair' with no other fpdb using the database\n", plural(n, "problem"))
		return &exitError{code: exitProblems}
	case errors.Is(err, db.ErrCorrupt):
		fmt.Fprintf(stdout, "problem: %s\n", errorText(err))
		return &exitError{code: exitProblems}
	case errors.Is(err, db.ErrImportIncomplete):
		// Sound, but not whole: no repair gives what the import did not
		// store.
		fmt.Fprintf(stdout, "problem: %s\n", errorText(err))
		return &exitError{code: exitProblems}
	case err != nil:
		return failure(newOpError("check", err, "check "+o.dbDir))
	}
	fmt.Fprintf(stdout, "ok: %s, every invariant holds\n", nDocs(d.Stats().Docs))
	return nil
}

// requireDB refuses a missing (or locked, or foreign) database before
// Repair is asked to open it; a corrupt one is left to Repair.
func (g *globalOptions) requireDB() error {
	d, err := g.openDB(openReadOnly)
	if errors.Is(err, db.ErrCorrupt) {
		return nil
	}
	if err != nil {
		return err
	}
	return d.Close()
}
