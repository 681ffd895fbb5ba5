package cluster

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/nats-io/nats.go"
)

// exportPageDocs is the most documents an export page holds, and
// exportPageBytes the most bytes of their export lines in its reply
// (under the 8 MiB message limit; a page holds one document at least).
const (
	exportPageDocs  = 1000
	exportPageBytes = 2 << 20
)

// exportPageTime bounds the attempts at one page of an export (at least
// four attempts of the node's RequestTimeout): a pin that no replica
// holds any more fails the export then.
const exportPageTime = time.Minute

// exportRequest asks a replica for a page of its shard's documents at a
// pin: those whose id sorts after After, in id order.
type exportRequest struct {
	Pin   uint64 `json:"pin"`
	After string `json:"after"`
}

// exportHead is the first line of an export page: its documents' ids, in
// order, and how the shard stands.
type exportHead struct {
	IDs []string `json:"ids"`
	// Total is the number of the shard's documents at the pin.
	Total int `json:"total"`
	// More says documents may follow the page's last.
	More bool `json:"more"`
	status
}

// exportPage is a page of a shard's documents at a pin as a replica sends
// it: the head's JSON on one line, then each document's line of the
// export format (db.Params.AppendExportLine), which the router writes as they
// are. The ids in the head order the merge, so that the router decodes no
// document. An error is answered as a status alone.
type exportPage struct {
	exportHead
	lines [][]byte
}

// decodeReply reads a page (replyDecoder).
func (p *exportPage) decodeReply(data []byte) (status, error) {
	head, rest := data, []byte(nil)
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		head, rest = data[:i], data[i+1:]
	}
	*p = exportPage{}
	if err := json.Unmarshal(head, &p.exportHead); err != nil {
		return status{}, fmt.Errorf("export page: %w", err)
	}
	if p.Behind || p.Err != "" {
		return p.status, nil
	}
	p.lines = make([][]byte, 0, len(p.IDs))
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return p.status, errors.New("export page: its last line has no end")
		}
		p.lines, rest = append(p.lines, rest[:i+1]), rest[i+1:]
	}
	if len(p.lines) != len(p.IDs) {
		return p.status, fmt.Errorf("export page: %d ids, %d lines", len(p.IDs), len(p.lines))
	}
	return p.status, nil
}

// serveExport answers a page of the shard's documents at the pin asked
// for (db.DB.DocsAfter on the pin's checkpoint): the same on every replica,
// so that a page a replica failed to send is asked of another.
func (r *replica) serveExport(m *nats.Msg, came time.Time) {
	var req exportRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		reply(m, status{Err: "bad request: " + err.Error()})
		return
	}
	ctx, cancel := context.WithDeadline(r.base, came.Add(r.n.opts.RequestTimeout))
	defer cancel()
	pd, release, err := r.pinDB(ctx, req.Pin)
	var docs []db.Doc
	if err == nil {
		defer release()
		docs, err = pd.DocsAfter(ctx, req.After, exportPageDocs)
	}
	if err != nil {
		reply(m, status{Err: err.Error(), Behind: r.transient(err)})
		return
	}
	page, err := exportPageBytesOf(pd.Params(), docs, req.Pin, pd.Len())
	if err != nil {
		reply(m, status{Err: err.Error()})
		return
	}
	m.Respond(page)
}

// exportPageBytesOf makes the page of docs (the first of them, up to
// exportPageBytes of ids and lines together: each id is sent twice, in
// the head and in its line). The head's JSON escapes no HTML character, as
// the lines do not, so that the head is never larger than the lines.
func exportPageBytesOf(p db.Params, docs []db.Doc, pin uint64, total int) ([]byte, error) {
	var ids bytes.Buffer // the head's ids, comma-separated JSON strings
	enc := json.NewEncoder(&ids)
	enc.SetEscapeHTML(false)
	more := len(docs) == exportPageDocs
	var lines []byte
	for i := range docs {
		n, m := len(lines), ids.Len()
		var err error
		if lines, err = p.AppendExportLine(lines, &docs[i]); err != nil {
			return nil, err
		}
		if i > 0 {
			ids.WriteByte(',')
		}
		if err := enc.Encode(docs[i].ID); err != nil {
			return nil, err
		}
		ids.Truncate(ids.Len() - 1) // Encode's newline
		if len(lines)+ids.Len() > exportPageBytes && i > 0 {
			lines, more = lines[:n], true
			ids.Truncate(m)
			break
		}
	}
	var head bytes.Buffer
	enc = json.NewEncoder(&head)
	enc.SetEscapeHTML(false)
	err := enc.Encode(struct {
		IDs json.RawMessage `json:"ids"` // encoded above; hides exportHead's
		exportHead
	}{json.RawMessage("[" + ids.String() + "]"), exportHead{Total: total, More: more, status: status{Seq: pin}}})
	if err != nil {
		return nil, err
	}
	if size := head.Len() + len(lines); size > maxReply {
		// Only a page of one document can be (its line alone is this
		// large): every replica answers the same, so the export fails.
		return nil, fmt.Errorf("document %q: an export page of %d bytes, more than a message holds (%d)", docs[0].ID, size, maxReply)
	}
	return append(head.Bytes(), lines...), nil
}

