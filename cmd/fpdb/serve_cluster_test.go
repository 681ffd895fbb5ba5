package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/client"
	"github.com/fpdb/fpdb/db"
)

// clusterProcess is one "fpdb serve --cluster" node of a test.
type clusterProcess struct {
	args []string
	cmd  *exec.Cmd
	log  *lockedBuffer
	url  string
}

// lockedBuffer is a process's stderr, safe to read while the process
// writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// notable returns the lines of a server's log other than its successful
// requests (at most the last 200), to show when a test fails.
func notable(log string) string {
	var keep []string
	for _, line := range strings.Split(log, "\n") {
		if line == "" || strings.Contains(line, "msg=request") && !strings.Contains(line, "level=ERROR") && !strings.Contains(line, "level=WARN") {
			continue
		}
		keep = append(keep, line)
	}
	if len(keep) > 200 {
		keep = keep[len(keep)-200:]
	}
	return strings.Join(keep, "\n")
}

func freeTCPPort(t *testing.T, host string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (p *clusterProcess) start(t *testing.T, bin string) {
	t.Helper()
	p.cmd = exec.Command(filepath.Join(bin, "fpdb"), p.args...)
	p.log = &lockedBuffer{}
	p.cmd.Stderr = p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd, log := p.cmd, p.log
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("log of %s (pid %d), requests that succeeded left out:\n%s", p.url, cmd.Process.Pid, notable(log.String()))
		}
	})
}

// waitReady waits until every node answers /readyz (every shard has a
// live replica).
func waitReady(t *testing.T, nodes []*clusterProcess) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	for _, p := range nodes {
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			resp, err := hc.Get(p.url + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not ready after 60 s:\n%s", p.url, p.log.String())
			}
		}
	}
}

