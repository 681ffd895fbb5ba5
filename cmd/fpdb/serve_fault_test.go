package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/client"
)

// serveProcess is an "fpdb serve" process of a test.
type serveProcess struct {
	cmd *exec.Cmd
	url string
	log *lockedBuffer // its standard error
}

// startServe starts "fpdb serve" on dir at a free port of 127.0.0.1 and
// waits until it is ready.
func startServe(t *testing.T, bin, dir string) *serveProcess {
	t.Helper()
	return startServeWith(t, bin, dir, http.DefaultClient, "http")
}

// startServeWith is startServe with more flags, asking hc at scheme://.
func startServeWith(t *testing.T, bin, dir string, hc *http.Client, scheme string, flags ...string) *serveProcess {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(filepath.Join(bin, "fpdb"), append([]string{"--db", dir, "serve", "--addr", addr}, flags...)...)
	log := &lockedBuffer{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{cmd: cmd, url: scheme + "://" + addr, log: log}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := hc.Get(p.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("fpdb serve not ready after 20 s:\n%s", log.String())
		}
	}
}

// faultText returns the text of variant v of group g: groups are unrelated
// texts of 300 words, two variants of one group differ in at most 2 words
// (resemblance about 0.95: near duplicates at 0.8 by any estimate).
func faultText(g, v int) string {
	rng := rand.New(rand.NewPCG(uint64(g), 99))
	ws := make([]string, 300)
	for i := range ws {
		ws[i] = fmt.Sprintf("g%dw%d", g, rng.IntN(4000))
	}
	ws[v%len(ws)] = fmt.Sprintf("variant%d", v)
	return strings.Join(ws, " ")
}

// TestServeKilledUnderLoad: 8 clients add near duplicates with check-then-
// add (threshold 0.8, reject) while the server is killed with SIGKILL;
// after a restart every add the server acknowledged is there, and no two
// near duplicates were both accepted.
func TestServeKilledUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fpdb and runs a server process (not with -short)")
	}
	bin := buildFPDB(t)
	dir := filepath.Join(t.TempDir(), "db")
	srv := startServe(t, bin, dir)
	c, err := client.New(srv.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	const groups = 400
	var mu sync.Mutex
	acked := map[string]int{} // id → group, for every add answered "stored"
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; ctx.Err() == nil && i < 100_000; i++ {
				g, v := rng.IntN(groups), rng.IntN(1000)
				id := fmt.Sprintf("w%d-%d-g%d", w, i, g)
				res, err := c.Add(ctx, api.AddRequest{ID: id, Text: faultText(g, v), Threshold: 0.8, Reject: true})
				if err != nil {
					if errors.Is(err, client.ErrUnreachable) || ctx.Err() != nil {
						return
					}
					continue // a connection cut by the kill
				}
				if res.Stored {
					mu.Lock()
					acked[id] = g
					mu.Unlock()
				}
			}
		}()
	}
	// Kill once the clients have been adding for a while.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= groups/4 || time.Now().After(deadline) {
			break
		}
	}
	time.Sleep(300 * time.Millisecond)
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = srv.cmd.Wait()
	stop()
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no add was acknowledged before the kill")
	}

	srv = startServe(t, bin, dir)
	c, err = client.New(srv.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := checkAcked(t, c, acked, 0)
	if st.Docs < len(acked) || st.Docs > groups {
		t.Errorf("%d documents stored, %d acknowledged, %d groups", st.Docs, len(acked), groups)
	}
	t.Logf("%d adds acknowledged before the kill, all present; %d documents after restart", len(acked), st.Docs)
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Errorf("fpdb serve after SIGTERM: %v", err)
	}
	// The restarted server loaded its posting lists while it answered.
	if want := fmt.Sprintf(`msg="posting lists loaded" documents=%d `, st.Docs); !strings.Contains(srv.log.String(), want) {
		t.Errorf("the restarted server's log lacks %q:\n%s", want, srv.log.String())
	}
}

