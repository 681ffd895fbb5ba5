package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/report"
	"github.com/fpdb/fpdb/internal/textenc"
	"github.com/fpdb/fpdb/server/apiconv"
)

// compareOptions are the flags and arguments of "fpdb compare".
type compareOptions struct {
	*globalOptions
	json        bool
	html        string
	minWords    int
	gap         int
	maxPassages int
	args        [2]string
	// viaServer: compare through the server of --server or $FPDB_SERVER;
	// a --db given with $FPDB_SERVER set keeps compare local (checkRemote
	// lets it through).
	viaServer bool
	text      textFlags
}

func newCompareCommand(g *globalOptions) *cobra.Command {
	o := &compareOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "compare [flags] A B",
		Short: "Show how similar two documents are and the passages they share",
		Long: `Compare explains a match: for two documents A and B it prints the resemblance
their fingerprints estimate (what add and query use), the exact resemblance
of their shingle sets (Jaccard), how much of A is found in B and of B in A
(containment), and the passages they share, longest first, with their
line:column positions in each text.

A and B are each a file, "-" (standard input, once), or the id of a stored
document: an existing file wins over an id of the same name. A stored
document is compared through its stored text, which databases keep unless
they were created with --no-texts; then give its file instead. Two files
need no database: without one, the default fingerprint parameters are used.
With --server (or $FPDB_SERVER), the server compares, with its database's
parameters and templates (files are read here and sent, a stored id is the
server's); --db given with $FPDB_SERVER set compares here, with that
database.

A shared passage is a run of consecutive shingles (ShingleWidth words) that
both texts hold in the same order, widened to the words it covers, merged
with the next where they touch in both texts (or lie within --gap words),
and reported when it holds at least --min-words words of A. A passage of A
found at several places in B is reported at each.

Output: the figures, then each passage as "[N] WORDS words  A L:C-L:C  B
L:C-L:C" and an excerpt of it in each text (highlighted on a terminal).
Figures show 3 decimals, percentages 1; a figure below 1 never shows as
1.000 or 100.0 % (nor one above 0 as 0.000 or 0.0 %): it shows as many more
decimals as it takes, up to 6 (0.9997, 99.97 %), then "> 0.999999".
--json prints one object, with byte offsets [start, end) of every passage in
each text (in the text as decoded to UTF-8):

  {"a": {"name": "new.txt", "stored": false, "format": "text", "bytes": 5012,
   "words": 830, "shingles": 827}, "b": {…}, "estimated": 0.82, "hamming": 46,
   "k": 512, "jaccard": 0.79, "contained_a": 0.88, "contained_b": 0.86,
   "shared_shingles": 731, "passages": [{"a": {"start": 120, "end": 3310,
   "line": 3, "col": 1, "end_line": 41, "end_col": 17, "word": 18,
   "words": 512}, "b": {…}}]}

--html FILE writes a self-contained page (no network, no external files):
the figures, the passage table and both texts side by side with every
passage highlighted; clicking a passage in one text shows it in the other.
FILE must not be A or B (nor a link to either) nor lie in the database.

Exit status: 0 on success; 2 on error (bad flags, a database problem, a
database without stored texts); 3 when A or B cannot be read (missing file
and no such stored id, binary, no words).`,
		Example: `  fpdb compare new-proposal.txt proposals/2024-017.txt
  fpdb compare new.txt stored-id --html evidence.html
  fpdb compare --json --min-words 20 a.txt b.txt | jq '.passages[0].a'
  cat draft.txt | fpdb compare - submissions/alice.txt`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) != 2:
				return usageErrorf("compare: want two documents A and B, got %d arguments", len(args))
			case args[0] == "-" && args[1] == "-":
				return usageErrorf("compare: - (standard input) given twice")
			case args[0] == "" || args[1] == "":
				return usageErrorf("compare: an empty argument (want a file, - or a stored id)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = [2]string{args[0], args[1]}
			o.viaServer = o.remote() && !cmd.Flags().Changed("db")
			return o.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print a JSON object")
	f.StringVar(&o.html, "html", "", "write a self-contained HTML page to `FILE` (- for standard output)")
	f.IntVar(&o.minWords, "min-words", 8, "report passages of at least `N` words")
	f.IntVar(&o.gap, "gap", 0, "merge passages at most `N` words apart in both texts")
	f.IntVar(&o.maxPassages, "passages", 0, "report the longest `N` passages (0: all)")
	o.text.register(f)
	return cmd
}

// side is one argument of compare, resolved.
type side struct {
	arg    string
	stored bool // a stored id, not a file
	file   *os.File
	in     db.CompareInput
}

// name says what the side is, for the output (the path or id quoted as
// tsvField quotes it).
func (s *side) name() string {
	if s.stored {
		return "stored " + tsvField(s.arg)
	}
	if s.arg == "-" {
		return "standard input"
	}
	return tsvField(s.arg)
}

