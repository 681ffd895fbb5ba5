package bench

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Plot is a chart and the file suffix it is written under.
type Plot struct {
	File  string
	Chart Chart
}

// Plots returns the charts of a report: latency vs threshold, latency vs n,
// and precision/recall vs k.
func Plots(rep *Report) []Plot {
	var plots []Plot
	// Latency vs threshold: the largest random run at k = 512.
	var big *PlanRun
	for i := range rep.Plans {
		if pr := &rep.Plans[i]; pr.Workload == "random" && pr.K == 512 && (big == nil || pr.N > big.N) {
			big = pr
		}
	}
	if big != nil {
		plots = append(plots, Plot{"latency-vs-threshold", thresholdChart(big)})
	}
	for i := range rep.Plans {
		if pr := &rep.Plans[i]; pr.Workload == SkewedName {
			plots = append(plots, Plot{"latency-vs-threshold-" + SkewedName, thresholdChart(pr)})
		}
	}
	// Latency vs n at k = 512: the planner's choice at each threshold, and
	// the scans (fpdb's own scan plan and the one-goroutine reference) at
	// r = 0.7 (a scan's time hardly depends on the threshold).
	{
		c := Chart{Title: "p50 latency vs n (random, k=512)", XLabel: "stored fingerprints n", YLabel: "p50 latency (ms)", LogX: true, LogY: true}
		type line struct {
			plan string
			r    float64
		}
		var lines []line
		for _, r := range []float64{0.5, 0.6, 0.7, 0.8, 0.9, 0.95} {
			lines = append(lines, line{"auto", r})
		}
		lines = append(lines, line{"scan", 0.7}, line{RefScanName, 0.7})
		for _, ln := range lines {
			s := Series{Name: fmt.Sprintf("%s r=%.2g", ln.plan, ln.r), Dashed: ln.plan != "auto"}
			if ln.plan != "auto" {
				s.Name = ln.plan
			}
			for _, pr := range rep.Plans {
				if pr.Workload != "random" || pr.K != 512 {
					continue
				}
				if p := findPlan(rep, "random", pr.N, 512, ln.r, ln.plan); p != nil && p.Latency.N > 0 {
					s.X = append(s.X, float64(pr.N))
					s.Y = append(s.Y, float64(p.Latency.P50)/1e6)
				}
			}
			if len(s.X) > 0 {
				c.Series = append(c.Series, s)
			}
		}
		if len(c.Series) > 0 {
			plots = append(plots, Plot{"latency-vs-n", c})
		}
	}
	// Precision and recall vs k, per workload.
	workloads := map[string]bool{}
	for _, a := range rep.Accuracy {
		workloads[a.Workload] = true
	}
	for _, w := range slices.Sorted(maps.Keys(workloads)) {
		c := Chart{Title: "precision (solid) and recall (dashed) vs k: " + w, XLabel: "k (bits)", YLabel: "precision / recall", LogX: true, YMin: 0, YMax: 1}
		rs := map[float64]bool{}
		for _, a := range rep.Accuracy {
			if a.Workload == w {
				rs[a.R] = true
			}
		}
		for _, r := range slices.Sorted(maps.Keys(rs)) {
			p := Series{Name: fmt.Sprintf("P r=%.1f", r)}
			rc := Series{Name: fmt.Sprintf("R r=%.1f", r), Dashed: true}
			for _, a := range rep.Accuracy {
				if a.Workload == w && a.R == r {
					p.X, p.Y = append(p.X, float64(a.K)), append(p.Y, a.Precision)
					rc.X, rc.Y = append(rc.X, float64(a.K)), append(rc.Y, a.Recall)
				}
			}
			c.Series = append(c.Series, p, rc)
		}
		plots = append(plots, Plot{"accuracy-" + w, c})
	}
	return plots
}

// thresholdChart plots the p50 latency of every plan of pr against the
// threshold.
func thresholdChart(pr *PlanRun) Chart {
	c := Chart{Title: fmt.Sprintf("p50 latency vs threshold (%s, n=%s, k=%d)", pr.Workload, fmtN(pr.N), pr.K), XLabel: "threshold r", YLabel: "p50 latency (ms)", LogY: true}
	byPlan := map[string]*Series{}
	var order []string
	for _, p := range pr.Results {
		if p.Latency.N == 0 {
			continue
		}
		s := byPlan[p.Plan]
		if s == nil {
			s = &Series{Name: p.Plan, Dashed: p.Plan == "scan" || p.Plan == RefScanName}
			byPlan[p.Plan] = s
			order = append(order, p.Plan)
		}
		s.X = append(s.X, p.R)
		s.Y = append(s.Y, float64(p.Latency.P50)/1e6)
	}
	for _, name := range order {
		c.Series = append(c.Series, *byPlan[name])
	}
	return c
}