// exportCursor reads one shard's documents at a pin, page by page, a page
// ahead of the merge, from the replica that answered its last page (one
// replica opens the pin's checkpoint, unless it fails).
type exportCursor struct {
	shard int
	total int
	node  string
	ids   []string     // the ids of the page's documents left
	lines [][]byte     // and their lines
	next  chan fetched // the page after page; closed after the last
}

// fetched is a page fetch read ahead, or the error that ended it.
type fetched struct {
	page *exportPage
	err  error
}

// exportPageOf asks a replica of shard c.shard — the one that answered
// its last page first — for the page of its documents at pin after the
// id after. Each attempt gets the node's RequestTimeout (the first page
// opens the checkpoint, which a replica goes on opening when the attempt
// ends: a later attempt finds it open), and the page exportPageTime.
func (r *Router) exportPageOf(ctx context.Context, c *exportCursor, pin uint64, after string) (*exportPage, error) {
	ctx, cancel := context.WithTimeout(ctx, max(4*r.opts.RequestTimeout, exportPageTime))
	defer cancel()
	var p exportPage
	node, err := r.requestFrom(ctx, c.shard, c.node, r.opts.RequestTimeout, "export", exportRequest{Pin: pin, After: after}, &p)
	if err != nil {
		return nil, err
	}
	c.node = node
	s := c.shard
	if p.Err != "" {
		return nil, fmt.Errorf("fpdb cluster: export: shard %d: %s", s, p.Err)
	}
	for i := 1; i < len(p.IDs); i++ {
		if p.IDs[i] <= p.IDs[i-1] {
			return nil, fmt.Errorf("fpdb cluster: export: shard %d: page out of id order at %q", s, p.IDs[i])
		}
	}
	if len(p.IDs) > 0 && p.IDs[0] <= after {
		return nil, fmt.Errorf("fpdb cluster: export: shard %d: page after %q starts at %q", s, after, p.IDs[0])
	}
	return &p, nil
}

