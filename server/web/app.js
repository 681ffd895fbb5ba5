// fpdb's review page: calls the server's /v1 API (same origin, relative
// paths) and shows the answers. Data goes into the page as text only
// (textContent), never as markup.
(function () {
  "use strict";

  var TOKEN_KEY = "fpdb-token";
  var MAX_CLUSTERS = 500; // clusters shown; the stream is closed after them

  function $(id) { return document.getElementById(id); }

  // el makes an element with properties (className, textContent, ...) and
  // attributes ("aria-*", "data-*", "scope"), and appends children (nodes,
  // or strings as text).
  function el(tag, props, children) {
    var e = document.createElement(tag);
    Object.keys(props || {}).forEach(function (k) {
      if (k.indexOf("-") >= 0 || k === "scope" || k === "role") e.setAttribute(k, props[k]);
      else e[k] = props[k];
    });
    (children || []).forEach(function (c) {
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }

  // fixed prints x with 3 decimals, halves rounded up (the test rounds the
  // same way).
  function fixed(x) { return (Math.round(x * 1000) / 1000).toFixed(3); }
  function share(x) { return x === undefined || x === null ? "–" : fixed(x); }

  function status(node, text, cls) {
    node.textContent = text;
    node.className = cls || "hint";
  }

  // --- the token --------------------------------------------------------

  function getToken() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ""; } catch (e) { return ""; }
  }
  function setToken(t) {
    try {
      if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage refused: the token lasts until the page closes */ }
    showTokenState();
  }
  function showTokenState() {
    var has = getToken() !== "";
    $("token-state").textContent = has ? "A token is in use." : "";
    $("forget-token").hidden = !has;
  }

  var asking = null; // the pending prompt, shared by requests that meet a 401

  // askToken shows the token prompt; the promise resolves when a token is
  // given and rejects when the prompt is cancelled.
  function askToken(reason) {
    if (asking) return asking;
    var d = $("token-dialog");
    asking = new Promise(function (resolve, reject) {
      $("token-reason").textContent = reason;
      $("token").value = "";
      d.addEventListener("close", function onClose() {
        d.removeEventListener("close", onClose);
        asking = null;
        var t = $("token").value.trim();
        if (d.returnValue === "ok" && t) {
          setToken(t);
          resolve();
        } else {
          reject(new Error("this server needs a token: none was given"));
        }
      });
      d.returnValue = "";
      d.showModal();
    });
    return asking;
  }

  // --- calls ----------------------------------------------------------------

  // call sends a request to the API; a 401 asks for a token and sends it
  // again. It resolves to the response, whatever its status.
  async function call(method, path, body, contentType) {
    for (;;) {
      var headers = {};
      if (contentType) headers["Content-Type"] = contentType;
      var t = getToken();
      if (t) headers.Authorization = "Bearer " + t;
      var res = await fetch(path, { method: method, headers: headers, body: body, cache: "no-store" });
      if (res.status !== 401) return res;
      var msg = await errorText(res);
      if (t) setToken("");
      await askToken(t ? "The token was refused: " + msg : msg);
    }
  }

  // errorText returns the message of an error response.
  async function errorText(res) {
    var text = await res.text();
    try {
      var e = JSON.parse(text).error;
      return e.message + (e.request_id ? " (request " + e.request_id + ")" : "");
    } catch (err) {
      return res.status + " " + res.statusText;
    }
  }

  // json calls the API and returns the decoded answer, or throws its error.
  async function json(method, path, body, contentType) {
    var res = await call(method, path, body, contentType);
    if (!res.ok) {
      var err = new Error(await errorText(res));
      err.status = res.status;
      throw err;
    }
    return res.json();
  }

  // busy disables a button while work runs and reports the work's failure
  // in node.
  async function busy(button, node, work) {
    button.disabled = true;
    try {
      await work();
    } catch (e) {
      status(node, e.message, "error");
    } finally {
      button.disabled = false;
    }
  }

  // --- the stats line -----------------------------------------------------

  async function loadStats() {
    try {
      var s = await json("GET", "v1/stats");
      $("stats").textContent = s.docs + (s.docs === 1 ? " document" : " documents") +
        " · fingerprints of " + s.k + " bits · shingles of " + s.shingle_width + " words · " +
        (s.keep_texts ? "texts kept" : "texts not kept");
    } catch (e) {
      status($("stats"), "Figures unavailable: " + e.message, "error");
    }
  }

  // --- the document: text or file ------------------------------------------

  function chosenFile() {
    var f = $("file").files;
    return f && f.length ? f[0] : null;
  }
  // isHTML reports whether a file is read as markup: by its type, or its
  // name's extension, those the server and the command line take
  // (normalize.FormatOfName), so that the query, the comparison and
  // "fpdb query FILE" read a file alike.
  function isHTML(f) { return /\.(x?html?|shtml|xml|svg|rss|atom)$/i.test(f.name) || f.type === "text/html"; }

  function number(input, name, required) {
    var v = input.value.trim();
    if (v === "" && !required) return 0;
    var x = Number(v);
    if (v === "" || !isFinite(x) || x < 0 || x > 1 || (required && x === 0)) {
      input.focus();
      throw new Error(name + " must be a number in (0, 1]");
    }
    return x;
  }

  // source returns what is sent: the file, or the pasted text.
  function source() {
    var f = chosenFile();
    if (f) return { file: f, name: f.name };
    var text = $("text").value;
    if (text.trim() === "") {
      $("text").focus();
      throw new Error("paste a text or choose a file first");
    }
    return { text: text, name: "the pasted text" };
  }

  // current is what the shown matches were found for (compared on "Compare").
  var current = null;

  async function find() {
    var st = $("results-status");
    // With a containment, the threshold may be left empty (no resemblance
    // asked besides); the matches then come most containing first.
    var containment = number($("containment"), "the containment", false);
    var threshold = number($("threshold"), "the threshold", containment === 0);
    var src = source();
    status(st, "Searching…");
    var res;
    if (src.file) {
      var q = [];
      if (threshold) q.push("threshold=" + threshold);
      if (containment) q.push("containment=" + containment);
      res = await json("POST", "v1/query?" + q.join("&"), src.file, isHTML(src.file) ? "text/html" : "text/plain");
    } else {
      var body = { text: src.text };
      if (threshold) body.threshold = threshold;
      if (containment) body.containment = containment;
      res = await json("POST", "v1/query", JSON.stringify(body), "application/json");
    }
    current = src;
    var ms = res.matches || [];
    var what = [threshold ? "resemblance at least " + threshold : "", containment ? "containing at least " + containment + " of it" : ""]
      .filter(Boolean).join(" and ");
    showMatches(ms, ms.length ?
      ms.length + (ms.length === 1 ? " stored document" : " stored documents") + " of " + what + " for " + src.name +
        (containment ? ", most containing first." : ", most similar first.") :
      "No stored document of " + what + " for " + src.name + ".", "ok");
  }

  async function add() {
    var st = $("results-status");
    var src = source();
    var id = $("doc-id").value.trim() || (src.file ? src.file.name : "");
    if (!id) {
      $("doc-id").focus();
      throw new Error("give the document an id");
    }
    var check = $("check-first").checked || $("reject").checked;
    var threshold = check ? number($("threshold"), "the threshold", true) : 0;
    var reject = $("reject").checked;
    status(st, "Adding " + id + "…");
    var res;
    if (src.file) {
      var form = new FormData();
      form.append("id", id);
      if (threshold) form.append("threshold", String(threshold));
      if (reject) form.append("reject", "true");
      form.append("file", src.file);
      res = await json("POST", "v1/documents", form);
    } else {
      var body = { id: id, text: src.text };
      if (threshold) body.threshold = threshold;
      if (reject) body.reject = true;
      res = await json("POST", "v1/documents", JSON.stringify(body), "application/json");
    }
    var msg = res.rejected ? "Not stored: " + id + " has near duplicates at threshold " + threshold + "." :
      res.unchanged ? id + " is already stored with the same content." :
      (res.replaced ? "Replaced " : "Stored ") + id + "." +
        (check ? (res.matches.length ? " Near duplicates found:" : " No near duplicate at threshold " + threshold + ".") : "");
    current = src;
    showMatches(check ? res.matches || [] : [], msg, res.rejected ? "error" : "ok");
    loadStats();
  }

  // showMatches fills the table of matches.
  function showMatches(ms, message, cls) {
    status($("results-status"), message, cls);
    var tbody = $("matches").tBodies[0];
    tbody.replaceChildren();
    ms.forEach(function (m, i) {
      var open = el("button", { type: "button", className: "compare-open", textContent: "Compare", "aria-label": "Shared passages with " + m.id });
      open.addEventListener("click", function () { busy(open, $("compare-body"), function () { return compare(m.id, open); }); });
      tbody.appendChild(el("tr", { "data-id": m.id }, [
        el("td", { className: "num", textContent: String(i + 1) }),
        el("td", { className: "id", textContent: m.id }),
        el("td", { className: "num sim", textContent: fixed(m.similarity) }),
        el("td", { className: "num", textContent: share(m.query_in_doc) }),
        el("td", { className: "num", textContent: share(m.doc_in_query) }),
        el("td", { textContent: m.exact ? "yes" : "" }),
        el("td", {}, [open])
      ]));
    });
    $("matches").hidden = ms.length === 0;
  }

  // compareInput returns side a of a comparison of the current text: a
  // file's bytes as they are (base64), which the server reads as it reads
  // the query's upload (its character encoding found the same way), in
  // the format the query reads it in.
  async function compareInput(src) {
    if (!src.file) return { text: src.text, name: "pasted text" };
    var bytes = new Uint8Array(await src.file.arrayBuffer());
    var bin = "";
    for (var i = 0; i < bytes.length; i += 8192) bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
    var side = { bytes: btoa(bin), name: src.file.name };
    if (isHTML(src.file)) side.format = "html";
    return side;
  }

  // --- comparing --------------------------------------------------------------

  var saved = null; // the object URL of the saved comparison
  var compareButton = null; // the button that opened the comparison, focused again on close

  // compare asks the server for the comparison page of the current text
  // and a stored document, and shows its figures and shared passages.
  async function compare(id, button) {
    var panel = $("compare"), body = $("compare-body");
    panel.hidden = false;
    compareButton = button;
    $("compare-title").textContent = "Shared passages: " + current.name + " and " + id;
    status(body, "Comparing…");
    // One comparison gives the figures and passages as JSON, the two
    // texts as the server decoded them (the passages' offsets index them,
    // which gives each passage whole: the page's marks give text two
    // passages share to the first only), and the page to save.
    var req = { a: await compareInput(current), b: { id: id }, texts: true, page: true };
    var res = await call("POST", "v1/compare", JSON.stringify(req), "application/json");
    if (res.status === 404 || res.status === 405) {
      var msg = await errorText(res);
      throw new Error(res.status === 405 || /endpoint|path/i.test(msg) ? "this server cannot compare (no /v1/compare)" : msg);
    }
    if (!res.ok) throw new Error(await errorText(res));
    var cmp = await res.json();
    var html = cmp.page || "";
    var texts = { a: new TextEncoder().encode(cmp.text_a || ""), b: new TextEncoder().encode(cmp.text_b || "") };
    var passages = cmp.passages || [];
    // The page is parsed, not shown: its texts are read out of it and
    // written into this page as text.
    var doc = new DOMParser().parseFromString(html, "text/html");
    var figures = el("table", { className: "figures", id: "compare-figures" }, [el("tbody", {}, [
      ["Estimated resemblance (fingerprints)", "estimated"],
      ["Exact resemblance (shingle sets)", "jaccard"],
      ["Share of the text found in " + id + " (exact)", "contained-a"],
      ["Share of " + id + " found in the text (exact)", "contained-b"]
    ].map(function (f) {
      var n = doc.getElementById(f[1]);
      return el("tr", {}, [el("td", { textContent: f[0] }), el("td", { className: "num", textContent: n ? n.textContent : "–" })]);
    }))]);
    var rows = Array.prototype.slice.call(doc.querySelectorAll("table.passages tbody tr"));
    var parts = [figures];
    if (cmp.more_passages) {
      parts.push(el("p", { className: "hint", id: "compare-more", textContent: "The longest " + passages.length + " shared passages, the most the server answers with; the texts share more." }));
    }
    if (rows.length === 0) {
      parts.push(el("p", { className: "hint", id: "compare-none", textContent: "No shared passage." }));
    } else {
      parts.push(el("table", { className: "passages", id: "compare-passages" }, [
        el("thead", {}, [el("tr", {}, [
          el("th", { scope: "col", textContent: "#" }), el("th", { scope: "col", className: "num", textContent: "Words" }),
          el("th", { scope: "col", textContent: "In " + current.name }), el("th", { scope: "col", textContent: "In " + id })])]),
        el("tbody", {}, rows.map(function (r) {
          var c = r.cells, n = parseInt(c[0].textContent, 10), side = function (td, which) {
            var pos = td.querySelector(".pos"), t = td.querySelector(".ptext");
            // A side read as HTML is shown as its readable text, which the
            // server gives for each passage whole (its bytes hold markup).
            var markup = (cmp[which] || {}).format === "html";
            var p = rows.length === passages.length ? passages[n - 1] : null;
            var whole = (markup ? pageText((p && p[which] && p[which].readable) || "") : passageText(texts[which], p, which)) ||
              markedText(doc, which, n) || (t ? t.textContent : td.textContent);
            return el("td", { className: "side" }, [
              el("span", { className: "pos", textContent: pos ? pos.textContent + " (line:column)" : "" }),
              el("span", { className: "ptext", tabIndex: 0, textContent: whole })]);
          };
          return el("tr", {}, [el("td", { textContent: String(n) }), el("td", { className: "num", textContent: c[1].textContent }), side(c[2], "a"), side(c[3], "b")]);
        }))
      ]));
    }
    body.replaceChildren.apply(body, parts);
    if (saved) URL.revokeObjectURL(saved);
    saved = URL.createObjectURL(new Blob([html], { type: "text/html" }));
    var a = $("compare-save");
    a.href = saved;
    a.download = "compare-" + id.replace(/[^A-Za-z0-9._-]+/g, "_") + ".html";
    a.hidden = false;
    $("compare-title").focus();
    panel.scrollIntoView({ block: "start" });
  }

  // passageText returns the whole text of passage p (of the JSON answer)
  // in one text ("a" or "b"), given as UTF-8: the bytes its offsets
  // delimit, shown as the comparison page shows text. It is "" without p.
  function passageText(utf8, p, which) {
    var s = p && p[which];
    if (!s || !(s.start >= 0 && s.start < s.end && s.end <= utf8.length)) return "";
    return pageText(new TextDecoder("utf-8", { ignoreBOM: true }).decode(utf8.subarray(s.start, s.end)));
  }

  // pageText returns text as the comparison page shows it (report's
  // pageText): control characters but tab, line feed, form feed and
  // carriage return, and bidirectional controls, as U+FFFD.
  function pageText(s) {
    return s.replace(/[\u0000-\u0008\u000B\u000E-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g, "\uFFFD");
  }

  // markedText returns the text of passage n in one text ("a" or "b") of
  // a comparison page that the marks show as its own, without their
  // numbers: all of it unless an earlier passage covers some.
  function markedText(doc, which, n) {
    var marks = doc.querySelectorAll("#text-" + which + " mark[data-p='" + n + "']");
    return Array.prototype.map.call(marks, function (m) {
      var c = m.cloneNode(true);
      c.querySelectorAll("sup").forEach(function (x) { x.remove(); });
      return c.textContent;
    }).join("");
  }

  function closeCompare() {
    $("compare").hidden = true;
    if (compareButton && document.body.contains(compareButton)) compareButton.focus();
  }

  // --- clusters ---------------------------------------------------------------

  // clusters reads the NDJSON stream of clusters and lists them as they
  // come, up to MAX_CLUSTERS.
  async function clusters() {
    var st = $("clusters-status"), list = $("cluster-list");
    var threshold = number($("cluster-threshold"), "the threshold", true);
    list.replaceChildren();
    status(st, "Finding clusters…");
    var q = "threshold=" + threshold + ($("centers").checked ? "&centers=true" : "");
    var res = await call("GET", "v1/clusters?" + q);
    if (!res.ok) throw new Error(res.status === 404 ? "this server has no /v1/clusters (" + await errorText(res) + ")" : await errorText(res));
    var reader = res.body.getReader(), dec = new TextDecoder(), rest = "", n = 0, done = false;
    while (!done && n < MAX_CLUSTERS) {
      var chunk;
      try {
        chunk = await reader.read();
      } catch (e) { // the server cuts a stream that fails midway
        throw new Error("the list of clusters broke off after " + n + " (" + e.message + "): it is incomplete");
      }
      done = chunk.done;
      rest += done ? dec.decode() : dec.decode(chunk.value, { stream: true });
      var lines = rest.split("\n");
      rest = done ? "" : lines.pop();
      for (var i = 0; i < lines.length && n < MAX_CLUSTERS; i++) {
        if (lines[i].trim() === "") continue;
        var c = JSON.parse(lines[i]);
        if (c.error) throw new Error(c.error.message || "the stream failed");
        list.appendChild(clusterItem(c));
        n++;
      }
    }
    if (!done) reader.cancel();
    status(st, n === 0 ? "No cluster at threshold " + threshold + ": no two stored documents are that similar." :
      (done ? n + (n === 1 ? " cluster" : " clusters") : "The first " + n + " clusters") +
      " at threshold " + threshold + ", largest first.", "ok");
  }

  function clusterItem(c) {
    var ids = c.ids || [];
    var head = "Cluster " + c.cluster + ": " + c.size + " documents, " + c.pairs + (c.pairs === 1 ? " pair" : " pairs") +
      (c.center ? ", cohesion " + fixed(c.cohesion) + " (least similarity to " + c.center + ")" : "");
    return el("li", { className: "cluster", "data-cluster": String(c.cluster) }, [
      el("span", { className: "cluster-head", textContent: head }),
      el("ul", { className: "members" }, ids.map(function (id) {
        var cls = id === c.center ? "center" : "";
        var note = (c.keep && id === c.keep ? " (keep)" : "") + (id === c.center && c.keep !== id ? " (center)" : "");
        return el("li", { className: cls, textContent: id + note });
      }))
    ]);
  }

  // --- views ------------------------------------------------------------------

  function showView(name) {
    ["query", "clusters"].forEach(function (v) {
      $(v + "-view").hidden = v !== name;
      $("show-" + v).setAttribute("aria-pressed", String(v === name));
    });
  }

  function start() {
    showTokenState();
    $("show-query").addEventListener("click", function () { showView("query"); });
    $("show-clusters").addEventListener("click", function () { showView("clusters"); });
    $("forget-token").addEventListener("click", function () { setToken(""); });
    $("token-cancel").addEventListener("click", function () { $("token-dialog").close(""); });
    $("doc-form").addEventListener("submit", function (e) {
      e.preventDefault();
      busy($("find"), $("results-status"), find);
    });
    $("add").addEventListener("click", function () { busy($("add"), $("results-status"), add); });
    $("reject").addEventListener("change", function () { if ($("reject").checked) $("check-first").checked = true; });
    $("file").addEventListener("change", function () {
      var f = chosenFile();
      $("clear-file").hidden = !f;
      if (f && !$("doc-id").value.trim()) $("doc-id").placeholder = f.name;
    });
    $("clear-file").addEventListener("click", function () {
      $("file").value = "";
      $("clear-file").hidden = true;
      $("doc-id").placeholder = "";
      $("text").focus();
    });
    $("compare-close").addEventListener("click", closeCompare);
    $("clusters-form").addEventListener("submit", function (e) {
      e.preventDefault();
      busy($("show-cluster-list"), $("clusters-status"), clusters);
    });
    loadStats();
  }

  start();
})();