func fmtN(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

func fmtLat(l Latency, note string) string {
	if l.N == 0 {
		if note == "" {
			return "—"
		}
		return note
	}
	s := fmtDur(l.Mean)
	if note != "" {
		s += fmt.Sprintf(" (%d queries; %s)", l.N, note)
	}
	return s
}

// Markdown renders the report.
func Markdown(rep *Report, plots []string) string {
	var b strings.Builder
	e := rep.Env
	fmt.Fprintf(&b, "# fpdb benchmark: %s\n\n", rep.Config.Name)
	fmt.Fprintf(&b, "| | |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| command | `%s` |\n| date | %s |\n| commit | `%s` |\n", e.Command, e.Date.Format(time.RFC3339), e.Commit)
	if len(e.Dirty) > 0 {
		fmt.Fprintf(&b, "| uncommitted changes in the tree at start | %s |\n", strings.Join(e.Dirty, ", "))
	}
	fmt.Fprintf(&b, "| machine | %s, %d cores, %s RAM (shared with other users: trust the ratios, not the absolute times) |\n", e.CPU, e.Cores, e.MemTotal)
	if len(rep.Sections) > 0 {
		fmt.Fprintf(&b, "| sections run | %s (partial run) |\n", strings.Join(rep.Sections, ", "))
	}
	fmt.Fprintf(&b, "| Go | %s %s GOAMD64=%s |\n| run time | %s |\n\n", e.GoVersion, e.GOARCH, orDefault(e.GOAMD64, "(default)"), rep.Elapsed.Round(time.Second))

	b.WriteString("## Targets (issue 3)\n\n| target | measured | status |\n| --- | --- | --- |\n")
	for _, t := range rep.Targets {
		fmt.Fprintf(&b, "| %s | %s | **%s** |\n", t.Target, t.Measured, t.Status)
	}
	b.WriteString("\nSpeed-ups (`× scan p50`) are the p50 of the single-goroutine reference scan (`scan 1 goroutine`: fpdb's unrolled popcount, bitvec.Scan, over the same fingerprints) divided by the plan's p50, both measured in this run on the same index with the plans interleaved query by query; one query at a time. `scan` is fpdb's own Plan Scan, which may use both cores.\n\n")

	if len(plots) > 0 {
		b.WriteString("## Plots\n\n")
		for _, p := range plots {
			fmt.Fprintf(&b, "- [%s](%s)\n", p, p)
		}
		b.WriteString("\n")
	}

	if in := rep.Ingest; in != nil {
		b.WriteString("## Ingest (k = 512, default layout)\n\n| measure | value |\n| --- | --- |\n")
		fmt.Fprintf(&b, "| fingerprinting, one goroutine, %.0f-byte Zipf documents | %.0f docs per CPU second (%.1f MB/s); %.0f per wall second on the shared machine |\n", in.DocBytes, in.FingerprintDocsPerSec, in.FingerprintMBPerSec, in.FingerprintWallDocsPerSec)
		fmt.Fprintf(&b, "| `db.Add`, synced, %d documents | %.0f docs/s |\n", in.SyncDocs, in.SyncDocsPerSec)
		fmt.Fprintf(&b, "| `db.Add`, NoSync, %d documents | %.0f docs/s; %.0f B/doc on disk after Close |\n", in.BulkDocs, in.BulkDocsPerSec, in.BulkBytesPerDoc)
		fmt.Fprintf(&b, "| `db.AddBatch` of texts, batches of 1 000, synced, %d documents (fingerprinting on all cores) | %.0f docs/s |\n", in.BulkDocs, in.BatchDocsPerSec)
		if in.EachDocsPerSec > 0 {
			fmt.Fprintf(&b, "| `db.AddEach` of texts, each checked at r = 0.8 against the stored ones and its batch, batches of 256, synced, %d documents (as `fpdb add` writes records) | %.0f docs/s |\n", in.BulkDocs, in.EachDocsPerSec)
		}
		fmt.Fprintf(&b, "| `db.Add of a fingerprint` one at a time, NoSync, %d fingerprints | %.0f fp/s |\n", in.AddFPs, in.AddFPPerSec)
		fmt.Fprintf(&b, "| `db.AddBatch` of fingerprints, BulkLoad, batches of 10 000, synced, Close included, %d fingerprints | %.0f fp/s; %.0f B/doc on disk after `db.Compact` (whole database: ids, records, fingerprints, postings) |\n", in.BatchFPs, in.BatchFPPerSec, in.DBBytesPerDoc)
		fmt.Fprintf(&b, "| `index.Stage`, batches of 1 000, NoSync, %d fingerprints | %.0f fp/s; %.0f B/fp after Flush + Compact |\n", in.StageAddDocs, in.StageAddFPPerSec, in.StageAddBytesPerFP)
		fmt.Fprintf(&b, "| peak RSS after the ingest section | %.0f MiB |\n\n", float64(in.PeakRSS)/(1<<20))
	}

	b.WriteString("## Plans compared on the same index\n\n")
	b.WriteString("alg.G is the paper's Manku-style grouping, implemented in bench/ on `Index.Posting` (exact-match lists of the query's group values, all C(m, m−rh) combinations intersected depth first, empty prefixes abandoned). Counters are means per query; `hits` is the mean answer size; `recall` is the share of the scan's answers the plan returned (1 for every exact plan); `mism.` counts queries whose answer differs from the scan's (expected only for the approximate plan). The posting cache is warm (`Index.Warm` after the build).\n\n")
	for _, pr := range rep.Plans {
		fmt.Fprintf(&b, "### %s, n = %s, k = %d, %d groups of %s bits, %d queries\n\n", pr.Workload, fmtN(pr.N), pr.K, len(pr.Widths), widthRange(pr.Widths), pr.Queries)
		fmt.Fprintf(&b, "Index built in %s (+ %s flush and compaction; `Warm` %s), %.0f B/fingerprint on disk", fmtDur(pr.Build.Ingest), fmtDur(pr.Build.Compact), fmtDur(pr.Build.Warm), pr.Build.BytesPerFP)
		if pr.Build.Resident > 0 {
			fmt.Fprintf(&b, "; after `Warm` %.0f B/fingerprint resident (%.0f B of them live Go heap)", float64(pr.Build.Resident)/float64(pr.N), float64(pr.Build.Heap)/float64(pr.N))
		}
		b.WriteString(".\n\n")
		if sk := pr.Skew; sk != nil {
			if pr.Clusters > 0 {
				fmt.Fprintf(&b, "%s near-duplicate clusters, the largest of %s documents. ", fmtN(pr.Clusters), fmtN(pr.LargestCluster))
			}
			fmt.Fprintf(&b, "Posting lists: mean length %.1f, longest %s; the list a stored document's own group value falls in holds %.1f documents on average (%.1f for uniformly random fingerprints); the longest 1 %% of the lists hold %.1f %% of the postings.\n\n",
				sk.MeanLen, fmtN(sk.MaxLen), sk.SeenLen, sk.UniformSeenLen, 100*sk.Top1Share)
		}
		b.WriteString("| r | rh | plan | p50 | p95 | p99 | × scan p50 | probes | postings | candidates | verified | hits | recall | mism. | note |\n")
		b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, p := range pr.Results {
			if p.Latency.N == 0 {
				fmt.Fprintf(&b, "| %.2f | %d | %s | | | | | | | | | | | | %s |\n", p.R, p.Radius, p.Plan, p.Skipped)
				continue
			}
			note := p.Skipped
			if p.Plan == "auto" || strings.HasPrefix(p.Plan, "approx") {
				note = strings.TrimSpace(chosen(&p) + " " + note)
			}
			if v, ok := p.Extra["nodes"]; ok {
				note = strings.TrimSpace(fmt.Sprintf("C(m,c)=%s, %.0f intersections/query %s", FormatCount(p.Extra["combinations"]), v, note))
			}
			fmt.Fprintf(&b, "| %.2f | %d | %s | %s | %s | %s | %.1fx | %.0f | %.0f | %.0f | %.0f | %.1f | %.4f | %d | %s |\n",
				p.R, p.Radius, p.Plan, fmtDur(p.Latency.P50), fmtDur(p.Latency.P95), fmtDur(p.Latency.P99), p.Speedup,
				p.Probes, p.Postings, p.Candidates, p.Verified, p.Hits, p.Recall, p.Mismatches, note)
		}
		b.WriteString("\n")
	}

	if rep.Dedup != nil {
		dedupMarkdown(&b, rep.Dedup)
	}

	if len(rep.Table1) > 0 {
		fmt.Fprintf(&b, "## The paper's Table 1 setting (n = %s random fingerprints with planted neighbours, r = %.1f, mean time per query)\n\n", fmtN(rep.Config.Table1N), rep.Config.Table1R)
		b.WriteString("k must be a multiple of 64: the paper's k = 100 is run as 128, 200 as 256, 400 as 384, 600 as 576, 1000 as 1024. alg.G and alg.H run on one index with the paper's layout (m = rh + 3 groups, so alg.H's count filter is t = 3); fpdb's planner runs on a second index of the same fingerprints with fpdb's default layout (16-bit groups); fpdb's scan (Plan Scan, which may use several goroutines) and the single-goroutine reference scan are measured alongside the planner. The paper's times are Oracle-backed, on its own hardware, on 300 000 real documents: only the ratios between rows of one column mean anything across the two.\n\n")
		b.WriteString("| paper k | k | rh | paper layout | queries | alg.G | alg.H | fpdb (plans chosen) | fpdb scan | scan 1 goroutine | paper alg.G | paper alg.H | mism. |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, t := range rep.Table1 {
			pl := fmt.Sprintf("%d groups of %d–%d bits", len(t.PaperWidths), slices.Min(t.PaperWidths), slices.Max(t.PaperWidths))
			var plans []string
			for name, c := range t.FpdbPlans {
				plans = append(plans, fmt.Sprintf("%s ×%d", name, c))
			}
			slices.Sort(plans)
			fmt.Fprintf(&b, "| %d | %d | %d | %s | %d | %s | %s | %s (%s) | %s | %s | %s | %s | %d |\n", t.PaperK, t.K, t.Radius, pl, t.Queries,
				fmtLat(t.AlgG, t.AlgGNote), fmtLat(t.AlgH, t.AlgHNote), fmtLat(t.Fpdb, ""), strings.Join(plans, ", "), fmtLat(t.Scan, ""), fmtLat(t.Scan1, ""),
				orDefault(t.PaperG, "—"), orDefault(t.PaperH, "—"), t.Mismatches)
		}
		b.WriteString("\n")
	}

	if len(rep.Accuracy) > 0 {
		b.WriteString("## Accuracy (the paper's Fig. 6)\n\n")
		b.WriteString("Precision = returned pairs with exact Jaccard ≥ r / returned pairs; recall = returned pairs with Jaccard ≥ r / pairs with Jaccard ≥ r. Every document is queried; a pair counts once. fpdb's answers come from `index.Search` (planner) on the default layout — exact, so the same as a scan. zipf-text: Jaccard over 4-word shingles computed by the bench with fpdb's own normalization (internal/normalize, internal/shingle). debian: the corpus's pairs.tsv (its ground truth normalizes slightly differently: lower-case, tags removed, every non-alphanumeric character a space).\n\n")
		b.WriteString("The margin columns use the definition of db's accuracy test: precision counts returned pairs with Jaccard ≥ r − 0.1 as right, recall asks only for the pairs with Jaccard ≥ r + 0.1. Strict figures near the threshold are bounded by the estimator's spread, σ(R̂) ≈ √((1 − R²)/k) (0.03 at k = 512, R = 0.7), and many real pairs sit within σ of the threshold.\n\n")
		b.WriteString("| workload | docs | k | r | precision | recall | returned | relevant | precision (J ≥ r−0.1) | recall (J ≥ r+0.1) |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, a := range rep.Accuracy {
			fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %.3f | %.3f | %d | %d | %s | %s |\n", a.Workload, a.Docs, a.K, a.R, a.Precision, a.Recall, a.Returned, a.Relevant, fmtFrac(a.PrecisionMargin), fmtFrac(a.RecallMargin))
		}
		b.WriteString("\nThe paper at k = 64: precision 0.16 / 0.19 / 0.42 and recall 0.74 / 0.77 / 0.93 at r = 0.7 / 0.8 / 0.9.\n\n")
	}

	if len(rep.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range rep.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
	b.WriteString("## Peak RSS (VmHWM) after each section\n\n| section | MiB |\n| --- | --- |\n")
	for _, s := range []string{"dedup", "ingest", "random", "table1", "accuracy"} {
		if v, ok := rep.PeakRSS[s]; ok {
			fmt.Fprintf(&b, "| %s | %.0f |\n", s, float64(v)/(1<<20))
		}
	}
	return b.String()
}

func fmtFrac(x float64) string {
	if x < 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f", x)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// widthRange is "16" when every group has 16 bits, "17–18" when they
// differ.
func widthRange(ws []int) string {
	if len(ws) == 0 {
		return "0"
	}
	lo, hi := slices.Min(ws), slices.Max(ws)
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}
