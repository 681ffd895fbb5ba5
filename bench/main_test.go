package bench

import (
	"os"
	"testing"
)

// TestMain lets the test binary serve as a dedup run's child process
// (RunDedupChild), as the bench's command does.
func TestMain(m *testing.M) {
	RunDedupChild()
	os.Exit(m.Run())
}
