package storetest

import (
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// day is the UTC midnight of t's day.
func day(t time.Time) time.Time { return store.PeriodStart(store.PeriodDay, t) }

func sameUsage(t *testing.T, got, want []store.UsageRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("Usage = %d rows %+v, want %d rows %+v", len(got), got, len(want), want)
		return
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.Day.Equal(w.Day) || g.Day.Location() != time.UTC || g.Offer != w.Offer || g.Platform != w.Platform ||
			g.Requests != w.Requests || g.Records != w.Records || g.Credits != w.Credits {
			t.Errorf("Usage row %d = %+v, want %+v", i, g, w)
		}
	}
}

func testUsageRollup(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(100))
	mustAccount(t, s, "rival", cr(100))
	mustAccount(t, s, "poor", 3*price)
	k := mustKey(t, s, "key_1", "acme")

	const (
		offerA = "source_a/actor_5"
		offerB = "source_b/pro_net"
	)
	priceA := credits.Micros(6900)
	day1, day2 := day(base), day(base).AddDate(0, 0, 1)
	settles := []struct {
		account, offer, platform string
		price                    credits.Micros
		records                  int
		now                      time.Time
	}{
		{"acme", offerB, "pro_net", price, 3, base},
		{"acme", offerB, "pro_net", price, 2, base.Add(time.Hour)},
		{"acme", offerB, "pro_net", 0, 0, base.Add(2 * time.Hour)}, // failed run
		{"acme", offerA, "pro_net", priceA, 1, base},
		{"acme", offerB, "maps", price, 4, base},
		// 02:00 at +05:00 is still the previous UTC day.
		{"acme", offerB, "pro_net", price, 1, time.Date(2025, 3, 13, 2, 0, 0, 0, time.FixedZone("X", 5*3600))},
		{"acme", offerB, "pro_net", price, 1, day2.Add(-time.Nanosecond)},
		{"acme", offerB, "pro_net", price, 6, day2},
		{"rival", offerB, "pro_net", price, 9, base},
		{"poor", offerB, "pro_net", price, 5, base}, // truncated to 3
	}
	for _, st := range settles {
		run := newRun(st.account, "", st.records)
		if st.account == "acme" {
			run.KeyID = k.ID
		}
		mustSettle(t, s, store.Settlement{Run: run, Price: st.price, Offer: st.offer, Platform: st.platform, Now: st.now})
	}

	cases := []struct {
		account string
		want    []store.UsageRow
	}{
		{"acme", []store.UsageRow{
			{Day: day1, Offer: offerA, Platform: "pro_net", Requests: 1, Records: 1, Credits: priceA},
			{Day: day1, Offer: offerB, Platform: "maps", Requests: 1, Records: 4, Credits: 4 * price},
			{Day: day1, Offer: offerB, Platform: "pro_net", Requests: 5, Records: 7, Credits: 7 * price},
			{Day: day2, Offer: offerB, Platform: "pro_net", Requests: 1, Records: 6, Credits: 6 * price},
		}},
		{"rival", []store.UsageRow{{Day: day1, Offer: offerB, Platform: "pro_net", Requests: 1, Records: 9, Credits: 9 * price}}},
		{"poor", []store.UsageRow{{Day: day1, Offer: offerB, Platform: "pro_net", Requests: 1, Records: 3, Credits: 3 * price}}},
		{"nobody", nil},
	}
	for _, tc := range cases {
		t.Run(tc.account, func(t *testing.T) {
			rows, err := s.Usage(ctx(t), tc.account, day1.AddDate(0, 0, -365))
			if err != nil {
				t.Fatalf("Usage: %v", err)
			}
			sameUsage(t, rows, tc.want)
		})
	}
}

func testUsageSince(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(100))
	d0 := day(base).AddDate(0, 0, -400)
	days := []time.Time{d0, day(base).AddDate(0, 0, -2), day(base).AddDate(0, 0, -1), day(base)}
	for i, d := range days {
		run := newRun("acme", "", i+1)
		mustSettle(t, s, settlement(run, price, d.Add(13*time.Hour)))
	}
	row := func(i int) store.UsageRow {
		return store.UsageRow{Day: days[i], Offer: "source_b/pro_net", Platform: "pro_net", Requests: 1, Records: int64(i + 1), Credits: credits.Micros(i+1) * price}
	}
	cases := []struct {
		name  string
		since time.Time
		want  []int
	}{
		{"zero time", time.Time{}, []int{0, 1, 2, 3}},
		{"first day exactly", d0, []int{0, 1, 2, 3}},
		{"365 days", day(base).AddDate(0, 0, -364), []int{1, 2, 3}},
		{"midnight includes that day", days[2], []int{2, 3}},
		{"mid-day excludes that day", days[2].Add(12 * time.Hour), []int{3}},
		{"another zone", days[2].In(time.FixedZone("Y", -8*3600)), []int{2, 3}},
		{"today", day(base), []int{3}},
		{"tomorrow", day(base).AddDate(0, 0, 1), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := s.Usage(ctx(t), "acme", tc.since)
			if err != nil {
				t.Fatalf("Usage: %v", err)
			}
			var want []store.UsageRow
			for _, i := range tc.want {
				want = append(want, row(i))
			}
			sameUsage(t, rows, want)
		})
	}
}

