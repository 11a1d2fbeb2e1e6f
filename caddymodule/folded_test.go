package caddymodule

import "testing"

func TestFoldsOntoV1(t *testing.T) {
	for p, want := range map[string]bool{
		"//v1/services":     true,
		"/./v1/services":    true,
		"/V1/services":      true,
		"/x/../v1/services": true,
		"/v2/services":      false,
		"/v10":              false,
		"/":                 false,
		"/V1":               true,
	} {
		if got := foldsOntoV1(p); got != want {
			t.Errorf("foldsOntoV1(%q) = %v, want %v", p, got, want)
		}
	}
}
