// Command fpdb is the command-line front end of an fpdb near-duplicate
// fingerprint database: "fpdb add" fingerprints text files (or standard
// input), reports the stored documents that are near duplicates of each one
// and stores it (or, with --reject, refuses it); "fpdb query" lists the stored
// documents similar to a text without storing it; "fpdb get", "fpdb delete"
// and "fpdb stats" inspect and edit the database; "fpdb pairs" and "fpdb
// clusters" find every near-duplicate pair and group; "fpdb check",
// "backup", "export" (with --salvage for a damaged store), "import" and
// "compact" verify, copy, move and shrink it. The database lives in
// the directory given by --db (default $FPDB_DB, else ./fpdb-data). The tool only parses
// flags and prints: all the work is done by package
// github.com/fpdb/fpdb/db. Exit status 0 means success, 1 means that "fpdb
// add" found near duplicates, 2 means an error (see "fpdb add --help"), 74
// means that the storage failed under a write (the db package ends the
// process; no acknowledged write is lost).
package main