// TestServeCluster starts three "fpdb serve --cluster" processes on
// 127.0.0.1–3, uses them through the client and the CLI's --server mode,
// kills one with SIGKILL under check-then-add load through the others,
// restarts it, and checks that every acknowledged add is there and that no
// two near duplicates were both accepted.
func TestServeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fpdb and runs three server processes (not with -short)")
	}
	bin := buildFPDB(t)
	dir := t.TempDir()
	var nodes []*clusterProcess
	routes := make([]int, 3)
	for i := range routes {
		routes[i] = freeTCPPort(t, "127.0.0."+strconv.Itoa(i+1))
	}
	for i := 0; i < 3; i++ {
		host := "127.0.0." + strconv.Itoa(i+1)
		var peers []string
		for j := 0; j < 3; j++ {
			if j != i {
				peers = append(peers, fmt.Sprintf("n%d@127.0.0.%d:%d", j+1, j+1, routes[j]))
			}
		}
		addr := net.JoinHostPort(host, strconv.Itoa(freeTCPPort(t, host)))
		p := &clusterProcess{url: "http://" + addr, args: []string{"--db", filepath.Join(dir, fmt.Sprintf("n%d", i+1)), "serve",
			"--cluster", fmt.Sprintf("n%d@%s", i+1, host), "--peers", strings.Join(peers, ","),
			"--route-port", strconv.Itoa(routes[i]), "--addr", addr}}
		p.start(t, bin)
		nodes = append(nodes, p)
	}
	waitReady(t, nodes)

	// The CLI, unchanged, against any node.
	text := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(text, []byte(faultText(1, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cli := func(url string, args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(bin, "fpdb"), append([]string{"--server", url}, args...)...).CombinedOutput()
		return string(out), err
	}
	// A local database moved into the cluster: its export imported
	// through n1 comes back from n2 with the same documents, by id.
	local := filepath.Join(dir, "local")
	if out, err := exec.Command(filepath.Join(bin, "fpdb"), "--db", local, "add", corpus+"bees.txt", corpus+"tides.txt", corpus+"chess.txt").CombinedOutput(); err != nil {
		t.Fatalf("local add: %v\n%s", err, out)
	}
	exp := filepath.Join(dir, "local.jsonl")
	if out, err := exec.Command(filepath.Join(bin, "fpdb"), "--db", local, "export", "-o", exp).CombinedOutput(); err != nil {
		t.Fatalf("local export: %v\n%s", err, out)
	}
	if out, err := cli(nodes[0].url, "import", exp); err != nil || !strings.Contains(out, "imported 3 documents") ||
		!strings.Contains(out, "not kept (a cluster keeps neither): 3 texts, 3 audit-log entries") {
		t.Fatalf("import through n1: %v\n%s", err, out)
	}
	back, err := exec.Command(filepath.Join(bin, "fpdb"), "--server", nodes[1].url, "export").Output()
	if err != nil {
		t.Fatalf("export through n2: %v\n%s", err, back)
	}
	localExp, err := os.ReadFile(exp)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := exportedDocs(t, back), exportedDocs(t, localExp); !slices.Equal(got, want) {
		t.Fatalf("the cluster exports\n%s\nthe local database\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	if out, err := cli(nodes[0].url, "add", text); err != nil {
		t.Fatalf("add through n1: %v\n%s", err, out)
	}
	near := filepath.Join(dir, "b.txt")
	if err := os.WriteFile(near, []byte(faultText(1, 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, _ = cli(nodes[2].url, "query", "--threshold", "0.8", near)
		if strings.Contains(out, "a.txt") || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(out, "a.txt") {
		t.Fatalf("query through n3 does not find a.txt:\n%s", out)
	}

	// Check-then-add load through n2 and n3 while n1 is killed.
	const groups = 200
	var mu sync.Mutex
	acked := map[string]int{}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.New(nodes[1+w%2].url, nil)
			if err != nil {
				t.Error(err)
				return
			}
			for i := 0; ctx.Err() == nil; i++ {
				g := (i*6 + w) % groups
				id := fmt.Sprintf("w%d-%d-g%d", w, i, g)
				res, err := c.Add(ctx, api.AddRequest{ID: id, Text: faultText(g+10, i), Threshold: 0.8, Reject: true})
				if err != nil {
					if ctx.Err() == nil && !errors.Is(err, client.ErrUnreachable) {
						time.Sleep(50 * time.Millisecond) // a request cut by the fault: try the next
					}
					continue
				}
				if res.Stored {
					mu.Lock()
					acked[id] = g
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	if err := nodes[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = nodes[0].cmd.Wait()
	time.Sleep(3 * time.Second)
	nodes[0].start(t, bin)
	waitReady(t, nodes)
	time.Sleep(1500 * time.Millisecond)
	stop()
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no add acknowledged")
	}

	// Every acknowledged add is there (read through the restarted node,
	// once it has caught up), one per group, and no pair is within 0.8.
	c, err := client.New(nodes[0].url, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := checkAcked(t, c, acked, 20*time.Second)
	t.Logf("%d check-then-adds acknowledged across the kill of n1, all present; %d documents in the cluster", len(acked), st.Docs)
	for _, p := range nodes {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("%s after SIGTERM: %v\n%s", p.url, err, p.log.String())
		}
	}
}

// exportedDocs returns the document lines of an export, without texts
// (a cluster keeps none), sorted by id (a cluster's order).
func exportedDocs(t *testing.T, exp []byte) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(exp)), "\n")
	var h db.ExportHeader
	if err := json.Unmarshal([]byte(lines[0]), &h); err != nil || 1+h.Docs > len(lines) {
		t.Fatalf("export header %q: %v", lines[0], err)
	}
	var out []string
	for _, l := range lines[1 : 1+h.Docs] { // the audit log's entries follow
		var rec db.ExportRecord
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("export line %q: %v", l, err)
		}
		rec.Text, rec.TextFormat = "", ""
		b, _ := json.Marshal(rec)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// TestServeClusterCreationFlags: a one-node cluster started with --k
// alone (its groups the defaults of that K, as a single database's) and
// --normalize-version 1 creates its shards with both, and a version-1
// database's export imports into it.
func TestServeClusterCreationFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fpdb and runs a server process (not with -short)")
	}
	bin := buildFPDB(t)
	dir := t.TempDir()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freeTCPPort(t, "127.0.0.1")))
	p := &clusterProcess{url: "http://" + addr, args: []string{"--db", filepath.Join(dir, "n1"), "serve",
		"--cluster", "n1@127.0.0.1", "--addr", addr, "--k", "256", "--normalize-version", "1"}}
	p.start(t, bin)
	waitReady(t, []*clusterProcess{p})
	resp, err := http.Get(p.url + "/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		K                int `json:"k"`
		NormalizeVersion int `json:"normalize_version"`
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || st.K != 256 || st.NormalizeVersion != 1 {
		t.Fatalf("stats of a cluster made with --k 256 --normalize-version 1: %+v (%v)", st, err)
	}
	local := filepath.Join(dir, "local")
	fpdb := filepath.Join(bin, "fpdb")
	if out, err := exec.Command(fpdb, "--db", local, "add", "--k", "256", "--normalize-version", "1", corpus+"bees.txt").CombinedOutput(); err != nil {
		t.Fatalf("local add: %v\n%s", err, out)
	}
	exp := filepath.Join(dir, "local.jsonl")
	if out, err := exec.Command(fpdb, "--db", local, "export", "-o", exp).CombinedOutput(); err != nil {
		t.Fatalf("local export: %v\n%s", err, out)
	}
	if out, err := exec.Command(fpdb, "--server", p.url, "import", exp).CombinedOutput(); err != nil || !strings.Contains(string(out), "imported 1 document") {
		t.Fatalf("import of a version-1 export: %v\n%s", err, out)
	}
}

// runBinary runs the fpdb binary in bin with args for at most limit and returns its output
// and exit status (-1 when it was killed at the limit).
func runBinary(t *testing.T, bin string, limit time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "fpdb"), args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return string(out), -1
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatalf("fpdb %s: %v", strings.Join(args, " "), err)
	}
	return string(out), 0
}

