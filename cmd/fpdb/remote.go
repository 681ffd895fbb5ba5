package main

// The command line as a client of "fpdb serve": with --server URL, add,
// query, get, delete, compare, pairs, clusters, stats, export and import send their work to the
// server instead of opening --db. Texts are still read here (files,
// directories, standard input, --format and --encoding) and sent as they
// are; the server fingerprints them. The answers are turned into the db
// package's values that the local commands print, so that both print the
// same lines and exit with the same status.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/client"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
)

// Environment variables of the remote mode.
const (
	// envServer gives the default of --server.
	envServer = "FPDB_SERVER"
	// envToken is the server's token, when --token-file is not given.
	envToken = "FPDB_TOKEN"
)

// remoteCommands are the commands that work through a server.
var remoteCommands = []string{"add", "query", "get", "delete", "compare", "pairs", "clusters", "stats", "export", "import"}

// localOnly are the commands that neither open a database nor talk to a
// server: --server (or $FPDB_SERVER) does not concern them.
var localOnly = []string{"version", "man", "completion", "help", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd}

// registerRemote declares --server and --token-file on root and checks,
// before any command runs, that the command can work through a server.
func (g *globalOptions) registerRemote(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&g.server, "server", os.Getenv(envServer),
		"work through the fpdb server at `URL` (fpdb serve) instead of --db: add, query, get, delete, compare, pairs, clusters, stats, export and import (default $"+envServer+")")
	f.Lookup("server").DefValue = "" // help output does not depend on the environment
	f.StringVar(&g.tokenFile, "token-file", "", "with --server: read the server's token from `FILE` (default: $"+envToken+")")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		g.stderr = cmd.ErrOrStderr()
		g.command = cmd.CommandPath()
		if g.wait < 0 {
			return usageError(&flagValueError{flag: "wait", value: g.wait.String(), reason: "must not be negative (0: fail at once)"})
		}
		g.remoteCapable = cmd.Parent() == cmd.Root() && slices.Contains(remoteCommands, cmd.Name())
		return g.checkRemote(cmd)
	}
}

// remote reports whether the commands work through a server.
func (g *globalOptions) remote() bool { return g.server != "" }

// checkRemote refuses --server for a command that cannot work through a
// server, and --db or --token-file where they do not apply.
func (g *globalOptions) checkRemote(cmd *cobra.Command) error {
	top := cmd
	for top.HasParent() && top.Parent().HasParent() {
		top = top.Parent()
	}
	name := top.Name()
	if slices.Contains(localOnly, name) {
		return nil
	}
	explicit := cmd.Flags().Changed("server")
	if g.remote() && !explicit && cmd.Flags().Changed("db") {
		// An explicit --db wins over $FPDB_SERVER, --server's default:
		// every command then works on that database, here.
		g.server = ""
		if cmd.Flags().Changed("token-file") {
			return usageErrorf("--token-file goes with --server: --db given, $%s is not used", envServer)
		}
		return nil
	}
	if !g.remote() {
		if explicit {
			return usageErrorf("--server is empty: give the URL of an fpdb server (e.g. --server http://127.0.0.1:7700)")
		}
		if cmd.Flags().Changed("token-file") {
			return usageErrorf("--token-file goes with --server (or $%s)", envServer)
		}
		return nil
	}
	if !explicit && (name == "serve" || name == "tune" && cmd.Flags().Changed("k")) {
		// $FPDB_SERVER names a server to use, not one to be; tune --k
		// needs none.
		return nil
	}
	if !slices.Contains(remoteCommands, name) || top != cmd {
		via := "--server"
		if !explicit {
			via = "$" + envServer
		}
		return usageErrorf("%s: works on a local database only, not through a server (%s is set); through a server: %s",
			cmd.CommandPath()[len(cmd.Root().Name())+1:], via, strings.Join(remoteCommands, ", "))
	}
	if cmd.Flags().Changed("db") { // --server given: $FPDB_SERVER gave way above
		return usageErrorf("%s: give --db or --server, not both", name)
	}
	return nil
}

