// Package schemas embeds the CUE schemas that every service declaration is
// validated against, so the gateway binary needs only a services directory.
package schemas

import "embed"

// FS holds the *.cue schema files of this directory.
//
//go:embed *.cue
var FS embed.FS
