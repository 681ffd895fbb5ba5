package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/server/apiconv"
)

// statsOptions are the flags of "fpdb stats".
type statsOptions struct {
	*globalOptions
	json bool
}

// jsonStats is the JSON form of the database statistics.
type jsonStats = api.StorageStats

// jsonLengthBand counts the posting lists with a length in [min, max].
type jsonLengthBand = api.LengthBand

func newStatsCommand(g *globalOptions) *cobra.Command {
	o := &statsOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "stats [flags]",
		Short: "Show database statistics and parameters",
		Long: `Stats prints the number of stored documents, the creation parameters of the
database (fingerprint bits K, number of index groups m and their widths,
shingle width, seed, format and scheme versions, creation time), whether it
keeps the documents' texts (databases "fpdb add" creates do, unless given
--no-texts) and the size of the database files. The database must exist.

Then the storage statistics: deleted documents whose space is not reclaimed
yet (run "fpdb compact"), bytes per live document, the compaction work the
store still owes, and the distribution of posting list lengths (how many lists
have 1, 2-3, 4-7, ... documents; the mean is docs / 2^w for random
fingerprints and w-bit groups, and long lists make queries slow). After a
bulk load that did not end (a crash), the documents whose postings are not
written yet are counted too. When texts are kept, their number and size:
stored (compressed with zstd) and as text. Whether it keeps an audit log
("fpdb log"), and its number of entries and their size. These read
every posting list: seconds for millions of documents.

With --json, one object with the keys docs, k, m, group_widths,
shingle_width, seed, format_version, hash_version, normalize_version, merger,
created, disk_bytes, deferred_postings_docs, keep_texts, texts, text_bytes,
text_raw_bytes, audit_log, log_entries, log_bytes, deleted_not_compacted, bytes_per_doc,
compaction_debt_bytes, posting_keys, posting_ids, max_posting and
posting_lengths (a list of {"min", "max", "keys"}).`,
		Example: `  fpdb stats
  fpdb --db /var/lib/fpdb stats --json`,
		Args: noArgs("stats"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print a JSON object")
	return cmd
}

func (o *statsOptions) run(ctx context.Context, stdout io.Writer) (err error) {
	if o.remote() {
		return o.runRemote(ctx, stdout)
	}
	d, err := o.openDB(openReadOnly)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)

	st := d.Stats()
	ss, err := d.StorageStats(ctx)
	if err != nil {
		return failure(newOpError("stats", err, "storage stats"))
	}
	js := apiconv.StorageStats(st, ss)
	if o.json {
		if err := newJSONEncoder(stdout).Encode(js); err != nil {
			return failure(err)
		}
		return nil
	}
	return o.print(stdout, js, true)
}

// runRemote prints the server's statistics, storage statistics included,
// as the local stats does.
func (o *statsOptions) runRemote(ctx context.Context, stdout io.Writer) error {
	c, err := o.client()
	if err != nil {
		return failure(err)
	}
	js, err := c.StorageStats(ctx)
	if err != nil {
		return failure(newOpError("stats", fromServer(err)))
	}
	if o.json {
		if err := newJSONEncoder(stdout).Encode(js); err != nil {
			return failure(err)
		}
		return nil
	}
	return o.print(stdout, *js, true)
}

// print prints js; storage says that it holds the storage statistics
// (without, the lines of a server's statistics only).
func (o *statsOptions) print(stdout io.Writer, js jsonStats, storage bool) error {
	widths := make([]string, len(js.GroupWidths))
	for i, w := range js.GroupWidths {
		widths[i] = fmt.Sprint(w)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "docs\t%d\n", js.Docs)
	fmt.Fprintf(tw, "K\t%d\n", js.K)
	fmt.Fprintf(tw, "m\t%d\n", js.M)
	fmt.Fprintf(tw, "group widths\t%s\n", strings.Join(widths, " "))
	fmt.Fprintf(tw, "shingle width\t%d\n", js.ShingleWidth)
	fmt.Fprintf(tw, "seed\t%#x\n", js.Seed)
	fmt.Fprintf(tw, "format version\t%d\n", js.FormatVersion)
	if storage {
		fmt.Fprintf(tw, "hash version\t%d\n", js.HashVersion)
	}
	fmt.Fprintf(tw, "normalize version\t%d\n", js.NormalizeVersion)
	if storage {
		fmt.Fprintf(tw, "merger\t%s\n", js.Merger)
	}
	fmt.Fprintf(tw, "created\t%s\n", js.Created)
	fmt.Fprintf(tw, "disk bytes\t%d\n", js.DiskBytes)
	texts, audit := "no", "no (created without one)"
	if js.KeepTexts {
		texts = "yes"
		if storage {
			texts += fmt.Sprintf(": %d texts, %d bytes stored (%d as text)", js.Texts, js.TextBytes, js.TextRawBytes)
		}
	}
	if js.AuditLog {
		audit = "yes"
		if storage {
			audit += fmt.Sprintf(": %d entries, %d bytes", js.LogEntries, js.LogBytes)
		}
	}
	fmt.Fprintf(tw, "texts kept\t%s\n", texts)
	fmt.Fprintf(tw, "audit log\t%s\n", audit)
	if js.Deferred > 0 {
		fmt.Fprintf(tw, "postings deferred (bulk load)\t%d docs\n", js.Deferred)
	}
	if js.ImportIncomplete {
		fmt.Fprintf(tw, "import\tunfinished: the docs above are the first of an export; import it again to finish (other writes are refused)\n")
	}
	if storage {
		fmt.Fprintf(tw, "deleted, not compacted\t%d\n", js.DeletedNotCompacted)
		fmt.Fprintf(tw, "bytes per doc\t%.0f\n", js.BytesPerDoc)
		fmt.Fprintf(tw, "compaction debt bytes\t%d\n", js.CompactionDebt)
		fmt.Fprintf(tw, "posting lists\t%d (%d ids, longest %d)\n", js.PostingKeys, js.PostingIDs, js.MaxPosting)
		for _, b := range js.PostingLengths {
			band := fmt.Sprint(b.Min)
			if b.Max > b.Min {
				band = fmt.Sprintf("%d-%d", b.Min, b.Max)
			}
			fmt.Fprintf(tw, "  length %s\t%d lists\n", band, b.Keys)
		}
	}
	if err := tw.Flush(); err != nil {
		return failure(err)
	}
	return nil
}
