package api

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestOpenAPIHasEveryField: every JSON field of the types that
// server/openapi.json describes as a schema of the same name is one of
// that schema's properties, so that a field added here (the Pending ones
// of a cluster's 202 answers) is documented there too.
func TestOpenAPIHasEveryField(t *testing.T) {
	b, err := os.ReadFile("../server/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{
		ErrorBody{}, AddRequest{}, AddResult{}, Match{}, QueryRequest{}, QueryResult{}, Doc{}, DeleteResult{}, Stats{},
		Pair{}, Cluster{}, LogEntry{}, LogMatch{}, CompareRequest{}, CompareText{}, CompareSide{}, Comparison{}, Passage{}, Span{},
		BatchResult{}, BatchSkip{}, DeleteRequest{}, TemplateRequest{}, Template{}, Templates{}, TemplateResult{},
		BackupRequest{}, BackupResult{}, ImportResult{}, StorageStats{},
	} {
		typ := reflect.TypeOf(v)
		schema, ok := doc.Components.Schemas[typ.Name()]
		if !ok {
			t.Errorf("openapi.json has no schema %s", typ.Name())
			continue
		}
		for _, name := range jsonFields(typ) {
			if _, ok := schema.Properties[name]; !ok {
				t.Errorf("openapi.json: schema %s has no property %q (field of api.%s)", typ.Name(), name, typ.Name())
			}
		}
	}
}

// jsonFields returns the names of the JSON fields of the struct type typ,
// those of its embedded structs included.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" || !f.IsExported() && !f.Anonymous:
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			out = append(out, jsonFields(f.Type)...)
			continue
		case name == "":
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}
