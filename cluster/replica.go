package cluster

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// seqMark is the mark holding the last log sequence a replica applied.
const seqMark = "cluster:seq"

// keepPins is how many pinned checkpoints a replica keeps at least; when
// a new pin makes more, it drops the oldest that no task holds and that
// was not used for pinLease, or, beyond maxPins, the oldest that no task
// holds (a pin is kept while a Pairs task or an export page reads it,
// however many newer pins are taken).
const keepPins = 4

// pinLease is how long a pin stays kept after its last use (a page of an
// export, a pair task): the time between two pages of an export.
const pinLease = 5 * time.Minute

// maxPins is how many pins a replica keeps at most, leased or not: beyond
// it, the oldest that no task holds is dropped.
const maxPins = 2 * keepPins

// pinState is a pin's use on a replica: its checkpoint's database once
// opened (opening is closed when an open ends), how many tasks hold it,
// and when it was last taken or released.
type pinState struct {
	db      *db.DB
	opening chan struct{}
	refs    int
	used    time.Time
}

// ReplicaState describes a shard replica.
type ReplicaState struct {
	// Shard is the replica's shard.
	Shard int
	// Applied is the last log sequence it applied.
	Applied uint64
	// Docs is its number of documents.
	Docs int
	// Err is the error that stopped it, if any.
	Err error
	// Seeded is the log sequence of the checkpoint of another replica it
	// started from (0: it replayed the log from its start).
	Seeded uint64
}

// replica is a deterministic follower of the log for one shard: it
// applies the shard's entries of each message, with the message's
// sequence as a mark in the same batch, in log order.
type replica struct {
	n     *Node
	shard int
	dir   string
	d     *db.DB

	mu      sync.Mutex // held while a message is applied; guards below
	applied uint64
	changed chan struct{} // closed when applied moves
	failed  error
	pins    []uint64
	pinUse  map[uint64]*pinState // of each of pins
	seeded  uint64               // the sequence of the checkpoint it was copied from (0: none)
	// catchUp is the log's last sequence when the replica opened: until it
	// has applied it, it answers every read "behind", so that a replica
	// replaying the log is not read as if current.
	catchUp uint64

	ccMu    sync.Mutex // guards cc and closing
	cc      jetstream.ConsumeContext
	closing bool
	quit    chan struct{} // closed by close: stops the watchdog
	base    context.Context
	cancel  context.CancelFunc // ends the handlers' contexts at close
	subs    []*nats.Subscription
	sem     chan struct{} // bounds concurrent reads (queries, gets, statistics)
	slow    chan struct{} // bounds concurrent long tasks (pairs, pin documents, seeds)
	wg      sync.WaitGroup
}