// TestServeClusterPeersFlag: a --peers entry with a bad port or host is a
// usage error naming it; a bare host, IPv4 or IPv6 (bare or in brackets)
// gets --route-port.
func TestServeClusterPeersFlag(t *testing.T) {
	for _, p := range []string{"n8@127.0.0.8:99999", "n9@127.0.0.9:0", "n5@[::1", "n5@[::1]:x", "n6@bad_host!:6222", "n7@10.0.0.1:", "n7", "n7@"} {
		c := &nodeFlags{node: "n1@127.0.0.1", peers: []string{p}, routePort: 6222}
		_, err := c.options(t.TempDir(), &db.Options{}, 0, nil)
		var ee *exitError
		if !errors.As(err, &ee) || !ee.usage || !strings.Contains(err.Error(), "invalid --peers entry "+strconv.Quote(p)) {
			t.Errorf("--peers %s: %v, want a usage error naming it", p, err)
		}
	}
	for p, want := range map[string]string{"n2@127.0.0.2": "127.0.0.2:7000", "n2@127.0.0.2:99": "127.0.0.2:99", "n2@node2.example": "node2.example:7000",
		"n2@[::1]": "[::1]:7000", "n2@::1": "[::1]:7000", "n2@[::1]:99": "[::1]:99"} {
		c := &nodeFlags{node: "n1@127.0.0.1", peers: []string{p}, routePort: 7000}
		o, err := c.options(t.TempDir(), &db.Options{}, 0, nil)
		if err != nil || len(o.Peers) != 1 || o.Peers[0].Addr != want {
			t.Errorf("--peers %s: %+v, %v, want address %s", p, o, err, want)
		}
	}
	// The whole command: refused at once, exit status 2.
	out := &bytes.Buffer{}
	code := run([]string{"--db", t.TempDir(), "serve", "--cluster", "n1@127.0.0.1", "--peers", "n8@127.0.0.8:99999"}, strings.NewReader(""), out, out)
	if code != exitFailure || !strings.Contains(out.String(), `invalid --peers entry "n8@127.0.0.8:99999": port "99999": want a port number from 1 to 65535`) {
		t.Errorf("serve --peers n8@127.0.0.8:99999: exit %d\n%s", code, out)
	}
}

