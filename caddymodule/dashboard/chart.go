package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"socialrouter/caddymodule/store"
)

// chartDays is the span of the overview's charts.
const chartDays = 30

// palette colours the stacked series (colour-blind-safe Okabe-Ito).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"}

type legendEntry struct {
	Name  string
	Color string
	Total string
}

// chart is a stacked daily bar chart as inline SVG: no script, readable
// by screen readers through its label and each bar's title.
type chart struct {
	SVG    template.HTML
	Legend []legendEntry
}

// yAxis is a chart's vertical scale: its title (the unit) and how a tick
// value is written.
type yAxis struct {
	Title string
	Tick  func(float64) string
	// Whole: the values are counts, so the scale's half is whole too (a
	// top of at least 2).
	Whole bool
}

// niceCeil is the smallest 1, 2 or 5 × 10^k at or above v (v > 0): the
// top of the y scale, so its ticks are round numbers.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// dailyChart stacks value(row) per day by group(row) over the chartDays
// days ending today, on a labelled y scale from 0 to a round top.
func dailyChart(rows []store.UsageRow, today time.Time, title string, group func(store.UsageRow) string,
	value func(store.UsageRow) float64, format func(float64) string, y yAxis) chart {
	first := today.AddDate(0, 0, -(chartDays - 1))
	per := make([]map[string]float64, chartDays)
	totals := map[string]float64{}
	for _, r := range rows {
		d := int(r.Day.Sub(first).Hours() / 24)
		if d < 0 || d >= chartDays {
			continue
		}
		if per[d] == nil {
			per[d] = map[string]float64{}
		}
		g := group(r)
		per[d][g] += value(r)
		totals[g] += value(r)
	}
	groups := make([]string, 0, len(totals))
	for g := range totals {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b string) int { // largest first, then by name
		if totals[a] != totals[b] {
			if totals[a] > totals[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	color := map[string]string{}
	var c chart
	for i, g := range groups {
		color[g] = palette[i%len(palette)]
		c.Legend = append(c.Legend, legendEntry{Name: g, Color: color[g], Total: format(totals[g])})
	}
	peak := 0.0
	for _, day := range per {
		sum := 0.0
		for _, v := range day {
			sum += v
		}
		peak = max(peak, sum)
	}
	const w, h, top, bottom, left = 600.0, 180.0, 10.0, 20.0, 58.0
	barW := (w - left) / chartDays
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %g %g" role="img" aria-label="%s" class="chart">`,
		w, h, template.HTMLEscapeString(title))
	if peak > 0 {
		peak = niceCeil(peak) // bars are drawn against the scale's top
		if y.Whole {
			peak = max(peak, 2)
		}
		for _, f := range []float64{0, 0.5, 1} {
			gy := h - bottom - f*(h-top-bottom)
			fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" class="grid"/><text x="%g" y="%.1f" class="tick ytick" text-anchor="end">%s</text>`,
				left, gy, w, gy, left-4, gy+3, template.HTMLEscapeString(y.Tick(f*peak)))
		}
		fmt.Fprintf(&b, `<text x="10" y="%g" class="tick ytitle" text-anchor="middle" transform="rotate(-90 10 %g)">%s</text>`,
			(h-bottom)/2, (h-bottom)/2, template.HTMLEscapeString(y.Title))
	}
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" class="axis"/>`, left, h-bottom, w, h-bottom)
	for d, day := range per {
		x := left + float64(d)*barW
		y := h - bottom
		date := first.AddDate(0, 0, d)
		for _, g := range groups {
			v := day[g]
			if v <= 0 || peak <= 0 {
				continue
			}
			bh := v / peak * (h - top - bottom)
			y -= bh
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>`,
				x+1, y, barW-2, bh, color[g], date.Format("Jan 2"), template.HTMLEscapeString(g), format(v))
		}
		if (chartDays-1-d)%7 == 0 { // weekly, ending today (flush right)
			tx, anchor := x+barW/2, "middle"
			if d == chartDays-1 {
				tx, anchor = x+barW, "end"
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%g" class="tick" text-anchor="%s">%s</text>`, tx, h-5, anchor, date.Format("Jan 2"))
		}
	}
	if peak <= 0 {
		fmt.Fprintf(&b, `<text x="%g" y="%g" class="empty" text-anchor="middle">No usage in the last %d days</text>`, w/2, h/2, chartDays)
	}
	b.WriteString(`</svg>`)
	c.SVG = template.HTML(b.String())
	return c
}
