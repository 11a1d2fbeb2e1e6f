package normalize

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"socialrouter/internal/jsonscan"
)

// TestAppendRawString holds appendRawString to json.Marshal of the string
// a checked literal decodes to: escapes of every kind, the HTML bytes,
// U+2028/U+2029 and their neighbours, the bytes rawStops flags beside
// '<', '>' and '\\' ('^', '|', '~'), at every offset around the eight-byte
// steps of rawPlain.
func TestAppendRawString(t *testing.T) {
	pieces := []string{
		"a", "plain text ", "<", ">", "&", `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`,
		`\u0000`, `\u001f`, `\u003c`, `\u0026`, `\u00e9`, `\u2028`, `\u2029`, `\ud83d\ude00`, `\ud800`, `\udc00x`,
		`\ud800\u0041`, "é", "\u2028", "\u2029", "\u2027", "\u202a", "\u20ac", "€uro", "\U0001F600",
		"^", "|", "~", "a|b~c^d", `\u001c`, `\u001e`, `\u007c`,
	}
	rng := rand.New(rand.NewPCG(3, 8))
	var cases []string
	for _, p := range pieces {
		for pad := range 10 {
			cases = append(cases, string(bytes.Repeat([]byte("x"), pad))+p+"yz")
		}
	}
	for range 3000 {
		var b []byte
		for range rng.IntN(12) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		cases = append(cases, string(b))
	}
	for _, body := range cases {
		lit := `"` + body + `"`
		if !jsonscan.ValidSyntax([]byte(lit)) {
			t.Fatalf("case %s is not a checked literal", lit)
		}
		var s string
		if err := json.Unmarshal([]byte(lit), &s); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(s)
		if got := appendRawString(nil, body); !bytes.Equal(got, want) {
			t.Fatalf("appendRawString(%s) = %s, want %s", strconv.Quote(body), got, want)
		}
	}
}
