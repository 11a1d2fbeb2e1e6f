package dashboard

import "testing"

func TestRecordCount(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{0, "0 records"}, {1, "1 record"}, {2, "2 records"}, {1234, "1234 records"}} {
		if got := recordCount(c.v); got != c.want {
			t.Errorf("recordCount(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}
