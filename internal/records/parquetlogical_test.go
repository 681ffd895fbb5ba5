package records

import (
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
)

// TestParquetLogicalTypes: values of logical types are given as what they
// mean, in Meta and in Fields (so in a JSON Lines or CSV output): dates,
// timestamps in UTC and local, times, decimals of every physical type,
// UUIDs and legacy INT96 timestamps; values of plain types are unchanged.
func TestParquetLogicalTypes(t *testing.T) {
	schema := parquet.NewSchema("row", parquet.Group{
		"id":       parquet.String(),
		"text":     parquet.String(),
		"d":        parquet.Date(),
		"ts_utc":   parquet.Timestamp(parquet.Millisecond),
		"ts_local": parquet.TimestampAdjusted(parquet.Microsecond, false),
		"ts_nano":  parquet.Timestamp(parquet.Nanosecond),
		"t_local":  parquet.TimeAdjusted(parquet.Millisecond, false),
		"t_utc":    parquet.Time(parquet.Microsecond),
		"dec32":    parquet.Decimal(2, 9, parquet.Int32Type),
		"dec64":    parquet.Decimal(0, 18, parquet.Int64Type),
		"decfix":   parquet.Decimal(3, 20, parquet.FixedLenByteArrayType(9)),
		"decbin":   parquet.Decimal(30, 40, parquet.ByteArrayType),
		"uuid":     parquet.UUID(),
		"i96":      parquet.Leaf(parquet.Int96Type),
		"plain":    parquet.Leaf(parquet.Int64Type),
	})
	uuid, _ := hex.DecodeString("00112233445566778899aabbccddeeff")
	minus5 := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfb}
	big, _ := hex.DecodeString("0c9f2c9cd04674edea40000000") // 10^30
	values := map[string]parquet.Value{
		"id":       parquet.ByteArrayValue([]byte("a")),
		"text":     parquet.ByteArrayValue([]byte("some text")),
		"d":        parquet.Int32Value(19723), // 2024-01-01
		"ts_utc":   parquet.Int64Value(1704067200123),
		"ts_local": parquet.Int64Value(1704067200000001),
		"ts_nano":  parquet.Int64Value(-1),
		"t_local":  parquet.Int32Value(3723004),
		"t_utc":    parquet.Int64Value(86399999999),
		"dec32":    parquet.Int32Value(-1205),
		"dec64":    parquet.Int64Value(42),
		"decfix":   parquet.FixedLenByteArrayValue(minus5),
		"decbin":   parquet.ByteArrayValue(big),
		"uuid":     parquet.FixedLenByteArrayValue(uuid),
		// 01:01:01.000000005 of the Julian day 2460311, 2024-01-01.
		"i96":   parquet.Int96Value(deprecated.Int96{uint32(3661000000005 & 0xffffffff), uint32(3661000000005 >> 32), 2460311}),
		"plain": parquet.Int64Value(7),
	}
	want := map[string]string{
		"d":        `"2024-01-01"`,
		"ts_utc":   `"2024-01-01T00:00:00.123Z"`,
		"ts_local": `"2024-01-01T00:00:00.000001"`,
		"ts_nano":  `"1969-12-31T23:59:59.999999999Z"`,
		"t_local":  `"01:02:03.004"`,
		"t_utc":    `"23:59:59.999999Z"`,
		"dec32":    `-12.05`,
		"dec64":    `42`,
		"decfix":   `-0.005`,
		"decbin":   `1.000000000000000000000000000000`,
		"uuid":     `"00112233-4455-6677-8899-aabbccddeeff"`,
		"i96":      `"2024-01-01T01:01:01.000000005Z"`,
		"plain":    `7`,
	}
	row := make(parquet.Row, len(schema.Fields()))
	var keep []string
	for i, f := range schema.Fields() {
		row[i] = values[f.Name()].Level(0, 0, i)
		if _, ok := want[f.Name()]; ok {
			keep = append(keep, f.Name())
		}
	}
	p := filepath.Join(t.TempDir(), "logical.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewWriter(f, schema)
	if _, err := w.WriteRows([]parquet.Row{row}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, p, Options{KeepFields: keep})
	if len(recs) != 1 || recs[0].Err != "" {
		t.Fatalf("records: %+v", recs)
	}
	wantMeta := "{"
	for i, name := range keep {
		if i > 0 {
			wantMeta += ","
		}
		wantMeta += `"` + name + `":` + want[name]
	}
	wantMeta += "}"
	if recs[0].Meta != wantMeta {
		t.Errorf("Meta\n got %s\nwant %s", recs[0].Meta, wantMeta)
	}
	for _, fl := range recs[0].Fields {
		w, ok := want[fl.Name]
		if !ok {
			continue
		}
		b, err := appendJSONValue(nil, fl.Value)
		if err != nil || string(b) != w {
			t.Errorf("field %s: %s (%v), want %s", fl.Name, b, err, w)
		}
	}
}

func TestFloat16(t *testing.T) {
	for bits, want := range map[uint16]float64{
		0x3c00: 1, 0xc000: -2, 0x7bff: 65504, 0x0001: math.Ldexp(1, -24), 0x0000: 0, 0x3555: 0.333251953125,
		0x7c00: math.Inf(1), 0xfc00: math.Inf(-1),
	} {
		if got := float16(bits); got != want {
			t.Errorf("float16(%#04x) = %v, want %v", bits, got, want)
		}
	}
	if got := float16(0x7e00); !math.IsNaN(got) {
		t.Errorf("float16(0x7e00) = %v, want NaN", got)
	}
}