func openReplica(ctx context.Context, n *Node, s int) (*replica, error) {
	dir := n.replicaDir(s)
	var seeded uint64
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) && n.logNonEmpty(ctx) {
		// A replica given to a running node (or one whose files are lost):
		// copy a live replica's checkpoint rather than replay the log; if
		// none can be had, replay the log.
		ok, seq, err := n.seedReplica(ctx, s, dir)
		switch {
		case err != nil:
			n.opts.Logger.Warn("no checkpoint to start from: replaying the log", "shard", s, "err", err)
			os.RemoveAll(dir)
		case ok:
			seeded = seq
			n.opts.Logger.Info("replica seeded from a checkpoint", "shard", s, "seq", seq)
		default:
			n.opts.Logger.Warn("no live replica answered for a checkpoint: replaying the log", "shard", s)
		}
	}
	d, err := db.Open(dir, n.smap.dbOptions())
	if err != nil {
		return nil, fmt.Errorf("fpdb cluster: shard %d: %w", s, err)
	}
	r := &replica{n: n, shard: s, dir: dir, d: d, seeded: seeded, changed: make(chan struct{}), pinUse: map[uint64]*pinState{},
		sem: make(chan struct{}, 8), slow: make(chan struct{}, 2), quit: make(chan struct{})}
	r.base, r.cancel = context.WithCancel(context.Background())
	if err := r.checkIdentity(ctx); err != nil {
		d.Close()
		return nil, err
	}
	v, err := d.Mark(ctx, seqMark)
	switch {
	case err == nil && len(v) == 8:
		r.applied = binary.BigEndian.Uint64(v)
	case err == nil:
		d.Close()
		return nil, fmt.Errorf("fpdb cluster: shard %d: bad sequence mark of %d bytes", s, len(v))
	case !errors.Is(err, db.ErrNoMark):
		d.Close()
		return nil, fmt.Errorf("fpdb cluster: shard %d: %w", s, err)
	}
	r.pins = r.listPins()
	for _, p := range r.pins {
		r.pinUse[p] = &pinState{}
	}
	if last, err := n.r.LastSeq(ctx); err == nil && last > r.applied {
		r.catchUp = last
	}
	if err := r.follow(ctx); err != nil {
		r.close()
		return nil, err
	}
	r.wg.Add(1)
	go r.watchdog()
	// Requests are sent by routers to a replica they choose
	// (replicaSubject); a new replica's request for a checkpoint goes to
	// the shard's queue group, which picks any replica of the shard.
	queue := "fpdb.shard." + strconv.Itoa(s)
	for _, h := range []struct {
		subj, queue string
		sem         chan struct{}
		fn          func(*nats.Msg, time.Time)
	}{
		{replicaSubject(s, n.opts.Name, "query"), "", r.sem, r.serveQuery},
		{replicaSubject(s, n.opts.Name, "get"), "", r.sem, r.serveGet},
		{replicaSubject(s, n.opts.Name, "storage"), "", r.sem, r.serveStorage},
		{replicaSubject(s, n.opts.Name, "export"), "", r.sem, r.serveExport},
		{replicaSubject(s, n.opts.Name, "pindocs"), "", r.slow, r.servePinDocs},
		{replicaSubject(s, n.opts.Name, "pairs"), "", r.slow, r.servePairs},
		{replicaSubject(s, n.opts.Name, "select"), "", r.slow, r.serveSelect},
		{queue + ".seed", queue, r.slow, r.serveSeed},
	} {
		sub, err := n.nc.QueueSubscribe(h.subj, h.queue, r.async(h.sem, h.fn))
		if err != nil {
			r.close()
			return nil, err
		}
		r.subs = append(r.subs, sub)
	}
	return r, nil
}

// logNonEmpty reports whether the log holds any message (a new replica
// then asks for a checkpoint); false when the log cannot be read.
func (n *Node) logNonEmpty(ctx context.Context) bool {
	last, err := n.r.LastSeq(ctx)
	return err == nil && last > 0
}

// idMark holds the id of the cluster (of its log) a replica follows.
const idMark = "cluster:id"

// ErrWrongCluster is returned by Start for a replica that follows another
// cluster's log (a node directory reused, or a log recreated): its
// sequence numbers would mean nothing here.
var ErrWrongCluster = errors.New("fpdb cluster: replica of another cluster")

// checkIdentity records the cluster's id in a new replica, and refuses a
// replica of another cluster.
func (r *replica) checkIdentity(ctx context.Context) error {
	id := r.n.smap.ID
	v, err := r.d.Mark(ctx, idMark)
	switch {
	case errors.Is(err, db.ErrNoMark):
		return r.d.SetMark(ctx, db.Mark{Name: idMark, Value: []byte(id)})
	case err != nil:
		return fmt.Errorf("fpdb cluster: shard %d: %w", r.shard, err)
	case string(v) != id:
		return fmt.Errorf("%w: shard %d in %s follows cluster %q, this one is %q", ErrWrongCluster, r.shard, r.dir, v, id)
	}
	return nil
}

