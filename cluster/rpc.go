package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/nats-io/nats.go"
)

// ErrShardUnavailable is wrapped by the errors of requests that no
// replica of a shard answered: a query never returns a partial answer.
var ErrShardUnavailable = errors.New("fpdb cluster: shard unavailable")

// shardQuery is one query of a shard request.
type shardQuery struct {
	FP          []uint64 `json:"fp"`
	ContentHash [16]byte `json:"hash"`
	Shingles    int      `json:"shingles,omitempty"`
	Threshold   float64  `json:"threshold"`
	Containment float64  `json:"containment,omitempty"`
	Limit       int      `json:"limit,omitempty"`
}

// atSeq is the part of a read request that says at which log sequence,
// at least, it must be answered, and how long the replica may wait for it.
type atSeq struct {
	MinSeq uint64 `json:"min_seq"`
	WaitMs int64  `json:"wait_ms"`
}

// status is the part of every reply that says how it went.
type status struct {
	// Seq is the sequence the replica had applied.
	Seq uint64 `json:"seq"`
	Err string `json:"err,omitempty"`
	// Behind says the replica could not answer now: not at the sequence
	// asked for, or closing (transient). The router asks another.
	Behind bool `json:"behind,omitempty"`
}

// queryRequest asks a shard for the matches of several queries at a log
// sequence of at least MinSeq.
type queryRequest struct {
	Queries []shardQuery `json:"queries"`
	// BudgetUs is how long (µs) the replica may spend on the queries once
	// the request has come (0: no bound). When it is spent, or the reply
	// would pass half of maxReply, the replica answers the queries it has
	// finished (one at least), and the router sends the rest again: a
	// reply comes within the router's attempt, and fits a message, however
	// many queries a request carries.
	BudgetUs int64 `json:"budget_us,omitempty"`
	atSeq
}

type queryReply struct {
	Matches [][]db.Match `json:"matches"`
	status
}

// begin decodes a read request m, which came at came, into req and waits
// for the sequence at asks for; when it cannot, it answers the error and
// returns ok false. The context returned bounds the wait and the work
// together by at.WaitMs from came (at most the node's RequestTimeout),
// less than the router's attempt: an answer later than that would be
// for no one.
func (r *replica) begin(m *nats.Msg, came time.Time, req any, at *atSeq) (_ context.Context, _ context.CancelFunc, ok bool) {
	if err := json.Unmarshal(m.Data, req); err != nil {
		reply(m, status{Err: "bad request: " + err.Error()})
		return nil, nil, false
	}
	d := time.Duration(at.WaitMs) * time.Millisecond
	if d <= 0 || d > r.n.opts.RequestTimeout {
		d = r.n.opts.RequestTimeout
	}
	ctx, cancel := context.WithDeadline(r.base, came.Add(d))
	if err := r.waitFor(ctx, at.MinSeq); err != nil {
		cancel()
		reply(m, status{Err: err.Error(), Behind: r.transient(err)})
		return nil, nil, false
	}
	return ctx, cancel, true
}

func (r *replica) serveQuery(m *nats.Msg, came time.Time) {
	var req queryRequest
	ctx, cancel, ok := r.begin(m, came, &req, &req.atSeq)
	if !ok {
		return
	}
	defer cancel()
	// Queries run against the replica's present state, which is at least
	// MinSeq; the sequence reported is the one reached before them.
	seq := r.state().Applied
	out := queryReply{status: status{Seq: seq}, Matches: make([][]db.Match, len(req.Queries))}
	budget := time.Duration(req.BudgetUs) * time.Microsecond
	size := 0 // the reply's size, about
	for i, q := range req.Queries {
		if i > 0 && budget > 0 && (time.Since(came) >= budget || size > maxReply/2) {
			out.Matches = out.Matches[:i] // the router sends the rest again
			break
		}
		if r.n.opts.queryDelay > 0 {
			time.Sleep(r.n.opts.queryDelay)
		}
		res, err := r.d.QueryFingerprint(ctx, q.FP, db.QueryOptions{Threshold: q.Threshold, Containment: q.Containment, Shingles: q.Shingles, Limit: q.Limit})
		if err != nil && i > 0 && budget > 0 && errors.Is(err, context.DeadlineExceeded) {
			out.Matches = out.Matches[:i] // out of time after a long wait: the rest again
			break
		}
		if err != nil {
			reply(m, status{Err: err.Error(), Behind: r.transient(err)})
			return
		}
		if q.ContentHash != ([16]byte{}) {
			for j := range res.Matches {
				if doc, err := r.d.Get(ctx, res.Matches[j].ID); err == nil {
					res.Matches[j].Exact = doc.ContentHash == q.ContentHash
				}
			}
		}
		out.Matches[i] = res.Matches
		for _, mt := range res.Matches {
			size += len(mt.ID) + matchJSON
		}
	}
	reply(m, out)
}