// checkAcked checks through c that every acknowledged add (id → group) is
// stored (waiting up to wait for each), that no group has two, and that
// no stored pair is within 0.8; it returns the server's statistics.
func checkAcked(t *testing.T, c *client.Client, acked map[string]int, wait time.Duration) *api.Stats {
	t.Helper()
	bg := context.Background()
	perGroup := map[int]int{}
	for id, g := range acked {
		var err error
		for deadline := time.Now().Add(wait); ; time.Sleep(100 * time.Millisecond) {
			if _, err = c.Get(bg, id); err == nil || !time.Now().Before(deadline) {
				break
			}
		}
		if err != nil {
			t.Errorf("acknowledged add %s is missing: %v", id, err)
		}
		perGroup[g]++
	}
	for g, n := range perGroup {
		if n > 1 {
			t.Errorf("group %d: %d near duplicates accepted", g, n)
		}
	}
	var pairs []api.Pair
	if err := c.Pairs(bg, 0.8, func(p api.Pair) error { pairs = append(pairs, p); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(pairs) > 0 {
		t.Errorf("%d pairs of near duplicates stored, e.g. %+v", len(pairs), pairs[0])
	}
	st, err := c.Stats(bg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestServeTLSAndTokens: with --cert/--key the server speaks TLS only, and
// with --tokens a read-only token reads and may not write.
func TestServeTLSAndTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fpdb and runs a server process (not with -short)")
	}
	bin := buildFPDB(t)
	tmp := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(crand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, tokFile := filepath.Join(tmp, "c.pem"), filepath.Join(tmp, "k.pem"), filepath.Join(tmp, "tokens")
	writeFile(t, tmp, "c.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeFile(t, tmp, "k.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
	const ro, rw = "read-only-token-0123456", "read-write-token-0123456"
	writeFile(t, tmp, "tokens", []byte("ro "+ro+"\nrw "+rw+"\n"))
	pool := x509.NewCertPool()
	pool.AddCert(mustParseCert(t, der))
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	srv := startServeWith(t, bin, filepath.Join(tmp, "db"), hc, "https", "--cert", certFile, "--key", keyFile, "--tokens", tokFile)
	if _, err := http.Get("http://" + strings.TrimPrefix(srv.url, "https://") + "/healthz"); err == nil {
		resp, _ := http.Get("http://" + strings.TrimPrefix(srv.url, "https://") + "/v1/stats")
		if resp != nil && resp.StatusCode == http.StatusOK {
			t.Fatal("the TLS server answered plain HTTP")
		}
	}
	bg := context.Background()
	roc, err := client.New(srv.url, &client.Options{Token: ro, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	rwc, err := client.New(srv.url, &client.Options{Token: rw, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roc.Add(bg, api.AddRequest{ID: "a", Text: faultText(1, 1)}); !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("read-only add over TLS: %v, want forbidden", err)
	}
	if res, err := rwc.Add(bg, api.AddRequest{ID: "a", Text: faultText(1, 1)}); err != nil || !res.Stored {
		t.Fatalf("read-write add over TLS: %+v, %v", res, err)
	}
	if st, err := roc.Stats(bg); err != nil || st.Docs != 1 {
		t.Fatalf("read-only stats over TLS: %+v, %v", st, err)
	}
	nobody, _ := client.New(srv.url, &client.Options{HTTPClient: hc})
	if _, err := nobody.Stats(bg); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("no token: %v, want unauthorized", err)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Errorf("fpdb serve after SIGTERM: %v", err)
	}
}

func mustParseCert(t *testing.T, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServeAddressInUse: an address that cannot be listened on fails
// before the database is opened: none is created.
func TestServeAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := filepath.Join(t.TempDir(), "new")
	r := runFPDB(t, "", "--db", dir, "serve", "--addr", ln.Addr().String()).mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "address already in use") {
		t.Errorf("stderr %q", r.stderr)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("serve on an address in use created %s: %v", dir, err)
	}
}

// TestServeHostGuard: "fpdb serve" on a loopback address answers requests
// to a loopback host, and to a host --allow-host names (a reverse proxy's
// public name), and refuses others with 421 (DNS rebinding); its health
// checks answer any host.
func TestServeHostGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fpdb and runs a server process (not with -short)")
	}
	bin := buildFPDB(t)
	srv := startServeWith(t, bin, filepath.Join(t.TempDir(), "db"), http.DefaultClient, "http", "--allow-host", "fpdb.example.org")
	for host, want := range map[string]int{"": 200, "fpdb.example.org": 200, "evil.example": 421} {
		for path, w := range map[string]int{"/v1/stats": want, "/healthz": 200} {
			req, err := http.NewRequest(http.MethodGet, srv.url+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if host != "" {
				req.Host = host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != w {
				t.Errorf("Host %q %s: %d, want %d", host, path, resp.StatusCode, w)
			}
		}
	}
}
