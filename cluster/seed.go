package cluster

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// seedBucket is the object store through which a replica hands a
// checkpoint of its shard to a new replica.
const seedBucket = "FPDB_SEED"

// seedTimeout bounds the hand-over of one checkpoint.
const seedTimeout = 10 * time.Minute

type seedReply struct {
	Object string `json:"object"`
	Seq    uint64 `json:"seq"`
	Err    string `json:"err,omitempty"`
}

// serveSeed answers a new replica of this shard: a checkpoint of the
// shard at the sequence applied now (no message is applied meanwhile),
// put in the seed bucket as a tar stream.
func (r *replica) serveSeed(m *nats.Msg, _ time.Time) {
	ctx, cancel := context.WithTimeout(r.base, seedTimeout)
	defer cancel()
	name, seq, err := r.putSeed(ctx)
	if err != nil {
		reply(m, seedReply{Err: err.Error()})
		return
	}
	reply(m, seedReply{Object: name, Seq: seq})
}

func (r *replica) putSeed(ctx context.Context) (string, uint64, error) {
	var b [6]byte
	rand.Read(b[:])
	tmp := filepath.Join(r.n.opts.Dir, "seeds", fmt.Sprintf("shard-%03d-%s", r.shard, hex.EncodeToString(b[:])))
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		return "", 0, err
	}
	defer os.RemoveAll(tmp)
	r.mu.Lock()
	seq, failed := r.applied, r.failed
	var err error
	if failed == nil {
		err = r.d.Checkpoint(ctx, tmp)
	}
	r.mu.Unlock()
	if failed != nil {
		return "", 0, failed
	}
	if err != nil {
		return "", 0, err
	}
	name := fmt.Sprintf("shard-%03d-seq-%d-%s", r.shard, seq, hex.EncodeToString(b[:]))
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, tmp)) }()
	_, err = r.n.obj.Put(ctx, jetstream.ObjectMeta{Name: name}, pr)
	pr.Close()
	if err != nil {
		return "", 0, fmt.Errorf("fpdb cluster: shard %d: put checkpoint: %w", r.shard, err)
	}
	return name, seq, nil
}

// seedReplica fills dir (which must not exist) with a checkpoint of shard
// s from a live replica of it. It returns false, with no error, when no
// replica answers (the new replica then replays the log from its start).
func (n *Node) seedReplica(ctx context.Context, s int, dir string) (bool, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	b, _ := json.Marshal(struct{}{})
	msg, err := n.nc.RequestWithContext(ctx, "fpdb.shard."+strconv.Itoa(s)+".seed", b)
	if errors.Is(err, nats.ErrNoResponders) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("fpdb cluster: shard %d: ask for a checkpoint: %w", s, err)
	}
	var rep seedReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return false, 0, err
	}
	if rep.Err != "" {
		return false, 0, fmt.Errorf("fpdb cluster: shard %d: checkpoint: %s", s, rep.Err)
	}
	defer n.obj.Delete(context.Background(), rep.Object)
	var obj jetstream.ObjectResult
	for {
		// The bucket's replica that serves this read may not hold the
		// object yet: try again for a while.
		obj, err = n.obj.Get(ctx, rep.Object)
		if !errors.Is(err, jetstream.ErrObjectNotFound) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
			continue
		}
		break
	}
	if err != nil {
		return false, 0, fmt.Errorf("fpdb cluster: shard %d: get checkpoint: %w", s, err)
	}
	defer obj.Close()
	tmp := dir + ".seeding"
	if err := os.RemoveAll(tmp); err != nil {
		return false, 0, err
	}
	if err := readTar(obj, tmp); err != nil {
		os.RemoveAll(tmp)
		return false, 0, fmt.Errorf("fpdb cluster: shard %d: checkpoint: %w", s, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return false, 0, err
	}
	return true, rep.Seq, nil
}

// writeTar writes the regular files under dir to w.
func writeTar(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: info.Size(), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// readTar extracts the regular files of a tar stream into dir, refusing
// names that would leave it.
func readTar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(h.Name)
		if h.Typeflag != tar.TypeReg || !filepath.IsLocal(name) {
			return fmt.Errorf("bad entry %q in a checkpoint", h.Name)
		}
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}

