package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fpdb/fpdb/dedup"
	"github.com/fpdb/fpdb/server/apiconv"
)

// Exit codes of the fpdb command.
const (
	// exitOK means success: for "fpdb add", every document was stored and
	// no near duplicate was found.
	exitOK = 0
	// exitDuplicates means that "fpdb add" found near duplicates of at
	// least one document (and no error happened).
	exitDuplicates = 1
	// exitNoMatch means that "fpdb query" found no match for any input
	// (as grep exits 1 when no line matched). It is exitDuplicates' value:
	// each command documents which of the two it means.
	exitNoMatch = 1
	// exitFailure means an error: bad flags or arguments, a database
	// problem. It wins over exitInput, exitDuplicates and exitNoMatch.
	exitFailure = 2
	// exitInput means that an input of "fpdb add" or "fpdb query" could
	// not be read or fingerprinted (missing, unreadable, binary or not
	// UTF-8, without any word): the other inputs were processed. It wins
	// over exitDuplicates and exitNoMatch, and loses to exitFailure.
	exitInput = 3
	// exitStorage is the exit status of a storage failure under a write
	// (a failed WAL write or sync, a full disk): the db package ends the
	// process with it.
	exitStorage = 74
)

// envDB is the environment variable giving the default database directory.
const envDB = "FPDB_DB"

// defaultDBDir is the database directory used when neither --db nor $FPDB_DB
// is given.
const defaultDBDir = "./fpdb-data"

// globalOptions are the persistent flags of the root command, shared by every
// subcommand.
type globalOptions struct {
	// dbDir is the database directory (--db).
	dbDir string
	// wait is how long to wait for a database another process holds
	// (--wait).
	wait time.Duration
	// dbFlag is the --db flag, to tell an empty --db from an empty
	// $FPDB_DB (see dir).
	dbFlag *pflag.Flag
	// server is the URL of an fpdb server to work through instead of
	// --db (--server, $FPDB_SERVER); tokenFile the file holding its
	// token (--token-file; else $FPDB_TOKEN is the token). See remote.go.
	server, tokenFile string
	// stderr is the command's standard error, for notices; remoteCapable
	// tells that the command can also work through a server (both set
	// before it runs).
	stderr        io.Writer
	remoteCapable bool
	// command is the command's path ("fpdb delete"), for messages.
	command string
}

// defaultWait is the default of --wait: long enough for the other end of a
// pipeline (fpdb clusters … | fpdb delete -) to finish with the database.
const defaultWait = 30 * time.Second

// NewRootCommand returns the fpdb root command with every subcommand. It
// reads $FPDB_DB for the default of --db. Its input and outputs are set with
// SetIn, SetOut and SetErr.
func NewRootCommand() *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "fpdb",
		Short: "fpdb finds near-duplicate text documents",
		Long: `fpdb stores min-hash fingerprints of text documents in a database and finds
the stored documents that are near duplicates of a new one (estimated
resemblance of their sets of word shingles at or above a threshold).

The database is the directory given by --db, by default $` + envDB + ` if it is
set, else ` + defaultDBDir + `. "fpdb add", "fpdb import", "fpdb serve" and
"fpdb template add" create it ("fpdb dedup --db" too); the other commands
require it to exist.

With --server URL (default $` + envServer + `) add, query, get, delete, compare,
pairs, clusters, stats, export and import work through that fpdb server ("fpdb serve") instead of
--db, with the same output and exit status; the texts are read here and sent.
--token-file FILE (default $` + envToken + `, the token itself) gives the server's
token. Any other command with --server is a usage error, and so is --db with
--server; an explicit --db wins over $` + envServer + ` (the command works
here, on that database).

Shell completion (of flag values such as --plan and --keep, and of stored
ids for get and delete): source <(fpdb completion bash); "fpdb completion
--help" covers zsh, fish and PowerShell. "fpdb man DIR" writes the man pages.

Exit status:
  0   success
  1   "fpdb add" found near duplicates; "fpdb query" found no match
  2   an error: bad flags or arguments, a database problem (wins over 1 and 3)
  3   an input of "fpdb add" or "fpdb query" could not be read or
      fingerprinted (missing, unreadable, binary, not in the encoding
      --encoding names, no words);
      the other inputs were processed (wins over 1)
  74  the storage failed under a write (a failed WAL write or sync, a full
      disk; every write reported done is kept)`,
		Example: `  fpdb add docs/                          # add every file under docs/
  fpdb add --reject --threshold 0.8 new.txt # store new.txt unless it has near duplicates
  cat page.txt | fpdb add --id page-17 -    # add standard input
  fpdb query --threshold 0.9 draft.txt      # list near duplicates, store nothing
  fpdb get docs/a.txt                       # show a stored document
  fpdb list --prefix docs/                  # list stored documents
  fpdb delete docs/a.txt docs/b.txt
  fpdb pairs --threshold 0.9                # every pair of stored near duplicates
  fpdb clusters --threshold 0.9 --keep oldest
  fpdb --db /var/lib/fpdb stats`,
		Version:       versionText(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	// "fpdb --version" prints what "fpdb version" prints. The flag is
	// declared here so that cobra does not add a -v shorthand.
	root.SetVersionTemplate("{{.Version}}")
	root.Flags().Bool("version", false, "print the version of fpdb (as \"fpdb version\" does)")
	def := defaultDBDir
	if v, ok := os.LookupEnv(envDB); ok {
		def = v // an empty $FPDB_DB is refused by dir, not ignored
	}
	root.PersistentFlags().StringVar(&g.dbDir, "db", def,
		"database `DIR` (default $"+envDB+" if set, else "+defaultDBDir+")")
	// Show the flag's default through the usage string only, so that help
	// output does not depend on the environment twice.
	g.dbFlag = root.PersistentFlags().Lookup("db")
	g.dbFlag.DefValue = ""
	root.PersistentFlags().DurationVar(&g.wait, "wait", defaultWait,
		"wait up to `DURATION` for a database another fpdb process holds, then fail (0: fail at once)")
	g.registerRemote(root)

	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		newAddCommand(g),
		newQueryCommand(g),
		newGetCommand(g),
		newListCommand(g),
		newDeleteCommand(g),
		newStatsCommand(g),
		newCheckCommand(g),
		newPairsCommand(g),
		newClustersCommand(g),
		newExportCommand(g),
		newImportCommand(g),
		newCompactCommand(g),
		newBackupCommand(g),
		newTuneCommand(g),
		newCompareCommand(g),
		newLogCommand(g),
		newTemplateCommand(g),
		newReportCommand(g),
		newServeCommand(g),
		newDedupCommand(g),
		newVersionCommand(),
		newManCommand(),
	)
	registerCompletions(root, g)
	return root
}

