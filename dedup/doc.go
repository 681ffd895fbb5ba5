// Package dedup reads datasets of records (JSON Lines, CSV, TSV, Parquet;
// gzip, zstd or bzip2 compressed), stores one document per record in an
// fpdb database, and writes the records back deduplicated: what "fpdb add"
// does with record files and "fpdb dedup" does.
//
// # Basics
//
// Load streams the records of the inputs into a database in atomic batches
// (db.AddBatchMarkedBy), without any near-duplicate check, and records with
// each batch how far its file has been stored and which of its records the
// database refused, so that a rerun after a crash or an interruption
// resumes there instead of starting over, and writes what a run that was
// not interrupted writes (a refused record stays refused even when the
// database holds a document under its id from before the run).
//
// Run is Load followed by clustering (db.Clusters with db.ClusterCenters,
// so clusters do not chain: every removed record is within the threshold
// of the record kept for it) and a second pass over the inputs that writes
// every record once, in input order, to the kept or the removed output,
// with the fields FieldCluster, FieldKept, FieldSimilarity and FieldError
// added. Its output depends only on the inputs and the options, not on the
// number of cores. A CSV/TSV or Parquet output of JSON Lines inputs has a
// column for every member that any record has, in order of first
// appearance (the first pass collects them, a resumed run's too). The
// pairs are exact unless Options.Plan asks for an approximate plan
// (db.PlanApprox), which may miss some for speed; the Summary names the
// plan and its expected recall.
//
// # Caveats
//
// Run reads its inputs twice, so standard input cannot be deduplicated
// (save it to a file first). Memory grows with the number of records (an
// id map for duplicate ids and the clusters: about 100 bytes per record,
// besides the database's own figures), not with their size. Records whose
// id an earlier record has are bad records (they would replace it in the
// database); records without any word cannot be compared and are bad
// records too: both are written to the removed output with FieldError
// saying why. A document the database holds under the id of a record that
// is bad in this run (stored by an earlier run with other options, such as
// a larger MaxText) is left out of the clusters, so that no record names
// a bad one as kept.
package dedup
