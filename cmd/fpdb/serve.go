package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server"
)

// serveOptions are the flags of "fpdb serve".
type serveOptions struct {
	*globalOptions
	creation      creationFlags
	addr          string
	tokens        string
	cert, key     string
	maxBody       int64
	maxImport     int64
	timeout       time.Duration
	streamTimeout time.Duration
	maxConcurrent int
	grace         time.Duration
	logJSON       bool
	warm          bool
	addrGiven     bool
	allowHosts    []string
	backupRoot    string
	cluster       nodeFlags
}

// defaultAddr is where "fpdb serve" listens by default: this machine only.
const defaultAddr = "127.0.0.1:7700"

func newServeCommand(g *globalOptions) *cobra.Command {
	o := &serveOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the database over HTTP (JSON API, for many clients at once)",
		Long: `Serve opens the database (creating it, as "fpdb add" does, when there is none)
and serves it over HTTP until it is stopped (Ctrl-C or SIGTERM: it stops
accepting, lets the requests in flight finish for up to --grace and then
closes the connections of those still running, writes any deferred
postings and closes the database).

The API is JSON under /v1 (add, query, get, delete, stats; adds and deletes
in bulk; pairs, clusters, the audit log and exports streamed as JSON lines;
compare; templates; backups, written on the server's machine; see the
OpenAPI document the server serves at /v1/openapi.json), with /healthz and
/readyz for supervisors and /metrics for Prometheus (no token needed).
It listens on 127.0.0.1:7700 by default: this machine only.
To serve other machines, give --addr and --tokens (and --cert/--key for
TLS): with --tokens every /v1 request needs "Authorization: Bearer TOKEN";
the file has one "ro TOKEN" (read-only) or "rw TOKEN" (read-write) per line,
tokens of at least 16 characters. Requests that a web page of another site
sends through a browser are refused (403); on a loopback --addr only
requests to localhost, a loopback address or an --allow-host name are
answered (421 otherwise; behind a reverse proxy that passes on its public
Host, give that name).

Backups (POST /v1/backup) are written on the server's machine, with the
server's permissions: without --backup-root an authorised client (one with
a read-write token; anyone who can connect, without --tokens) may write a
backup anywhere the server's user can. --backup-root DIR keeps them inside
DIR (403 otherwise, symbolic links and ".." resolved); a relative
destination is then taken inside DIR. The check and the backup are not one
step: a local user who may change symbolic links or directories under DIR
while a backup runs could still redirect it, so give a DIR that only the
server's user may write in.

Limits: a body over --max-body is answered 413, a request (its body
included) slower than --timeout 408, more than --max-concurrent requests at
once 429; a stream (pairs, clusters, log, export) that outlasts
--stream-timeout is cut off. One line per request is logged on standard
error, with its request id (also in the X-Request-ID header and in every
error body).

With --cluster NAME@HOST it runs as one node of a cluster instead (--db is
then the node's data directory): an embedded NATS server with JetStream
joins the --peers over its route port (--route-port; every node lists all
the others; the routes have no authentication: keep them on a private
network); together they keep a replicated write log and a shard map, the
node's replicas of the --shards follow the log, and the same HTTP API,
on HOST:7700 unless --addr says otherwise, answers from every shard:
exactly one database's answers, with check-then-add across all nodes.
Every node serves the review page, export and import (the cluster's
documents sorted by id; an import needs an empty cluster) and compares two
texts; templates, the audit log, backups and comparisons with a stored
document (a cluster keeps no texts) are answered 501 or 400 by a cluster
node; its /metrics gives its router's figures
and those of each shard replica it holds (labeled shard). See
docs/SCALING.md.

Exit status: 0 after a shutdown asked for; 2 on error (the address taken, a
bad token file, the database held by another process, a cluster that did
not form).`,
		Example: `  fpdb serve                                  # http://127.0.0.1:7700
  fpdb --db /var/lib/fpdb serve --addr :7700 --tokens /etc/fpdb/tokens --cert c.pem --key k.pem
  curl -s -X POST 'http://127.0.0.1:7700/v1/documents?id=a.txt&threshold=0.8' --data-binary @a.txt
  curl -s -X POST 'http://127.0.0.1:7700/v1/query?threshold=0.7' --data-binary @new.txt
  curl -sN 'http://127.0.0.1:7700/v1/pairs?threshold=0.9' | jq -r .b
  fpdb --db n1.fpdb serve --cluster n1@127.0.0.1 --peers n2@127.0.0.2,n3@127.0.0.3`,
		Args: noArgs("serve"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.addrGiven = cmd.Flags().Changed("addr")
			o.cluster.changed = cmd.Flags().Changed
			return o.run(cmd.Context(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", defaultAddr, "listen on `HOST:PORT` (127.0.0.1: this machine only)")
	f.StringVar(&o.tokens, "tokens", "", "require bearer tokens, read from `FILE` (lines \"ro TOKEN\" or \"rw TOKEN\")")
	f.StringArrayVar(&o.allowHosts, "allow-host", nil, "on a loopback --addr, also answer requests to host `NAME` (the public name a reverse proxy passes on in Host; repeatable; \"*\": any host). Others get 421")
	f.StringVar(&o.cert, "cert", "", "serve TLS with the certificate `FILE` (PEM; with --key)")
	f.StringVar(&o.key, "key", "", "the TLS private key `FILE` (PEM; with --cert)")
	f.Int64Var(&o.maxBody, "max-body", server.DefaultMaxBodyBytes, "largest request body in `BYTES` (413 beyond)")
	f.Int64Var(&o.maxImport, "max-import", server.DefaultMaxImportBytes, "largest export POST /v1/import takes, in `BYTES`")
	f.DurationVar(&o.timeout, "timeout", server.DefaultRequestTimeout, "longest request, body included (408 beyond)")
	f.DurationVar(&o.streamTimeout, "stream-timeout", server.DefaultStreamTimeout, "longest streamed answer (pairs, clusters, log, export)")
	f.IntVar(&o.maxConcurrent, "max-concurrent", server.DefaultMaxConcurrent, "requests served at once (429 beyond)")
	f.DurationVar(&o.grace, "grace", 30*time.Second, "on shutdown, wait this long for the requests in flight")
	f.StringVar(&o.backupRoot, "backup-root", "", "POST /v1/backup writes only inside the directory `DIR` (403 otherwise; a relative destination is taken inside it; a local user able to change symbolic links under DIR while a backup runs could redirect it). Without it, anywhere the server's user can write")
	f.BoolVar(&o.logJSON, "log-json", false, "log JSON lines instead of text")
	f.BoolVar(&o.warm, "warm", true, "load every posting list into memory in the background at start, for groups of up to 18 bits, so that queries read none from disk (writes wait for it: about 6 s at 10 M documents; --warm=false: lists are read as queries need them; not with --cluster)")
	o.creation.register(f)
	o.cluster.register(f)
	return cmd
}

func (o *serveOptions) run(ctx context.Context, stderr io.Writer) (err error) {
	switch {
	case (o.cert == "") != (o.key == ""):
		return usageErrorf("--cert and --key go together")
	case o.maxImport <= 0:
		return usageErrorf("invalid --max-import %d: must be positive", o.maxImport)
	case o.maxBody <= 0:
		return usageErrorf("invalid --max-body %d: must be positive", o.maxBody)
	case o.timeout <= 0:
		return usageErrorf("invalid --timeout %v: must be positive", o.timeout)
	case o.streamTimeout <= 0:
		return usageErrorf("invalid --stream-timeout %v: must be positive", o.streamTimeout)
	case o.maxConcurrent <= 0:
		return usageErrorf("invalid --max-concurrent %d: must be positive", o.maxConcurrent)
	}
	if err := o.creation.validate(); err != nil {
		return err
	}
	if o.backupRoot != "" {
		// Before the database is opened (or created).
		if fi, err := os.Stat(o.backupRoot); err != nil {
			return usageErrorf("invalid --backup-root: %v", err)
		} else if !fi.IsDir() {
			return usageErrorf("invalid --backup-root %s: not a directory", o.backupRoot)
		}
	}
	var logger *slog.Logger
	if o.logJSON {
		logger = slog.New(slog.NewJSONHandler(stderr, nil))
	} else {
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	so := &server.Options{MaxBodyBytes: o.maxBody, MaxImportBytes: o.maxImport, RequestTimeout: o.timeout, StreamTimeout: o.streamTimeout, MaxConcurrent: o.maxConcurrent, Logger: logger,
		AllowedHosts: o.allowHosts, BackupRoot: o.backupRoot}
	if o.tokens != "" {
		if so.Tokens, err = server.LoadTokens(o.tokens); err != nil {
			return failure(fmt.Errorf("serve: %w", err))
		}
	}
	var tlsConf *tls.Config
	if o.cert != "" {
		c, err := tls.LoadX509KeyPair(o.cert, o.key)
		if err != nil {
			return failure(fmt.Errorf("serve: TLS: %w", err))
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}
	}
	if o.cluster.node != "" {
		if o.backupRoot != "" {
			return usageErrorf("--backup-root is for a single server: a cluster node makes no backups")
		}
		if o.cluster.changed("warm") {
			return usageErrorf("--warm is for a single server: a cluster node's replicas read their posting lists as queries need them")
		}
		return o.runCluster(ctx, so, tlsConf, logger)
	}
	if o.cluster.peersGiven() {
		return usageErrorf("--peers, --nats-port, --route-port, --shards and --replicas need --cluster")
	}
	// The address first: one in use or not this machine's fails before
	// a database is opened (or created).
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return failure(fmt.Errorf("serve: %w", err))
	}
	d, err := o.openDBWith(openCreate, &o.creation)
	if err != nil {
		ln.Close()
		return failure(err)
	}
	defer closeDB(d, &err)
	s, err := server.New(d, so)
	if err != nil {
		ln.Close()
		return failure(err)
	}
	scheme := "http"
	if tlsConf != nil {
		ln, scheme = tls.NewListener(ln, tlsConf), "https"
	}
	auth := "no tokens: anyone who can connect may read and write"
	if so.Tokens != nil {
		auth = "bearer tokens from " + o.tokens
	}
	logger.Info("serving", "url", scheme+"://"+ln.Addr().String(), "db", d.Dir(), "documents", d.Len(), "auth", auth)
	if o.warm {
		wctx, cancel := context.WithCancel(ctx)
		warm := newBackgroundWarm(d, 0, db.PlanAuto)
		warm.done = func(err error, took time.Duration) {
			switch {
			case err == nil:
				logger.Info("posting lists loaded", "documents", d.Len(), "took", took.Round(time.Millisecond))
			case wctx.Err() == nil:
				logger.Warn("posting lists not loaded: queries read them from disk", "err", err)
			}
		}
		if warm.after(wctx, 0) {
			defer func() {
				cancel()
				warm.wait() // before closeDB, deferred earlier
			}()
		} else {
			cancel()
			logger.Info("posting lists not loaded at start: this layout's are read from disk as queries need them")
		}
	}
	if err := s.Serve(ctx, ln, o.grace); err != nil {
		return failure(fmt.Errorf("serve: %w", err))
	}
	logger.Info("stopped")
	return nil
}
