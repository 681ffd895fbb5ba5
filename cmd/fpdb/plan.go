package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fpdb/fpdb/db"
)

// planNames are the values of --plan, in the order the help gives them.
var planNames = []string{"auto", "scan", "probe", "approx"}

// planFlags are --plan, --tau and --recall, shared by the commands that
// search the index (query, dedup).
type planFlags struct {
	plan      string
	tau       int
	recall    float64
	tauSet    bool // --tau was given
	recallSet bool // --recall was given
}

// register adds the flags to f; what names the search ("query", "all-pairs").
func (p *planFlags) register(f *pflag.FlagSet, what string) {
	f.StringVar(&p.plan, "plan", "auto", what+" `PLAN`: "+strings.Join(planNames[:len(planNames)-1], ", ")+" or "+planNames[len(planNames)-1])
	f.Float64Var(&p.recall, "recall", 0.999, "least expected recall `R` of --plan approx, in (0, 1]")
	f.IntVar(&p.tau, "tau", 0, "per-group probe radius `T` of --plan probe (implies it; default: the smallest exact one)")
}

// changed records which flags the command line gave.
func (p *planFlags) changed(cmd *cobra.Command) {
	p.tauSet = cmd.Flags().Changed("tau")
	p.recallSet = cmd.Flags().Changed("recall")
}

// approxOrProbe reports whether the flags ask for a plan other than auto
// or scan.
func (p *planFlags) approxOrProbe() bool {
	return p.plan == "probe" || p.plan == "approx" || p.tauSet
}

// parse validates --plan, --tau and --recall and returns the plan they
// ask for. A probe plan without --tau has Tau -1: the caller sets the
// smallest exact radius once the database is open (exactTau).
func (p *planFlags) parse() (db.Plan, error) {
	var pl db.Plan
	switch p.plan {
	case "auto":
		pl.Kind = db.PlanAuto
	case "scan":
		pl.Kind = db.PlanScan
	case "probe":
		pl.Kind = db.PlanProbe
	case "approx":
		pl.Kind = db.PlanApprox
		if !(p.recall > 0 && p.recall <= 1) {
			return pl, usageErrorf("invalid --recall %v: must be in (0, 1]", p.recall)
		}
		pl.MinRecall = p.recall
	default:
		return pl, usageErrorf("invalid --plan %q: must be auto, scan, probe or approx", p.plan)
	}
	switch {
	case p.recallSet && pl.Kind != db.PlanApprox:
		return pl, usageErrorf("--recall %v needs --plan approx (the other plans are exact)", p.recall)
	case p.tauSet && p.plan == "auto":
		pl.Kind = db.PlanProbe // --tau alone asks for a probe plan
	case p.tauSet && pl.Kind != db.PlanProbe:
		return pl, usageErrorf("--tau %d needs --plan probe", p.tau)
	}
	if p.tau < 0 {
		return pl, usageErrorf("invalid --tau %d: must not be negative", p.tau)
	}
	pl.Tau = p.tau
	if pl.Kind == db.PlanProbe && !p.tauSet {
		pl.Tau = -1
	}
	return pl, nil
}

// exactTau gives a probe plan without --tau (Tau −1) the smallest exact
// radius of d at threshold.
func exactTau(d *db.DB, pl *db.Plan, threshold float64) error {
	if pl.Kind != db.PlanProbe || pl.Tau >= 0 {
		return nil
	}
	var err error
	pl.Tau, err = d.ExactTau(threshold)
	return err
}

// planCompletions are the shell completions of --plan.
var planCompletions = []string{
	"auto\tthe planner's choice among exact plans",
	"scan\tcompare with every stored fingerprint",
	"probe\tprobe the index within --tau bits (exact)",
	"approx\tallow probe plans that may miss matches (--recall)",
}
