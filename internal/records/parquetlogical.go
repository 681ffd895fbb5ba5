package records

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// julianUnixEpoch is the Julian day number of 1970-01-01, the day an INT96
// timestamp's day count is taken from.
const julianUnixEpoch = 2440588

// logicalValue converts a non-null leaf value whose column has a logical
// type that its physical value does not show: a DATE as "2006-01-02", a
// TIMESTAMP as RFC 3339 in UTC ("…Z") when it is adjusted to UTC and
// without a zone when it is local, a TIME as "15:04:05.999999999" ("Z"
// after it when adjusted to UTC), a DECIMAL as a JSON number of its exact
// digits, a UUID as its canonical text, a FLOAT16 as float64, and an INT96
// (the legacy timestamp of Impala and Spark: nanoseconds of the day, then
// the Julian day) as an RFC 3339 UTC time. ok is false for any other
// value, and for a value its logical type does not fit (left as its
// physical value).
func logicalValue(v parquet.Value, node parquet.Node) (any, bool) {
	if v.Kind() == parquet.Int96 {
		i := v.Int96()
		nanos := int64(uint64(i[1])<<32 | uint64(i[0]))
		days := int64(i[2]) - julianUnixEpoch
		if nanos < 0 || nanos >= int64(24*time.Hour) {
			return nil, false
		}
		return time.Unix(days*86400, nanos).UTC().Format(time.RFC3339Nano), true
	}
	if node == nil || !node.Leaf() {
		return nil, false
	}
	lt := node.Type().LogicalType()
	if lt == nil {
		return nil, false
	}
	switch t := lt.Value.(type) {
	case *format.DateType:
		if v.Kind() != parquet.Int32 {
			return nil, false
		}
		return time.Unix(int64(v.Int32())*86400, 0).UTC().Format(time.DateOnly), true
	case *format.TimestampType:
		if v.Kind() != parquet.Int64 {
			return nil, false
		}
		ts, ok := unitTime(v.Int64(), &t.Unit)
		if !ok {
			return nil, false
		}
		if t.IsAdjustedToUTC {
			return ts.Format(time.RFC3339Nano), true
		}
		return ts.Format("2006-01-02T15:04:05.999999999"), true
	case *format.TimeType:
		var n int64
		switch v.Kind() {
		case parquet.Int32:
			n = int64(v.Int32())
		case parquet.Int64:
			n = v.Int64()
		default:
			return nil, false
		}
		ts, ok := unitTime(n, &t.Unit)
		if !ok || n < 0 || ts.Unix() >= 86400 {
			return nil, false
		}
		s := ts.Format("15:04:05.999999999")
		if t.IsAdjustedToUTC {
			s += "Z"
		}
		return s, true
	case *format.DecimalType:
		var unscaled big.Int
		switch v.Kind() {
		case parquet.Int32:
			unscaled.SetInt64(int64(v.Int32()))
		case parquet.Int64:
			unscaled.SetInt64(v.Int64())
		case parquet.ByteArray, parquet.FixedLenByteArray:
			b := v.ByteArray()
			if len(b) == 0 {
				return nil, false
			}
			unscaled.SetBytes(b)
			if b[0]&0x80 != 0 { // two's complement, big-endian
				unscaled.Sub(&unscaled, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
			}
		default:
			return nil, false
		}
		if t.Scale < 0 || t.Scale > 1000 {
			return nil, false
		}
		return json.RawMessage(decimalText(&unscaled, int(t.Scale))), true
	case *format.UUIDType:
		b := v.ByteArray()
		if v.Kind() != parquet.FixedLenByteArray || len(b) != 16 {
			return nil, false
		}
		const hex = "0123456789abcdef"
		s := make([]byte, 0, 36)
		for i, c := range b {
			if i == 4 || i == 6 || i == 8 || i == 10 {
				s = append(s, '-')
			}
			s = append(s, hex[c>>4], hex[c&15])
		}
		return string(s), true
	case *format.Float16Type:
		b := v.ByteArray()
		if v.Kind() != parquet.FixedLenByteArray || len(b) != 2 {
			return nil, false
		}
		f := float16(binary.LittleEndian.Uint16(b))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, true // as NaN and infinite FLOAT and DOUBLE values
		}
		return f, true
	}
	return nil, false
}

// unitTime returns n units of u after the Unix epoch, in UTC.
func unitTime(n int64, u *format.TimeUnit) (time.Time, bool) {
	switch u.Value.(type) {
	case *format.MilliSeconds:
		return time.UnixMilli(n).UTC(), true
	case *format.MicroSeconds:
		return time.UnixMicro(n).UTC(), true
	case *format.NanoSeconds:
		return time.Unix(0, n).UTC(), true
	}
	return time.Time{}, false
}

// decimalText returns unscaled·10^−scale as decimal text: "-12.050" for
// -12050 at scale 3, "0.05" for 5 at scale 2.
func decimalText(unscaled *big.Int, scale int) string {
	digits := new(big.Int).Abs(unscaled).String()
	sign := ""
	if unscaled.Sign() < 0 {
		sign = "-"
	}
	if scale == 0 {
		return sign + digits
	}
	for len(digits) <= scale {
		digits = "0" + digits
	}
	return sign + digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
}

// float16 returns the IEEE 754 half-precision value of bits.
func float16(bits uint16) float64 {
	sign := 1.0
	if bits&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(bits>>10&0x1f), float64(bits&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}