// fetch reads the pages after the id after into c.next until the last,
// or an error, or ctx's end.
func (r *Router) fetch(ctx context.Context, c *exportCursor, pin uint64, after string) {
	defer close(c.next)
	for more := true; more; {
		p, err := r.exportPageOf(ctx, c, pin, after)
		if err == nil && p.Total != c.total {
			err = fmt.Errorf("fpdb cluster: export: shard %d: %d documents at pin %d, then %d", c.shard, c.total, pin, p.Total)
		}
		if err == nil && p.More && len(p.IDs) == 0 {
			err = fmt.Errorf("fpdb cluster: export: shard %d: an empty page with more to come", c.shard)
		}
		if err == nil {
			more = p.More
			if len(p.IDs) > 0 {
				after = p.IDs[len(p.IDs)-1]
			}
		}
		select {
		case c.next <- fetched{page: p, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// cursorHeap orders the cursors with documents left by their next id.
type cursorHeap []*exportCursor

func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(i, j int) bool { return h[i].ids[0] < h[j].ids[0] }
func (h cursorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.(*exportCursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// Export writes every stored document to w in the export format of a
// single database (db.DB.Export: a header line with the shards' creation
// parameters and the number of documents, then one line per document),
// sorted by id, as of one log sequence: it appends a pin (every replica
// keeps a checkpoint of its shard at it) and reads each shard's
// checkpoint in pages of up to exportPageDocs documents or
// exportPageBytes, the shards merged by id, a page ahead of the writing
// (up to three pages per shard in memory). The pages of a shard are asked
// of the replica that sent the last, so that one replica opens the
// checkpoint; a page that replica fails to send is asked of another
// (every replica's checkpoint at the pin holds the same documents). A
// replica keeps the pin while a page is read and for pinLease after, so
// that newer pins do not drop it under a running export. A cluster keeps
// no texts and no audit log: the export has neither. It returns the number
// of documents passed to w; on error the export is cut short (Import
// refuses it).
func (r *Router) Export(ctx context.Context, w io.Writer) (int, error) {
	pin, err := r.Pin(ctx)
	if err != nil {
		return 0, fmt.Errorf("fpdb cluster: export: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	v := r.smap.Shards
	cursors := make([]*exportCursor, v)
	firsts := make([]*exportPage, v)
	errs := make([]error, v)
	done := make(chan int, v)
	for s := range v {
		cursors[s] = &exportCursor{shard: s, next: make(chan fetched, 1)}
		go func() {
			firsts[s], errs[s] = r.exportPageOf(ctx, cursors[s], pin, "")
			done <- s
		}()
	}
	for range v {
		<-done
	}
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("fpdb cluster: export at %d: %w", pin, err)
	}
	total := 0
	h := make(cursorHeap, 0, v)
	for s, p := range firsts {
		c := cursors[s]
		c.total, c.ids, c.lines = p.Total, p.IDs, p.lines
		total += p.Total
		if len(c.ids) == 0 {
			continue
		}
		if p.More {
			go r.fetch(ctx, c, pin, c.ids[len(c.ids)-1])
		} else {
			close(c.next)
		}
		h = append(h, c)
	}
	heap.Init(&h)
	ew, err := db.NewExportWriter(w, r.gw.Params(), total)
	if err != nil {
		return 0, fmt.Errorf("fpdb cluster: export: %w", err)
	}
	n := 0
	for h.Len() > 0 {
		c := h[0]
		if err := ew.WriteLine(c.lines[0]); err != nil {
			return n, fmt.Errorf("fpdb cluster: export: shard %d: %w", c.shard, err)
		}
		n++
		if c.ids, c.lines = c.ids[1:], c.lines[1:]; len(c.ids) == 0 {
			var f fetched
			select {
			case f = <-c.next:
			case <-ctx.Done():
				return n, fmt.Errorf("fpdb cluster: export: %w", ctx.Err())
			}
			if f.err != nil {
				return n, fmt.Errorf("fpdb cluster: export at %d: %w", pin, f.err)
			}
			if f.page != nil {
				c.ids, c.lines = f.page.IDs, f.page.lines
			}
		}
		if len(c.ids) == 0 {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
	}
	if n != total {
		return n, fmt.Errorf("fpdb cluster: export at %d: %d documents counted, %d read", pin, total, n)
	}
	if err := ew.Flush(); err != nil {
		return n, fmt.Errorf("fpdb cluster: export: %w", err)
	}
	return n, nil
}

// importChunk is the number of documents of an export Import appends with
// one Router.Add (a single database imports as many per atomic batch):
// 1 000 stored 7 000 documents/s on a 2-core machine, 5 000 and 10 000
// about 12 500.
const importChunk = 10_000

// ImportResult is the outcome of Import.
type ImportResult struct {
	// Imported is the number of documents stored.
	Imported int
	// DroppedTexts and DroppedLogEntries count what a cluster does not
	// keep of the export: the documents' texts and the entries of its
	// audit log.
	DroppedTexts, DroppedLogEntries int
}

// Import stores the documents of an export (the format db.DB.Export and
// Export write) in the cluster, which must hold no document when it
// starts (db.ErrNotEmpty otherwise), keeping their ids, fingerprints,
// content hashes, metadata and times added. The export's fingerprint
// parameters must be the cluster's, and it may carry no templates (the
// fingerprints were made without their shingles, which a cluster's would
// not be): a *db.ParamsError otherwise. A cluster keeps no texts and no
// audit log: the export's are read and counted, not kept. Documents are
// appended in the export's order, importChunk per Router.Add (in log
// messages of at most the router's message size); writes made through
// other routers meanwhile are not held off.
//
// An id given twice is refused (db.ErrBadExport), as a single database's
// import refuses it: within a chunk, naming both lines, before anything of
// the chunk is appended; across chunks, before the chunk of the later
// line is appended (the earlier chunks stay, as a single database keeps
// the batches it stored). To know the ids of the earlier chunks, Import
// keeps a 64-bit hash of each id it appended (8 bytes of memory a
// document, 16 at times: idHashes); a later id of the same hash is looked
// up in the shards, and refused only if it is stored (the cluster was empty: an earlier line
// stored it, unless a write through another router did meanwhile).
//
// On error the cluster holds the documents the result counts: those of
// the chunks appended before it, and of the log messages of the failing
// chunk acknowledged before its failure (a chunk larger than one message
// is appended in several, see Router.Add). When the error wraps
// ErrOutcomeUnknown, the message under way when it came may be stored
// too.
func (r *Router) Import(ctx context.Context, rd io.Reader) (ImportResult, error) {
	var res ImportResult
	x, err := db.NewExportReader(rd)
	if err != nil {
		return res, err
	}
	h := x.Header()
	checked := h
	checked.AuditLog = false // read and dropped
	if err := r.gw.Params().CheckExport(checked); err != nil {
		return res, fmt.Errorf("fpdb cluster: import: %w", err)
	}
	if len(h.Templates) > 0 {
		return res, fmt.Errorf("fpdb cluster: import: %w", &db.ParamsError{Param: "Templates",
			Stored: strconv.Itoa(len(h.Templates)) + " templates", Given: "none (a cluster keeps no templates)", Export: true})
	}
	last, err := r.LastSeq(ctx)
	if err != nil {
		return res, fmt.Errorf("fpdb cluster: import: %w", err)
	}
	if stored, err := r.Len(ctx, max(last, r.Written())); err != nil {
		return res, fmt.Errorf("fpdb cluster: import: %w", err)
	} else if stored > 0 {
		return res, fmt.Errorf("fpdb cluster: import: %w: the cluster holds %d documents", db.ErrNotEmpty, stored)
	}
	chunk := make([]db.Input, 0, r.importChunk)
	lines := map[string]int{} // of the ids in chunk
	seen := newIDHashes(r.importHash)
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		ars, err := r.Add(ctx, chunk, AddOptions{})
		if err != nil {
			for _, a := range ars {
				if a.Stored {
					res.Imported++
				}
			}
			return fmt.Errorf("fpdb cluster: import: line %d: %w", x.Line(), err)
		}
		res.Imported += len(chunk)
		seen.add(chunk)
		res.DroppedTexts = x.Texts()
		chunk = chunk[:0]
		clear(lines)
		return nil
	}
	for {
		doc, entry, err := x.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, fmt.Errorf("fpdb cluster: import: %w", err)
		}
		if entry != nil {
			res.DroppedLogEntries++
			continue
		}
		if first, ok := lines[doc.ID]; ok {
			// As a single database refuses an id twice in one batch.
			return res, fmt.Errorf("fpdb cluster: import: %w: line %d: id %q given on line %d too", db.ErrBadExport, x.Line(), doc.ID, first)
		}
		if seen.has(doc.ID) {
			// The hash of an id of an earlier chunk: that id, if this
			// one is stored.
			_, err := r.Get(ctx, doc.ID, r.Written())
			switch {
			case err == nil:
				return res, fmt.Errorf("fpdb cluster: import: %w: line %d: %q: an earlier line has this id", db.ErrBadExport, x.Line(), doc.ID)
			case !errors.Is(err, db.ErrNotFound):
				return res, fmt.Errorf("fpdb cluster: import: line %d: %w", x.Line(), err)
			}
		}
		lines[doc.ID] = x.Line()
		if chunk = append(chunk, *doc); len(chunk) >= r.importChunk {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	return res, flush()
}

// idHashes remembers ids by their 64-bit hashes, in sorted runs merged
// as a binary counter's digits are: 8 bytes an id (16 while the largest
// runs merge), a look-up one binary search in each of the log2(n/chunk)
// runs or so.
type idHashes struct {
	seed maphash.Seed
	hash func(string) uint64 // when not nil, instead of maphash (tests)
	runs [][]uint64          // each sorted, and at least twice as long as the next
}

func newIDHashes(hash func(string) uint64) *idHashes {
	return &idHashes{seed: maphash.MakeSeed(), hash: hash}
}

func (s *idHashes) sum(id string) uint64 {
	if s.hash != nil {
		return s.hash(id)
	}
	return maphash.String(s.seed, id)
}

// has reports whether an id of id's hash was added (id, or rarely
// another).
func (s *idHashes) has(id string) bool {
	h := s.sum(id)
	for _, run := range s.runs {
		if _, ok := slices.BinarySearch(run, h); ok {
			return true
		}
	}
	return false
}

// add adds the ids of docs.
func (s *idHashes) add(docs []db.Input) {
	run := make([]uint64, len(docs))
	for i, d := range docs {
		run[i] = s.sum(d.ID)
	}
	slices.Sort(run)
	s.runs = append(s.runs, run)
	for n := len(s.runs); n >= 2 && len(s.runs[n-2]) < 2*len(s.runs[n-1]); n = len(s.runs) {
		a, b := s.runs[n-2], s.runs[n-1]
		m := make([]uint64, 0, len(a)+len(b))
		for len(a) > 0 && len(b) > 0 {
			if a[0] <= b[0] {
				m, a = append(m, a[0]), a[1:]
			} else {
				m, b = append(m, b[0]), b[1:]
			}
		}
		s.runs = append(s.runs[:n-2], append(append(m, a...), b...))
	}
}