// follow (re)starts the ordered consumer of the log from the message
// after the last applied one.
func (r *replica) follow(ctx context.Context) error {
	r.ccMu.Lock()
	defer r.ccMu.Unlock()
	if r.closing {
		return ErrClosed
	}
	if r.cc != nil {
		stopConsumer(r.cc)
		r.cc = nil
	}
	r.mu.Lock()
	applied := r.applied
	r.mu.Unlock()
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{logSubject}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if applied > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = applied + 1
	}
	cons, err := r.n.js.OrderedConsumer(ctx, logStream, cfg)
	if err != nil {
		return fmt.Errorf("fpdb cluster: shard %d: follow the log: %w", r.shard, err)
	}
	// Short pull requests with frequent heartbeats: when the log's leader
	// fails, the consumer notices within seconds and resumes from the
	// next sequence on the new leader.
	r.cc, err = cons.Consume(r.apply, jetstream.PullExpiry(2*time.Second), jetstream.PullHeartbeat(500*time.Millisecond),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			r.n.opts.Logger.Debug("replica's log consumer", "shard", r.shard, "err", err)
		}))
	if err != nil {
		return fmt.Errorf("fpdb cluster: shard %d: follow the log: %w", r.shard, err)
	}
	return nil
}

// consumerStopWait bounds how long stopConsumer waits for a consumer's
// Stop.
const consumerStopWait = time.Second

