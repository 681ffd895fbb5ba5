package cluster

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fpdb/fpdb/db"
)

// Where selects documents by a condition on their id or time added: a
// delete by prefix or by age.
type Where struct {
	// Prefix, when not empty, selects the documents whose id starts with
	// it.
	Prefix string
	// Before, when Prefix is empty, selects the documents added before it.
	Before time.Time
}

// match reports whether an added document (its id, time added) meets w.
func (w Where) match(id string, added time.Time) bool {
	if w.Prefix != "" {
		return strings.HasPrefix(id, w.Prefix)
	}
	return added.Before(w.Before)
}

// selectRequest asks a shard for the ids of the documents that meet a
// Where, once it has applied the log up to MinSeq.
type selectRequest struct {
	Prefix string `json:"prefix,omitempty"`
	Before int64  `json:"before,omitempty"` // Unix nanoseconds
	MinSeq uint64 `json:"min_seq"`
}

func (q selectRequest) where() Where {
	return Where{Prefix: q.Prefix, Before: time.Unix(0, q.Before)}
}

// serveSelect streams the ids of the shard's documents that meet the
// request's condition, in the order they were stored.
func (r *replica) serveSelect(m *nats.Msg, _ time.Time) {
	s := &streamer[string]{m: m}
	var req selectRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		s.fail(err, false)
		return
	}
	ctx, cancel := context.WithTimeout(r.base, longTask)
	defer cancel()
	wctx, wcancel := context.WithTimeout(ctx, r.n.opts.RequestTimeout)
	err := r.waitFor(wctx, req.MinSeq)
	wcancel()
	w := req.where()
	if err == nil {
		err = r.d.Docs(ctx, func(d db.Doc) error {
			if w.match(d.ID, d.Added) {
				return s.add(d.ID)
			}
			return s.tick()
		})
	}
	if err == nil {
		err = s.send(true)
	}
	if err != nil {
		s.fail(err, r.transient(err))
	}
}

// Select returns the ids of the stored documents that meet w, sorted,
// from every shard once it has applied the log up to minSeq.
func (r *Router) Select(ctx context.Context, w Where, minSeq uint64) ([]string, error) {
	if w.Prefix == "" && w.Before.IsZero() {
		return nil, fmt.Errorf("fpdb cluster: select: %w", db.ErrEmptyPrefix)
	}
	if y := w.Before.Year(); w.Prefix == "" && (y < 1678 || y > 2261) {
		return nil, fmt.Errorf("fpdb cluster: select: %w: time %v out of range", ErrInvalidOptions, w.Before)
	}
	req := selectRequest{Prefix: w.Prefix, MinSeq: minSeq}
	if w.Prefix == "" {
		req.Before = w.Before.UnixNano()
	}
	shards := r.smap.Shards
	parts := make([][]string, shards)
	errs := make([]error, shards)
	done := make(chan struct{})
	for s := range shards {
		go func() {
			defer func() { done <- struct{}{} }()
			parts[s], errs[s] = collectShard[string](ctx, r, s, "select", req)
		}()
	}
	for range shards {
		<-done
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ids := slices.Concat(parts...)
	slices.Sort(ids)
	return ids, nil
}

// DeleteWhere deletes the documents that meet w and returns their ids,
// sorted; with dry it only returns them. It selects them on every shard
// at the log's last sequence L or later, and appends their deletion in
// messages of at most maxMessage bytes, each an optimistic transaction on
// the log (appended only if the log's last sequence is still the one its
// selection saw). When other writes came first, it reads them and brings
// the selection up to date before it tries again: a document added since
// that meets w is deleted too, one deleted since is not counted, and one
// stored anew since with a time added not before w.Before is left (also
// when the shard kept its old version, its content unchanged: such a
// document is spared rather than a newer write undone). Each message is
// atomic; a failure after the first leaves the earlier ones appended, and
// the ids returned are those appended (each once, also when it was stored
// anew and deleted again).
func (r *Router) DeleteWhere(ctx context.Context, w Where, dry bool) ([]string, error) {
	last, err := r.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	// The selection and the first append's condition are at the same
	// sequence: a write this node appends meanwhile moves the log past it,
	// and is then read by the replay.
	last = max(last, r.Written())
	ids, err := r.Select(ctx, w, last)
	if err != nil || dry {
		return ids, err
	}
	todo := make(map[string]bool, len(ids))
	for _, id := range ids {
		todo[id] = true
	}
	order := ids // todo's ids, sorted (Select sorts them); may hold ids done
	done := map[string]bool{}
	for len(todo) > 0 {
		part := deletePart(order, todo, r.maxMessage)
		entries := make([]Entry, len(part))
		for i, id := range part {
			entries[i] = Entry{Kind: KindDelete, ID: id}
		}
		batch := newBatchID()
		seq, err := r.publishID(ctx, entries, batch, last, true)
		if errors.Is(err, errConflict) {
			rctx, cancel := r.conflictContext(ctx, err)
			now, own, rerr := uint64(0), uint64(0), error(nil)
			if now, rerr = r.LastSeq(rctx); rerr == nil {
				own, rerr = r.replay(rctx, last, now, batch, w, todo)
			}
			cancel()
			switch {
			case rerr != nil:
				err = r.afterConflict(err, rerr)
			case own > 0:
				seq, err = own, nil // our own append, its acknowledgement lost
			default:
				last = now
				order = sortedKeys(todo)
				continue
			}
		}
		if err != nil {
			return sortedKeys(done), err
		}
		for _, id := range part {
			delete(todo, id)
			done[id] = true // an id stored anew and deleted again is listed once
		}
		last = seq
	}
	return sortedKeys(done), nil
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys(m map[string]bool) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// deletePart returns the first ids of order that todo still holds, whose
// delete entries fit in a message of max bytes (one at least).
func deletePart(order []string, todo map[string]bool, max int) []string {
	var part []string
	size := 0
	for _, id := range order {
		if !todo[id] {
			continue
		}
		size += len(id) + binary.MaxVarintLen64 + 1
		if size > max && len(part) > 0 {
			break
		}
		part = append(part, id)
	}
	return part
}

// replay brings todo, the ids to delete under w, up to date with the log
// entries after from up to now (readLog; it returns readLog's own).
func (r *Router) replay(ctx context.Context, from, now uint64, batch string, w Where, todo map[string]bool) (uint64, error) {
	return r.readLog(ctx, from, now, batch, func(entries []Entry) {
		for _, e := range entries {
			switch e.Kind {
			case KindAdd:
				if w.match(e.ID, e.Added) {
					todo[e.ID] = true
				} else {
					delete(todo, e.ID)
				}
			case KindDelete:
				delete(todo, e.ID)
			}
		}
	})
}
