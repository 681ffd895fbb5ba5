package apiconv

import (
	"errors"
	"testing"
)

func TestMessage(t *testing.T) {
	for in, want := range map[string]string{
		`fpdb: get "x": fpdb: document not found`:          `fpdb: get "x": document not found`,
		`fpdb: open db: fpdb: not an fpdb database`:        `fpdb: open db: not an fpdb database`,
		`fpdb: get "x: fpdb: y": fpdb: document not found`: `fpdb: get "x: fpdb: y": document not found`,
		`fpdb: get "a\"b: fpdb: c": fpdb: gone`:            `fpdb: get "a\"b: fpdb: c": gone`,
		`add bin/fpdb: fpdb: fpdb: corrupt`:                `add bin/fpdb: corrupt`,
		`no prefix at all`:                                 `no prefix at all`,
	} {
		if got := Message(errors.New(in)); got != want {
			t.Errorf("Message(%q) = %q, want %q", in, got, want)
		}
	}
}
