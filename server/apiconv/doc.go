// Package apiconv turns the db package's values into the JSON types of
// package api, for both the command ("fpdb pairs --json", ...) and the
// HTTP servers (package server, a cluster node's handler), so that they
// print the same objects; it also parses the values both read the same
// way (keep policies, ages).
//
// It lives beside the server rather than under internal/ because it
// imports the db package, which nothing under internal/ does.
package apiconv
