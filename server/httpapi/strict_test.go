package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/api"
)

// strictKeysTokens is strictKeys as a JSON decoder's tokens tell it: the
// oracle of the walker (which skips the contents of strings).
func strictKeysTokens(body []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return walkJSON(dec, t, "")
}

func walkJSON(dec *json.Decoder, t reflect.Type, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return nil
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && reflect.PointerTo(t).Implements(unmarshalerType) {
		t = nil // it reads its own members
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case t != nil && t.Kind() == reflect.Struct:
			fields = jsonFields(t)
		case t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil
			}
			k, _ := kt.(string)
			p := k
			if path != "" {
				p = path + "." + k
			}
			ft := elem
			if fields != nil {
				if seen[k] {
					return BadRequest("malformed JSON body: %q is given twice", p)
				}
				seen[k] = true
				f, ok := fields[k]
				if !ok {
					return BadRequest("malformed JSON body: unknown field %q (names are case-sensitive)", p)
				}
				ft = f
			}
			if err := walkJSON(dec, ft, p); err != nil {
				return err
			}
		}
		_, _ = dec.Token()
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walkJSON(dec, elem, path); err != nil {
				return err
			}
		}
		_, _ = dec.Token()
	}
	return nil
}

// strictTypes are request types whose members strictKeys checks, nested
// ones among them.
var strictTypes = []reflect.Type{
	reflect.TypeFor[api.AddRequest](),
	reflect.TypeFor[[]api.AddRequest](),
	reflect.TypeFor[map[string]api.AddRequest](),
	reflect.TypeFor[struct {
		A  *api.AddRequest           `json:"a"`
		L  []api.AddRequest          `json:"l"`
		M  map[string]api.AddRequest `json:"m"`
		R  json.RawMessage           `json:"r"`
		N  float64                   `json:"n"`
		Is []int                     `json:"is"`
	}](),
}

// FuzzStrictKeys: on every valid JSON text, the walker gives the tokens'
// answer, for each type.
func FuzzStrictKeys(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","text":"x y z"}`, `{"id":"a","ID":"b"}`, `{"\u0069d":"a","id":"b"}`, `{"i\"d":1}`,
		`[{"id":"a"},{"id":"b","id":"c"}]`, `{"a":{"id":"x","Text":"y"},"l":[{"id":"q"}],"m":{"k":{"ID":"z"}}}`,
		`{"r":{"ID":1,"ID":2},"n":-1.5e+3,"is":[1, 2 ,3 ]}`, ` { "id" : "a\\" , "text" : "\\\\" } `,
		`{"a":null,"l":[],"m":{}}`, `{"text":"a \"quoted\" word","id":"x"}`, `"plain"`, `true`, `[[[]]]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if !json.Valid(b) {
			_ = strictKeys(b, strictTypes[0]) // no panic
			return
		}
		for _, typ := range strictTypes {
			got, want := strictKeys(b, typ), strictKeysTokens(b, typ)
			if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
				t.Fatalf("%s as %v: %v, want %v", s, typ, got, want)
			}
		}
	})
}

// TestStrictKeysDeep: text nested deeper than encoding/json decodes is
// refused, not walked to a stack overflow.
func TestStrictKeysDeep(t *testing.T) {
	deep := []byte(strings.Repeat("[", 3_000_000))
	if err := strictKeys(deep, strictTypes[0]); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("3 000 000 brackets: %v", err)
	}
	ok := []byte(strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth))
	if err := strictKeys(ok, strictTypes[1]); err != nil {
		t.Fatalf("%d levels: %v", maxJSONDepth, err)
	}
}

// BenchmarkStrictKeys: a request of an 8.8 MB text.
func BenchmarkStrictKeys(b *testing.B) {
	text := strings.Repeat("some words of a text \"quoted\" and more \u00e9 ", 200000)
	body, _ := json.Marshal(api.AddRequest{ID: "x", Text: text})
	typ := reflect.TypeFor[api.AddRequest]()
	for _, c := range []struct {
		name string
		f    func([]byte, reflect.Type) error
	}{{"walker", strictKeys}, {"tokens", strictKeysTokens}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := c.f(body, typ); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
