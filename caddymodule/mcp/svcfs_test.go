package mcp

import (
	"socialrouter/internal/testservices"
	"socialrouter/services"
)

// svcFS is the services directory the declaration-driven tests read:
// services/ (embedded), or the directory testservices.DirEnv names.
var svcFS = testservices.ServicesFS(services.FS)
