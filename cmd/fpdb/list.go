package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/db"
)

// listOptions are the flags of "fpdb list".
type listOptions struct {
	*globalOptions
	prefix string
	json   bool
	null   bool
}

// jsonListDoc is the JSON form of a document listed by "fpdb list".
type jsonListDoc struct {
	ID     string `json:"id"`
	Added  string `json:"added"`
	Size   int64  `json:"size"`
	Source string `json:"source"`
}

// listDoc is what "fpdb list" keeps of a document.
type listDoc struct {
	id, source string
	added      time.Time
	size       int64
}

func newListCommand(g *globalOptions) *cobra.Command {
	o := &listOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "list [--prefix P] [--json | -0]",
		Short: "List the stored documents",
		Long: `List prints one line per stored document, sorted by id:

  ID<TAB>ADDED<TAB>SIZE<TAB>SOURCE

ADDED is the time the document was stored (RFC 3339), SIZE its size in bytes
(0 for a document added by fingerprint), SOURCE where it came from (empty
when none was recorded). An id or source holding a control character (a
tab, a newline, an escape) or a bidirectional override (or starting with a
double quote) is written Go-quoted, as "fpdb pairs" writes it; "fpdb delete -" reads such ids back. --prefix P lists only the ids that
start with P.

With --json, one object per line:

  {"id": "a.txt", "added": "2025-01-02T15:04:05Z", "size": 1834, "source": "a.txt"}

With -0, only the ids, each followed by a NUL byte and never quoted (for
"xargs -0" and "fpdb delete - -0").

The database is opened read-only and must exist; another process may hold it
for writing meanwhile only if it releases it within --wait. The ids are
sorted in memory (about the size of the ids and sources).

Exit status: 0 on success, even when nothing is listed; 2 on error.`,
		Example: `  fpdb list
  fpdb list --prefix corpus/ | cut -f1
  fpdb list --json | jq -r 'select(.size < 100) | .id'
  fpdb list -0 --prefix tmp/ | fpdb delete - -0`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) != 0:
				return usageErrorf("list: takes no arguments, got %d (use --prefix P)", len(args))
			case o.json && o.null:
				return usageErrorf("list: give either --json or -0, not both")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.prefix, "prefix", "", "list only the documents whose id starts with `P`")
	f.BoolVar(&o.json, "json", false, "print JSON lines")
	f.BoolVarP(&o.null, "null", "0", false, "print only the ids, each followed by a NUL byte")
	return cmd
}

func (o *listOptions) run(ctx context.Context, stdout io.Writer) (err error) {
	d, err := o.openDB(openReadOnly)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)

	var docs []listDoc
	err = d.Docs(ctx, func(doc db.Doc) error {
		if strings.HasPrefix(doc.ID, o.prefix) {
			docs = append(docs, listDoc{id: doc.ID, source: doc.Source, added: doc.Added, size: doc.Size})
		}
		return nil
	})
	if err != nil {
		return failure(newOpError("list", err, "docs"))
	}
	slices.SortFunc(docs, func(a, b listDoc) int { return strings.Compare(a.id, b.id) })

	bw := bufio.NewWriter(stdout)
	enc := newJSONEncoder(bw)
	for _, doc := range docs {
		added := doc.added.Format(time.RFC3339)
		switch {
		case o.json:
			err = enc.Encode(jsonListDoc{ID: doc.id, Added: added, Size: doc.size, Source: doc.source})
		case o.null:
			_, err = fmt.Fprintf(bw, "%s\x00", doc.id)
		default:
			_, err = fmt.Fprintf(bw, "%s\t%s\t%d\t%s\n", tsvField(doc.id), added, doc.size, tsvField(doc.source))
		}
		if err != nil {
			return failure(err)
		}
	}
	if err := bw.Flush(); err != nil {
		return failure(err)
	}
	return nil
}
