package cluster

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Router answers a client's calls against the whole cluster: it fans
// queries out to one replica of every shard and merges the answers, and
// appends writes to the log (check-then-add by optimistic concurrency).
// Its methods may be called from many goroutines.
type Router struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	smap   *ShardMap
	gw     *db.DB
	opts   *Options

	written atomic.Uint64 // highest sequence this router appended
	stats   routerStats
	assign  atomic.Pointer[[][]string] // each shard's replicas, as the map says now
	turn    atomic.Uint64
	avoidMu sync.Mutex
	avoided map[[2]any]time.Time // (shard, node) → tried last until
	// beforeAppend, when set (tests), runs before each conditional append.
	beforeAppend func()
	// notSent, when set (tests), runs before each attempt of a log append:
	// an error it returns is that attempt's, as if it reached no server.
	notSent func() error
	// afterPublish, when set (tests), is given each attempt's answer to a
	// log append and returns the one to act on (delays or loses it).
	afterPublish func(*jetstream.PubAck, error) (*jetstream.PubAck, error)
	// onLate, when set (tests), runs when an add's context ends (or the
	// router closes) after its log message was sent: it then waits for
	// the log's answer (lateWait).
	onLate func()
	// lateWait is how long a write whose log message was sent still waits
	// for the log's answer once its context has ended (outcomeWait;
	// smaller in tests); commitWait bounds a commit of one log message
	// (commitTimeout; smaller in tests).
	lateWait, commitWait time.Duration
	// dupWindow is the log's duplicate window (dupWindow; smaller in
	// tests, with the stream's): no attempt of a message whose outcome is
	// unknown is sent past it.
	dupWindow time.Duration
	// maxMessage bounds a log message's encoded size (maxMessage; smaller
	// in tests).
	maxMessage int
	// importChunk is the number of documents Import appends per Add
	// (importChunk; smaller in tests); importHash, when set (tests),
	// replaces the hash Import remembers the ids of its earlier chunks by.
	importChunk int
	importHash  func(string) uint64
	// queryBudget is how long a replica may spend on one query request
	// before it answers the part it has finished (attemptTimeout/2; tests
	// set it lower).
	queryBudget time.Duration
	reqs        chan *addReq
	queries     chan *queryJob
	quit        chan struct{}
	wg          sync.WaitGroup
	once        sync.Once
	// largeMu guards closing; large counts the parts of adds appended by
	// their callers (addLarge) under way, which Close waits for.
	largeMu sync.Mutex
	closing bool
	large   sync.WaitGroup
}

func newRouter(ctx context.Context, nc *nats.Conn, smap *ShardMap, gw *db.DB, o *Options) (*Router, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	st, err := js.Stream(ctx, logStream)
	if err != nil {
		return nil, fmt.Errorf("fpdb cluster: log stream: %w", err)
	}
	r := &Router{nc: nc, js: js, stream: st, smap: smap, gw: gw, opts: o, reqs: make(chan *addReq, 1024), queries: make(chan *queryJob, 1024), quit: make(chan struct{}), avoided: map[[2]any]time.Time{}, maxMessage: maxMessage, importChunk: importChunk, queryBudget: attemptTimeout / 2,
		lateWait: outcomeWait, commitWait: 6 * o.RequestTimeout, dupWindow: dupWindow}
	r.setAssign(smap.Assign)
	r.wg.Add(1 + queryWorkers)
	go r.batcher()
	for range queryWorkers {
		go r.queryWorker()
	}
	return r, nil
}

// Close stops the router's batcher; pending adds fail with ErrClosed, and
// an add appended in parts (see Add) begins no other part. It waits for
// the batcher's commit and the parts under way.
func (r *Router) Close() {
	r.once.Do(func() {
		r.largeMu.Lock()
		r.closing = true
		r.largeMu.Unlock()
		close(r.quit)
	})
	r.wg.Wait()
	r.large.Wait()
}

// beginPart reports whether a part of a large add may begin (the router is
// not closing); if so, endPart must follow it.
func (r *Router) beginPart() bool {
	r.largeMu.Lock()
	defer r.largeMu.Unlock()
	if r.closing {
		return false
	}
	r.large.Add(1)
	return true
}

func (r *Router) endPart() { r.large.Done() }

type routerStats struct {
	batches, conflicts, retries, docs, queryRequests atomic.Int64
	withdrawn, unknown                               atomic.Int64
}

// RouterStats count a router's work since it started.
type RouterStats struct {
	// Batches is the number of log messages it appended; Docs the
	// documents they carried.
	Batches, Docs int64
	// Conflicts counts conditional appends refused because the log had
	// moved (each followed by a check of the new entries and a retry).
	Conflicts int64
	// Retries counts appends sent again after a transient error.
	Retries int64
	// QueryRequests counts the query requests sent to shards (a batch of
	// queries takes one per shard at least, more when it is long or a
	// replica answers part of it within the query budget).
	QueryRequests int64
	// Withdrawn counts the documents of adds answered without being sent
	// to the log: their caller's time ran out, or the router closed,
	// before their log message was sent (HTTP 408, or 503 on close). They
	// are not stored.
	Withdrawn int64
	// Unknown counts the log messages whose outcome the router could not
	// learn: no answer came within the commit's time, or the log could
	// not be read after a conflict; their writes may or may not be
	// stored. (A caller that stops waiting first is answered
	// ErrOutcomeUnknown too, while the router still waits: not counted
	// here unless the router's wait ends the same way.)
	Unknown int64
}

// Stats returns the router's counters.
func (r *Router) Stats() RouterStats {
	return RouterStats{Batches: r.stats.batches.Load(), Docs: r.stats.docs.Load(), Conflicts: r.stats.conflicts.Load(), Retries: r.stats.retries.Load(), QueryRequests: r.stats.queryRequests.Load(),
		Withdrawn: r.stats.withdrawn.Load(), Unknown: r.stats.unknown.Load()}
}

// Written returns the highest log sequence this router appended: a query
// with MinSeq at least this sees every write made through it.
func (r *Router) Written() uint64 { return r.written.Load() }

// LastSeq returns the log's last sequence.
func (r *Router) LastSeq(ctx context.Context) (uint64, error) {
	var last uint64
	err := r.retry(ctx, "read the log's state", func(actx context.Context) (bool, error) {
		info, err := r.stream.Info(actx)
		if err == nil {
			last = info.State.LastSeq
		}
		return err == nil, err
	})
	return last, err
}

// QueryOptions configure a cluster query.
type QueryOptions struct {
	// Threshold, Containment and Limit are db.QueryOptions'.
	Threshold   float64
	Containment float64
	Limit       int
	// MinSeq makes every shard answer at a log sequence of at least MinSeq
	// (read-your-writes: pass the sequence an add returned, or Written).
	MinSeq uint64
}

