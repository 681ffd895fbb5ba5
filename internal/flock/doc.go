// Package flock takes an exclusive flock(2) on a file, the lock fpdb holds
// on a database directory (package db) and on a cluster node's directory
// (package cluster) while it runs.
//
// # Basics
//
// Lock opens (or creates) the file and locks it without waiting; a lock
// another process, or another open file of this process, holds is
// ErrHeld. Closing the returned value releases the lock.
//
// # Caveats
//
// flock(2) locks are advisory and held by the open file: they protect
// fpdb's processes from each other, not from other programs.
package flock