// stopConsumer stops the log consumer cc, waiting for it at most
// consumerStopWait. nats.go's ordered consumer holds its lock while it
// tries to recreate its server-side consumer after losing it (each try
// waits up to 10 s for an answer, then up to 10 s before the next), and
// Stop waits for that lock: without a quorum of the log (the last nodes
// of a cluster shutting down, a partition) a node's close waited about
// 20 s per replica. Stop marks the consumer closed before it waits, so
// the retrying ends at its next try and Stop returns on its own then;
// apply ignores what a stopped consumer might still deliver (a replica
// closed, or a message already applied).
func stopConsumer(cc jetstream.ConsumeContext) {
	done := make(chan struct{})
	go func() {
		cc.Stop()
		close(done)
	}()
	t := time.NewTimer(consumerStopWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// apply applies one log message: its runs of adds (one batch each; the
// last with the sequence mark), deletes and pins, in order; a message
// already applied (redelivered) is skipped.
func (r *replica) apply(msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		return
	}
	seq := md.Sequence.Stream
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed != nil || seq <= r.applied {
		return
	}
	if seq != r.applied+1 {
		// Not the next message (a consumer being replaced): the log has no
		// gaps, so the next one will come.
		return
	}
	entries, err := DecodeBatch(msg.Data())
	if err == nil {
		err = r.applyEntries(seq, entries)
	}
	if err != nil {
		r.failed = fmt.Errorf("fpdb cluster: shard %d: log sequence %d: %w", r.shard, seq, err)
		r.n.opts.Logger.Error("replica stopped", "shard", r.shard, "err", r.failed)
		close(r.changed)
		r.changed = make(chan struct{})
		return
	}
	r.applied = seq
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *replica) applyEntries(seq uint64, entries []Entry) error {
	ctx := context.Background()
	mark := db.Mark{Name: seqMark, Value: binary.BigEndian.AppendUint64(nil, seq)}
	var adds []db.Input
	var dels []string
	inAdds := map[string]bool{} // ids in adds: a repeated id ends the run (AddBatch keeps one version per id)
	flush := func(last bool) error {
		switch {
		case len(adds) > 0:
			var res *db.BatchResult
			var err error
			if last {
				res, err = r.d.AddBatchMarked(ctx, adds, mark)
			} else {
				res, err = r.d.AddBatch(ctx, adds)
			}
			adds = adds[:0]
			clear(inAdds)
			if err == nil && len(res.Skipped) > 0 {
				err = fmt.Errorf("document %q refused: %w", res.Skipped[0].ID, res.Skipped[0].Err)
			}
			return err
		case len(dels) > 0:
			_, err := r.d.DeleteMany(ctx, dels)
			dels = dels[:0]
			if err == nil && last {
				err = r.d.SetMark(ctx, mark)
			}
			return err
		case last:
			return r.d.SetMark(ctx, mark)
		}
		return nil
	}
	for i := range entries {
		e := &entries[i]
		if e.Kind != KindPin && Shard(e.ID, r.n.smap.Shards) != r.shard {
			continue
		}
		switch e.Kind {
		case KindAdd:
			if len(dels) > 0 || inAdds[e.ID] {
				if err := flush(false); err != nil {
					return err
				}
			}
			inAdds[e.ID] = true
			if len(e.Fingerprint)*64 != r.n.smap.K {
				return fmt.Errorf("%w: fingerprint of %d bits (shard K = %d)", ErrBadEntry, len(e.Fingerprint)*64, r.n.smap.K)
			}
			adds = append(adds, db.Input{ID: e.ID, Fingerprint: e.Fingerprint, ContentHash: e.ContentHash, Size: e.Size,
				Words: e.Words, Shingles: e.Shingles, Source: e.Source, Added: e.Added})
		case KindDelete:
			if len(adds) > 0 {
				if err := flush(false); err != nil {
					return err
				}
			}
			dels = append(dels, e.ID)
		case KindPin:
			if err := flush(false); err != nil {
				return err
			}
			if err := r.pin(seq); err != nil {
				return err
			}
		}
	}
	return flush(true)
}

func (r *replica) pinDir(seq uint64) string {
	return filepath.Join(r.n.opts.Dir, "pins", fmt.Sprintf("shard-%03d-%020d", r.shard, seq))
}

func (r *replica) listPins() []uint64 {
	m, _ := filepath.Glob(filepath.Join(r.n.opts.Dir, "pins", fmt.Sprintf("shard-%03d-*", r.shard)))
	var out []uint64
	for _, p := range m {
		f := strings.Split(filepath.Base(p), "-")
		if len(f) != 3 || f[1] != fmt.Sprintf("%03d", r.shard) {
			continue
		}
		if seq, err := strconv.ParseUint(f[2], 10, 64); err == nil {
			out = append(out, seq)
		}
	}
	slices.Sort(out)
	return out
}

// pin takes a checkpoint of the shard as it is now (the state at the pin's
// sequence) and drops the oldest beyond keepPins. Called with r.mu held.
func (r *replica) pin(seq uint64) error {
	dir := r.pinDir(seq)
	if err := os.RemoveAll(dir); err != nil { // a checkpoint left by a crash before the mark
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if err := r.d.Checkpoint(context.Background(), dir); err != nil {
		return err
	}
	if !slices.Contains(r.pins, seq) {
		r.pins = append(r.pins, seq)
	}
	st := &pinState{}
	if r.catchUp == 0 || seq >= r.catchUp {
		st.used = time.Now() // leased to the task that took it (not to one replayed)
	}
	r.pinUse[seq] = st
	for len(r.pins) > keepPins {
		i := slices.IndexFunc(r.pins, func(p uint64) bool {
			st := r.pinUse[p]
			return st.refs == 0 && (time.Since(st.used) > pinLease || len(r.pins) > maxPins)
		})
		if i < 0 {
			break // every older pin in use: kept until the next pin after its use
		}
		old := r.pins[i]
		r.pins = slices.Delete(r.pins, i, i+1)
		if pd := r.pinUse[old].db; pd != nil {
			pd.Close()
		}
		delete(r.pinUse, old)
		os.RemoveAll(r.pinDir(old))
	}
	return nil
}

// errNoPin is returned by pinDB for a pin the replica does not hold (it
// was dropped, or the replica was copied from a checkpoint taken after
// it): another replica may hold it.
var errNoPin = errors.New("fpdb cluster: pin not held")

// pinDB returns the database of the checkpoint of the pin at seq, opened
// once and read-only (outside r.mu: an open reads the whole index; a
// writable open would also compact the checkpoint, which after a load
// halved an export's speed and rewrote files the checkpoint shares with
// the shard), waiting until the replica has applied the pin; release
// gives it back (the pin is not dropped while held).
func (r *replica) pinDB(ctx context.Context, seq uint64) (_ *db.DB, release func(), _ error) {
	if err := r.waitFor(ctx, seq); err != nil {
		return nil, nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		st := r.pinUse[seq]
		if st == nil {
			return nil, nil, fmt.Errorf("%w: shard %d holds no pin at sequence %d (pins %v)", errNoPin, r.shard, seq, r.pins)
		}
		release = func() {
			r.mu.Lock()
			st.refs--
			st.used = time.Now()
			r.mu.Unlock()
		}
		switch {
		case st.db != nil:
			st.refs++
			st.used = time.Now()
			return st.db, release, nil
		case st.opening == nil:
			st.refs++ // held while it opens
			st.opening = make(chan struct{})
			r.mu.Unlock()
			o := r.n.smap.dbOptions()
			o.ReadOnly = true
			pd, err := db.Open(r.pinDir(seq), o)
			r.mu.Lock()
			close(st.opening)
			if err != nil {
				st.opening, st.refs = nil, st.refs-1
				return nil, nil, err
			}
			st.db, st.used = pd, time.Now()
			return pd, release, nil
		}
		ch := st.opening
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			r.mu.Lock()
			return nil, nil, fmt.Errorf("%w: shard %d: opening pin %d: %w", errBehind, r.shard, seq, ctx.Err())
		}
		r.mu.Lock()
	}
}

// errBehind is returned by waitFor when the replica cannot answer at the
// sequence asked for (behind and not moving, still catching up, failed):
// the router asks another replica.
var errBehind = errors.New("fpdb cluster: replica behind the log")

// stallTimeout is how long waitFor waits for any progress.
const stallTimeout = 250 * time.Millisecond

// waitFor waits until the replica has applied seq; it gives up with
// errBehind when the replica does not move for stallTimeout.
func (r *replica) waitFor(ctx context.Context, seq uint64) error {
	for {
		r.mu.Lock()
		applied, failed, ch := r.applied, r.failed, r.changed
		if applied >= r.catchUp {
			r.catchUp = 0
		}
		want := max(seq, r.catchUp)
		r.mu.Unlock()
		if failed != nil {
			return fmt.Errorf("%w: %w", errBehind, failed)
		}
		if applied >= want {
			return nil
		}
		t := time.NewTimer(stallTimeout)
		select {
		case <-ch:
			t.Stop()
		case <-t.C:
			return fmt.Errorf("%w: shard %d at sequence %d, asked for %d", errBehind, r.shard, applied, want)
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: shard %d at sequence %d, waiting for %d: %w", errBehind, r.shard, applied, want, ctx.Err())
		}
	}
}

// replicaSubject is the subject node's replica of shard s serves verb on.
func replicaSubject(s int, node, verb string) string {
	return "fpdb.replica." + strconv.Itoa(s) + "." + node + "." + verb
}

func (r *replica) state() ReplicaState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return ReplicaState{Shard: r.shard, Applied: r.applied, Docs: r.d.Len(), Err: r.failed, Seeded: r.seeded}
}

