package normalize

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestFastPathLayouts keeps parseLayouts' shortcuts in step with
// timeLayouts: a layout whose text starts YYYY-MM-DD is listed under the
// character that follows (or none), in timeLayouts' order; the others
// cannot read such a string.
func TestFastPathLayouts(t *testing.T) {
	ref := time.Date(2006, 1, 2, 15, 4, 5, 123456789, time.UTC)
	var only, tee, space []string
	for _, l := range timeLayouts {
		s := ref.Format(l)
		if !strings.HasPrefix(l, "2006-01-02") && !strings.HasPrefix(l, "Mon, ") {
			t.Errorf("layout %q starts with neither a YYYY-MM-DD date nor a weekday and a comma", l)
		}
		if !strings.HasPrefix(l, "2006-01-02") {
			if len(s) >= 10 && s[4] == '-' && s[7] == '-' {
				t.Errorf("layout %q writes a YYYY-MM-DD prefix without starting with one", l)
			}
			if _, err := time.Parse(l, "2006-01-02T15:04:05Z"); err == nil {
				t.Errorf("layout %q reads a YYYY-MM-DD string", l)
			}
			continue
		}
		switch {
		case len(l) == 10:
			only = append(only, l)
		case l[10] == 'T':
			tee = append(tee, l)
		case l[10] == ' ':
			space = append(space, l)
		default:
			t.Errorf("layout %q: unexpected character after the date", l)
		}
	}
	for _, c := range []struct {
		got, want []string
	}{{isoDateOnly, only}, {isoDateT, tee}, {isoDateSpace, space}} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("shortcut layouts %q, timeLayouts give %q", c.got, c.want)
		}
	}
}

// TestParseNumString pins what toint and tonum read from strings (both
// engines share parseNumString; TestFastPathHelpers holds them together).
func TestParseNumString(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"12", 12, true}, {" 42 ", 42, true}, {"1,234", 1234, true}, {"10,001+", 10001, true},
		{"1.2K", 1200, true}, {"10k+", 10000, true}, {"1.5M", 1.5e6, true}, {"2B", 2e9, true},
		{"1,234 followers", 1234, true}, {"12.5K views", 12500, true}, {"500+ connections", 500, true},
		{"1.2 M views", 1.2e6, true}, {"1.2 M", 1.2e6, true}, {"3 abonnés", 3, true},
		{"", 0, false}, {"abc", 0, false}, {"no reviews", 0, false}, {"1 234", 0, false},
		{"2 - 3 people", 0, false}, {"2024-05-06", 0, false}, {"12:30", 0, false}, {"1.2.3 views", 0, false},
		{"NaN", 0, false}, {"1e400", 0, false}, {"K", 0, false}, {"5 views 3", 0, false},
	}
	for _, tc := range tests {
		got, ok := parseNumString(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseNumString(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestToISO pins what iso8601 reads (both engines share fromEpoch and the
// layouts; TestFastPathHelpers holds them together): epoch seconds and
// milliseconds from 1973 on, the declared layouts; a year, a count or 0
// is no timestamp.
func TestToISO(t *testing.T) {
	tests := []struct {
		in   any
		want any
	}{
		{1700000000, "2023-11-14T22:13:20.000Z"}, {1700000000.5, "2023-11-14T22:13:20.500Z"},
		{1700000000123.0, "2023-11-14T22:13:20.123Z"}, {"1700000000", "2023-11-14T22:13:20.000Z"},
		{100000000, "1973-03-03T09:46:40.000Z"}, {"2024-05-06", "2024-05-06T00:00:00.000Z"},
		{"2024-05-06T07:08:09+02:00", "2024-05-06T05:08:09.000Z"},
		{"2021", nil}, {2021, nil}, {0, nil}, {"0", nil}, {99999999, nil}, {-5, nil}, {"10 months ago", nil}, {nil, nil},
	}
	for _, tc := range tests {
		if got := toISO(tc.in); got != tc.want {
			t.Errorf("toISO(%#v) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

// TestAppendISO holds appendISO to time's formatter of isoLayout: every
// field at its edges, zones other than UTC, truncated (not rounded)
// milliseconds, and years it hands back to time.
func TestAppendISO(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	times := []time.Time{
		time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 25, 23, 30, 0, 500_000_000, east),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 1_000_000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 15, 12, 0, 0, 0, time.UTC),
		time.UnixMilli(1_700_000_000_123),
		{},
	}
	for i := int64(0); i < 2000; i++ {
		times = append(times, time.Unix(i*104_729_347+i*i*7919, i*999_983%1_000_000_000))
	}
	for _, tm := range times {
		want := tm.UTC().Format(isoLayout)
		if got := string(appendISO([]byte("x"), tm)); got != "x"+want {
			t.Fatalf("appendISO(%v) = %q, want %q", tm, got, "x"+want)
		}
	}
}
