package normalize_test

import (
	"context"
	"fmt"
	"testing"
)

// TestFastPathHelpers holds the plan's toint, tonum, iso8601 and nonempty
// to the Go helpers gojq calls.
func TestFastPathHelpers(t *testing.T) {
	values := []string{
		`null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `1.5`, `2.5`, `-2.5`, `1e21`, `1e300`, `-1e300`, `5.532894228304753e+32`, `9007199254740991`, `9007199254740993.5`, `12345678901234567890`,
		`1700000000`, `1700000000.5`, `1700000000123`, `99999999999`, `100000000001`, `-5`, `""`, `" "`, `"0"`, `"12"`,
		`"1,234"`, `"1,234.5"`, `"10K"`, `"10k+"`, `"1.5M"`, `"2B"`, `"3b"`, `"K"`, `"+"`, `"1e3"`, `"0x10"`, `"NaN"`,
		`"Inf"`, `"-Inf"`, `"1e400"`, `"abc"`, `" 42 "`, `"9007199254740993"`, `"2024-05-06T07:08:09Z"`,
		`"2024-05-06T07:08:09.123456789+02:00"`, `"2024-05-06T07:08:09"`, `"2024-05-06 07:08:09"`,
		`"2024-05-06T07:08:09.000+0200"`, `"2024-05-06"`, `"Mon, 06 May 2024 07:08:09 +0200"`,
		`"Mon, 06 May 2024 07:08:09 GMT"`, `"0001-01-01T00:00:00Z"`, `"2024-05-06T07:08:09.5"`, `"2024-05-06T07:08:09+0200"`, `"2024-05-06T07:08:09.000+0200"`, `"2024-05-06T07:08"`, `"2024-05-06 07:08"`, `"2024-05-06x"`, `"2024-13-45"`, `"1e3"`, `"-1e3"`, `"1e-3"`, `"+5"`, `"0x1p-2"`, `"infinity"`, `"1_000"`, `"12:30"`, `" 2024-05-06 "`, `"1,234 followers"`, `"12.5K views"`, `"500+ connections"`, `"3 days ago"`, `"1 234"`, `"2 - 3 people"`, `"1.2 M"`, `"12 "`, `"no reviews"`, `"1700000000"`, `[]`, `[0]`, `{}`, `{"a":1}`,
	}
	for _, f := range []string{"toint", "tonum", "iso8601", "nonempty"} {
		p := fpProgram(t, fmt.Sprintf("{v: (.[] | %s)}", f))
		st := fpStats{}
		for _, v := range values {
			fpDiff(t, p, []byte("["+v+"]"), "", &st, f+" of "+v)
		}
		if st.bails != 0 {
			t.Errorf("%s: %d bails", f, st.bails)
		}
	}
}

// TestToIntRange: toint keeps the integers a JSON reader holds exactly and
// leaves anything beyond ±2^53 out (int() would wrap it to a negative).
func TestToIntRange(t *testing.T) {
	p := fpProgram(t, "{v: (.v | toint)}")
	tests := []struct{ in, want string }{
		{`12`, `{"v":12}`},
		{`2.5`, `{"v":3}`},
		{`"1.2K"`, `{"v":1200}`},
		{`9007199254740991`, `{"v":9007199254740991}`},
		{`5.532894228304753e+32`, `{}`},
		{`-1e300`, `{}`},
		{`"5.5e32"`, `{}`},
		{`1e21`, `{}`},
	}
	for _, tt := range tests {
		rec, _, err := p.NormalizeItem(context.Background(), []byte(`{"v":`+tt.in+`}`), "", "2026-01-02T03:04:05.000Z")
		if err != nil || string(rec) != tt.want {
			t.Errorf("toint of %s: %s, %v; want %s", tt.in, rec, err, tt.want)
		}
		ref, _, err := p.NormalizeGojq(context.Background(), []byte(`{"v":`+tt.in+`}`), "", "2026-01-02T03:04:05.000Z")
		if err != nil || string(ref) != tt.want {
			t.Errorf("toint of %s on gojq: %s, %v; want %s", tt.in, ref, err, tt.want)
		}
	}
}
