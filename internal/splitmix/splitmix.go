package splitmix

// Constants of the hash functions built on SplitMix64.
const (
	// Phi is 2^64 divided by the golden ratio, rounded to odd: SplitMix64's
	// state increment.
	Phi = 0x9e3779b97f4a7c15
	// Psi is an XXH64 prime, used to spread small integers before Mix.
	Psi = 0xc2b2ae3d27d4eb4f
)

// Mix is the SplitMix64 finalizer: a bijection on uint64 with full
// avalanche (every input bit flips every output bit with probability about
// 1/2).
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Next advances the SplitMix64 state *x and returns its next output.
func Next(x *uint64) uint64 {
	*x += Phi
	return Mix(*x)
}
