// Command fpdb is the command-line front end of an fpdb near-duplicate
// fingerprint database: "fpdb add" fingerprints text files (or standard
// input), reports the stored documents that are near duplicates of each one
// and stores it (or, with --reject, refuses it); "fpdb query" lists the stored
// documents similar to one or more texts without storing them; "fpdb get",
// "fpdb list", "fpdb delete" and "fpdb stats" inspect and edit the database;
// "fpdb pairs" and "fpdb clusters" find every near-duplicate pair and group;
// "fpdb check", "backup", "export" (with --salvage for a damaged store),
// "import" and "compact" verify, copy, move and shrink it; "fpdb man" writes
// the man pages and "fpdb completion" the shell completion scripts (which
// complete plan names, keep policies and stored ids). The database lives in
// the directory given by --db (default $FPDB_DB, else ./fpdb-data). The tool
// only parses flags and prints: all the work is done by package
// github.com/fpdb/fpdb/db.
//
// Exit status: 0 means success; 1 means that "fpdb add" found near
// duplicates, or that "fpdb query" found no match; 2 means an error (bad
// flags, a database problem); 3 means that an input of add or query could
// not be read or fingerprinted (the others were processed); 74 means that
// the storage failed under a write (the db package ends the process; no
// acknowledged write is lost). See "fpdb --help".
package main
