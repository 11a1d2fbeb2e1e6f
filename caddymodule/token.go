package caddymodule

import (
	"fmt"
	"os"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// token resolves a source's bearer token at Provision, so the secret
// never sits in the JSON config that `GET /config/` serves: token may hold
// runtime placeholders ({env.SOURCE_A_TOKEN}, kept as written in the
// config and replaced here), or token_file names a file holding it (its
// surrounding white space trimmed). A literal token still works, but shows
// in the config.
func (c *SourceConfig) token() (string, error) {
	if c.TokenFile != "" {
		if c.Token != "" {
			return "", fmt.Errorf("set token or token_file, not both")
		}
		b, err := os.ReadFile(caddy.NewReplacer().ReplaceAll(c.TokenFile, ""))
		if err != nil {
			return "", fmt.Errorf("reading token_file: %v", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return caddy.NewReplacer().ReplaceAll(c.Token, ""), nil
}
