package index

import (
	"errors"
	"strings"
	"testing"
)

// TestExactTau: ExactTau is the smallest probe radius whose count filter
// is at least 1, and the infeasible-plan error names it.
func TestExactTau(t *testing.T) {
	for m := 1; m <= 40; m++ {
		for rh := 0; rh <= 400; rh++ {
			tau := ExactTau(m, rh)
			if MinHits(m, rh, tau) < 1 {
				t.Fatalf("m=%d rh=%d: ExactTau %d has count filter %d", m, rh, tau, MinHits(m, rh, tau))
			}
			if tau > 0 && MinHits(m, rh, tau-1) >= 1 {
				t.Fatalf("m=%d rh=%d: ExactTau %d, but %d is exact too", m, rh, tau, tau-1)
			}
		}
	}
	err := infeasible(0, 76, 16)
	if !errors.Is(err, ErrInfeasible) || !strings.Contains(err.Error(), "tau 4 or more is exact") {
		t.Errorf("infeasible(0, 76, 16) = %v", err)
	}
}