// AddReplica gives node a replica of shard s (compare-and-swap on the
// shard map). The node opens it when it sees the change: it copies a
// checkpoint of a live replica, then follows the log from the
// checkpoint's sequence.
func (n *Node) AddReplica(ctx context.Context, s int, node string) error {
	_, err := UpdateMap(ctx, n.kv, func(m *ShardMap) error {
		if s < 0 || s >= m.Shards {
			return fmt.Errorf("%w: no shard %d", ErrInvalidOptions, s)
		}
		if !slices.Contains(m.Nodes, node) {
			return fmt.Errorf("%w: no node %q in the cluster (%s)", ErrInvalidOptions, node, strings.Join(m.Nodes, ", "))
		}
		if slices.Contains(m.Assign[s], node) {
			return fmt.Errorf("%w: node %s already holds shard %d", ErrInvalidOptions, node, s)
		}
		m.Assign[s] = append(m.Assign[s], node)
		return nil
	})
	return err
}

// RemoveReplica takes shard s's replica away from node (compare-and-swap
// on the shard map); the node closes it and deletes its files. The last
// replica of a shard cannot be removed.
func (n *Node) RemoveReplica(ctx context.Context, s int, node string) error {
	_, err := UpdateMap(ctx, n.kv, func(m *ShardMap) error {
		if s < 0 || s >= m.Shards || !slices.Contains(m.Assign[s], node) {
			return fmt.Errorf("%w: node %s holds no replica of shard %d", ErrInvalidOptions, node, s)
		}
		if len(m.Assign[s]) == 1 {
			return fmt.Errorf("%w: the last replica of shard %d", ErrInvalidOptions, s)
		}
		m.Assign[s] = slices.DeleteFunc(m.Assign[s], func(x string) bool { return x == node })
		return nil
	})
	return err
}

// watchMap follows the shard map through w: the router's replica lists,
// and the node's own replicas (opened or closed as the map says). A watch
// that ends while the node runs is started again.
func (n *Node) watchMap(ctx context.Context, w jetstream.KeyWatcher) {
	defer n.wg.Done()
	for {
		n.followMap(ctx, w)
		w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			var err error
			if w, err = n.kv.Watch(ctx, mapKey); err == nil { // with the present value: nothing missed
				break
			}
			n.opts.Logger.Warn("cannot watch the shard map; trying again", "err", err)
		}
	}
}

// followMap applies the maps w delivers until it ends or ctx does.
func (n *Node) followMap(ctx context.Context, w jetstream.KeyWatcher) {
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			m := &ShardMap{}
			if err := json.Unmarshal(e.Value(), m); err != nil || m.validate() != nil || m.Shards != n.smap.Shards || m.ID != n.smap.ID {
				n.opts.Logger.Error("ignoring a shard map that is not valid", "revision", e.Revision(), "err", err)
				continue
			}
			m.Revision = e.Revision()
			n.reconcile(ctx, m)
		}
	}
}

// reconcile makes the node's replicas those m gives it.
func (n *Node) reconcile(ctx context.Context, m *ShardMap) {
	n.reconcileMu.Lock()
	defer n.reconcileMu.Unlock()
	if old := n.cur.Load(); old != nil && old.Revision > m.Revision {
		return
	}
	n.cur.Store(m)
	n.r.setAssign(m.Assign)
	mine := m.shardsOf(n.opts.Name)
	n.mu.Lock()
	var open, gone []int
	for _, s := range mine {
		if n.replicas[s] == nil {
			open = append(open, s)
		}
	}
	for s := range n.replicas {
		if !slices.Contains(mine, s) {
			gone = append(gone, s)
		}
	}
	n.mu.Unlock()
	for _, s := range gone {
		n.opts.Logger.Info("shard map: closing replica", "shard", s)
		if err := n.closeReplica(s); err != nil {
			n.opts.Logger.Warn("closing replica", "shard", s, "err", err)
		}
		os.RemoveAll(n.replicaDir(s))
	}
	for _, s := range open {
		n.opts.Logger.Info("shard map: opening replica", "shard", s)
		if err := n.openReplica(ctx, s); err != nil {
			n.opts.Logger.Error("opening replica", "shard", s, "err", err)
		}
	}
}
