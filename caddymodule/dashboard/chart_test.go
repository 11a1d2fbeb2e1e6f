package dashboard

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// TestNiceCeil: the top of the y scale is the smallest 1, 2 or 5 × 10^k
// at or above the peak.
func TestNiceCeil(t *testing.T) {
	for _, tt := range []struct{ in, want float64 }{
		{1, 1}, {1.2, 2}, {2, 2}, {3.4, 5}, {7, 10}, {10, 10}, {0.0034, 0.005}, {17250, 20000}, {99, 100},
	} {
		if got := niceCeil(tt.in); got != tt.want {
			t.Errorf("niceCeil(%g) = %g, want %g", tt.in, got, tt.want)
		}
	}
}

// TestChartYScale: a chart with usage has a labelled y scale (its unit
// and the ticks 0, half and top, written by the axis's tick function);
// one without usage has none.
func TestChartYScale(t *testing.T) {
	today := time.Date(2025, 3, 12, 0, 0, 0, 0, time.UTC)
	rows := []store.UsageRow{{Day: today, Platform: "pro_net", Credits: 3_400_000}, {Day: today.AddDate(0, 0, -1), Platform: "maps", Credits: 1_000_000}}
	y := yAxis{Title: "credits", Tick: func(v float64) string { return credits.Micros(v).String() }}
	c := dailyChart(rows, today, "spend", func(u store.UsageRow) string { return u.Platform },
		func(u store.UsageRow) float64 { return float64(u.Credits) }, func(v float64) string { return "" }, y)
	svg := string(c.SVG)
	for _, want := range []string{`class="tick ytitle"`, `>credits</text>`, `>0</text>`, `>2.5</text>`, `>5</text>`} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart has no %s:\n%s", want, svg)
		}
	}
	one := string(dailyChart([]store.UsageRow{{Day: today, Platform: "p", Records: 1}}, today, "records", func(u store.UsageRow) string { return u.Platform },
		func(u store.UsageRow) float64 { return float64(u.Records) }, func(v float64) string { return "" },
		yAxis{Title: "records", Whole: true, Tick: func(v float64) string { return fmt.Sprint(v) }}).SVG)
	if !strings.Contains(one, `>1</text>`) || !strings.Contains(one, `>2</text>`) || strings.Contains(one, "0.5") {
		t.Errorf("a count chart's scale is not whole:\n%s", one)
	}
	empty := string(dailyChart(nil, today, "spend", func(u store.UsageRow) string { return u.Platform },
		func(u store.UsageRow) float64 { return 0 }, func(v float64) string { return "" }, y).SVG)
	if strings.Contains(empty, "ytitle") {
		t.Error("an empty chart has a y scale")
	}
}
