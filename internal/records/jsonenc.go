package records

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it without HTML escaping; invalid UTF-8 becomes U+FFFD.
func appendJSONString[S string | []byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		var buf [utf8.UTFMax]byte
		n := copy(buf[:], s[i:min(i+utf8.UTFMax, len(s))])
		r, size := utf8.DecodeRune(buf[:n])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendJSONFloat appends f as encoding/json writes a float64.
func appendJSONFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, fmt.Errorf("the number %v cannot be written as JSON", f)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// appendJSONValue appends a field or extra value as JSON.
func appendJSONValue(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendJSONString(dst, v), nil
	case json.RawMessage:
		if len(v) == 0 {
			return append(dst, "null"...), nil
		}
		return append(dst, v...), nil
	case []byte:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v)
		return append(dst, '"'), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case uint64:
		return strconv.AppendUint(dst, v, 10), nil
	case float64:
		return appendJSONFloat(dst, v)
	case float32:
		return appendJSONFloat(dst, float64(v))
	case bool:
		return strconv.AppendBool(dst, v), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, fmt.Errorf("cannot write a %T as JSON: %w", v, err)
	}
	return append(dst, b...), nil
}

// appendText appends a field value as the text of a CSV cell or of a
// Parquet string column: strings as they are, JSON strings decoded, JSON
// null as nothing, other values as their JSON text. It reports whether the
// value is null.
func appendText(dst []byte, v any) ([]byte, bool, error) {
	switch v := v.(type) {
	case nil:
		return dst, true, nil
	case string:
		return append(dst, v...), false, nil
	case []byte:
		if utf8.Valid(v) {
			return append(dst, v...), false, nil
		}
		return base64.StdEncoding.AppendEncode(dst, v), false, nil
	case json.RawMessage:
		if len(v) == 0 || string(v) == "null" {
			return dst, true, nil
		}
		if v[0] == '"' && len(v) >= 2 {
			return appendUnescaped(dst, v[1:len(v)-1]), false, nil
		}
		return append(dst, v...), false, nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return strconv.AppendFloat(dst, v, 'g', -1, 64), false, nil
		}
	case float32:
		if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
			return strconv.AppendFloat(dst, float64(v), 'g', -1, 32), false, nil
		}
	}
	dst, err := appendJSONValue(dst, v)
	return dst, false, err
}
