// Package corpus reads the ground truth of the Debian test corpus
// (../shared/corpus/debian): pairs.tsv, one line "id1<TAB>id2<TAB>jaccard"
// per pair of documents whose exact word-shingle Jaccard resemblance is at
// least 0.5, after a header line. The benchmark suite and the accuracy tests
// both read it through this package.
package corpus