// Query returns the stored documents resembling text, from every shard.
func (r *Router) Query(ctx context.Context, text []byte, o QueryOptions) ([]db.Match, error) {
	doc, err := r.gw.Prepare(ctx, db.Input{ID: "query", Text: text})
	if err != nil {
		return nil, err
	}
	return r.QueryDoc(ctx, doc, o)
}

// QueryDoc returns the stored documents resembling doc (its fingerprint,
// and its content hash and shingle count when known).
func (r *Router) QueryDoc(ctx context.Context, doc *db.Doc, o QueryOptions) ([]db.Match, error) {
	if len(doc.Fingerprint)*64 != r.smap.K {
		return nil, fmt.Errorf("fpdb cluster: query: %w: %d bits, want K = %d", db.ErrBadFingerprint, 64*len(doc.Fingerprint), r.smap.K)
	}
	job := &queryJob{q: shardQuery{FP: doc.Fingerprint, ContentHash: doc.ContentHash, Shingles: doc.Shingles, Threshold: o.Threshold, Containment: o.Containment, Limit: o.Limit},
		minSeq: o.MinSeq, done: make(chan struct{})}
	if err := submit(ctx, r.quit, r.queries, job, job.done); err != nil {
		return nil, err
	}
	if job.err != nil {
		return nil, job.err
	}
	ms := job.ms
	sortMatches(ms, o.Containment != 0)
	if o.Limit > 0 && len(ms) > o.Limit {
		ms = ms[:o.Limit]
	}
	return ms, nil
}

// queryJob is one query waiting for a shared request to the shards.
type queryJob struct {
	q      shardQuery
	minSeq uint64
	ms     []db.Match
	err    error
	done   chan struct{}
}

// queryWorkers is the number of shared query requests a router has in
// flight at once; maxQueryBatch caps the queries one request carries.
const (
	queryWorkers  = 4
	maxQueryBatch = 64
)

// queryWorker sends the queued queries to the shards together: one
// request per shard carries every query waiting (at the highest minimum
// sequence among them), so that concurrent queries share round trips.
func (r *Router) queryWorker() {
	defer r.wg.Done()
	for {
		var first *queryJob
		select {
		case first = <-r.queries:
		case <-r.quit:
			return
		}
		jobs := []*queryJob{first}
	more:
		for len(jobs) < maxQueryBatch {
			select {
			case j := <-r.queries:
				jobs = append(jobs, j)
			default:
				break more
			}
		}
		qs := make([]shardQuery, len(jobs))
		var minSeq uint64
		for i, j := range jobs {
			qs[i] = j.q
			minSeq = max(minSeq, j.minSeq)
		}
		res, err := r.queryShards(context.Background(), qs, minSeq)
		for i, j := range jobs {
			if err != nil {
				j.err = err
			} else {
				j.ms = res[i]
			}
			close(j.done)
		}
	}
}