// resolve tells a file from an id and opens the file.
func (o *compareOptions) resolve(arg string, stdin io.Reader) (*side, error) {
	s := &side{arg: arg}
	if arg == "-" {
		s.in = db.CompareInput{Reader: stdin, Name: "-", TextOptions: o.text.options("-")}
		return s, nil
	}
	fi, err := os.Stat(arg)
	switch {
	case err == nil && fi.IsDir():
		return nil, asInputError(fmt.Errorf("compare %s: is a directory (compare takes two files or stored ids)", arg))
	case err == nil:
		f, err := os.Open(arg)
		if err != nil {
			return nil, asInputError(newOpError("compare "+arg, pathError(err, arg)))
		}
		s.file = f
		s.in = db.CompareInput{Reader: f, Name: arg, TextOptions: o.text.options(arg)}
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ENAMETOOLONG):
		// No file has that name (an id like "notes.txt/chapter-1",
		// where notes.txt is a file, or longer than a file name may be):
		// a stored id.
		s.stored = true
		s.in = db.CompareInput{ID: arg}
	default:
		return nil, asInputError(newOpError("compare "+arg, pathError(err, arg)))
	}
	return s, nil
}

// checkHTMLOutput refuses an --html FILE that is A or B: the page would
// replace the document compared. An argument is a file as resolve decides
// (one that exists: "-" and stored ids are none); FILE is the same file
// when it reaches the same file, by its path or through a symbolic or hard
// link (os.SameFile), or, when FILE cannot be looked at, when it names the
// same path.
func (o *compareOptions) checkHTMLOutput() error {
	if o.html == "" || o.html == "-" {
		return nil
	}
	out, outErr := os.Stat(o.html)
	for i, arg := range o.args {
		if arg == "-" {
			continue
		}
		in, err := os.Stat(arg)
		if err != nil {
			continue // a stored id, or a file resolve cannot open and says why
		}
		same := outErr == nil && os.SameFile(out, in)
		if outErr != nil && !errors.Is(outErr, fs.ErrNotExist) {
			same = samePath(o.html, arg) // FILE cannot be looked at: its path
		}
		if same {
			return usageErrorf("--html %s is the same file as %c (%s): the page would replace it; give --html another file", o.html, "AB"[i], arg)
		}
	}
	return nil
}

// samePath reports whether two paths name the same place by their text,
// made absolute and cleaned.
func samePath(a, b string) bool {
	aa, errA := filepath.Abs(a)
	ab, errB := filepath.Abs(b)
	return errA == nil && errB == nil && aa == ab
}

func (o *compareOptions) run(ctx context.Context, stdin io.Reader, stdout io.Writer) (err error) {
	switch {
	case o.minWords < 0:
		return usageErrorf("invalid --min-words %d: must not be negative", o.minWords)
	case o.gap < 0:
		return usageErrorf("invalid --gap %d: must not be negative", o.gap)
	case o.maxPassages < 0:
		return usageErrorf("invalid --passages %d: must not be negative", o.maxPassages)
	case o.json && o.html == "-":
		return usageErrorf("--json and --html - both write to standard output: give --html a file")
	}
	// Before anything is read: the page must not replace a document
	// compared.
	if err := o.checkHTMLOutput(); err != nil {
		return err
	}
	var sides [2]*side
	for i, arg := range o.args {
		if sides[i], err = o.resolve(arg, stdin); err != nil {
			return failure(err)
		}
		if f := sides[i].file; f != nil {
			defer f.Close()
		}
	}
	if o.viaServer {
		// The server compares, under its parameters and templates, as
		// a local compare does under --db's.
		return o.runRemote(ctx, stdout, sides)
	}
	opts := passageOptions(o.minWords, o.gap, o.maxPassages)
	dir, err := o.dir()
	if err != nil {
		return err
	}
	if _, statErr := os.Stat(dir); statErr != nil {
		if !errors.Is(statErr, fs.ErrNotExist) {
			return failure(statErr)
		}
		for _, s := range sides {
			if s.stored {
				return failure(asInputError(fmt.Errorf("compare %s: no such file, and no database at %s to look it up as a stored id", s.arg, dir)))
			}
		}
		if o.dbGiven() && o.stderr != nil {
			// A database named (--db, $FPDB_DB) but missing, perhaps
			// mistyped: its parameters and templates give way to the
			// defaults (a call's text then counts as shared), which the
			// user must know.
			fmt.Fprintf(o.stderr, "fpdb: compare: warning: no database at %s: compared with the default parameters and no templates\n", dir)
		}
		// Two texts and no database: the default parameters.
		c, err := db.CompareTexts(ctx, sides[0].in, sides[1].in, nil, opts)
		if err != nil {
			return o.compareError(sides, err)
		}
		return o.print(stdout, sides, c, db.DefaultK)
	}
	d, err := o.openDB(openReadOnly)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)
	if o.html != "-" && o.html != "" && d.InsideDir(o.html) {
		return usageErrorf("--html %s is inside the database %s: the page would be written among its files; give --html a file outside it", o.html, d.Dir())
	}
	c, err := d.Compare(ctx, sides[0].in, sides[1].in, opts)
	if err != nil {
		return o.compareError(sides, err)
	}
	return o.print(stdout, sides, c, d.Params().K)
}

