//go:build race

package db

// raceEnabled reports whether the race detector is on (tests size their
// work by it).
const raceEnabled = true