// digest hashes the replica's documents at its applied sequence (no
// message is applied meanwhile).
func (r *replica) digest(ctx context.Context) (uint64, uint64, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sum uint64
	n := 0
	err := r.d.Docs(ctx, func(d db.Doc) error {
		sum ^= docHash(&d)
		n++
		return nil
	})
	return r.applied, sum, n, err
}

func docHash(d *db.Doc) uint64 {
	h := fnv.New64a()
	h.Write([]byte(d.ID))
	h.Write([]byte{0})
	var b [8]byte
	for _, w := range d.Fingerprint {
		binary.LittleEndian.PutUint64(b[:], w)
		h.Write(b[:])
	}
	binary.LittleEndian.PutUint64(b[:], uint64(d.Added.UnixNano()))
	h.Write(b[:])
	h.Write(d.ContentHash[:])
	return h.Sum64()
}

// async runs a request handler on its own goroutine (bounded by sem),
// so that one slow request does not hold the subscription's others. The
// handler is given the request's arrival, before its wait for a slot:
// the router's attempt counts that wait too.
func (r *replica) async(sem chan struct{}, fn func(*nats.Msg, time.Time)) nats.MsgHandler {
	return func(m *nats.Msg) {
		came := time.Now()
		select {
		case sem <- struct{}{}:
		case <-r.quit:
			return
		}
		r.ccMu.Lock()
		if r.closing {
			r.ccMu.Unlock()
			<-sem
			return
		}
		r.wg.Add(1)
		r.ccMu.Unlock()
		go func() {
			defer func() { <-sem; r.wg.Done() }()
			fn(m, came)
		}()
	}
}

