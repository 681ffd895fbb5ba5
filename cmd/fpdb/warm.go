package main

import (
	"context"
	"sync"
	"time"

	"github.com/fpdb/fpdb/db"
)

// backgroundWarm loads a database's posting lists into memory (db.Warm) in
// the background, once, for a command that will run many queries: from
// then on they read no list from disk. It warms only when Warm builds the
// lists in memory (db.WarmsInMemory), which costs under a microsecond per
// stored document; reading them from storage would cost more than it saves.
type backgroundWarm struct {
	d       *db.DB
	at      int64 // the query count that starts it; -1: never
	started bool
	wg      sync.WaitGroup
	err     error // Warm's, once wait returns
	// done, when set, is called from Warm's goroutine when it returns.
	done func(err error, took time.Duration)
}

// newBackgroundWarm returns the warm of d (nil: a server's database, not
// warmed here) for a run that starts it after at queries; plan Scan reads
// no list, so it never starts then.
func newBackgroundWarm(d *db.DB, at int64, plan db.PlanKind) *backgroundWarm {
	w := &backgroundWarm{d: d, at: at}
	if d == nil || plan == db.PlanScan || !d.WarmsInMemory() {
		w.at = -1
	}
	return w
}

// after is called once n queries are done; it starts Warm (with ctx) the
// first time n reaches the start count, and reports whether it did.
func (w *backgroundWarm) after(ctx context.Context, n int64) bool {
	if w.started || w.at < 0 || n < w.at {
		return false
	}
	w.started = true
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		start := time.Now()
		w.err = w.d.Warm(ctx)
		if w.done != nil {
			w.done(w.err, time.Since(start))
		}
	}()
	return true
}

// wait waits for a Warm started; cancel the context given to after first
// to cut it short (a run that ends has no use for it).
func (w *backgroundWarm) wait() error {
	w.wg.Wait()
	return w.err
}