// runRemote compares through the server: files and standard input are
// read here and sent as texts, ids name the server's stored documents, and
// the answer, with both texts, is printed as the local comparison is.
func (o *compareOptions) runRemote(ctx context.Context, stdout io.Writer, sides [2]*side) error {
	c, err := o.client()
	if err != nil {
		return failure(err)
	}
	req := api.CompareRequest{Gap: o.gap, Passages: o.maxPassages, Texts: true}
	req.MinWords = &o.minWords
	for i, s := range sides {
		t, err := remoteCompareText(s)
		if err != nil {
			return failure(asInputError(newOpError("compare "+s.arg, err)))
		}
		if i == 0 {
			req.A = t
		} else {
			req.B = t
		}
	}
	res, err := c.Compare(ctx, req)
	if err != nil {
		return o.compareError(sides, fromServer(err))
	}
	cmp, err := apiconv.FromComparison(res)
	if err != nil {
		return failure(fmt.Errorf("compare: the server's answer: %w", err))
	}
	if res.MorePassages && o.stderr != nil {
		fmt.Fprintf(o.stderr, "fpdb: compare: warning: the server answers with the longest %d passages; the texts share more (compare them without --server for all)\n", len(res.Passages))
	}
	return o.print(stdout, sides, cmp, res.K)
}

// remoteCompareText returns the request's form of one side: a stored id,
// or the text read here. A text that the server would not read byte for
// byte as UTF-8 (another encoding, a byte-order mark) is decoded here, as
// the server would decode it, and sent as UTF-8: a JSON request carries
// UTF-8 only.
func remoteCompareText(s *side) (api.CompareText, error) {
	if s.stored {
		return api.CompareText{ID: s.arg}, nil
	}
	text, err := io.ReadAll(s.in.Reader)
	if err != nil {
		return api.CompareText{}, err
	}
	to := textInput(s.in.TextOptions)
	eo := textenc.Options{Encoding: s.in.TextOptions.Encoding, Markup: s.in.TextOptions.Format == db.FormatHTML}
	if !textenc.Verbatim(text, eo) {
		r, _, err := textenc.NewReader(bytes.NewReader(text), eo)
		if err != nil {
			return api.CompareText{}, err
		}
		if text, err = io.ReadAll(r); err != nil {
			return api.CompareText{}, err
		}
		to.Encoding = "utf-8"
	}
	return api.CompareText{Text: string(text), Name: s.in.Name, TextInput: to}, nil
}

// passageOptions returns the options of db.Compare for the flags
// --min-words, --gap and --passages.
func passageOptions(minWords, gap, maxPassages int) *db.CompareOptions {
	opts := &db.CompareOptions{MinWords: minWords, MaxGap: gap, MaxPassages: maxPassages}
	if minWords == 0 {
		opts.MinWords = -1 // every passage
	}
	return opts
}

// compareError turns an error of Compare into the command's.
func (o *compareOptions) compareError(sides [2]*side, err error) error {
	switch {
	case errors.Is(err, db.ErrNoText):
		return failure(compareOpError(err, "; give the document's file instead"))
	case errors.Is(err, db.ErrNotFound):
		for _, s := range sides {
			if s.stored && strings.Contains(err.Error(), fmt.Sprintf("%q", s.arg)) {
				return failure(asInputError(fmt.Errorf("compare %s: no such file or stored document", s.arg)))
			}
		}
	case isInputError(err, ""):
		return failure(asInputError(compareOpError(err, "")))
	}
	return failure(compareOpError(err, ""))
}

// compareOpError returns err of Compare in the context "compare", said
// once: the db package's message already names the side at fault
// ("compare A: …"), and keeps that context; another gets "compare: ".
// hint is added to the message.
func compareOpError(err error, hint string) error {
	text := errorText(err) + hint
	if op, rest, ok := strings.Cut(text, ": "); ok && strings.HasPrefix(op, "compare ") {
		return &opError{op: op, cause: err, text: rest}
	}
	return &opError{op: "compare", cause: err, text: strings.TrimPrefix(text, "compare: ")}
}

