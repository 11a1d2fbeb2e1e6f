package normalize_test

import (
	"testing"
)

// FuzzPlanAgreesWithGojq holds the compiled plan to gojq on items no fixture
// has: each input picks a declared normalizer on the plan and runs an item
// (seeded with every example payload, each with its own offer) through both
// engines; fpDiff fails on any disagreement, a panic, or a jq error the plan
// raises where gojq yields a record. Run it longer with
// go test -fuzz FuzzPlanAgreesWithGojq ./caddymodule/normalize/.
func FuzzPlanAgreesWithGojq(f *testing.F) {
	files := fpLoadFixtures(f)
	var onPlan []fpOffer
	for _, o := range fpOffers(f) {
		if ok, _ := o.offer.Normalize.FastPath(); ok {
			onPlan = append(onPlan, o)
		}
	}
	if len(onPlan) == 0 {
		f.Skip("no normalizer runs on the plan")
	}
	seeds := 0
	for i, o := range onPlan {
		input := o.service.Accepts[0].Example
		for _, item := range o.ownItems(files) {
			f.Add(uint(i), []byte(item), input)
			seeds++
		}
	}
	for i, item := range fpOddItems {
		f.Add(uint(i), []byte(item), "")
	}
	if seeds == 0 {
		f.Fatal("no example payload seeds the fuzz target")
	}
	f.Fuzz(func(t *testing.T, pick uint, item []byte, input string) {
		o := onPlan[pick%uint(len(onPlan))]
		var st fpStats
		fpDiff(t, o.offer.Normalize, item, input, &st, o.name())
	})
}
