package binom

import (
	"math"
	"math/big"
	"testing"
)

// exactCDF computes Pr[X ≤ x] in exact rational arithmetic for p = a/b.
func exactCDF(n int, a, b int64, x int) float64 {
	s := new(big.Rat)
	for j := 0; j <= x && j <= n; j++ {
		c := new(big.Int).Binomial(int64(n), int64(j))
		num := new(big.Int).Mul(c, new(big.Int).Exp(big.NewInt(a), big.NewInt(int64(j)), nil))
		num.Mul(num, new(big.Int).Exp(big.NewInt(b-a), big.NewInt(int64(n-j)), nil))
		den := new(big.Int).Exp(big.NewInt(b), big.NewInt(int64(n)), nil)
		s.Add(s, new(big.Rat).SetFrac(num, den))
	}
	f, _ := s.Float64()
	return f
}

func TestCDFExact(t *testing.T) {
	for _, c := range []struct {
		n    int
		a, b int64
	}{{10, 1, 2}, {64, 1, 4}, {512, 3, 20}, {512, 1, 2}, {256, 9, 10}} {
		p := float64(c.a) / float64(c.b)
		for _, x := range []int{0, 1, c.n / 10, c.n / 4, c.n / 2, c.n - 1, c.n} {
			want := exactCDF(c.n, c.a, c.b, x)
			got := CDF(c.n, p, x)
			if want == 0 && got == 0 {
				continue
			}
			if math.Abs(got-want) > 1e-9*want+1e-300 && math.Abs(got-want)/want > 1e-9 {
				t.Errorf("CDF(%d, %v, %d) = %g, want %g", c.n, p, x, got, want)
			}
			if x > 0 {
				if tail, cdf := Tail(c.n, p, x), CDF(c.n, p, x-1); math.Abs(tail+cdf-1) > 1e-9 {
					t.Errorf("Tail(%d, %v, %d) + CDF(x-1) = %g", c.n, p, x, tail+cdf)
				}
			}
		}
	}
}

// TestSmallProbabilities: a tail of 1e-30 keeps its relative precision.
func TestSmallProbabilities(t *testing.T) {
	want := exactCDF(512, 1, 2, 100)
	got := CDF(512, 0.5, 100)
	if want <= 0 || want > 1e-20 || math.Abs(got-want)/want > 1e-9 {
		t.Errorf("CDF(512, 0.5, 100) = %g, want %g", got, want)
	}
}

func TestEdges(t *testing.T) {
	for _, c := range []struct {
		got, want float64
	}{
		{CDF(10, 0.3, -1), 0}, {CDF(10, 0.3, 10), 1}, {CDF(10, 0, 0), 1}, {CDF(10, 1, 9), 0},
		{Tail(10, 0.3, 0), 1}, {Tail(10, 0.3, 11), 0}, {Tail(10, 1, 10), 1}, {Tail(10, 0, 1), 0},
		{PMF(10, 0.5, -1), 0}, {PMF(10, 0.5, 11), 0}, {PMF(1, 0.25, 1), 0.25},
		{CDF(10, -3, 0), 1}, {Tail(10, 7, 10), 1},
	} {
		if c.got != c.want {
			t.Errorf("got %v, want %v", c.got, c.want)
		}
	}
	if !math.IsNaN(CDF(10, math.NaN(), 3)) || !math.IsNaN(Tail(10, math.NaN(), 3)) {
		t.Error("NaN p must give NaN")
	}
}

func TestCDFTable(t *testing.T) {
	for _, c := range []struct {
		n int
		p float64
	}{{64, 0.5}, {512, 0.5}, {100, 0.1}} {
		tab := CDFTable(c.n, c.p)
		for x := 0; x <= c.n; x++ {
			if d := math.Abs(tab[x] - CDF(c.n, c.p, x)); d > 1e-12 {
				t.Fatalf("n %d p %v x %d: table %v, CDF %v", c.n, c.p, x, tab[x], CDF(c.n, c.p, x))
			}
		}
	}
}
