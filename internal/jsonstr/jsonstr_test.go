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

// TestPlainRun: PlainRun stops at the word that holds the first byte
// ending a plain run; plainLen stops exactly at that byte when it lies in a
// whole word. Both leave a tail shorter than a word to the caller.
func TestPlainRun(t *testing.T) {
	tests := []struct {
		s         string
		html      bool
		run, plen int
	}{
		{"abcdefgh", false, 8, 8},
		{"abcdefg", false, 0, 0},
		{"abcdefghijklmnop\"", false, 16, 16},
		{"abcdefgh<ijklmnop", false, 16, 16},
		{"abcdefgh<ijklmnop", true, 8, 8},
		{"abc\x00defgh", false, 0, 3},
		{"abcdefg\xc3\xa9", false, 0, 7},
		{"abc\"efghij", false, 0, 3},
		{"abcdefghij\"lmnopq", false, 8, 10},
		{"abc<efgh", true, 0, 3},
		{"ab>defgh", true, 0, 2},
		{"a\"cdefgh", true, 0, 1},
		{"\x00bcdefgh", true, 0, 0},
		{"abcdefgh$%'=?@[]", true, 16, 16}, // neighbours of the stop bytes
		{"abcdefgh\\", false, 8, 8},
	}
	for _, tt := range tests {
		if got := PlainRun(tt.s, 0, tt.html); got != tt.run {
			t.Errorf("PlainRun(%q, %v) = %d, want %d", tt.s, tt.html, got, tt.run)
		}
		if got := plainLen(tt.s, 0, tt.html); got != tt.plen {
			t.Errorf("plainLen(%q, %v) = %d, want %d", tt.s, tt.html, got, tt.plen)
		}
	}
}
