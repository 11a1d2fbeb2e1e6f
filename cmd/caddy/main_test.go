package main

import (
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"socialrouter/internal/buildmanifest"
)

// TestManifestMatchesBuild keeps xcaddy.toml, go.mod and main.go in step.
func TestManifestMatchesBuild(t *testing.T) {
	m, err := buildmanifest.Read("../../xcaddy.toml")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := "github.com/caddyserver/caddy/v2 " + m.CaddyVersion
	if !strings.Contains(string(gomod), want) {
		t.Errorf("go.mod does not require %q (xcaddy.toml caddy_version)", want)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if imp.Name != nil && imp.Name.Name == "_" && p != "github.com/caddyserver/caddy/v2/modules/standard" {
			got = append(got, p)
		}
	}
	var plugins []string
	for _, p := range m.Plugins {
		plugins = append(plugins, p.Module)
	}
	sort.Strings(got)
	sort.Strings(plugins)
	if strings.Join(got, ",") != strings.Join(plugins, ",") {
		t.Errorf("main.go plugin imports %v, xcaddy.toml plugins %v", got, plugins)
	}
	if c := m.Command(); !strings.HasPrefix(c, "xcaddy build "+m.CaddyVersion+" --with socialrouter=.") {
		t.Errorf("command %q", c)
	}
}