// matchJSON bounds the JSON of a db.Match, its id aside.
const matchJSON = 256

// getRequest asks a shard for documents by id.
type getRequest struct {
	IDs []string `json:"ids"`
	atSeq
}

type getReply struct {
	Docs []*db.Doc `json:"docs"` // nil where absent
	Len  int       `json:"len"`
	status
}

func (r *replica) serveGet(m *nats.Msg, came time.Time) {
	var req getRequest
	ctx, cancel, ok := r.begin(m, came, &req, &req.atSeq)
	if !ok {
		return
	}
	defer cancel()
	out := getReply{status: status{Seq: r.state().Applied}, Len: r.d.Len(), Docs: make([]*db.Doc, len(req.IDs))}
	for i, id := range req.IDs {
		doc, err := r.d.Get(ctx, id)
		switch {
		case errors.Is(err, db.ErrNotFound):
		case err != nil:
			reply(m, status{Err: err.Error(), Behind: r.transient(err)})
			return
		default:
			out.Docs[i] = doc
		}
	}
	reply(m, out)
}

type storageReply struct {
	Stats   db.Stats         `json:"stats"`
	Storage *db.StorageStats `json:"storage"`
	status
}

// serveStorage answers the shard's statistics and storage statistics.
func (r *replica) serveStorage(m *nats.Msg, came time.Time) {
	var req getRequest
	ctx, cancel, ok := r.begin(m, came, &req, &req.atSeq)
	if !ok {
		return
	}
	defer cancel()
	out := storageReply{status: status{Seq: r.state().Applied}, Stats: r.d.Stats()}
	ss, err := r.d.StorageStats(ctx)
	if err != nil {
		reply(m, status{Err: err.Error(), Behind: r.transient(err)})
		return
	}
	out.Storage = ss
	reply(m, out)
}

// longTask bounds a pair task or the streaming of a pin's documents on
// the replica that runs it; the asking side gives up sooner when no chunk
// comes for chunkIdle.
const longTask = 6 * time.Hour