func (o *compareOptions) print(stdout io.Writer, sides [2]*side, c *db.Comparison, k int) error {
	if o.html != "" {
		if err := o.writeHTML(stdout, sides, c, k); err != nil {
			return failure(err)
		}
		if o.html == "-" {
			return nil
		}
	}
	if o.json {
		return o.printJSON(stdout, sides, c, k)
	}
	return o.printText(stdout, sides, c, k)
}

func (o *compareOptions) writeHTML(stdout io.Writer, sides [2]*side, c *db.Comparison, k int) error {
	return writeOutput(stdout, o.html, "compare: --html", func(w io.Writer) error {
		return report.WriteCompare(w, report.Pair{
			NameA: sides[0].name(), NameB: sides[1].name(), TextA: c.TextA, TextB: c.TextB,
			Figures: &c.Figures, K: k, Generated: time.Now(),
		})
	})
}

func (o *compareOptions) printJSON(stdout io.Writer, sides [2]*side, c *db.Comparison, k int) error {
	j := apiconv.Comparison(c, apiconv.Named{Name: sides[0].arg, Stored: sides[0].stored},
		apiconv.Named{Name: sides[1].arg, Stored: sides[1].stored}, k)
	if err := newJSONEncoder(stdout).Encode(j); err != nil {
		return failure(err)
	}
	return nil
}

// excerptContext is how many characters of context a terminal excerpt
// shows on each side of a passage.
const excerptContext = 30

func (o *compareOptions) printText(stdout io.Writer, sides [2]*side, c *db.Comparison, k int) error {
	tty := isTerminal(stdout) && os.Getenv("NO_COLOR") == ""
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for i, sd := range []db.Side{c.A, c.B} {
		// A text read as markup says so: its words are the page's, not
		// what a script or a comment holds, which a text file sniffed as
		// HTML may not mean (--format text reads it as text).
		how := ""
		if sd.Markup {
			how = ", read as markup (HTML/XML)"
		}
		fmt.Fprintf(tw, "%c\t%s\t%s, %s, %s%s\n", "AB"[i], sides[i].name(), plural(sd.Bytes, "byte"), plural(sd.Words, "word"), plural(sd.Shingles, "shingle"), how)
	}
	if err := tw.Flush(); err != nil {
		return failure(err)
	}
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	// As the pages show them: a share below 1 never shows as 1 (report.Fraction).
	fmt.Fprintf(tw, "estimated resemblance\t%s\t(fingerprints: Hamming %d of %d bits)\n", report.Fraction(c.Estimated), c.Hamming, k)
	fmt.Fprintf(tw, "exact resemblance\t%s\t(Jaccard: %d of %d shingles shared)\n", report.Fraction(c.Jaccard), c.Shared, c.A.Shingles+c.B.Shingles-c.Shared)
	fmt.Fprintf(tw, "A found in B\t%s\n", report.Percent(c.ContainedA))
	fmt.Fprintf(tw, "B found in A\t%s\n", report.Percent(c.ContainedB))
	if err := tw.Flush(); err != nil {
		return failure(err)
	}
	if len(c.Passages) == 0 {
		fmt.Fprintf(stdout, "\nno shared passage of %s or more\n", plural(max(o.minWords, 1), "word"))
		return nil
	}
	fmt.Fprintf(stdout, "\n%s, longest first:\n", plural(len(c.Passages), "shared passage"))
	// A side read as markup shows its readable text (tags left out,
	// character references decoded); positions are the stored text's.
	spansA, spansB := make([]db.Span, len(c.Passages)), make([]db.Span, len(c.Passages))
	for i, p := range c.Passages {
		spansA[i], spansB[i] = p.A, p.B
	}
	exA := report.Excerpts(c.TextA, c.A.Markup, spansA, 160, excerptContext)
	exB := report.Excerpts(c.TextB, c.B.Markup, spansB, 160, excerptContext)
	for i, p := range c.Passages {
		fmt.Fprintf(stdout, "\n[%d] %s  A %d:%d-%d:%d  B %d:%d-%d:%d\n", i+1, plural(p.A.Words, "word"),
			p.A.Line, p.A.Col, p.A.EndLine, p.A.EndCol, p.B.Line, p.B.Col, p.B.EndLine, p.B.EndCol)
		fmt.Fprintf(stdout, "    A: %s\n", excerpt(exA[i], tty))
		fmt.Fprintf(stdout, "    B: %s\n", excerpt(exB[i], tty))
	}
	return nil
}

// excerpt returns a passage's excerpt (report.Excerpts), on a terminal
// with its context and the passage itself highlighted. Every piece of text
// went through report.Excerpt, which shows control characters and
// bidirectional overrides as U+FFFD: the only escape sequences excerpt
// returns are its own highlighting's, whatever the texts hold.
func excerpt(e report.InContext, tty bool) string {
	if !tty {
		return e.Passage
	}
	return e.Before + "\x1b[1;33m" + e.Passage + "\x1b[0m" + e.After
}
