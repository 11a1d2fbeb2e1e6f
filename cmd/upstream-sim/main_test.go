package main

import "testing"

func TestFaultFlag(t *testing.T) {
	tests := []struct {
		in      string
		wantErr bool
	}{
		{`{"target":"*","status":503,"times":2}`, false},
		{`{"target":"gd_x","async":true,"polls":3}`, false},
		{`{"target":`, true},
		{`status=503`, true},
	}
	var f faultFlags
	for _, tc := range tests {
		if err := f.Set(tc.in); (err != nil) != tc.wantErr {
			t.Errorf("Set(%q) = %v", tc.in, err)
		}
	}
	if len(f) != 2 || f[0].Status != 503 || f[0].Times != 2 || !f[1].Async || f[1].Polls != 3 {
		t.Errorf("parsed %+v", f)
	}
}
