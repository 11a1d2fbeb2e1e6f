package payments

import (
	"fmt"
	"math/big"
	"slices"

	"socialrouter/caddymodule/credits"
)

// zeroDecimal are the currencies Stripe charges in whole units (its list
// of zero-decimal currencies): an amount of 500 JPY is 500, not 5.00.
var zeroDecimal = []string{"bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv", "xaf", "xof", "xpf"}

// MinorPerUnit is how many of the smallest unit make one unit of cur.
func MinorPerUnit(cur string) int64 {
	if slices.Contains(zeroDecimal, cur) {
		return 1
	}
	return 100
}

// ToMinor converts an amount in units (a decimal such as "12.50", parsed
// as credits are) to minor units; it must be a whole number of them.
func ToMinor(cur string, units credits.Micros) (int64, error) {
	per := MinorPerUnit(cur)
	step := credits.Micros(credits.PerCredit / per)
	if units%step != 0 {
		return 0, fmt.Errorf("%s %s is not a whole number of the currency's smallest unit", units, cur)
	}
	return int64(units / step), nil
}

// credits is what a payment of minor units buys, rounded down to the
// micro-credit (computed exactly, whatever the amount).
func (s *Service) credits(minor int64) credits.Micros {
	v := new(big.Int).Mul(big.NewInt(minor), big.NewInt(int64(s.cfg.PerUnit)))
	v.Quo(v, big.NewInt(MinorPerUnit(s.cfg.Currency)))
	return credits.Micros(v.Int64())
}

// minor is the price in minor units of an amount of credits, rounded up
// (a recharge of c credits buys at least c).
func (s *Service) minor(c credits.Micros) int64 {
	v := new(big.Int).Mul(big.NewInt(int64(c)), big.NewInt(MinorPerUnit(s.cfg.Currency)))
	q, r := new(big.Int).QuoRem(v, big.NewInt(int64(s.cfg.PerUnit)), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}