// chunk is one message of a streamed reply.
type chunk struct {
	I    int             `json:"i"`
	Last bool            `json:"last,omitempty"`
	Err  string          `json:"err,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
	// Unavailable says Err is transient: the replica is behind the log
	// (catching up, or paused past stallTimeout), closing, or a shard it
	// asked in turn was unavailable. The asking side may try again.
	Unavailable bool `json:"unavailable,omitempty"`
}

// chunkItems is how many items a streamed reply puts in one message.
const chunkItems = 1000

// streamer sends items to a reply subject in chunks (an empty chunk at
// least every heartbeat, so that the asking side can tell a slow task
// from a lost one). Its methods may be called from several goroutines.
type streamer[T any] struct {
	mu    sync.Mutex
	m     *nats.Msg
	i     int
	items []T
	sent  time.Time
}

// heartbeat is the longest a streamer stays silent while its task runs.
const heartbeat = time.Second

// chunkIdle is how long collect waits for the next chunk.
const chunkIdle = 30 * time.Second

func (s *streamer[T]) add(v T) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = append(s.items, v)
	if len(s.items) >= chunkItems || time.Since(s.sent) >= heartbeat {
		return s.sendLocked(false)
	}
	return nil
}

// tick sends what is gathered if the heartbeat is due.
func (s *streamer[T]) tick() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.sent) >= heartbeat {
		return s.sendLocked(false)
	}
	return nil
}

func (s *streamer[T]) send(last bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sendLocked(last)
}

func (s *streamer[T]) sendLocked(last bool) error {
	b, err := json.Marshal(s.items)
	if err != nil {
		return err
	}
	c, err := json.Marshal(chunk{I: s.i, Last: last, Data: b})
	if err != nil {
		return err
	}
	s.i++
	s.items = s.items[:0]
	s.sent = time.Now()
	return s.m.Respond(c)
}

// fail ends the reply with err; transient marks it as a failure to answer
// now (replica.transient).
func (s *streamer[T]) fail(err error, transient bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, _ := json.Marshal(chunk{I: s.i, Last: true, Err: err.Error(), Unavailable: transient})
	s.m.Respond(c)
}

// transient reports whether err is the replica's failure to answer now,
// which another attempt (or another replica) may not share: the replica
// behind the log, or closing (its requests' contexts canceled), or a shard
// it asked in turn unavailable.
func (r *replica) transient(err error) bool {
	return errors.Is(err, errBehind) || errors.Is(err, errNoPin) || errors.Is(err, ErrShardUnavailable) || r.base.Err() != nil
}

// unavailableRetry is how long collectShard goes on trying the replicas of
// a shard, backing off between rounds as Router.request does, while their
// answers say the shard is unavailable for now (a replica that restarted
// and is catching up, one paused by a checkpoint past stallTimeout).
const unavailableRetry = 15 * time.Second

// collectShard gathers a streamed reply of a replica of shard s to verb,
// trying the shard's replicas in turn (Router.pick) until one answers in
// full, or ctx ends, or each was tried twice; while the answers say the
// shard is unavailable (ErrShardUnavailable), it goes on for up to
// unavailableRetry.
func collectShard[T any](ctx context.Context, r *Router, s int, verb string, req any) ([]T, error) {
	var last error
	var said error // the last error that is not the end of ctx
	nodes, start := len(r.replicasOf(s)), time.Now()
	if nodes == 0 {
		return nil, fmt.Errorf("%w: shard %d has no replica", ErrShardUnavailable, s)
	}
	unavailable := false // some replica of this round could not answer for now
	for attempt := 0; ctx.Err() == nil; attempt++ {
		node := r.pick(s, attempt)
		out, err := collect[T](ctx, r.nc, replicaSubject(s, node, verb), req)
		if err == nil {
			return out, nil
		}
		last = err
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			said = err
		}
		unavailable = unavailable || errors.Is(err, ErrShardUnavailable)
		r.avoid(s, node)
		round := (attempt + 1) / nodes
		if (attempt+1)%nodes != 0 { // not every replica tried in this round
			continue
		}
		if round >= 2 && !(unavailable && time.Since(start) < unavailableRetry) {
			break
		}
		unavailable = false
		r.stats.retries.Add(1)
		select { // every replica tried: back off
		case <-ctx.Done():
		case <-time.After(min(time.Duration(round)*25*time.Millisecond, 250*time.Millisecond)):
		}
	}
	if last == nil {
		last = ctx.Err()
	}
	if said != nil && said != last {
		// The call ran out of time: what a replica said before (behind
		// the log, stopped) tells why.
		return nil, fmt.Errorf("%w (before that: %v)", last, said)
	}
	return nil, last
}

// collectBeating runs collect (a collectShard of another shard, which may
// retry for up to unavailableRetry) while sending s's heartbeat, so that
// the side that asked for s's reply does not take the wait for a lost
// task.
func collectBeating[T, U any](ctx context.Context, s *streamer[U], collect func() ([]T, error)) ([]T, error) {
	done := make(chan struct{})
	beat := make(chan struct{})
	go func() {
		defer close(beat)
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				_ = s.tick()
			}
		}
	}()
	out, err := collect()
	close(done)
	<-beat
	return out, err
}

// collect sends req to subj and gathers a streamed reply, checking that
// every chunk arrived in order; it gives up when no chunk comes for
// chunkIdle.
func collect[T any](ctx context.Context, nc *nats.Conn, subj string, req any) ([]T, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	sub.SetPendingLimits(-1, -1)
	if err := nc.PublishMsg(&nats.Msg{Subject: subj, Reply: inbox, Data: b}); err != nil {
		return nil, err
	}
	var out []T
	for i := 0; ; i++ {
		cctx, cancel := context.WithTimeout(ctx, chunkIdle)
		m, err := sub.NextMsgWithContext(cctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrShardUnavailable, subj, err)
		}
		if m.Header.Get("Status") == "503" {
			return nil, fmt.Errorf("%w: %s: no replica answers", ErrShardUnavailable, subj)
		}
		var c chunk
		if err := json.Unmarshal(m.Data, &c); err != nil {
			return nil, fmt.Errorf("fpdb cluster: %s: bad reply: %w", subj, err)
		}
		if c.Err != "" {
			if c.Unavailable {
				return nil, fmt.Errorf("%w: %s: %s", ErrShardUnavailable, subj, c.Err)
			}
			return nil, fmt.Errorf("fpdb cluster: %s: %s", subj, c.Err)
		}
		if c.I != i {
			return nil, fmt.Errorf("%w: %s: reply chunk %d arrived as %d (lost messages)", ErrShardUnavailable, subj, i, c.I)
		}
		var items []T
		if err := json.Unmarshal(c.Data, &items); err != nil {
			return nil, fmt.Errorf("fpdb cluster: %s: bad reply: %w", subj, err)
		}
		out = append(out, items...)
		if c.Last {
			return out, nil
		}
	}
}

// pinDoc is a document of a shard at a pin.
type pinDoc struct {
	ID          string   `json:"id"`
	FP          []uint64 `json:"fp"`
	ContentHash [16]byte `json:"hash"`
}

type pinRequest struct {
	Pin       uint64  `json:"pin"`
	Other     int     `json:"other"`
	Threshold float64 `json:"threshold"`
}

func (r *replica) servePinDocs(m *nats.Msg, _ time.Time) {
	s := &streamer[pinDoc]{m: m}
	var req pinRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		s.fail(err, false)
		return
	}
	ctx, cancel := context.WithTimeout(r.base, longTask)
	defer cancel()
	pd, release, err := r.pinDB(ctx, req.Pin)
	if err == nil {
		defer release()
		err = pd.Docs(ctx, func(d db.Doc) error {
			return s.add(pinDoc{ID: d.ID, FP: d.Fingerprint, ContentHash: d.ContentHash})
		})
	}
	if err == nil {
		err = s.send(true)
	}
	if err != nil {
		s.fail(err, r.transient(err))
	}
}

// Edge is a pair of near-duplicate documents, A < B.
type Edge = db.Pair

// servePairs runs the pair task (this shard, req.Other) at req.Pin: the
// pairs within the shard (Other = this shard) or between a document of
// Other and one of this shard.
func (r *replica) servePairs(m *nats.Msg, _ time.Time) {
	s := &streamer[Edge]{m: m}
	var req pinRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		s.fail(err, false)
		return
	}
	ctx, cancel := context.WithTimeout(r.base, longTask)
	defer cancel()
	pd, release, err := r.pinDB(ctx, req.Pin)
	if err != nil {
		s.fail(err, r.transient(err))
		return
	}
	defer release()
	if req.Other == r.shard {
		_, err = pd.Pairs(ctx, db.PairsOptions{Threshold: req.Threshold, Progress: func(int, int) { s.tick() }}, func(p db.Pair) error {
			return s.add(orient(p))
		})
	} else {
		var docs []pinDoc
		docs, err = collectBeating(ctx, s, func() ([]pinDoc, error) {
			return collectShard[pinDoc](ctx, r.n.r, req.Other, "pindocs", pinRequest{Pin: req.Pin})
		})
		for i := 0; err == nil && i < len(docs); i++ {
			if err = s.tick(); err != nil {
				break
			}
			q := &docs[i]
			var res *db.QueryResult
			res, err = pd.QueryFingerprint(ctx, q.FP, db.QueryOptions{Threshold: req.Threshold})
			for j := 0; err == nil && res != nil && j < len(res.Matches); j++ {
				mt := &res.Matches[j]
				p := db.Pair{A: q.ID, B: mt.ID, Similarity: mt.Similarity, Hamming: mt.Hamming}
				if q.ContentHash != ([16]byte{}) {
					var doc *db.Doc
					if doc, err = pd.Get(ctx, mt.ID); err == nil {
						p.Exact = doc.ContentHash == q.ContentHash
					}
				}
				if err == nil {
					err = s.add(orient(p))
				}
			}
		}
	}
	if err == nil {
		err = s.send(true)
	}
	if err != nil {
		s.fail(err, r.transient(err))
	}
}

func orient(p db.Pair) db.Pair {
	if p.B < p.A {
		p.A, p.B = p.B, p.A
	}
	return p
}