func testKeySpendPeriods(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(10))
	k := mustKey(t, s, "key_1", "acme")
	other := mustKey(t, s, "key_2", "acme")

	// base is Wednesday 2025-03-12 10:30 UTC.
	nextHour := base.Add(time.Hour)                            // same day, week, month
	nextMonday := time.Date(2025, 3, 17, 9, 0, 0, 0, time.UTC) // same month
	nextMonth := time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)   // new everything
	spend := func(keyID string, n int, now time.Time) credits.Micros {
		run := newRun("acme", keyID, n)
		return mustSettle(t, s, settlement(run, price, now)).Charged
	}
	c1 := spend(k.ID, 3, base)
	c2 := spend(k.ID, 2, nextHour)
	c3 := spend(k.ID, 1, nextMonday)
	c4 := spend(k.ID, 4, nextMonth)
	spend(other.ID, 5, base)
	// A failed run on the key adds nothing.
	failed := newRun("acme", k.ID, 0)
	failed.Status = "failed"
	mustSettle(t, s, settlement(failed, 0, base))

	ns := time.Nanosecond
	cases := []struct {
		period string
		at     time.Time
		want   credits.Micros
	}{
		{store.PeriodHour, base, c1},
		{store.PeriodHour, store.PeriodStart(store.PeriodHour, base), c1},
		{store.PeriodHour, store.PeriodEnd(store.PeriodHour, base).Add(-ns), c1},
		{store.PeriodHour, store.PeriodStart(store.PeriodHour, base).Add(-ns), 0},
		{store.PeriodHour, nextHour, c2},
		{store.PeriodHour, store.PeriodEnd(store.PeriodHour, nextHour), 0},
		{store.PeriodHour, time.Date(2025, 3, 12, 16, 10, 0, 0, time.FixedZone("IST", 5*3600+1800)), c1},
		{store.PeriodDay, base, c1 + c2},
		{store.PeriodDay, day(base), c1 + c2},
		{store.PeriodDay, store.PeriodEnd(store.PeriodDay, base).Add(-ns), c1 + c2},
		{store.PeriodDay, store.PeriodEnd(store.PeriodDay, base), 0},
		{store.PeriodDay, day(base).Add(-ns), 0},
		{store.PeriodDay, nextMonday, c3},
		{store.PeriodWeek, base, c1 + c2},
		{store.PeriodWeek, time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC), c1 + c2},
		{store.PeriodWeek, time.Date(2025, 3, 16, 23, 59, 59, 999999999, time.UTC), c1 + c2},
		{store.PeriodWeek, time.Date(2025, 3, 9, 23, 59, 59, 0, time.UTC), 0},
		{store.PeriodWeek, nextMonday, c3},
		{store.PeriodWeek, time.Date(2025, 3, 24, 0, 0, 0, 0, time.UTC), 0},
		{store.PeriodMonth, base, c1 + c2 + c3},
		{store.PeriodMonth, time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), c1 + c2 + c3},
		{store.PeriodMonth, nextMonth.Add(-ns), c1 + c2 + c3},
		{store.PeriodMonth, time.Date(2025, 2, 28, 23, 0, 0, 0, time.UTC), 0},
		{store.PeriodMonth, nextMonth, c4},
		{store.PeriodMonth, time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC), 0},
	}
	for _, tc := range cases {
		t.Run(tc.period+" "+tc.at.Format(time.RFC3339Nano), func(t *testing.T) {
			got, err := s.KeySpend(ctx(t), k.ID, tc.period, tc.at)
			if err != nil {
				t.Fatalf("KeySpend: %v", err)
			}
			if got != tc.want {
				t.Errorf("KeySpend(%s, %v) = %s, want %s", tc.period, tc.at, got, tc.want)
			}
		})
	}
	t.Run("other key", func(t *testing.T) {
		if got, _ := s.KeySpend(ctx(t), other.ID, store.PeriodDay, base); got != 5*price {
			t.Errorf("KeySpend(other) = %s, want %s", got, 5*price)
		}
	})
}