// TestServeClusterStarting: a node answers HTTP at once while it forms
// the cluster (/healthz 200, /readyz and the API 503 saying so); a node
// whose peer never comes fails at the end of its start, naming it.
func TestServeClusterStarting(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fpdb and runs a server process (not with -short)")
	}
	bin := buildFPDB(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freeTCPPort(t, "127.0.0.1")))
	peer := fmt.Sprintf("n2@127.0.0.2:%d", freeTCPPort(t, "127.0.0.2")) // never started
	p := &clusterProcess{url: "http://" + addr, args: []string{"--db", filepath.Join(t.TempDir(), "n1"), "serve", "--cluster", "n1@127.0.0.1",
		"--route-port", strconv.Itoa(freeTCPPort(t, "127.0.0.1")), "--addr", addr, "--peers", peer}}
	p.start(t, bin)
	hc := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) (*http.Response, []byte) {
		resp, err := hc.Get(p.url + path)
		if err != nil {
			t.Fatalf("GET %s while the node starts: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	// The process is up once it listens.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not listening after 60 s:\n%s", p.log.String())
		}
	}
	if resp, b := get("/healthz"); resp.StatusCode != http.StatusOK {
		t.Errorf("healthz while starting: %d %s", resp.StatusCode, b)
	}
	for path, want := range map[string]string{"/readyz": "forming the cluster", "/v1/stats": "is starting"} {
		resp, b := get(path)
		var eb api.ErrorBody
		if err := json.Unmarshal(b, &eb); err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			eb.Error.Code != api.CodeUnavailable || !strings.Contains(eb.Error.Message, want) {
			t.Errorf("GET %s while starting: %d (Retry-After %q) %s, want 503 saying %q", path, resp.StatusCode, resp.Header.Get("Retry-After"), b, want)
		}
	}
	// Its start ends (30 s by default) with an error naming the peer.
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(p.log.String(), "peers never reached: "+peer+" (") {
			t.Errorf("a node whose peer never comes: %v\n%s", err, p.log.String())
		}
	case <-time.After(3 * time.Minute):
		t.Errorf("still running after 3 minutes:\n%s", p.log.String())
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// TestServeClusterCreationMismatch: a node restarted with creation flags
// that differ from its cluster's is refused, naming the flag, the value
// given and the cluster's, as "fpdb add" refuses them on a database; the
// cluster's own values are accepted.
func TestServeClusterCreationMismatch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fpdb and runs server processes (not with -short)")
	}
	bin := buildFPDB(t)
	dir := filepath.Join(t.TempDir(), "n1")
	serve := func(flags ...string) *clusterProcess {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freeTCPPort(t, "127.0.0.1")))
		return &clusterProcess{url: "http://" + addr, args: append([]string{"--db", dir, "serve", "--cluster", "n1@127.0.0.1", "--addr", addr}, flags...)}
	}
	stop := func(p *clusterProcess) {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("%s after SIGTERM: %v\n%s", p.url, err, p.log.String())
		}
	}
	// Created with a shard count that is not the default: a restart
	// without flags takes the cluster's, not the defaults.
	p := serve("--shards", "8")
	p.start(t, bin)
	waitReady(t, []*clusterProcess{p})
	stop(p)
	p = serve()
	p.start(t, bin)
	waitReady(t, []*clusterProcess{p})
	stop(p)
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--k", "256", "--shards", "16", "--replicas", "1"}, "the cluster was created with --shards 8, but --shards 16 was given"},
		{[]string{"--shards", "4"}, "the cluster was created with --shards 8, but --shards 4 was given"},
		{[]string{"--k", "256"}, "the cluster was created with --k 512, but --k 256 was given"},
		{[]string{"--group-bits", "18"}, "the cluster was created with --group-bits 16 (32 groups), but --group-bits 18 was given"},
		{[]string{"--shingle-width", "3"}, "the cluster was created with --shingle-width 4, but --shingle-width 3 was given"},
		{[]string{"--seed", "7"}, ", but --seed 0x7 was given"},
	} {
		out, code := runBinary(t, bin, 90*time.Second, serve(c.flags...).args...)
		if code == -1 {
			t.Fatalf("restart with %s: still serving after 90 s, want it refused saying %q:\n%s", strings.Join(c.flags, " "), c.want, out)
		}
		if code != exitFailure || !strings.Contains(out, c.want) {
			t.Errorf("restart with %s: exit %d, want %d saying %q:\n%s", strings.Join(c.flags, " "), code, exitFailure, c.want, out)
		}
	}
	p = serve("--k", "512", "--shards", "8", "--replicas", "1", "--group-bits", "16")
	p.start(t, bin)
	waitReady(t, []*clusterProcess{p})
	stop(p)
}