func sortMatches(ms []db.Match, containment bool) {
	slices.SortFunc(ms, func(a, b db.Match) int {
		if containment && a.QueryInDoc != b.QueryInDoc {
			if a.QueryInDoc > b.QueryInDoc {
				return -1
			}
			return 1
		}
		if a.Hamming != b.Hamming {
			return a.Hamming - b.Hamming
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// queryShards asks every shard for the matches of qs at ≥ minSeq and
// merges them per query; any shard failing fails the call (and stops the
// others). A shard is sent at most maxShardQueries queries a request, and
// answers those it finished within the router's query budget (one at
// least): the rest are sent again, so that no reply takes an attempt's
// whole time. Each request is bounded by RequestTimeout.
func (r *Router) queryShards(ctx context.Context, qs []shardQuery, minSeq uint64) ([][]db.Match, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	perShard := make([][][]db.Match, r.smap.Shards)
	var (
		mu    sync.Mutex
		first error // the first failure; the shards it stops fail after it
		wg    sync.WaitGroup
	)
	for s := 0; s < r.smap.Shards; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms, err := r.queryShard(ctx, s, qs, minSeq)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				perShard[s] = ms
			case first == nil:
				first = err
				cancel()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	out := make([][]db.Match, len(qs))
	for _, ms := range perShard {
		for i := range ms {
			out[i] = append(out[i], ms[i]...)
		}
	}
	return out, nil
}

// maxShardQueries caps the queries of one request to a shard.
const maxShardQueries = 512

// queryShard asks shard s for the matches of qs at ≥ minSeq, in as many
// requests as its replicas' partial answers need.
func (r *Router) queryShard(ctx context.Context, s int, qs []shardQuery, minSeq uint64) ([][]db.Match, error) {
	out := make([][]db.Match, 0, len(qs))
	for len(out) < len(qs) {
		part := qs[len(out):min(len(qs), len(out)+maxShardQueries)]
		var rep queryReply
		req := queryRequest{Queries: part, BudgetUs: r.queryBudget.Microseconds(), atSeq: atSeq{MinSeq: minSeq, WaitMs: waitMs}}
		r.stats.queryRequests.Add(1)
		pctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
		err := r.request(pctx, s, "query", req, &rep)
		cancel()
		if err != nil {
			return nil, err
		}
		if rep.Err != "" {
			return nil, fmt.Errorf("fpdb cluster: shard %d: %s", s, rep.Err)
		}
		if len(rep.Matches) == 0 || len(rep.Matches) > len(part) {
			return nil, fmt.Errorf("fpdb cluster: shard %d answered %d queries of %d", s, len(rep.Matches), len(part))
		}
		out = append(out, rep.Matches...)
	}
	return out, nil
}

// request sends a request to a replica of shard s that the router picks
// (in turn among the shard's replicas, skipping those that recently failed
// to answer or were behind) and decodes the JSON reply into v. A replica
// that does not answer, has gone, or is behind the sequence asked for is
// left for the next; the call fails when ctx ends first.
func (r *Router) request(ctx context.Context, s int, verb string, req, v any) error {
	_, err := r.requestFrom(ctx, s, "", attemptTimeout, verb, req, v)
	return err
}

// replyDecoder is a reply that is not JSON (an export page): it reads
// itself from the message and returns its status.
type replyDecoder interface {
	decodeReply(data []byte) (status, error)
}

// requestFrom is request with its first attempt sent to the replica on
// node prefer (when not ""), each attempt bounded by per; it returns the
// node that answered.
func (r *Router) requestFrom(ctx context.Context, s int, prefer string, per time.Duration, verb string, req, v any) (string, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	nodes := r.replicasOf(s)
	var last error
	// said is the last reason a replica gave for not answering (behind
	// the log, stopped): when the call ends on ctx, it says more than
	// the last attempt's timeout.
	var said error
	gone := map[string]bool{} // replicas with no subscriber in this round
	for attempt := 0; ; attempt++ {
		node := r.pick(s, attempt)
		if attempt == 0 && slices.Contains(nodes, prefer) {
			node = prefer
		}
		actx, cancel := context.WithTimeout(ctx, per)
		m, err := r.nc.RequestWithContext(actx, replicaSubject(s, node, verb), b)
		cancel()
		if err == nil {
			var st status
			if d, ok := v.(replyDecoder); ok {
				var derr error
				if st, derr = d.decodeReply(m.Data); !st.Behind {
					return node, derr
				}
			} else if json.Unmarshal(m.Data, &st); !st.Behind {
				return node, json.Unmarshal(m.Data, v)
			}
			err = fmt.Errorf("replica on %s cannot answer now: %s", node, st.Err)
			said = err
		}
		last = fmt.Errorf("replica on %s: %w", node, err)
		r.avoid(s, node)
		if errors.Is(err, nats.ErrNoResponders) {
			gone[node] = true
			if len(gone) == len(nodes) { // no replica of the shard is running
				break
			}
		} else {
			clear(gone)
		}
		if ctx.Err() != nil {
			break
		}
		r.stats.retries.Add(1)
		if (attempt+1)%len(nodes) == 0 { // every replica tried: back off
			select {
			case <-ctx.Done():
			case <-time.After(min(time.Duration(attempt+1)*25*time.Millisecond, 250*time.Millisecond)):
			}
		}
	}
	if said != nil && !strings.Contains(last.Error(), said.Error()) {
		return "", fmt.Errorf("%w: shard %d: %v (before that: %v)", ErrShardUnavailable, s, last, said)
	}
	return "", fmt.Errorf("%w: shard %d: %v", ErrShardUnavailable, s, last)
}

func (r *Router) setAssign(a [][]string) {
	c := make([][]string, len(a))
	for i := range a {
		c[i] = slices.Clone(a[i])
	}
	r.assign.Store(&c)
}

// replicasOf returns the nodes holding shard s.
func (r *Router) replicasOf(s int) []string { return (*r.assign.Load())[s] }

// avoidFor is how long a replica that failed a request is tried last.
const avoidFor = 2 * time.Second

// pick returns the replica of shard s for a request's attempt: in turn
// among those not avoided, else in turn among all.
func (r *Router) pick(s, attempt int) string {
	nodes := r.replicasOf(s)
	start := int(r.turn.Add(1))
	now := time.Now()
	r.avoidMu.Lock()
	defer r.avoidMu.Unlock()
	for i := range nodes {
		n := nodes[(start+i)%len(nodes)]
		if now.After(r.avoided[[2]any{s, n}]) {
			return n
		}
	}
	// Every replica avoided: in turn by attempt (start moves with each
	// call as attempt does, and their sum would keep to one replica of
	// two).
	return nodes[attempt%len(nodes)]
}

func (r *Router) avoid(s int, node string) {
	r.avoidMu.Lock()
	r.avoided[[2]any{s, node}] = time.Now().Add(avoidFor)
	r.avoidMu.Unlock()
}

// waitMs is how long a replica waits for a request's minimum sequence:
// less than one attempt.
const waitMs = int64((attemptTimeout - 250*time.Millisecond) / time.Millisecond)

// Get returns the stored document id at a log sequence of at least
// minSeq, or an error wrapping db.ErrNotFound.
func (r *Router) Get(ctx context.Context, id string, minSeq uint64) (*db.Doc, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
	defer cancel()
	var rep getReply
	s := Shard(id, r.smap.Shards)
	if err := r.request(ctx, s, "get", getRequest{IDs: []string{id}, atSeq: atSeq{MinSeq: minSeq, WaitMs: waitMs}}, &rep); err != nil {
		return nil, err
	}
	if rep.Err != "" {
		return nil, fmt.Errorf("fpdb cluster: shard %d: %s", s, rep.Err)
	}
	if len(rep.Docs) != 1 || rep.Docs[0] == nil {
		return nil, fmt.Errorf("fpdb cluster: %q: %w", id, db.ErrNotFound)
	}
	return rep.Docs[0], nil
}

// Len returns the number of stored documents (the sum over the shards at
// sequences of at least minSeq).
func (r *Router) Len(ctx context.Context, minSeq uint64) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
	defer cancel()
	total := 0
	for s := 0; s < r.smap.Shards; s++ {
		var rep getReply
		if err := r.request(ctx, s, "get", getRequest{atSeq: atSeq{MinSeq: minSeq, WaitMs: waitMs}}, &rep); err != nil {
			return 0, err
		}
		if rep.Err != "" {
			return 0, fmt.Errorf("fpdb cluster: shard %d: %s", s, rep.Err)
		}
		total += rep.Len
	}
	return total, nil
}

// StorageStats returns the cluster's statistics and storage statistics:
// the sums over its shards (one replica of each, at sequences of at least
// minSeq; the longest posting list is the longest of any shard, and the
// parameters are the shards'). A replica's own copies are not counted
// twice: each shard is counted once.
func (r *Router) StorageStats(ctx context.Context, minSeq uint64) (db.Stats, *db.StorageStats, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
	defer cancel()
	var st db.Stats
	ss := &db.StorageStats{}
	bands := map[[2]int]int{}
	for s := 0; s < r.smap.Shards; s++ {
		var rep storageReply
		if err := r.request(ctx, s, "storage", getRequest{atSeq: atSeq{MinSeq: minSeq, WaitMs: waitMs}}, &rep); err != nil {
			return db.Stats{}, nil, err
		}
		if rep.Err != "" || rep.Storage == nil {
			return db.Stats{}, nil, fmt.Errorf("fpdb cluster: shard %d: storage statistics: %s", s, rep.Err)
		}
		if s == 0 {
			st.Params = rep.Stats.Params
		}
		st.Docs += rep.Stats.Docs
		st.DiskBytes += rep.Stats.DiskBytes
		st.Deferred += rep.Stats.Deferred
		x := rep.Storage
		ss.Docs += x.Docs
		ss.DeletedNotCompacted += x.DeletedNotCompacted
		ss.DiskBytes += x.DiskBytes
		ss.CompactionDebt += x.CompactionDebt
		ss.PostingKeys += x.PostingKeys
		ss.PostingIDs += x.PostingIDs
		ss.MaxPosting = max(ss.MaxPosting, x.MaxPosting)
		ss.Texts += x.Texts
		ss.TextBytes += x.TextBytes
		ss.TextRawBytes += x.TextRawBytes
		ss.LogEntries += x.LogEntries
		ss.LogBytes += x.LogBytes
		for _, b := range x.PostingLengths {
			bands[[2]int{b.Min, b.Max}] += b.Keys
		}
	}
	if ss.Docs > 0 {
		ss.BytesPerDoc = float64(ss.DiskBytes) / float64(ss.Docs)
	}
	for k, n := range bands {
		ss.PostingLengths = append(ss.PostingLengths, db.LengthBucket{Min: k[0], Max: k[1], Keys: n})
	}
	slices.SortFunc(ss.PostingLengths, func(a, b db.LengthBucket) int { return a.Min - b.Min })
	return st, ss, nil
}

// AddOptions configure Add.
type AddOptions struct {
	// Threshold, when > 0, checks each document against the whole cluster
	// (and the documents added before it in the call) before it is
	// appended; the matches are returned.
	Threshold float64
	// Reject stores nothing for a document that has a match.
	Reject bool
}

// AddResult is the outcome of one document of Add.
type AddResult struct {
	// Stored reports that the document was appended to the log.
	Stored bool
	// Seq is the log sequence of the message that carries it (0 if not
	// stored).
	Seq uint64
	// Matches are the documents found by the check, other than the
	// document's own previous version.
	Matches []db.Match
	// Doc is the document as appended (or as it would have been).
	Doc *db.Doc
}

type addReq struct {
	docs []*db.Doc
	size int // the docs' entries' encoded size, at most (entrySize)
	o    AddOptions
	out  []AddResult
	err  error
	done chan struct{}
	// state is reqQueued until the commit that appends the add hands its
	// log message to the log (reqSent) or its caller gives up on it first
	// (reqWithdrawn), whichever comes first.
	state atomic.Int32
}

// The states of an addReq.
const (
	reqQueued = iota
	reqSent
	reqWithdrawn
)

// withdraw reports whether q is withdrawn: its message was not sent, and
// now never will be. Its documents are counted withdrawn once.
func (r *Router) withdraw(q *addReq) bool {
	if q.state.CompareAndSwap(reqQueued, reqWithdrawn) {
		r.stats.withdrawn.Add(int64(len(q.docs)))
		return true
	}
	return q.state.Load() == reqWithdrawn
}

// send reports whether q's documents may be sent to the log: it was not
// withdrawn, and now never will be.
func (q *addReq) send() bool {
	return q.state.CompareAndSwap(reqQueued, reqSent) || q.state.Load() == reqSent
}

// ErrOutcomeUnknown is the error of a write whose log message was sent to
// the log and whose answer did not come, also after waiting for it past
// the call's context (outcomeWait): no acknowledgement within the time
// of the attempts, or the connection lost. The write may be stored or
// not, and may still be appended shortly after the error. Sending the
// same write again is safe: an add of a stored document's id and content
// leaves it as it is (the HTTP API answers it unchanged), and a delete
// of a deleted id changes nothing. Any other error of an add (or delete)
// appended in one log message means that it was not stored.
var ErrOutcomeUnknown = errors.New("fpdb cluster: outcome unknown: the write was sent to the log, whose answer did not come; it may or may not be stored")

// outcomeWait is how long a write whose log message was sent waits for
// the log's answer after its context ends: an attempt of the largest
// message (attemptTimeout, plus a second a MiB) and a second attempt of
// a small one, which the log answers from its duplicate window.
const outcomeWait = 10 * time.Second

// Add fingerprints docs and appends them to the log. With o.Threshold >
// 0, no two documents of resemblance ≥ Threshold are both stored when both
// ask to Reject, whatever the number of routers: the check and the append
// are one optimistic transaction on the log.
//
// A call whose log entries fit in one log message is one transaction: it
// is appended in one message, which it may share with other concurrent
// adds of this router (the router's batcher gathers them). A larger call
// (an entry takes about 150 bytes, plus its source: tens of thousands of
// documents) is appended by the calling goroutine, not the batcher, in
// parts of at most one message each, one after the other (addLarge): it is
// not atomic, but each document is stored whole or not at all, and the
// results say which were stored when it fails midway.
//
// A call appended in one message gives a definite answer whenever it
// can: when ctx ends (or the router closes) before its message is sent
// to the log, it is not sent, and the error (ctx's, or ErrClosed) means
// that nothing was stored; once its message is sent, the call waits for
// the log's answer, past ctx's end, up to outcomeWait, and returns it
// (results, or an error by which nothing was stored). Only when that
// answer does not come is the error ErrOutcomeUnknown: the documents may
// or may not be stored.
//
// On error, a result's Stored reports that its document's message was
// acknowledged by the log; when the error wraps ErrOutcomeUnknown, the
// message under way when it came may be stored too. Each document's
// entry must fit in one message alone (db.ErrTextTooLarge otherwise, for
// a large source).
func (r *Router) Add(ctx context.Context, docs []db.Input, o AddOptions) ([]AddResult, error) {
	if o.Threshold < 0 || o.Threshold > 1 {
		return nil, fmt.Errorf("%w: threshold %v", ErrInvalidOptions, o.Threshold)
	}
	req := &addReq{o: o, done: make(chan struct{})}
	now := time.Now().UTC()
	prepared, errs, err := r.gw.PrepareBatch(ctx, docs)
	if err != nil {
		return nil, err
	}
	for i, doc := range prepared {
		if errs[i] != nil {
			return nil, errs[i]
		}
		// An entry must fit in one log message (its source is not
		// bounded otherwise): refused now, not retried until the call's
		// time runs out while the adds queued behind it wait.
		es := entrySize(doc)
		if es > r.maxMessage {
			return nil, fmt.Errorf("fpdb cluster: add %q: %w: its log entry (id, source, fingerprint) takes %d bytes, more than the %d a log message holds", doc.ID, db.ErrTextTooLarge, es, r.maxMessage)
		}
		if doc.Added.IsZero() {
			// Each document of a call is added after the one before, as
			// a database adds a batch in order: keep oldest and newest
			// then choose as one database would.
			doc.Added = now.Add(time.Duration(i))
		}
		req.docs = append(req.docs, doc)
		req.size += es
	}
	if req.size > r.maxMessage {
		return r.addLarge(ctx, req)
	}
	return r.addBatched(ctx, req)
}

// addBatched hands req to the router's batcher and returns its outcome.
// When ctx ends (or the router closes) before the batcher sends req's
// message to the log, req is withdrawn: the batcher leaves it out, and
// the error is ctx's (or ErrClosed). After, the outcome of the message
// is awaited up to lateWait more, then the error is ErrOutcomeUnknown.
func (r *Router) addBatched(ctx context.Context, req *addReq) ([]AddResult, error) {
	select {
	case r.reqs <- req:
	case <-r.quit:
		r.stats.withdrawn.Add(int64(len(req.docs)))
		return nil, ErrClosed
	case <-ctx.Done(): // the queue was full
		r.stats.withdrawn.Add(int64(len(req.docs)))
		return nil, ctx.Err()
	}
	var stop error
	select {
	case <-req.done:
		return req.out, req.err
	case <-r.quit:
		stop = ErrClosed
	case <-ctx.Done():
		stop = ctx.Err()
	}
	select {
	case <-req.done: // answered meanwhile
		return req.out, req.err
	default:
	}
	if r.withdraw(req) {
		return nil, stop
	}
	// The message was sent: its outcome is the log's answer, which the
	// batcher waits for (a retry of the same message is answered from
	// the log's duplicate window), within its commit's time; Close waits
	// for it too.
	if r.onLate != nil {
		r.onLate()
	}
	t := time.NewTimer(r.lateWait)
	defer t.Stop()
	select {
	case <-req.done:
		return req.out, req.err
	case <-t.C:
		return nil, fmt.Errorf("%w: no answer from the log %v after the add's end (%v)", ErrOutcomeUnknown, r.lateWait, stop)
	}
}

// addLarge appends the documents of req, whose entries exceed one log
// message, in consecutive parts of at most maxMessage bytes, each one
// commitPart (one transaction, checked as Add checks when o.Threshold >
// 0), in the calling goroutine: the router's batcher, and the adds it
// gathers, never wait for it, and a part's failure is this call's alone.
//
// A part's check reads the log after the parts before it, whose documents
// it then finds stored: each document's matches and whether it is
// dropped are those of one transaction of the whole call, as long as
// nothing else is written meanwhile. A write made between two parts
// (through any router) is seen by the later parts only, as if the call
// were several calls; and each part has its own log sequence.
//
// The part under way when ctx ends (or the router closes) is finished,
// within the time the batcher gives a commit, so that the results say
// exactly which documents are stored; the next is not begun. The error
// then wraps ctx's (or ErrClosed) and names the documents stored before.
// When the log's answer to a part's message does not come (the error
// wraps ErrOutcomeUnknown), the documents of that part may be stored.
func (r *Router) addLarge(ctx context.Context, req *addReq) ([]AddResult, error) {
	cs := r.candidatesOf(req)
	stored := 0
	for lo := 0; lo < len(cs); {
		hi, size := lo, 0
		for hi < len(cs) && (hi == lo || size+entrySize(cs[hi].doc) <= r.maxMessage) {
			size += entrySize(cs[hi].doc)
			hi++
		}
		err := ctx.Err()
		if err == nil && !r.beginPart() {
			err = ErrClosed
		}
		if err != nil { // this part and the next are not sent
			r.stats.withdrawn.Add(int64(len(cs) - lo))
		} else {
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.commitTimeout())
			err = r.commitPart(pctx, cs[lo:hi])
			cancel()
			r.endPart()
			if errors.Is(err, ErrOutcomeUnknown) {
				err = fmt.Errorf("%w (the log message of documents %d to %d)", err, lo+1, hi)
			}
		}
		if err != nil {
			if lo == 0 {
				return req.out, err
			}
			return req.out, fmt.Errorf("fpdb cluster: add of %d documents stopped at document %d (%q), after %d of them stored: %w",
				len(cs), lo+1, cs[lo].doc.ID, stored, err)
		}
		for _, c := range cs[lo:hi] {
			if !c.drop {
				stored++
			}
		}
		lo = hi
	}
	return req.out, nil
}

// submit hands job to the router's worker through ch and waits until the
// worker closes done. It returns ErrClosed when the router closes first
// (unless done is closed by then) and ctx.Err() when ctx ends first; the
// job may still run after either.
func submit[T any](ctx context.Context, quit <-chan struct{}, ch chan<- T, job T, done <-chan struct{}) error {
	select {
	case ch <- job:
	case <-quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-quit:
		select {
		case <-done: // answered before the close
			return nil
		default:
			return ErrClosed
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Delete appends the deletion of ids to the log and returns its sequence.
// When the log's answer does not come, the error wraps ErrOutcomeUnknown:
// the deletion may be appended, and deleting the ids again is safe.
func (r *Router) Delete(ctx context.Context, ids []string) (uint64, error) {
	entries := make([]Entry, len(ids))
	size := 0
	for i, id := range ids {
		if err := db.ValidID(id); err != nil {
			return 0, fmt.Errorf("fpdb cluster: delete: %w", err)
		}
		entries[i] = Entry{Kind: KindDelete, ID: id}
		size += len(id) + binary.MaxVarintLen64 + 1
	}
	if size > r.maxMessage {
		return 0, fmt.Errorf("fpdb cluster: delete: %w: %d ids of %d bytes in one call (at most %d)", ErrInvalidOptions, len(ids), size, r.maxMessage)
	}
	return r.publish(ctx, entries, 0, false)
}

// Pin appends a pin to the log: every replica keeps a checkpoint of its
// shard at the returned sequence.
func (r *Router) Pin(ctx context.Context) (uint64, error) {
	// A pin whose outcome is unknown is only a failed read to its caller.
	// It is bounded as a request to a shard is: a stream's caller gives
	// its whole stream time, and without a quorum of the log (most nodes
	// down or cut off) the pin would be retried until then, the stream
	// sending nothing.
	// The bound leaves time for the log to elect a new leader (4 to 9 s
	// in nats-server).
	wait := max(r.opts.RequestTimeout, pinWait)
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	seq, _, err := r.appendMsg(pctx, []Entry{{Kind: KindPin}}, newBatchID(), 0, false)
	if err != nil && ctx.Err() == nil && pctx.Err() != nil {
		return 0, fmt.Errorf("%w: the log took no pin within %v (does a majority of its nodes run and reach each other?): %w", ErrLogUnavailable, wait, err)
	}
	return seq, err
}

// pinWait is the least time a pin is given.
const pinWait = 20 * time.Second

// ErrLogUnavailable is wrapped by the error of a read that must first
// write to the log (a pin, for pairs, clusters and exports) when the log
// does not answer in time: no quorum of its nodes.
var ErrLogUnavailable = errors.New("fpdb cluster: the log is unavailable")

func newBatchID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// publish appends entries as one message (publishID, of a new id).
func (r *Router) publish(ctx context.Context, entries []Entry, last uint64, expect bool) (uint64, error) {
	return r.publishID(ctx, entries, newBatchID(), last, expect)
}

var errConflict = errors.New("fpdb cluster: the log moved")

// publishID appends entries as one message of id, retrying on transient
// errors (a lost acknowledgement is not appended twice: the message id is
// kept by the log's duplicate window, and no attempt is sent past it).
// With expect, the append happens only if the log's last sequence is
// still last; a conflict is returned as errConflict, which also wraps
// ErrOutcomeUnknown when an earlier attempt may have appended the
// message: the caller then reads the log for it (conflictContext,
// afterConflict). An error that wraps ErrOutcomeUnknown says that the
// message may be appended (appendMsg); any other, that it is not.
func (r *Router) publishID(ctx context.Context, entries []Entry, id string, last uint64, expect bool) (uint64, error) {
	seq, unsure, err := r.appendMsg(ctx, entries, id, last, expect)
	switch {
	case err != nil && unsure && errors.Is(err, errConflict):
		return 0, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	case err != nil && unsure:
		r.stats.unknown.Add(1)
		// Not the context's error: the caller's time is not what ended it.
		return 0, fmt.Errorf("%w: %v", ErrOutcomeUnknown, err)
	}
	return seq, err
}

// conflictContext returns the context to read the log with after the
// conflict err of an append: ctx, or, when an earlier attempt may have
// appended the message (err wraps ErrOutcomeUnknown), one that lasts
// lateWait past ctx's end (whether ctx has ended or is about to), so that
// the outcome is read.
func (r *Router) conflictContext(ctx context.Context, err error) (context.Context, context.CancelFunc) {
	if !errors.Is(err, ErrOutcomeUnknown) {
		return ctx, func() {}
	}
	d := r.lateWait
	if dl, ok := ctx.Deadline(); ok && ctx.Err() == nil {
		d += time.Until(dl)
	}
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// afterConflict returns the error of a failed read of the log after the
// conflict of an append: one that wraps ErrOutcomeUnknown when an earlier
// attempt may have appended the message (conflict wraps it), else err.
func (r *Router) afterConflict(conflict, err error) error {
	if errors.Is(conflict, ErrOutcomeUnknown) {
		r.stats.unknown.Add(1)
		return fmt.Errorf("%w: the log could not be read for the message after a conflict: %v", ErrOutcomeUnknown, err)
	}
	return err
}

// appendMsg is publishID, whose error it returns as it is, with unsure:
// an attempt was sent and got no answer that says the message was not
// appended (mayBeAppended), and no later attempt did either. When ctx
// ends with the outcome unsure, the message is sent again (the log
// answers with its sequence if it holds it) for up to lateWait more.
func (r *Router) appendMsg(ctx context.Context, entries []Entry, id string, last uint64, expect bool) (seq uint64, unsure bool, err error) {
	if err := ctx.Err(); err != nil { // nothing sent
		return 0, false, fmt.Errorf("fpdb cluster: append to the log: %w", err)
	}
	msg := nats.NewMsg(logSubject)
	msg.Data = EncodeBatch(entries)
	if _, err := DecodeBatch(msg.Data); err != nil {
		// Every replica would stop at it, for good: nothing that does
		// not decode is appended (the documents were checked as the
		// database checks them; this is the last guard).
		return 0, false, fmt.Errorf("fpdb cluster: append to the log: %w: %w", db.ErrBadInput, err)
	}
	msg.Header.Set(jetstream.MsgIDHeader, id)
	var opts []jetstream.PublishOpt
	if expect {
		opts = append(opts, jetstream.WithExpectLastSequence(last))
	}
	if expect && r.beforeAppend != nil {
		r.beforeAppend()
	}
	// A large message takes longer to be stored on the log's replicas.
	per := attemptTimeout + time.Duration(len(msg.Data)>>20)*time.Second
	// since is when the first attempt that may have been appended was
	// sent. The log forgets the message id after its duplicate window: an
	// unconditional retry ending past the window after since could be
	// appended a second time, so none is sent. A conditional one cannot:
	// the log refuses it once an earlier attempt moved its last sequence.
	var since time.Time
	attempt := func(actx context.Context) (bool, error) {
		if !expect && !since.IsZero() && time.Since(since)+per > r.dupWindow {
			return true, fmt.Errorf("no answer within the log's duplicate window (%v)", r.dupWindow)
		}
		if r.notSent != nil {
			if err := r.notSent(); err != nil {
				return false, err
			}
		}
		sent := time.Now()
		ack, err := r.js.PublishMsg(actx, msg, opts...)
		if r.afterPublish != nil {
			ack, err = r.afterPublish(ack, err)
		}
		if err == nil {
			r.noteWritten(ack.Sequence)
			r.stats.batches.Add(1)
			seq, unsure = ack.Sequence, false
			return true, nil
		}
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && wrongLastSeq(apiErr.ErrorCode) {
			// This attempt was not appended. An earlier one whose answer
			// was lost may have been (a log that is not replicated checks
			// the expected last sequence before the message id): unsure
			// stays, and the caller looks for the message in the log.
			r.stats.conflicts.Add(1)
			return true, errConflict
		}
		if mayBeAppended(err) {
			unsure = true
			if since.IsZero() {
				since = sent
			}
		}
		// A closed connection answers no retry (the node is closing).
		return errors.Is(err, nats.ErrConnectionClosed), err
	}
	err = r.retryEach(ctx, "append to the log", per, attempt)
	// After a conflict, the caller reads the log for the message.
	if err != nil && unsure && ctx.Err() != nil && !errors.Is(err, errConflict) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.lateWait)
		err = r.retryEach(lctx, "append to the log (after the call's end, for the outcome of an attempt)", per, attempt)
		cancel()
	}
	return seq, err != nil && unsure, err
}

// mayBeAppended reports whether a failed attempt to append a message may
// have appended it: the log did not answer (the attempt's time ran out,
// the connection was lost), or answered that it is still processing a
// message of the same id (409), or failed (5xx). A refusal (any other
// answer of the log), no log to send to, or a message the client does not
// send (too large) is not appended.
func mayBeAppended(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code == 408 || apiErr.Code == 409 || apiErr.Code >= 500
	}
	return !errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, nats.ErrNoResponders) &&
		!errors.Is(err, nats.ErrMaxPayload)
}

// attemptTimeout bounds one attempt of a call to JetStream: a request
// sent to a leader that has just failed gets no answer, and is sent again
// (to the new leader) after it.
const attemptTimeout = 2 * time.Second

// retry calls fn until it reports done, each attempt bounded by
// attemptTimeout, backing off between attempts, until ctx ends or fn
// fails with an error that another attempt cannot mend.
func (r *Router) retry(ctx context.Context, what string, fn func(context.Context) (done bool, err error)) error {
	return r.retryEach(ctx, what, attemptTimeout, fn)
}

// permanent reports a JetStream error that a retry cannot mend: a request
// refused as such (4xx), other than a message id still in process (409),
// or a message larger than the servers take.
func permanent(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, nats.ErrMaxPayload) ||
		errors.As(err, &apiErr) && apiErr.Code >= 400 && apiErr.Code < 500 && apiErr.Code != 409 && apiErr.Code != 408
}

// retryEach is retry with attempts bounded by per. On a closed
// connection it makes no attempt (none could be answered: the node is
// closing) and returns ErrClosed.
func (r *Router) retryEach(ctx context.Context, what string, per time.Duration, fn func(context.Context) (done bool, err error)) error {
	for attempt := 0; ; attempt++ {
		if r.nc.IsClosed() {
			return fmt.Errorf("fpdb cluster: %s: %w: the connection to the log is closed", what, ErrClosed)
		}
		actx, cancel := context.WithTimeout(ctx, per)
		done, err := fn(actx)
		cancel()
		if done || err == nil {
			return err
		}
		if permanent(err) {
			return fmt.Errorf("fpdb cluster: %s: %w", what, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("fpdb cluster: %s: %w (last error: %v)", what, ctx.Err(), err)
		}
		r.stats.retries.Add(1)
		r.opts.Logger.Warn("cluster call failed; retrying", "call", what, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(min(time.Duration(attempt+1)*50*time.Millisecond, 500*time.Millisecond)):
		}
	}
}

func (r *Router) noteWritten(seq uint64) {
	for {
		old := r.written.Load()
		if seq <= old || r.written.CompareAndSwap(old, seq) {
			return
		}
	}
}

// batcher takes the queued adds (each fits in one log message), as many
// as fit together in one message (up to Options.MaxBatch documents), and
// commits them in that message: one transaction, whose outcome is each
// of theirs. An add that does not fit with those taken before waits for
// the next round.
func (r *Router) batcher() {
	defer r.wg.Done()
	var next *addReq // taken from the queue, for the next round
	for {
		first := next
		next = nil
		select {
		case <-r.quit:
			r.failPending(first)
			return
		default:
		}
		if first == nil {
			select {
			case first = <-r.reqs:
			case <-r.quit:
				r.failPending(nil)
				return
			}
		}
		batch := []*addReq{first}
		n, size := len(first.docs), first.size
	more:
		for n < r.opts.MaxBatch {
			select {
			case q := <-r.reqs:
				if size+q.size > r.maxMessage {
					next = q
					break more
				}
				batch = append(batch, q)
				n, size = n+len(q.docs), size+q.size
			default:
				break more
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.commitTimeout())
		err := r.commit(ctx, batch)
		cancel()
		for _, q := range batch {
			if err != nil {
				q.err = err
			}
			close(q.done)
		}
	}
}

// commitTimeout bounds a commit of one log message (its checks, conflicts
// and retries included): six times Options.RequestTimeout.
func (r *Router) commitTimeout() time.Duration { return r.commitWait }

// failPending fails q (when not nil) and the queued adds with ErrClosed.
func (r *Router) failPending(q *addReq) {
	if q != nil {
		r.withdraw(q)
		q.err = ErrClosed
		close(q.done)
	}
	for {
		select {
		case q := <-r.reqs:
			r.withdraw(q)
			q.err = ErrClosed
			close(q.done)
		default:
			return
		}
	}
}

// candidate is one document of a batch being committed.
type candidate struct {
	req    *addReq
	i      int
	doc    *db.Doc
	radius int // -1: no check
	drop   bool
	// shard are the matches the shards found at the check's sequence.
	shard []db.Match
}

// commit runs the optimistic transaction for a batch of adds that fits
// in one log message (commitPart).
func (r *Router) commit(ctx context.Context, batch []*addReq) error {
	var cs []*candidate
	for _, q := range batch {
		cs = append(cs, r.candidatesOf(q)...)
	}
	return r.commitPart(ctx, cs)
}

// candidatesOf returns the candidates of q's documents, in order, and
// makes q's results.
func (r *Router) candidatesOf(q *addReq) []*candidate {
	q.out = make([]AddResult, len(q.docs))
	cs := make([]*candidate, len(q.docs))
	for i, d := range q.docs {
		c := &candidate{req: q, i: i, doc: d, radius: -1}
		q.out[i].Doc = d
		if q.o.Threshold > 0 {
			c.radius = index.Radius(r.smap.K, q.o.Threshold)
		}
		cs[i] = c
	}
	return cs
}

// maxMessage bounds the encoded size of a log message (the servers take
// up to 8 MiB).
const maxMessage = 6 << 20

// entrySize bounds the encoded size of d's add entry.
func entrySize(d *db.Doc) int { return addEntrySize(d.ID, d.Source, len(d.Fingerprint)) }

// addEntrySize bounds the encoded size of the add entry of a document of
// that id and source, and a fingerprint of words words.
func addEntrySize(id, source string, words int) int {
	return 1 + 2*binary.MaxVarintLen64 + len(id) + 1 + 8*words + 16 + 4*binary.MaxVarintLen64 + len(source)
}

// commitPart commits the candidates cs in one log message: check every
// checked document against the shards at the log's last sequence L and
// against the earlier candidates, append with expected last sequence L;
// on a conflict, check against the entries appended after L and retry.
// Before the message is first sent, the adds whose callers withdrew them
// are left out (claim). An error that wraps ErrOutcomeUnknown says that
// the message may be appended; any other, that it is not.
func (r *Router) commitPart(ctx context.Context, cs []*candidate) error {
	check := false
	for _, c := range cs {
		check = check || c.radius >= 0
	}
	id := newBatchID()
	if !check {
		cs = claim(cs)
		entries := entriesOf(cs)
		if len(entries) == 0 { // every add was withdrawn
			return nil
		}
		seq, err := r.publishID(ctx, entries, id, 0, false)
		if err != nil {
			return err
		}
		r.stats.docs.Add(int64(len(entries)))
		for _, c := range cs {
			c.req.out[c.i].Stored, c.req.out[c.i].Seq = true, seq
		}
		return nil
	}
	last, err := r.LastSeq(ctx)
	if err != nil {
		return err
	}
	if err := r.checkShards(ctx, cs, last); err != nil {
		return err
	}
	var after []Entry // appended after last, in log order
	claimed := false
	for {
		r.decide(cs, after)
		entries := entriesOf(cs)
		if len(entries) == 0 { // every document was rejected: nothing to append
			return nil
		}
		if !claimed {
			// Decided again without the adds withdrawn meanwhile.
			claimed = true
			if kept := claim(cs); len(kept) < len(cs) {
				cs = kept
				continue
			}
		}
		seq, err := r.publishID(ctx, entries, id, last, true)
		if err != nil && !errors.Is(err, errConflict) {
			return err
		}
		if err != nil {
			// Entries were appended after last: decide again with them,
			// unless our own message is among them.
			rctx, cancel := r.conflictContext(ctx, err)
			now, rerr := r.LastSeq(rctx)
			if rerr == nil {
				seq, rerr = r.readLog(rctx, last, now, id, func(es []Entry) { after = append(after, es...) })
			}
			cancel()
			if rerr != nil {
				return r.afterConflict(err, rerr)
			}
			if seq == 0 {
				// Not in the log: an earlier attempt still under way
				// expects the old last sequence, and the log, now past
				// it, refuses that attempt. The same id serves the next.
				last = now
				continue
			}
			// Our own append, acknowledged to no one: decided as it is.
		}
		r.stats.docs.Add(int64(len(entries)))
		for _, c := range cs {
			if !c.drop {
				c.req.out[c.i].Stored, c.req.out[c.i].Seq = true, seq
			}
		}
		return nil
	}
}

// claim returns the candidates of cs whose adds may be sent to the log
// (addReq.send), leaving out those their callers withdrew: the adds
// claimed are then awaited by their callers until their outcome is known.
func claim(cs []*candidate) []*candidate {
	kept := make([]*candidate, 0, len(cs))
	for _, c := range cs {
		if c.req.send() {
			kept = append(kept, c)
		}
	}
	return kept
}

// readLog calls fn with the entries of each log message after from up to
// now, in order. When it meets the message of batch (an append of ours
// whose acknowledgement was lost) it stops there and returns its
// sequence, noted as written; else 0.
func (r *Router) readLog(ctx context.Context, from, now uint64, batch string, fn func([]Entry)) (uint64, error) {
	for seq := from + 1; seq <= now; seq++ {
		var m *jetstream.RawStreamMsg
		err := r.retry(ctx, "read a log entry", func(actx context.Context) (bool, error) {
			var err error
			m, err = r.stream.GetMsg(actx, seq)
			return err == nil, err
		})
		if err != nil {
			return 0, fmt.Errorf("fpdb cluster: read log entry %d: %w", seq, err)
		}
		if m.Header.Get(jetstream.MsgIDHeader) == batch {
			r.noteWritten(seq)
			return seq, nil
		}
		entries, err := DecodeBatch(m.Data)
		if err != nil {
			return 0, fmt.Errorf("fpdb cluster: log entry %d: %w", seq, err)
		}
		fn(entries)
	}
	return 0, nil
}

func entriesOf(cs []*candidate) []Entry {
	var out []Entry
	for _, c := range cs {
		if c.drop {
			continue
		}
		d := c.doc
		out = append(out, Entry{Kind: KindAdd, ID: d.ID, Fingerprint: d.Fingerprint, ContentHash: d.ContentHash,
			Size: d.Size, Words: d.Words, Shingles: d.Shingles, Source: d.Source, Added: d.Added})
	}
	return out
}

// checkShards queries every shard at ≥ last for the checked candidates
// (their shard matches).
func (r *Router) checkShards(ctx context.Context, cs []*candidate, last uint64) error {
	var qs []shardQuery
	var who []*candidate
	for _, c := range cs {
		if c.radius >= 0 {
			qs = append(qs, shardQuery{FP: c.doc.Fingerprint, ContentHash: c.doc.ContentHash, Shingles: c.doc.Shingles, Threshold: c.req.o.Threshold})
			who = append(who, c)
		}
	}
	res, err := r.queryShards(ctx, qs, last)
	if err != nil {
		return err
	}
	for i, c := range who {
		c.shard = res[i]
	}
	return nil
}

// decide sets each checked candidate's matches (sorted) and whether it is
// dropped, in batch order, as one database storing the documents one
// after the other would: its matches are the shards' documents at the
// check, less those whose id was stored anew or deleted since (an entry
// of after, or a kept candidate before it in the batch), and the
// documents those entries and the kept candidates before it store. A
// candidate is dropped when it asked to Reject and has a match.
func (r *Router) decide(cs []*candidate, after []Entry) {
	since := map[string]*Entry{} // each id's last entry of after; nil: deleted
	for i := range after {
		switch e := &after[i]; e.Kind {
		case KindAdd:
			since[e.ID] = e
		case KindDelete:
			since[e.ID] = nil
		}
	}
	kept := map[string]*candidate{} // the last kept candidate of each id so far
	for _, c := range cs {
		out := &c.req.out[c.i]
		out.Matches, c.drop = nil, false
		if c.radius >= 0 {
			for _, m := range c.shard {
				_, changed := since[m.ID]
				if !changed && kept[m.ID] == nil {
					c.match(m)
				}
			}
			for id, e := range since {
				if e != nil && kept[id] == nil {
					r.checkPair(c, e.ID, e.Fingerprint, e.ContentHash, e.Shingles, e.Words)
				}
			}
			for _, k := range kept {
				r.checkPair(c, k.doc.ID, k.doc.Fingerprint, k.doc.ContentHash, k.doc.Shingles, k.doc.Words)
			}
			sortMatches(out.Matches, false)
		}
		if !c.drop {
			kept[c.doc.ID] = c
		}
	}
}

// match records a match of c (its own previous version excepted, and a
// document matched already), and drops c when it asked to Reject.
func (c *candidate) match(m db.Match) {
	if m.ID == c.doc.ID {
		return
	}
	out := &c.req.out[c.i]
	for _, old := range out.Matches {
		if old.ID == m.ID {
			return
		}
	}
	out.Matches = append(out.Matches, m)
	if c.req.o.Reject {
		c.drop = true
	}
}

// checkPair records a match of c with the document id (fingerprint fp,
// content hash, shingles and words) when it is within c's radius, as a
// shard would report it.
func (r *Router) checkPair(c *candidate, id string, fp []uint64, hash [16]byte, shingles, words int) {
	if len(fp) != len(c.doc.Fingerprint) {
		return
	}
	h := bitvec.Hamming(c.doc.Fingerprint, fp)
	if h > c.radius {
		return
	}
	m := db.Match{ID: id, Hamming: h, Similarity: index.Similarity(r.smap.K, h),
		Exact: hash != ([16]byte{}) && hash == c.doc.ContentHash}
	w := r.smap.ShingleWidth
	m.SetContainment(r.smap.K, db.SetSize(c.doc.Shingles, c.doc.Words, w), db.SetSize(shingles, words, w))
	c.match(m)
}
