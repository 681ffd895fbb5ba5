package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/dedup"
)

// jsonBulkSummary is the JSON summary of "fpdb add --bulk".
type jsonBulkSummary struct {
	Stored         int            `json:"stored"`
	Replaced       int            `json:"replaced"`
	Unchanged      int            `json:"unchanged"`
	Skipped        int            `json:"skipped"`
	SkippedReasons map[string]int `json:"skipped_reasons"`
	Seconds        float64        `json:"seconds"`
	DocsPerSecond  float64        `json:"docs_per_second"`
}

// skipReason names the cause of a skipped input for the summary.
func skipReason(err error) string { return dedup.SkipReason(err) }

// skippedReasons returns " (1 binary or not UTF-8, 2 no words)": the
// counts of skipped inputs by reason, sorted, or "" when there are none.
func skippedReasons[N int | int64](reasons map[string]N) string {
	if len(reasons) == 0 {
		return ""
	}
	var rs []string
	for r, n := range reasons {
		rs = append(rs, fmt.Sprintf("%d %s", n, r))
	}
	slices.Sort(rs)
	return " (" + strings.Join(rs, ", ") + ")"
}

// runBulk adds inputs with AddBatch, --batch documents at a time. d is nil
// when no input can be read: each is reported, then the summary.
func (o *addOptions) runBulk(ctx context.Context, d *db.DB, inputs []addInput, stdin io.Reader, stdout io.Writer, rep *addReport) error {
	start := time.Now()
	sum := jsonBulkSummary{SkippedReasons: map[string]int{}}
	skip := func(path, id string, err error) {
		rep.fail(path, id, err)
		sum.Skipped++
		sum.SkippedReasons[skipReason(err)]++
	}
	var batch []db.Input
	var paths []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		res, err := d.AddBatch(ctx, batch)
		if err != nil {
			return err
		}
		for _, s := range res.Skipped {
			skip(paths[s.Index], s.ID, s.Err)
		}
		sum.Stored += res.Stored
		sum.Replaced += res.Replaced
		sum.Unchanged += res.Unchanged
		rep.progress.update(sum.Stored + sum.Unchanged + sum.Skipped)
		batch, paths = batch[:0], paths[:0]
		return nil
	}
	var err error
	for _, in := range inputs {
		if ctx.Err() != nil || err != nil {
			break
		}
		if in.err != nil {
			skip(in.path, "", in.err)
			continue
		}
		bd := db.Input{ID: in.id, Source: o.source, ReplaceUnchanged: o.replace, TextOptions: o.text.options(in.path)}
		if in.path == "-" {
			text, err := io.ReadAll(stdin)
			if err != nil {
				skip(in.path, in.id, err)
				continue
			}
			bd.Text = text
		} else {
			path := in.path
			bd.Open = func() (io.ReadCloser, error) { return os.Open(path) }
			if bd.Source == "" {
				bd.Source = path
			}
		}
		batch = append(batch, bd)
		paths = append(paths, in.path)
		if len(batch) == o.batch {
			err = flush()
		}
	}
	if err == nil {
		err = flush()
	}
	rep.progress.clear()
	if ctx.Err() != nil {
		return failure(fmt.Errorf("add: interrupted: %s stored", nDocs(sum.Stored)))
	}
	if err != nil {
		return failure(newOpError("add", err, "add batch"))
	}
	// Write the deferred postings now, so that the rate counts them. (No
	// database is opened when no input can be read.)
	if d != nil {
		if err := d.Flush(ctx); err != nil {
			return failure(newOpError("add", err, "write postings"))
		}
	}
	el := time.Since(start)
	sum.Seconds = el.Seconds()
	if sum.Seconds > 0 {
		sum.DocsPerSecond = float64(sum.Stored) / sum.Seconds
	}
	// The summary line goes to standard error, as for every add; with
	// --json the summary object is also the output.
	if o.json {
		if err := newJSONEncoder(stdout).Encode(sum); err != nil {
			return failure(err)
		}
	}
	{
		line := fmt.Sprintf("bulk: %d stored (%d replaced), %d unchanged, %d skipped", sum.Stored, sum.Replaced, sum.Unchanged, sum.Skipped)
		line += skippedReasons(sum.SkippedReasons)
		fmt.Fprintf(rep.stderr, "%s in %v, %.0f docs/s\n", line, el.Round(time.Millisecond), sum.DocsPerSecond)
	}
	if sum.Skipped > 0 {
		return rep.failures.failure(nil)
	}
	return nil
}
