package jsonstr

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// marshal is encoding/json's encoding of s, with or without HTML escaping.
func marshal(t *testing.T, s string, html bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	cases := []string{
		"", "plain", "a long plain run of printable ascii, more than eight bytes",
		`quote " and backslash \ here`, "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
		"<script>&amp;</script>", "caf\u00e9 \u2028 \u2029 \U0001F600", "bad \xff utf8 \xc3",
		"12345678<2345678&", "\u2028abcdefgh",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
			if rng.IntN(3) > 0 {
				b[i] = byte(0x20 + rng.IntN(0x5f))
			}
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		for _, html := range []bool{false, true} {
			if got, want := Append(nil, s, html), marshal(t, s, html); !bytes.Equal(got, want) {
				t.Fatalf("Append(%q, html=%v) = %s, want %s", s, html, got, want)
			}
		}
	}
}

func TestPlainRun(t *testing.T) {
	tests := []struct {
		s    string
		html bool
		want int
	}{
		{"abcdefgh", false, 8},
		{"abcdefg", false, 0},
		{"abcdefghijklmnop\"", false, 16},
		{"abcdefgh<ijklmnop", false, 16},
		{"abcdefgh<ijklmnop", true, 8},
		{"abc\x00defgh", false, 0},
		{"abcdefg\xc3\xa9", false, 0},
	}
	for _, tt := range tests {
		if got := PlainRun(tt.s, 0, tt.html); got != tt.want {
			t.Errorf("PlainRun(%q, %v) = %d, want %d", tt.s, tt.html, got, tt.want)
		}
	}
}

// TestPlainLen: plainLen stops exactly at the first byte that ends a plain
// run when it lies in a whole word, else at the tail shorter than a word.
func TestPlainLen(t *testing.T) {
	tests := []struct {
		s    string
		html bool
		want int
	}{
		{"abcdefgh", false, 8},
		{"abcdefg", false, 0},
		{"abc\"efghij", false, 3},
		{"abcdefghij\"lmnopq", false, 10},
		{"abc<efgh", false, 8},
		{"abc<efgh", true, 3},
		{"abcdefgh&ijklmno", true, 8},
		{"ab>defgh", true, 2},
		{"a\"cdefgh", true, 1},
		{"\x00bcdefgh", true, 0},
		{"abcdef\xc3\xa9", true, 6},
		{"abcdefgh$%'=?@[]", true, 16}, // neighbours of the stop bytes
		{"abcdefgh\\", false, 8},
	}
	for _, tt := range tests {
		if got := plainLen(tt.s, 0, tt.html); got != tt.want {
			t.Errorf("plainLen(%q, %v) = %d, want %d", tt.s, tt.html, got, tt.want)
		}
	}
}
