package registry

import (
	"strings"
	"testing"
)

// TestErrorRowsDeclared: an offer's error_rows are compiled, the first
// predicate that holds gives the row's meaning, a predicate that is no jq
// or a meaning outside the three is refused at its file:line.
func TestErrorRowsDeclared(t *testing.T) {
	with := func(rows string) string {
		return strings.Replace(loadService, "\t\timplements: [\"includeEmail\"]\n", "\t\timplements: [\"includeEmail\"]\n\t\terror_rows: ["+rows+"]\n", 1)
	}
	reg, err := LoadFiles(map[string][]byte{loadBaseFile: []byte(loadBase), loadServiceFile: []byte(with(
		`{when: ".error == \"private\"", means: "private"}, {when: "(.error | strings | test(\"not found\"))", means: "gone"}, {when: ".error != null", means: "rate_limited"}`))})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := reg.Service("pro_net", "company.info")
	o := s.Offers[0]
	for item, want := range map[string]string{
		`{"error": "private"}`:                     RowPrivate,
		`{"error": "company not found"}`:           RowGone,
		`{"error": "slow down"}`:                   RowRateLimited,
		`{"error_code": "x"}`:                      "",
		`not json`:                                 "",
		`{"error": {"message": "page not found"}}`: RowRateLimited,
	} {
		if got := o.RowMeaning([]byte(item)); got != want {
			t.Errorf("%s means %q, want %q", item, got, want)
		}
	}
	if !o.GoneRow([]byte(`{"error": "private"}`)) || o.GoneRow([]byte(`{"error": "slow down"}`)) || s.Offers[1].GoneRow([]byte(`{"error": "private"}`)) {
		t.Error("GoneRow: gone and private only, of the offer that declares them")
	}
	for _, bad := range []struct{ rows, want string }{
		{`{when: ".error ==", means: "gone"}`, "error_rows[0].when"},
		{`{when: ".error", means: "vanished"}`, "means"},
	} {
		_, err := LoadFiles(map[string][]byte{loadBaseFile: []byte(loadBase), loadServiceFile: []byte(with(bad.rows))})
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), loadServiceFile+":") {
			t.Errorf("error_rows %s: %v, want a refusal naming %s at its file", bad.rows, err, bad.want)
		}
	}
}
