package server

import (
	"net/http"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/server/apiconv"
	"github.com/fpdb/fpdb/server/httpapi"
)

// queryOptions turns a request into the db's options.
func queryOptions(req api.QueryRequest) (db.QueryOptions, error) {
	o := db.QueryOptions{Threshold: req.Threshold, Containment: req.Containment, Limit: req.Limit, Shingles: req.Shingles}
	if o.Threshold == 0 && o.Containment == 0 {
		o.Threshold = httpapi.DefaultThreshold
	}
	to, err := httpapi.TextOptions(req.TextInput)
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
		return o, httpapi.BadRequest("plan %q: want auto, scan, probe or approx", req.Plan)
	}
	if req.Tau != nil && req.Plan != "probe" {
		return o, httpapi.BadRequest("tau goes with plan \"probe\"")
	}
	if req.Recall != 0 && req.Plan != "approx" {
		return o, httpapi.BadRequest("recall %v goes with plan \"approx\" (the other plans are exact)", req.Recall)
	}
	return o, nil
}

// query is POST /v1/query.
func (s *Server) query(w http.ResponseWriter, r *http.Request) error {
	req, err := httpapi.ReadQuery(r)
	if err != nil {
		return err
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
			return httpapi.BadRequest("fingerprint: %v", perr)
		}
		res, err = s.d.QueryFingerprint(r.Context(), fp, o)
	} else {
		res, err = s.d.Query(r.Context(), []byte(req.Text), o)
	}
	if err != nil {
		return err
	}
	out := api.QueryResult{Matches: apiconv.Matches(res.Matches)}
	if req.Explain {
		st := res.Stats
		out.Explain = &api.Explain{Plan: st.Plan.String(), Radius: st.Radius, MinHits: st.MinHits, Probes: st.Probes,
			Postings: st.Postings, Candidates: st.Candidates, Verified: st.Verified, Reads: st.Reads, Recall: st.Recall,
			ElapsedNS: st.Elapsed.Nanoseconds()}
	}
	return httpapi.WriteJSON(w, http.StatusOK, out)
}