// initCompletionCmd makes cobra's completion command now rather than at
// Execute, so that a shell it does not know is a usage error (exit 2): as
// cobra makes it, the parent command runs nothing, and prints its help for
// any argument; a runnable one has its arguments checked, and an unknown
// shell is refused as an unknown command. Cobra's command writes the
// script to root's output as set when it is made.
func initCompletionCmd(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" && !c.Runnable() {
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
}

// run executes fpdb with the given arguments (without the program name) and
// streams, and returns the exit code. It installs the Ctrl-C handler: the
// first interrupt cancels the context of the command (a long add stops
// between documents and closes the database); a second one kills the process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // restore the default behaviour for a second Ctrl-C
	}()

	root := NewRootCommand()
	root.SetArgs(args)
	// Ctrl-C ends a wait for standard input too (a terminal, an idle pipe).
	root.SetIn(newCtxReader(ctx, stdin))
	root.SetOut(stdout)
	root.SetErr(stderr)
	initCompletionCmd(root) // after SetOut: it writes there
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		// Cobra's own errors (unknown command or flag, bad flag value,
		// wrong number of arguments) are usage errors.
		ee = usageError(err)
	}
	if ee.err != nil {
		fmt.Fprintf(stderr, "fpdb: %s\n", errorText(ee.err))
		if ee.usage && cmd != nil {
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
	}
	return ee.code
}

// exitError is the error returned by the commands: it carries the exit code
// and the error to print, if any (nil when the command already reported its
// problems).
type exitError struct {
	code  int
	err   error
	usage bool // a usage error: print a hint to --help
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError returns an exitError for a bad command line.
func usageError(err error) *exitError {
	return &exitError{code: exitFailure, err: err, usage: true}
}

// usageErrorf returns an exitError for a bad command line.
func usageErrorf(format string, args ...any) *exitError {
	return usageError(fmt.Errorf(format, args...))
}

// failure returns an exitError for err: exit status exitInput when err was
// marked by asInputError (an input could not be read or fingerprinted),
// exitFailure otherwise.
func failure(err error) *exitError {
	var ie *inputError
	if errors.As(err, &ie) || errors.Is(err, dedup.ErrBadInput) || errors.Is(err, dedup.ErrBadRecord) {
		return &exitError{code: exitInput, err: err}
	}
	return &exitError{code: exitFailure, err: err}
}

// optionNames turns the db package's names of creation options, in its
// messages, into the flags that set them.
var optionNames = strings.NewReplacer(
	"created without Options.KeepTexts", "created with --no-texts",
	"created without texts (Options.KeepTexts)", "created with --no-texts",
	"created without Options.AuditLog", "created with --no-log",
	"(Options.MaxTextSize: a database that keeps texts holds each one in memory)",
	"(a database that keeps texts holds each one in memory: split the document, or add it to a database created with --no-texts)",
)

// errorText returns the message of err without the "fpdb: " prefixes of the
// db package's errors (at the start, or after ": "), since fpdb prints its
// own prefix once, and with "interrupted" for a cancelled context, and the
// flags of creation options (optionNames). A
// quoted id that contains ": fpdb: " is left alone (apiconv.Message).
func errorText(err error) string {
	s := optionNames.Replace(strings.TrimPrefix(apiconv.Message(err), "fpdb: "))
	if errors.Is(err, context.Canceled) {
		// Ctrl-C: say so, not Go's "context canceled".
		s = strings.Replace(s, context.Canceled.Error(), "interrupted", 1)
	}
	return s
}
