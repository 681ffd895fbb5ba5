package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/db"
)

// getOptions are the flags and argument of "fpdb get".
type getOptions struct {
	*globalOptions
	json bool
	id   string
}

// jsonDoc is the JSON form of a stored document.
type jsonDoc struct {
	ID          string `json:"id"`
	Source      string `json:"source"`
	Size        int64  `json:"size"`
	Words       int    `json:"words"`
	Added       string `json:"added"`
	ContentHash string `json:"content_hash"`
	Fingerprint string `json:"fingerprint"`
}

func newGetCommand(g *globalOptions) *cobra.Command {
	o := &getOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "get [flags] ID",
		Short: "Show a stored document",
		Long: `Get prints what the database holds about the document ID: its source, size
in bytes, number of normalized words, the time it was added (RFC 3339), its
content hash (hex) and its fingerprint (hex, 16 digits per 64-bit word, word
0 first). The database must exist. An id or source holding a control
character (such as an escape) is written Go-quoted; --json writes it as it is.

With --json, one object:

  {"id": "a.txt", "source": "a.txt", "size": 1834, "words": 310,
   "added": "2025-01-02T15:04:05Z", "content_hash": "…", "fingerprint": "…"}

Exit status: 0 on success; 2 on error, including an unknown ID.`,
		Example: `  fpdb get corpus/a.txt
  fpdb get --json page-17`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("get: want exactly one ID, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.id = args[0]
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print a JSON object")
	return cmd
}

func (o *getOptions) run(ctx context.Context, stdout io.Writer) (err error) {
	if o.remote() {
		return o.runRemote(ctx, stdout)
	}
	d, err := o.openDB(openReadOnly)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)

	doc, err := d.Get(ctx, o.id)
	if err != nil {
		op := fmt.Sprintf("get %q", o.id)
		return failure(newOpError(op, err, op, "get"))
	}
	jd := jsonDoc{
		ID:          doc.ID,
		Source:      doc.Source,
		Size:        doc.Size,
		Words:       doc.Words,
		Added:       doc.Added.Format(time.RFC3339),
		ContentHash: hex.EncodeToString(doc.ContentHash[:]),
		Fingerprint: db.FormatFingerprint(doc.Fingerprint),
	}
	return o.print(stdout, jd)
}

// runRemote gets the document from the server.
func (o *getOptions) runRemote(ctx context.Context, stdout io.Writer) error {
	c, err := o.client()
	if err != nil {
		return failure(err)
	}
	doc, err := c.Get(ctx, o.id)
	if err != nil {
		op := fmt.Sprintf("get %q", o.id)
		return failure(newOpError(op, fromServer(err), op, "get"))
	}
	return o.print(stdout, remoteDoc(doc))
}

// print prints the document jd.
func (o *getOptions) print(stdout io.Writer, jd jsonDoc) error {
	if o.json {
		if err := newJSONEncoder(stdout).Encode(jd); err != nil {
			return failure(err)
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\n", tsvField(jd.ID))
	fmt.Fprintf(tw, "source\t%s\n", tsvField(jd.Source))
	fmt.Fprintf(tw, "size\t%d\n", jd.Size)
	fmt.Fprintf(tw, "words\t%d\n", jd.Words)
	fmt.Fprintf(tw, "added\t%s\n", jd.Added)
	fmt.Fprintf(tw, "content hash\t%s\n", jd.ContentHash)
	fmt.Fprintf(tw, "fingerprint\t%s\n", jd.Fingerprint)
	if err := tw.Flush(); err != nil {
		return failure(err)
	}
	return nil
}
