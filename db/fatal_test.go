package db

import (
	"runtime"
	"testing"
)

// TestRuntimeErrorIsNotAStorageFailure: a Go runtime error raised under
// exitOnStoragePanic (a bug, in fpdb or in Pebble) is re-raised as it is,
// not taken for a storage failure (which would end the process with
// status 74 and hide the bug's stack).
func TestRuntimeErrorIsNotAStorageFailure(t *testing.T) {
	var got any
	func() {
		defer func() { got = recover() }()
		func() {
			defer exitOnStoragePanic(discardLogger())
			var s []int
			_ = s[len(s)+1] // index out of range
		}()
	}()
	if _, ok := got.(runtime.Error); !ok {
		t.Fatalf("recovered %T %v, want the runtime.Error re-raised", got, got)
	}
}
