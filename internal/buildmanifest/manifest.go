// Package buildmanifest reads xcaddy.toml, the gateway's build manifest,
// so the xcaddy command and the build check come from one file.
package buildmanifest

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Manifest is the content of xcaddy.toml.
type Manifest struct {
	CaddyVersion string   `toml:"caddy_version"`
	Plugins      []Plugin `toml:"plugins"`
}

// Plugin is one module compiled into the binary.
type Plugin struct {
	Module  string `toml:"module"`
	Replace string `toml:"replace"`
}

// Read parses the manifest at path.
func Read(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading build manifest: %v", err)
	}
	var m Manifest
	if err := toml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parsing build manifest: %v", err)
	}
	return &m, nil
}

// Command renders the equivalent xcaddy invocation. Plugins that share a
// replacement directory are given once (the module root).
func (m *Manifest) Command() string {
	args := []string{"xcaddy", "build", m.CaddyVersion}
	seen := map[string]bool{}
	var withs []string
	for _, p := range m.Plugins {
		w := p.Module
		if p.Replace != "" {
			root := strings.SplitN(p.Module, "/", 2)[0]
			w = root + "=" + p.Replace
		}
		if !seen[w] {
			seen[w] = true
			withs = append(withs, w)
		}
	}
	sort.Strings(withs)
	for _, w := range withs {
		args = append(args, "--with", w)
	}
	return strings.Join(args, " ")
}
