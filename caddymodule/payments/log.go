package payments

import (
	"go.uber.org/zap"

	"socialrouter/caddymodule/credits"
)

func zapAccount(id string) zap.Field                 { return zap.String("account", id) }
func zapString(k, v string) zap.Field                { return zap.String(k, v) }
func zapMicros(k string, m credits.Micros) zap.Field { return zap.String(k, m.String()) }