// client returns a client of the server, with the token of --token-file
// or $FPDB_TOKEN.
func (g *globalOptions) client() (*client.Client, error) {
	token := os.Getenv(envToken)
	if g.tokenFile != "" {
		var err error
		if token, err = readToken(g.tokenFile); err != nil {
			return nil, err
		}
	}
	c, err := client.New(g.server, &client.Options{Token: token})
	if err != nil {
		return nil, usageError(fmt.Errorf("invalid --server: %w", err))
	}
	return c, nil
}

// readToken reads a token file: the token alone on its first line that is
// neither blank nor a # comment, or, in a file of the server's form (lines
// "ro TOKEN" and "rw TOKEN": the server's own token file), its first rw
// token, else its first ro one (a read-write token serves every command).
// A file that mixes the two forms, or has another line, is refused.
func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var bare, rw, ro []string
	for first := true; sc.Scan(); first = false {
		line := sc.Text()
		if first {
			line = strings.TrimPrefix(line, "\ufeff") // a UTF-8 byte-order mark
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		switch fs := strings.Fields(line); {
		case len(fs) == 1 && fs[0] != "ro" && fs[0] != "rw":
			bare = append(bare, fs[0])
		case len(fs) == 2 && fs[0] == "rw":
			rw = append(rw, fs[1])
		case len(fs) == 2 && fs[0] == "ro":
			ro = append(ro, fs[1])
		default:
			return "", fmt.Errorf("--token-file %s: want the token alone on a line, or lines \"ro TOKEN\" and \"rw TOKEN\"", path)
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("--token-file %s: %w", path, err)
	}
	switch {
	case len(bare) > 0 && len(rw)+len(ro) > 0:
		return "", fmt.Errorf("--token-file %s: want the token alone on a line, or lines \"ro TOKEN\" and \"rw TOKEN\", not both", path)
	case len(bare) > 0:
		return bare[0], nil
	case len(rw) > 0:
		return rw[0], nil
	case len(ro) > 0:
		return ro[0], nil
	}
	return "", fmt.Errorf("--token-file %s: no token in the file", path)
}

// remoteError is an error of the server, with the db package's sentinel
// its message names, so that the commands classify it (exit status,
// fatal or not) as they classify the database's own error.
type remoteError struct {
	text string
	errs []error
}

func (e *remoteError) Error() string { return e.text }

func (e *remoteError) Unwrap() []error { return e.errs }

// fromServer returns err, an error of the client, as the commands use
// it: a server's answer carries the db sentinel its reason names, a
// refused token says what to do.
func fromServer(err error) error {
	var ce *client.Error
	if !errors.As(err, &ce) {
		return err
	}
	re := &remoteError{text: ce.Message, errs: []error{err}}
	if s := apiconv.ReasonError(ce.Reason); s != nil {
		re.errs = append(re.errs, s)
	}
	switch ce.Code {
	case api.CodeNotFound:
		re.errs = append(re.errs, db.ErrNotFound)
	case api.CodeTooLarge:
		re.errs = append(re.errs, db.ErrTextTooLarge)
	case api.CodeForbidden:
		re.text += " (a read-only token: add and delete need a read-write one)"
	case api.CodeUnauthorized:
		re.text += " (give the server's token with --token-file FILE or $" + envToken + ")"
	}
	return re
}

// isRemoteFatal reports whether an error of the server means that the
// other inputs cannot be sent either.
func isRemoteFatal(err error) bool {
	return errors.Is(err, client.ErrUnreachable) || errors.Is(err, client.ErrUnauthorized) ||
		errors.Is(err, client.ErrForbidden) || errors.Is(err, client.ErrUnavailable)
}

// textInput returns how the server is to read a text.
func textInput(to db.TextOptions) api.TextInput {
	t := api.TextInput{Encoding: to.Encoding}
	if to.Format != db.FormatAuto {
		t.Format = to.Format.String()
	}
	return t
}

// inputText reads the text of in (its Open, its Reader, else its Text).
func inputText(in db.Input) ([]byte, error) {
	switch {
	case in.Open != nil:
		rc, err := in.Open()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	case in.Reader != nil:
		return io.ReadAll(in.Reader)
	}
	return in.Text, nil
}

// matchesOf returns the db form of ms.
func matchesOf(ms []api.Match) []db.Match {
	out := make([]db.Match, len(ms))
	for i, m := range ms {
		out[i] = db.Match{ID: m.ID, Similarity: m.Similarity, Hamming: m.Hamming, Exact: m.Exact,
			QueryInDoc: m.QueryInDoc, DocInQuery: m.DocInQuery}
	}
	return out
}

// remoteAdder returns the adder that sends each document to the server.
func remoteAdder(c *client.Client) adder {
	return func(ctx context.Context, in db.Input, o *db.AddOptions) (*db.AddResult, error) {
		text, err := inputText(in)
		if err != nil {
			return nil, err
		}
		req := addRequest(in, text)
		if o != nil {
			req.Threshold, req.Reject, req.Limit = o.Threshold, o.Reject, o.Limit
		}
		res, err := c.Add(ctx, req)
		if err != nil {
			return nil, fromServer(err)
		}
		return addResultOf(res), nil
	}
}

// addRequest returns the request that adds in, whose text is text.
func addRequest(in db.Input, text []byte) api.AddRequest {
	return api.AddRequest{ID: in.ID, Text: string(text), Source: in.Source, Replace: in.ReplaceUnchanged, TextInput: textInput(in.TextOptions)}
}

// addResultOf returns the db form of a server's answer to an add.
func addResultOf(r *api.AddResult) *db.AddResult {
	return &db.AddResult{Stored: r.Stored, Replaced: r.Replaced, Unchanged: r.Unchanged, Matches: matchesOf(r.Matches)}
}

// remoteEach returns the eachFunc of add through a server: the documents
// go in one checked batch (client.BatchChecked). They go one by one
// through add instead, as before checked batches existed, when a batch
// cannot carry them — a text, id or source that is not UTF-8 (a batch is
// JSON: the server must see a text's own bytes to read its encoding) — or
// the server refused it whole (refusedWhole): a server or cluster node
// without checked batches (400, 501), too large. Any other failure ends
// the run: the server may have stored the batch and lost its answer.
func remoteEach(c *client.Client, add adder) eachFunc {
	one := oneByOne(add)
	batches := true
	return func(ctx context.Context, docs []db.Input, o *db.AddOptions) (*db.EachResult, error) {
		if len(docs) == 1 || !batches {
			return one(ctx, docs, o)
		}
		// The texts are read once, for the batch or for the fallback.
		ready := make([]db.Input, len(docs))
		reqs := make([]api.AddRequest, 0, len(docs))
		var at []int // reqs[j] is docs[at[j]]
		var unread []db.BatchSkip
		jsonable := true
		for i, in := range docs {
			ready[i] = in
			text, err := inputText(in)
			if err != nil {
				unread = append(unread, db.BatchSkip{Index: i, ID: in.ID, Err: err})
				continue // in the fallback, refused again by add
			}
			ready[i].Text, ready[i].Reader, ready[i].Open = text, nil, nil
			if !utf8.Valid(text) || !utf8.ValidString(in.ID) || !utf8.ValidString(in.Source) {
				jsonable = false
			}
			reqs = append(reqs, addRequest(in, text))
			at = append(at, i)
		}
		switch {
		case !jsonable:
			return one(ctx, ready, o)
		case len(reqs) == 0:
			return &db.EachResult{Results: make([]*db.AddResult, len(docs)), Skipped: unread}, nil
		}
		br, err := c.BatchChecked(ctx, reqs, api.BatchCheck{Threshold: o.Threshold, Reject: o.Reject, Limit: o.Limit})
		if err != nil {
			var ce *client.Error
			if errors.As(err, &ce) && (ce.Status == http.StatusNotImplemented || ce.Status == http.StatusBadRequest) {
				batches = false // not served: the next batches go one by one too
			}
			if !refusedWhole(err) || ctx.Err() != nil {
				// Maybe stored, with the answer lost: not sent again.
				return nil, fromServer(err)
			}
			return one(ctx, ready, o)
		}
		res, err := eachResult(br, at, len(docs))
		if err != nil {
			return nil, err
		}
		res.Skipped = append(res.Skipped, unread...)
		slices.SortFunc(res.Skipped, func(a, b db.BatchSkip) int { return a.Index - b.Index })
		return res, nil
	}
}

// refusedWhole reports whether err, a checked batch's failure, is an
// answer of the server that stored nothing, so that its documents may be
// sent again one by one: a 501 (a cluster node before checked batches),
// or a 4xx of the API other than a timeout (a 400 from a server before
// checked batches, a 413, a 429 after the client's retries; 401 and 403
// end the run anyway).
func refusedWhole(err error) bool {
	var ce *client.Error
	if !errors.As(err, &ce) {
		return false // no answer, or not the server's
	}
	switch {
	case ce.Status == http.StatusNotImplemented:
		return true
	case ce.Code == "" || ce.Status == http.StatusRequestTimeout:
		return false
	}
	return ce.Status >= 400 && ce.Status < 500
}

// eachResult returns the db form of br, the answer to a checked batch of
// the documents at (at[j] is line j+1's position among n).
func eachResult(br *api.BatchResult, at []int, n int) (*db.EachResult, error) {
	res := &db.EachResult{Results: make([]*db.AddResult, n)}
	index := func(line int) (int, error) {
		if line < 1 || line > len(at) {
			return 0, fmt.Errorf("the server answered line %d of a batch of %d", line, len(at))
		}
		return at[line-1], nil
	}
	answered := make([]bool, n)
	for _, sk := range br.Skipped {
		i, err := index(sk.Line)
		if err != nil {
			return nil, err
		}
		re := &remoteError{text: sk.Error}
		if e := apiconv.ReasonError(sk.Reason); e != nil {
			re.errs = append(re.errs, e)
		}
		res.Skipped = append(res.Skipped, db.BatchSkip{Index: i, ID: sk.ID, Err: re})
		answered[i] = true
	}
	for k := range br.Results {
		i, err := index(br.Results[k].Line)
		if err != nil {
			return nil, err
		}
		res.Results[i] = addResultOf(&br.Results[k])
		answered[i] = true
	}
	for _, i := range at {
		if !answered[i] {
			return nil, fmt.Errorf("the server answered nothing for document %d of a batch", i+1)
		}
	}
	return res, nil
}

// planName returns the API's name of a plan kind.
func planName(k db.PlanKind) string {
	switch k {
	case db.PlanScan:
		return "scan"
	case db.PlanProbe:
		return "probe"
	case db.PlanApprox:
		return "approx"
	}
	return ""
}

// remoteQuerier returns the querier that sends each text to the server;
// explain asks for the plan's counters.
func remoteQuerier(c *client.Client, explain bool) querier {
	return func(ctx context.Context, r io.Reader, qo db.QueryOptions) (*db.QueryResult, jsonExplain, error) {
		text, err := io.ReadAll(r)
		if err != nil {
			return nil, jsonExplain{}, err
		}
		if len(text) == 0 { // the server would take it for a missing text
			return nil, jsonExplain{}, db.ErrNoWords
		}
		req := api.QueryRequest{Text: string(text), Threshold: qo.Threshold, Containment: qo.Containment, Limit: qo.Limit,
			Plan: planName(qo.Plan.Kind), Explain: explain, TextInput: textInput(qo.TextOptions)}
		switch qo.Plan.Kind {
		case db.PlanProbe:
			if qo.Plan.Tau >= 0 { // else the server's smallest exact radius
				tau := qo.Plan.Tau
				req.Tau = &tau
			}
		case db.PlanApprox:
			req.Recall = qo.Plan.MinRecall
		}
		res, err := c.Query(ctx, req)
		if err != nil {
			return nil, jsonExplain{}, fromServer(err)
		}
		var ex jsonExplain
		if res.Explain != nil {
			ex = *res.Explain
		}
		return &db.QueryResult{Matches: matchesOf(res.Matches)}, ex, nil
	}
}

// remoteDoc returns the printed form of a document of the server.
func remoteDoc(d *api.Doc) jsonDoc {
	added := d.Added
	if t, err := time.Parse(time.RFC3339Nano, d.Added); err == nil {
		added = t.Format(time.RFC3339) // as the local get prints it
	}
	return jsonDoc{ID: d.ID, Source: d.Source, Size: d.Size, Words: d.Words, Added: added,
		ContentHash: d.ContentHash, Fingerprint: d.Fingerprint}
}

// remoteStore carries out the deletes of "fpdb delete" on the server; it
// is the deleter of delete.go.
type remoteStore struct {
	c *client.Client
	// prefix and olderThan are --prefix and --older-than as given (the
	// server parses the age).
	prefix, olderThan string
}

// Delete deletes one document; pending reports that a cluster logged the
// delete without applying it (its shard has no live replica).
func (s *remoteStore) Delete(ctx context.Context, id string) (pending bool, err error) {
	res, err := s.c.Delete(ctx, id, nil)
	if err != nil {
		return false, fromServer(err)
	}
	return len(res.Pending) > 0, nil
}

// many sends a delete of many documents.
func (s *remoteStore) many(ctx context.Context, req api.DeleteRequest) (*api.DeleteResult, error) {
	res, err := s.c.DeleteMany(ctx, req)
	if err != nil {
		return nil, fromServer(err)
	}
	return res, nil
}

// DeleteMany deletes the documents ids; a cluster's answer lists those it
// logged the delete of without applying it in Pending.
func (s *remoteStore) DeleteMany(ctx context.Context, ids []string) (*deleteResult, error) {
	res, err := s.many(ctx, api.DeleteRequest{IDs: ids})
	if err != nil {
		return nil, err
	}
	return &deleteResult{DeleteResult: db.DeleteResult{Deleted: res.Deleted, NotFound: res.NotFound}, Pending: res.Pending}, nil
}

// DeletePrefix deletes the documents whose id starts with prefix.
func (s *remoteStore) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	res, err := s.many(ctx, api.DeleteRequest{Prefix: prefix})
	if err != nil {
		return 0, err
	}
	return res.Deleted, nil
}

