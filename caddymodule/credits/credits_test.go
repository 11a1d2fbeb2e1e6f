package credits

import (
	"encoding/json"
	"testing"
)

func TestParseAndString(t *testing.T) {
	tests := []struct {
		in   string
		want Micros
		out  string
	}{
		{"0.001725", 1725, "0.001725"},
		{"5", 5_000_000, "5"},
		{"10.5", 10_500_000, "10.5"},
		{"0", 0, "0"},
		{"-0.25", -250_000, "-0.25"},
		{"1e-6", 1, "0.000001"},
		{" +2.5E1 ", 25_000_000, "25"},
		{".5", 500_000, "0.5"},
		{"3.", 3_000_000, "3"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Parse(%q) = %d, want %d", tt.in, got, tt.want)
			}
			if s := got.String(); s != tt.out {
				t.Errorf("String() = %q, want %q", s, tt.out)
			}
		})
	}
	for _, bad := range []string{"abc", "0.0000001", "", "1e30", "0x10", "3/2", "0b1", "1_000", "1.2.3", "--1", "e5", "."} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	var m Micros
	if err := json.Unmarshal([]byte("0.005175"), &m); err != nil {
		t.Fatal(err)
	}
	if m != 5175 {
		t.Fatalf("got %d", m)
	}
	b, _ := json.Marshal(struct {
		C Micros `json:"c"`
	}{3 * 1725})
	if string(b) != `{"c":0.005175}` {
		t.Fatalf("got %s", b)
	}
	if err := json.Unmarshal([]byte(`"1"`), &m); err == nil {
		t.Fatal("string accepted")
	}
}

// TestParseTyped: a typed amount is digits only; what Parse also reads as a
// JSON number (an exponent) is no amount in a form.
func TestParseTyped(t *testing.T) {
	for in, want := range map[string]Micros{"5": 5_000_000, " 2.5 ": 2_500_000, ".5": 500_000, "3.": 3_000_000} {
		if got, err := ParseTyped(in); err != nil || got != want {
			t.Errorf("ParseTyped(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"1e2", "2.5E1", "0x10", "3/2", "", "."} {
		if _, err := ParseTyped(bad); err == nil {
			t.Errorf("ParseTyped(%q) accepted", bad)
		}
		if _, err := Parse(bad); err == nil && bad != "1e2" && bad != "2.5E1" {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
