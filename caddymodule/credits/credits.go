// Package credits holds the one money type of the gateway. Money is never a
// float in storage or arithmetic: it is an integer count of micro-credits
// (1 credit = 1 USD = 1 000 000 µ), rendered as a JSON number with up to six
// decimals.
package credits

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// PerCredit is the number of micro-credits in one credit.
const PerCredit = 1_000_000

// Micros is an amount of credits in micro-credits.
type Micros int64

// FromFloat converts a credit amount such as 0.001725 to micro-credits,
// rounding to the nearest micro-credit. It refuses NaN, infinities and
// amounts that do not fit.
func FromFloat(f float64) (Micros, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("amount %v is not a finite number", f)
	}
	m := math.Round(f * PerCredit)
	if math.Abs(m) > math.MaxInt64/2 {
		return 0, fmt.Errorf("amount %v is too large", f)
	}
	return Micros(m), nil
}

// digits is an amount as a person types it: an optional sign, digits and at
// most one point (bare leading or trailing allowed).
const digits = `[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)`

// number is digits as JSON writes numbers (an exponent allowed), typed is
// digits alone. Both keep out what big.Rat would also read: "0x10", "3/2",
// "0b1", "1_000".
var (
	number = regexp.MustCompile(`^` + digits + `(?:[eE][+-]?[0-9]+)?$`)
	typed  = regexp.MustCompile(`^` + digits + `$`)
)

// Parse reads a decimal credit amount ("5", "0.001725", "1e-6") exactly,
// without a float round trip. More than six decimals is an error.
func Parse(s string) (Micros, error) { return parse(s, number) }

// ParseTyped is Parse for an amount a person types in a form: digits only,
// no exponent ("1e2" is not a number there).
func ParseTyped(s string) (Micros, error) { return parse(s, typed) }

// parse reads s, which must match syntax, exactly.
func parse(s string, syntax *regexp.Regexp) (Micros, error) {
	s = strings.TrimSpace(s)
	r, ok := new(big.Rat), syntax.MatchString(s)
	if ok {
		_, ok = r.SetString(s)
	}
	if !ok {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	r.Mul(r, big.NewRat(PerCredit, 1))
	if !r.IsInt() {
		return 0, fmt.Errorf("%q has more than six decimals", s)
	}
	if !r.Num().IsInt64() || math.Abs(float64(r.Num().Int64())) > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return Micros(r.Num().Int64()), nil
}

// String renders m in credits with up to six decimals and no trailing zeros.
func (m Micros) String() string {
	neg := m < 0
	u := uint64(m)
	if neg {
		u = uint64(-m)
	}
	whole, frac := u/PerCredit, u%PerCredit
	s := strconv.FormatUint(whole, 10)
	if frac != 0 {
		fs := strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
		s += "." + fs
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Credits returns m as a float number of credits, for display only.
func (m Micros) Credits() float64 { return float64(m) / PerCredit }

// MarshalJSON renders m as a JSON number of credits.
func (m Micros) MarshalJSON() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalJSON reads a JSON number of credits exactly.
func (m *Micros) UnmarshalJSON(b []byte) error {
	var n json.Number
	if len(b) == 0 || b[0] == '"' {
		return fmt.Errorf("credits must be a JSON number, not %s", b)
	}
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("credits must be a number: %w", err)
	}
	v, err := Parse(n.String())
	if err != nil {
		return err
	}
	*m = v
	return nil
}