// DeleteOlderThan deletes the documents older than --older-than (the
// server takes the age, and computes the cutoff itself).
func (s *remoteStore) DeleteOlderThan(ctx context.Context, _ time.Time) (int, error) {
	res, err := s.many(ctx, api.DeleteRequest{OlderThan: s.olderThan})
	if err != nil {
		return 0, err
	}
	return res.Deleted, nil
}

// Forget deletes ids and erases them from the audit log. A server that
// does not count the log entries erased and redacted gives -1 for them.
func (s *remoteStore) Forget(ctx context.Context, ids []string) (*db.ForgetResult, error) {
	res, err := s.many(ctx, api.DeleteRequest{IDs: ids, Forget: true})
	if err != nil {
		return nil, err
	}
	fr := &db.ForgetResult{Deleted: res.Deleted, NotFound: res.NotFound, Erased: -1, Redacted: -1}
	if res.Erased != nil && res.Redacted != nil {
		fr.Erased, fr.Redacted = *res.Erased, *res.Redacted
	}
	return fr, nil
}

// Has reports whether id is stored.
func (s *remoteStore) Has(ctx context.Context, id string) (bool, error) {
	_, err := s.c.Get(ctx, id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, client.ErrNotFound):
		return false, nil
	}
	return false, fromServer(err)
}

// Docs calls fn with each document a delete by the store's prefix or age
// would remove, as the server lists them in a dry run (only the id is
// known: Added is the zero time, before any cutoff).
func (s *remoteStore) Docs(ctx context.Context, fn func(db.Doc) error) error {
	res, err := s.many(ctx, api.DeleteRequest{Prefix: s.prefix, OlderThan: s.olderThan, DryRun: true})
	if err != nil {
		return err
	}
	for _, id := range res.IDs {
		if err := fn(db.Doc{ID: id}); err != nil {
			return err
		}
	}
	return nil
}

// pairOf returns the db form of p.
func pairOf(p api.Pair) db.Pair {
	return db.Pair{A: p.A, B: p.B, Similarity: p.Similarity, Hamming: p.Hamming, Exact: p.Exact}
}

// clusterOf returns the db form of c.
func clusterOf(c api.Cluster) db.Cluster {
	return db.Cluster{IDs: c.IDs, Pairs: c.Pairs, Keep: c.Keep, Drop: c.Drop, Center: c.Center, Cohesion: c.Cohesion}
}
