package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
)

// templateOptions are the flags of "fpdb template" and its subcommands.
type templateOptions struct {
	*globalOptions
	name     string
	text     textFlags
	creation creationFlags
	json     bool
	minShare float64
	minWords int
	sample   int
}

func newTemplateCommand(g *globalOptions) *cobra.Command {
	o := &templateOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "template",
		Short: "Manage templates: text whose shingles never make documents similar",
		Long: `A template is text that documents share without copying each other: the call
for proposals every proposal quotes, a license header, a course's starter code.
Its shingles are left out of every fingerprint the database makes, of stored
documents and of queries alike, and out of the shared passages of
"fpdb compare" and "fpdb report": the template alone never makes two documents
similar. A document made only of template text resembles no other document
but its exact copies.

Add templates before the documents. Added to a database that holds documents,
a template makes every stored document be fingerprinted again from its stored
text (each one atomically; an interrupted change is finished by the next
command that opens the database for writing). A database created with
--no-texts, or holding documents added by fingerprint, cannot do that: it
refuses templates once it holds documents.

"fpdb template suggest" finds boilerplate, the passages most stored documents
share, and prints it for you to review before adding it.`,
		Example: `  fpdb template add call-2026.txt            # before adding the proposals
  fpdb template add --name gpl-header header.txt
  fpdb template list
  fpdb template suggest --min-share 0.5 > boilerplate.txt
  fpdb template add boilerplate.txt           # after reading it
  fpdb template remove gpl-header`,
		Args: noArgs("template"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErrorf("template: give a subcommand: add, list, remove or suggest")
		},
	}
	add := &cobra.Command{
		Use:   "add [flags] FILE|-",
		Short: "Add a template (or replace the one of its name)",
		Long: `Add reads FILE (or standard input, with --name) and adds it as the template
named --name, by default FILE's base name; a template of that name is
replaced. It creates the database when there is none (with the creation
flags of "fpdb add"). It prints the template's number of shingles and how
many stored documents were fingerprinted again.

Exit status: 0 on success; 2 on error (a database that cannot fingerprint its
documents again: created with --no-texts, or holding documents added by
fingerprint); 3 when FILE cannot be read or has no words.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("template add: want exactly one FILE (or -), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.add(cmd.Context(), args[0], cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	add.Flags().StringVar(&o.name, "name", "", "template `NAME` (default: FILE's base name)")
	o.text.register(add.Flags())
	o.creation.register(add.Flags())
	list := &cobra.Command{
		Use:   "list [flags]",
		Short: "List the templates",
		Long: `List prints each template's name, number of shingles, format, size in bytes
and the time it was added; with --json one object per line:

  {"name": "call", "shingles": 597, "format": "text", "bytes": 4210,
   "added": "2026-01-02T15:04:05Z"}`,
		Args: noArgs("template list"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.list(cmd.Context(), cmd.OutOrStdout())
		},
	}
	list.Flags().BoolVar(&o.json, "json", false, "print JSON lines")
	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a template",
		Long: `Remove removes the template NAME; the stored documents are fingerprinted again
from their texts, with the templates that remain.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("template remove: want exactly one NAME, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.remove(cmd.Context(), args[0], cmd.OutOrStdout())
		},
	}
	suggest := &cobra.Command{
		Use:   "suggest [flags]",
		Short: "Print the boilerplate most stored documents share",
		Long: `Suggest reads the stored texts (a sample of --sample of them, spread over the
database), finds the shingles that occur in at least --min-share of them
(leaving out what templates already cover), and prints the passages made of
them, at least --min-words words long, each once, in the words of the first
document that holds it, separated by blank lines. A summary goes to standard
error. It changes nothing: review the text, edit it if needed, and add it
with "fpdb template add". It needs stored texts.

With --json, one object: {"documents": 2000, "min_documents": 1000,
"shingles": 612, "text": "…", "passages": [{"id": "…", "start": 0,
"end": 4210, "line": 1, "col": 1, "words": 601}]}.`,
		Args: noArgs("template suggest"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.suggest(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	sf := suggest.Flags()
	sf.Float64Var(&o.minShare, "min-share", 0.5, "least share `S` of the documents read a shingle must occur in, in (0, 1]")
	sf.IntVar(&o.minWords, "min-words", 8, "shortest passage suggested, in words `N`")
	sf.IntVar(&o.sample, "sample", 2000, "read at most `N` stored texts, spread over the database")
	sf.BoolVar(&o.json, "json", false, "print a JSON object")
	cmd.AddCommand(add, list, remove, suggest)
	return cmd
}

// add runs "fpdb template add".
func (o *templateOptions) add(ctx context.Context, path string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	name := o.name
	if name == "" {
		if path == "-" {
			return usageErrorf("template add -: give the template a --name")
		}
		name = filepath.Base(path)
	}
	if err := o.creation.validate(); err != nil {
		return err
	}
	var text []byte
	if path == "-" {
		text, err = io.ReadAll(io.LimitReader(stdin, db.MaxTemplateSize+1))
	} else {
		text, err = os.ReadFile(path)
	}
	if err != nil {
		return failure(asInputError(newOpError("template add "+path, pathError(err, path))))
	}
	d, err := o.openDBWith(openCreate, &o.creation)
	if err != nil {
		return failure(err)
	}
	// A template refused by a database this add made leaves none; one
	// stored stays, whatever fails after it (printing the result).
	stored := false
	defer func() {
		if stored {
			closeDB(d, &err)
		} else {
			closeMadeDB(d, &err, stderr)
		}
	}()
	res, err := d.AddTemplate(ctx, name, text, o.text.options(path))
	if err != nil {
		if isInputError(err, path) {
			err = asInputError(fmt.Errorf("template add %s: %w", path, err))
		}
		return failure(err)
	}
	stored = true
	verb := "added"
	if res.Replaced {
		verb = "replaced"
	}
	_, err = fmt.Fprintf(stdout, "template %q %s: %s, %s excluded in all; %s fingerprinted again, %d changed\n",
		name, verb, plural(res.Template.Shingles, "shingle"), plural(res.Excluded, "shingle"), nDocs(res.Documents), res.Changed)
	return err
}

// remove runs "fpdb template remove".
func (o *templateOptions) remove(ctx context.Context, name string, stdout io.Writer) (err error) {
	d, err := o.openDB(openExisting)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)
	res, err := d.RemoveTemplate(ctx, name)
	if err != nil {
		return failure(err)
	}
	_, err = fmt.Fprintf(stdout, "template %q removed: %s excluded in all; %s fingerprinted again, %d changed\n",
		name, plural(res.Excluded, "shingle"), nDocs(res.Documents), res.Changed)
	return err
}

// list runs "fpdb template list".
func (o *templateOptions) list(ctx context.Context, stdout io.Writer) (err error) {
	d, err := o.openDB(openReadOnly)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)
	ts, err := d.Templates(ctx)
	if err != nil {
		return failure(err)
	}
	if o.json {
		enc := newJSONEncoder(stdout)
		for _, t := range ts {
			if err := enc.Encode(apiconv.Template(t)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(ts) == 0 {
		_, err = fmt.Fprintln(stdout, "no templates")
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSHINGLES\tFORMAT\tBYTES\tADDED")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", tsvField(t.Name), t.Shingles, t.Format, len(t.Text), t.Added.Format(time.RFC3339))
	}
	return tw.Flush()
}

// jsonBoilerplate is the JSON form of a suggestion.
type jsonBoilerplate struct {
	Documents    int              `json:"documents"`
	MinDocuments int              `json:"min_documents"`
	Shingles     int              `json:"shingles"`
	Text         string           `json:"text"`
	Passages     []jsonBoilerSpan `json:"passages"`
}

// jsonBoilerSpan is one passage of a suggestion: where it is in the text
// of the document id.
type jsonBoilerSpan struct {
	ID string `json:"id"`
	api.Span
}

// suggest runs "fpdb template suggest".
func (o *templateOptions) suggest(ctx context.Context, stdout, stderr io.Writer) (err error) {
	switch {
	case !(o.minShare > 0 && o.minShare <= 1):
		return usageErrorf("invalid --min-share %v: must be in (0, 1]", o.minShare)
	case o.minWords < 1:
		return usageErrorf("invalid --min-words %d: must be at least 1", o.minWords)
	case o.sample < 1:
		return usageErrorf("invalid --sample %d: must be at least 1", o.sample)
	}
	d, err := o.openDB(openReadOnly)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)
	b, err := d.SuggestTemplate(ctx, &db.BoilerplateOptions{MinShare: o.minShare, MinWords: o.minWords, Sample: o.sample})
	if err != nil {
		return failure(err)
	}
	if o.json {
		jb := jsonBoilerplate{Documents: b.Documents, MinDocuments: b.MinDocuments, Shingles: b.Shingles,
			Text: string(b.Text), Passages: []jsonBoilerSpan{}}
		for _, p := range b.Passages {
			jb.Passages = append(jb.Passages, jsonBoilerSpan{ID: p.ID, Span: apiconv.Span(p.Span)})
		}
		return newJSONEncoder(stdout).Encode(jb)
	}
	fmt.Fprintf(stderr, "%s in at least %d of the %s read; %s\n", plural(b.Shingles, "shingle"), b.MinDocuments,
		nDocs(b.Documents), plural(len(b.Passages), "passage"))
	if len(b.Passages) == 0 {
		return nil
	}
	fmt.Fprintln(stderr, "review it, then: fpdb template add --name boilerplate FILE")
	_, err = fmt.Fprintf(stdout, "%s\n", b.Text)
	return err
}
