package registry

import (
	"context"
	"encoding/json"
	"testing"
)

// TestPopularTimesEighteenHours: SPEC gives popular_times_histogram as one
// array of 18 items per listed day (hours 6 to 23). Upstream days that list
// only some hours (and hours outside the range) come out with all 18, the
// missing hours at occupancy 0, on both offers of maps/place.info.
func TestPopularTimesEighteenHours(t *testing.T) {
	reg := declared(t)
	s, ok := reg.Service("maps", "place.info")
	if !ok {
		t.Fatal("maps/place.info is not declared")
	}
	cases := []struct {
		offer, item string
		want        map[string]map[int]int // day → hour → occupancy, unlisted hours 0
	}{
		{"source_a/actor_3", `{"title": "Cafe", "placeId": "p1", "popularTimesHistogram": {
			"Su": [{"hour": 6, "occupancyPercent": 10}, {"hour": 12, "occupancyPercent": 55}, {"hour": 3, "occupancyPercent": 9}, {"hour": 23, "occupancyPercent": null}],
			"Mo": [], "Tu": null, "We": "closed"}}`,
			map[string]map[int]int{"Su": {6: 10, 12: 55}, "Mo": {}}},
		{"source_b/maps", `{"name": "Cafe", "place_id": "p1", "popular_times": [
			{"day": "Tuesday", "hours": [{"hour": "11 AM", "busyness": "22"}, {"hour": "6 PM", "busyness": 63}, {"hour": "2 AM", "busyness": 5}]},
			{"day": "Sunday", "hours": [{"hour": 23, "busyness": 4}]}]}`,
			map[string]map[int]int{"Tu": {11: 22, 18: 63}, "Su": {23: 4}}},
	}
	for _, tc := range cases {
		t.Run(tc.offer, func(t *testing.T) {
			o, ok := s.Offer(tc.offer)
			if !ok {
				t.Fatalf("no offer %s", tc.offer)
			}
			rec, ok, err := o.Normalize.NormalizeItem(context.Background(), []byte(tc.item), "https://www.google.com/maps/place/x", fixtureNow)
			if err != nil || !ok {
				t.Fatalf("normalize: ok %v, %v", ok, err)
			}
			if v := s.CheckRecord(rec); v != nil {
				t.Fatalf("record off its schema: %v\n%s", v, rec)
			}
			var r struct {
				Hist map[string][]struct{ Hour, OccupancyPercent int } `json:"popular_times_histogram"`
			}
			if err := json.Unmarshal(rec, &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Hist) != len(tc.want) {
				t.Errorf("days %v, want %d listed days", r.Hist, len(tc.want))
			}
			for day, occ := range tc.want {
				hours := r.Hist[day]
				if len(hours) != 18 {
					t.Errorf("%s: %d items, want 18", day, len(hours))
					continue
				}
				for i, h := range hours {
					if h.Hour != 6+i || h.OccupancyPercent != occ[h.Hour] {
						t.Errorf("%s item %d: hour %d at %d, want hour %d at %d", day, i, h.Hour, h.OccupancyPercent, 6+i, occ[6+i])
					}
				}
			}
		})
	}
}
