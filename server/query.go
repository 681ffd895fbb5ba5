package server

import (
	"net/http"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/bitvec"
)

// defaultThreshold is a query's threshold when neither a threshold nor a
// containment is given (as "fpdb query").
const defaultThreshold = 0.7

// queryParams are the parameters of a query sent as a plain body.
var queryParams = []string{"threshold", "containment", "limit", "plan", "tau", "recall", "explain", "format", "encoding"}

// queryRequest reads a query: JSON, or a plain-text body with its
// parameters in the query string.
func queryRequest(r *http.Request) (api.QueryRequest, error) {
	var req api.QueryRequest
	mt, _, err := mediaType(r)
	if err != nil {
		return req, err
	}
	body, err := readBody(r)
	if err != nil {
		return req, err
	}
	if mt == "application/json" {
		if len(r.URL.Query()) > 0 {
			return req, badRequest("a query sent as JSON takes no query parameters")
		}
		return req, decodeJSON(body, &req)
	}
	switch mt {
	case "", "text/plain", "application/octet-stream", "text/html", "application/x-www-form-urlencoded": // the text itself
	default:
		return req, &httpError{status: http.StatusUnsupportedMediaType, code: api.CodeBadRequest,
			msg: "Content-Type " + mt + ": send JSON or the text as text/plain"}
	}
	p := params{v: r.URL.Query()}
	p.only(queryParams...)
	req = api.QueryRequest{Text: string(body), Threshold: p.float("threshold"), Containment: p.float("containment"),
		Limit: p.int("limit"), Plan: p.str("plan"), Recall: p.float("recall"), Explain: p.bool("explain"),
		TextInput: api.TextInput{Format: p.str("format"), Encoding: p.str("encoding")}}
	if mt == "text/html" && req.Format == "" {
		req.Format = "html"
	}
	if p.str("tau") != "" {
		tau := p.int("tau")
		req.Tau = &tau
	}
	return req, p.err
}

// queryOptions turns a request into the db's options.
func queryOptions(req api.QueryRequest) (db.QueryOptions, error) {
	o := db.QueryOptions{Threshold: req.Threshold, Containment: req.Containment, Limit: req.Limit, Shingles: req.Shingles}
	if o.Threshold == 0 && o.Containment == 0 {
		o.Threshold = defaultThreshold
	}
	to, err := textOptions(req.TextInput)
	if err != nil {
		return o, err
	}
	o.TextOptions = to
	switch req.Plan {
	case "", "auto":
	case "scan":
		o.Plan.Kind = db.PlanScan
	case "probe":
		o.Plan.Kind = db.PlanProbe
		if req.Tau != nil { // else the smallest exact radius (query)
			o.Plan.Tau = *req.Tau
		}
	case "approx":
		o.Plan = db.Plan{Kind: db.PlanApprox, MinRecall: req.Recall}
		if req.Recall == 0 {
			o.Plan.MinRecall = 0.999
		}
	default:
		return o, badRequest("plan %q: want auto, scan, probe or approx", req.Plan)
	}
	if req.Tau != nil && req.Plan != "probe" {
		return o, badRequest("tau goes with plan \"probe\"")
	}
	return o, nil
}

// query is POST /v1/query.
func (s *Server) query(w http.ResponseWriter, r *http.Request) error {
	req, err := queryRequest(r)
	if err != nil {
		return err
	}
	if (req.Text == "") == (req.Fingerprint == "") {
		return badRequest("give a text or a fingerprint (one of them)")
	}
	o, err := queryOptions(req)
	if err != nil {
		return err
	}
	if o.Plan.Kind == db.PlanProbe && req.Tau == nil {
		if o.Plan.Tau, err = s.d.ExactTau(o.Threshold); err != nil {
			return err
		}
	}
	var res *db.QueryResult
	if req.Fingerprint != "" {
		fp, perr := bitvec.ParseHex(req.Fingerprint, s.d.Params().K)
		if perr != nil {
			return badRequest("fingerprint: %v", perr)
		}
		res, err = s.d.QueryFingerprint(r.Context(), fp, o)
	} else {
		res, err = s.d.Query(r.Context(), []byte(req.Text), o)
	}
	if err != nil {
		return err
	}
	out := api.QueryResult{Matches: matches(res.Matches)}
	if req.Explain {
		st := res.Stats
		out.Explain = &api.Explain{Plan: st.Plan.String(), Radius: st.Radius, MinHits: st.MinHits, Probes: st.Probes,
			Postings: st.Postings, Candidates: st.Candidates, Verified: st.Verified, Reads: st.Reads, Recall: st.Recall,
			ElapsedNS: st.Elapsed.Nanoseconds()}
	}
	return writeJSON(w, http.StatusOK, out)
}
