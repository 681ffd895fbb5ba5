// Package bench is fpdb's benchmark suite: workload generators (random
// fingerprints with planted neighbours, synthetic Zipf text with controlled
// edits, the real Debian corpus), an index builder on an on-disk Pebble
// store, the comparison of query plans measured in one run against the
// linear scan (fpdb's planner, alg.H forced, probe radii τ > 0, the paper's
// alg.G implemented here on top of index.Index.Posting, and the scan), the
// paper's Table 1 setting, accuracy against exact Jaccard resemblance, and
// ingest throughput. The runner is bench/cmd/fpdb-bench (`make bench`,
// `make bench-full`); it writes Markdown, JSON and SVG reports into
// bench/results.
//
// Every figure the suite reports is measured by the run that writes it;
// latencies are compared as ratios to the scan's median measured on the
// same index, with the plans interleaved query by query, because the
// machines it runs on are shared and noisy.
package bench