// watchdog restarts the log consumer when the replica is behind the log
// and has not moved for two checks in a row (a consumer that lost its
// server, through a partition or a leader change, may otherwise wait a
// long time before it resets itself).
func (r *replica) watchdog() {
	defer r.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var prev uint64
	stuck := 0
	for {
		select {
		case <-r.quit:
			return
		case <-t.C:
		}
		r.closeIdlePins()
		st := r.state()
		if st.Err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
		info, err := r.n.js.Stream(ctx, logStream)
		var last uint64
		if err == nil {
			last = info.CachedInfo().State.LastSeq
		}
		cancel()
		if err != nil || last <= st.Applied || st.Applied != prev {
			stuck, prev = 0, st.Applied
			continue
		}
		if stuck++; stuck >= 2 {
			r.n.opts.Logger.Info("replica behind the log and not moving: restarting its consumer", "shard", r.shard, "applied", st.Applied, "last", last)
			ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
			if err := r.follow(ctx); err != nil {
				r.n.opts.Logger.Warn("restart of the log consumer failed", "shard", r.shard, "err", err)
			}
			cancel()
			stuck = 0
		}
	}
}

// closeIdlePins closes the databases of the pins no task holds and none
// used for pinLease (their checkpoints stay, opened again when asked for):
// an opened pin holds a whole index in memory.
func (r *replica) closeIdlePins() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.pinUse {
		if st.db != nil && st.refs == 0 && time.Since(st.used) > pinLease {
			st.db.Close()
			st.db = nil
		}
	}
}

func (r *replica) close() error {
	r.ccMu.Lock()
	r.closing = true
	if r.cc != nil {
		stopConsumer(r.cc)
		r.cc = nil
	}
	r.ccMu.Unlock()
	for _, s := range r.subs {
		s.Unsubscribe()
	}
	close(r.quit)
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for seq, st := range r.pinUse {
		if st.db != nil {
			errs = append(errs, st.db.Close())
		}
		delete(r.pinUse, seq)
	}
	if r.failed == nil {
		r.failed = ErrClosed
	}
	errs = append(errs, r.d.Close())
	return errors.Join(errs...)
}

// reply answers a request with v as JSON.
func reply(m *nats.Msg, v any) {
	b, err := json.Marshal(v)
	if err == nil && len(b) > maxReply {
		err = fmt.Errorf("an answer of %d bytes, more than a message holds (%d): ask for fewer matches (a limit, a higher threshold)", len(b), maxReply)
	}
	if err != nil {
		b, _ = json.Marshal(status{Err: err.Error()})
	}
	m.Respond(b)
}

// maxReply bounds a reply's size (the servers take messages of up to
// 8 MiB).
const maxReply = 7 << 20
