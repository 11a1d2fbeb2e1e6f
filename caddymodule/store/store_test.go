package store

import "testing"

func TestCreditLimitValidate(t *testing.T) {
	tests := []struct {
		name  string
		limit *CreditLimit
		want  string
	}{
		{"none", nil, ""},
		{"day", &CreditLimit{Period: PeriodDay, Credits: 2_000_000}, ""},
		{"one micro-credit", &CreditLimit{Period: PeriodMonth, Credits: 1}, ""},
		{"zero", &CreditLimit{Period: PeriodHour, Credits: 0}, "credit_limit.credits must be above 0"},
		{"negative", &CreditLimit{Period: PeriodWeek, Credits: -1}, "credit_limit.credits must be above 0"},
		{"fortnight", &CreditLimit{Period: "fortnight", Credits: 1}, "credit_limit.period must be hour, day, week or month"},
		{"no period", &CreditLimit{Credits: 1}, "credit_limit.period must be hour, day, week or month"},
	}
	for _, tt := range tests {
		err := tt.limit.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: Validate() = %q, want %q", tt.name, got, tt.want)
		}
	}
}
