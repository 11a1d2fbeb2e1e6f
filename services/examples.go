// Package services embeds the CUE service declarations and their example
// upstream payloads (examples/<source>/<platform>__<service>.json), so the
// upstream simulator serves every declared offer's example with no files on
// disk and in-process tests get the same answers as the binary. The gateway
// itself reads the declarations from disk (the `services` directive), so a
// reload picks up edits.
package services

import "embed"

// FS holds *.cue and examples/.
//
//go:embed *.cue examples
var FS embed.FS
