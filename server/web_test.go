package server

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/fpdb/fpdb/api"
)

// webGet has the test server's handler serve a GET of target (a path and
// query), with headers given as name, value pairs.
func webGet(ts *httptest.Server, target string, hdr ...string) (*httptest.ResponseRecorder, string) {
	req := httptest.NewRequest("GET", target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	ts.Config.Handler.ServeHTTP(rec, req)
	return rec, rec.Body.String()
}

// webWalk calls f on every element of the tree under n.
func webWalk(n *html.Node, f func(*html.Node)) {
	if n.Type == html.ElementNode {
		f(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		webWalk(c, f)
	}
}

func webAttr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// TestWebPageServed: the page and its assets are served without a token
// (even when the API needs one), with their types, and nothing else is.
func TestWebPageServed(t *testing.T) {
	tokens, err := ParseTokens(strings.NewReader("ro read-only-token-0123\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, &Options{Tokens: tokens})
	for _, c := range []struct{ path, ctype, has string }{
		{"/", "text/html; charset=utf-8", `<script src="web/app.js" defer></script>`},
		{"/web/app.js", "text/javascript; charset=utf-8", `"v1/query"`},
		{"/web/style.css", "text/css; charset=utf-8", ":focus-visible"},
	} {
		resp, body := webGet(ts, c.path)
		if resp.Code != 200 || resp.Header().Get("Content-Type") != c.ctype || !strings.Contains(body, c.has) {
			t.Errorf("GET %s: %d %q, %d bytes without %q", c.path, resp.Code, resp.Header().Get("Content-Type"), len(body), c.has)
		}
		if resp.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", c.path)
		}
		etag := resp.Header().Get("ETag")
		if again, _ := webGet(ts, c.path, "If-None-Match", etag); etag == "" || again.Code != http.StatusNotModified {
			t.Errorf("GET %s again with its ETag %s: %d", c.path, etag, again.Code)
		}
		if c.path == "/" && !strings.Contains(resp.Header().Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("GET /: Content-Security-Policy %q", resp.Header().Get("Content-Security-Policy"))
		}
	}
	// The API still needs its token; unknown paths and files are 404.
	if st := call(t, "GET", ts.URL+"/v1/stats", "", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("GET /v1/stats without a token: %d", st)
	}
	for _, p := range []string{"/web/nope.js", "/web/index.html", "/web/%2e%2e%2fweb.go", "/nope", "/v1/nope", "/web/"} {
		var e api.ErrorBody
		if st := call(t, "GET", ts.URL+p, "", nil, &e); st != http.StatusNotFound || e.Error.Code != api.CodeNotFound {
			t.Errorf("GET %s: %d %+v", p, st, e)
		}
	}
	if st := call(t, "POST", ts.URL+"/", "text/plain", strings.NewReader("x"), nil); st != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d", st)
	}
}

// TestWebPageNoExternalURL: the page loads nothing from another origin (no
// scheme or "//" in a src or href, no URL in the style sheet or script),
// and every input has its label.
func TestWebPageNoExternalURL(t *testing.T) {
	ts, _ := testServer(t, nil)
	_, page := webGet(ts, "/")
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	labels, inputs := map[string]bool{}, []string{}
	links := 0
	webWalk(doc, func(n *html.Node) {
		for _, key := range []string{"src", "href", "action", "formaction", "srcset", "data"} {
			v, ok := webAttr(n, key)
			if !ok {
				continue
			}
			links++
			if strings.Contains(v, "//") || strings.Contains(v, ":") || strings.HasPrefix(v, "/") {
				t.Errorf("<%s %s=%q>: not a relative same-origin URL", n.Data, key, v)
			}
		}
		if n.Data == "label" {
			if f, ok := webAttr(n, "for"); ok {
				labels[f] = true
			}
		}
		if n.Data == "input" || n.Data == "textarea" || n.Data == "select" {
			id, _ := webAttr(n, "id")
			inputs = append(inputs, id)
		}
		if _, ok := webAttr(n, "style"); ok || n.Data == "style" {
			t.Errorf("<%s>: inline style (the Content-Security-Policy refuses it)", n.Data)
		}
		if n.Data == "script" && n.FirstChild != nil {
			t.Errorf("inline script %q (the Content-Security-Policy refuses it)", n.FirstChild.Data)
		}
	})
	if links < 3 {
		t.Errorf("%d links in the page: the test reads no page", links)
	}
	for _, id := range inputs {
		if id == "" || !labels[id] {
			t.Errorf("input %q has no label", id)
		}
	}
	for _, f := range []string{"/web/app.js", "/web/style.css"} {
		_, body := webGet(ts, f)
		for _, bad := range []string{"http:", "https:", "//cdn", "@import", "url(", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
			if strings.Contains(body, bad) {
				t.Errorf("%s holds %q", f, bad)
			}
		}
	}
}

// TestWebPageEscapesHostileID: the values that prefill the form are
// escaped, and out-of-range ones replaced by the defaults.
func TestWebPageEscapesHostileID(t *testing.T) {
	ts, _ := testServer(t, nil)
	hostile := `"><script>alert(1)</script><img src=x onerror=alert(2)>'`
	q := url.Values{"id": {hostile}, "threshold": {`0.8" autofocus onfocus="alert(3)`}, "containment": {"0.25"}, "view": {"<b>"}}
	resp, page := webGet(ts, "/?"+q.Encode())
	if resp.Code != 200 {
		t.Fatalf("%d %s", resp.Code, page)
	}
	for _, bad := range []string{"<script>alert", "<img src=x", `onfocus="alert`, "<b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]string{}
	scripts := 0
	webWalk(doc, func(n *html.Node) {
		if id, ok := webAttr(n, "id"); ok && n.Data == "input" {
			values[id], _ = webAttr(n, "value")
		}
		if n.Data == "script" || n.Data == "img" {
			scripts++
		}
	})
	if values["doc-id"] != hostile {
		t.Errorf("id field %q, want %q", values["doc-id"], hostile)
	}
	if values["threshold"] != "0.7" || values["containment"] != "0.25" || values["cluster-threshold"] != "0.7" {
		t.Errorf("fields %v", values)
	}
	if scripts != 1 {
		t.Errorf("%d script or img elements, want the one script", scripts)
	}
	// A valid prefill, and the clusters view.
	_, page = webGet(ts, "/?threshold=0.55&view=clusters")
	if !strings.Contains(page, `id="cluster-threshold" name="threshold" min="0.01" max="1" step="0.01" value="0.55"`) ||
		!strings.Contains(page, `<div id="query-view" class="view" hidden>`) {
		t.Errorf("prefilled clusters view:\n%s", page)
	}
}
