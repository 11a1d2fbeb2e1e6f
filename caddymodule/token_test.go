package caddymodule

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSourceToken(t *testing.T) {
	t.Setenv("SDR_TEST_TOKEN", "sekrit-env")
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("  sekrit-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     SourceConfig
		want    string
		wantErr bool
	}{
		{"literal", SourceConfig{Token: "plain"}, "plain", false},
		{"runtime placeholder", SourceConfig{Token: "{env.SDR_TEST_TOKEN}"}, "sekrit-env", false},
		{"unset placeholder", SourceConfig{Token: "{env.SDR_TEST_UNSET_TOKEN}"}, "", false},
		{"token file", SourceConfig{TokenFile: file}, "sekrit-file", false},
		{"missing token file", SourceConfig{TokenFile: file + ".missing"}, "", true},
		{"both", SourceConfig{Token: "x", TokenFile: file}, "", true},
		{"none", SourceConfig{}, "", false},
	}
	for _, tt := range tests {
		got, err := tt.cfg.token()
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("%s: token() = %q, %v; want %q (error %v)", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}
