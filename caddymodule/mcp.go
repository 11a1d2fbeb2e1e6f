package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"socialrouter/caddymodule/api"
	"socialrouter/caddymodule/api/errwire"
	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/mcp"
	"socialrouter/caddymodule/oauth"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// mcpEndpoints holds the one /mcp endpoint across config generations: its
// sessions must outlive a reload, which provisions the new config before
// the old one is cleaned up. Each App takes a reference in Provision and
// gives its tools to it in Start.
var mcpEndpoints = caddy.NewUsagePool()

const mcpKey = "mcp"

type mcpHandle struct{ *mcp.Endpoint }

func (h mcpHandle) Destruct() error { return h.Close() }

// provisionMCP takes a reference to the shared endpoint (compile made
// this config's tools).
func (a *App) provisionMCP() error {
	v, _, err := mcpEndpoints.LoadOrNew(mcpKey, func() (caddy.Destructor, error) {
		_, version := caddy.Version()
		return mcpHandle{mcp.NewEndpoint(version, slog.New(zapslog.NewHandler(a.logger.Named("mcp").Core())))}, nil
	})
	if err != nil {
		return fmt.Errorf("loading MCP endpoint: %v", err)
	}
	a.mcp = v.(mcpHandle).Endpoint
	return nil
}

// startMCP gives the endpoint this config's tools and backend, the /v1
// API of this config; connected clients are notified when the tool set
// changed.
func (a *App) startMCP() {
	c := a.current()
	a.mcp.Swap(a, c.tools, a.toolBackend(c))
}

// toolBackend is the backend of the tools of the services c.
func (a *App) toolBackend(c *compiled) toolBackend {
	return toolBackend{api: a.apiFor(c, a.logger.Named("mcp")), oauth: a.oauthServer(a.logger.Named("oauth"))}
}

// stopMCP tells the endpoint this config stopped: the end of a reload, or
// a reload whose start failed (then the previous config's tools return).
func (a *App) stopMCP() {
	if a.mcp != nil {
		a.mcp.Release(a)
	}
}

// cleanupMCP releases this config's reference to the endpoint.
func (a *App) cleanupMCP() error {
	if a.mcp == nil {
		return nil
	}
	if _, err := mcpEndpoints.Delete(mcpKey); err != nil {
		return fmt.Errorf("closing MCP endpoint: %v", err)
	}
	return nil
}

// toolBackend serves the MCP tools from the api package's calls, so a tool
// call is authenticated, validated, routed, settled and billed exactly as
// its REST route.
type toolBackend struct {
	api   *api.API
	oauth *oauth.Server
}

// oauthServer is the OAuth server over the app's store: stateless, so the
// handler, the dashboard and the tools may each build one.
func (a *App) oauthServer(logger *zap.Logger) *oauth.Server {
	return &oauth.Server{Store: a.store, KeyPrefix: a.KeyPrefix, Logger: logger}
}

// mcpHandler is /mcp as served: OAuth's Guard answers 401 with the
// sign-in challenge before the SDK sees a request it would refuse (see
// package oauth), CORS sits outside it so a browser-based client can
// read that challenge, and CheckOrigin outside both refuses a page of a
// web origin the operator did not allow.
func (a *App) mcpHandler(logger *zap.Logger) http.Handler {
	return mcp.CheckOrigin(a.MCPOrigins, mcp.CORS(a.oauthServer(logger).Guard(a.mcp, mcp.Anonymous)))
}

var _ mcp.Backend = toolBackend{}

func toolError(e *api.Error) *mcp.Error {
	return mcp.NewError(e.Code, e.Type, e.Message, e.Extra)
}

// kindToolError is the tool answer to a failure of kind k, rendered from
// the API's table as REST would answer it.
func kindToolError(k errkind.Kind, msg string, extra map[string]any) *mcp.Error {
	w := errwire.Of(k)
	return mcp.NewError(w.Code, w.Type, msg, extra)
}

// Authenticate takes an API key as REST does, or an OAuth access token:
// the grant then stands for a key, so the call is billed and limited on
// it. oauth.Guard verified the token on the request that carried the
// call and handed its grant on; a token that reached here without it is
// verified (its resource was checked by Guard).
func (b toolBackend) Authenticate(ctx context.Context, authorization string, token *auth.TokenInfo) (mcp.Caller, *mcp.Error) {
	if grant, ok := oauth.Grant(token); ok {
		return grant, nil
	}
	if scheme, tok, _ := strings.Cut(authorization, " "); strings.EqualFold(scheme, "Bearer") && b.oauth.IsAccessToken(strings.TrimSpace(tok)) {
		grant, err := b.oauth.VerifyToken(ctx, strings.TrimSpace(tok), "")
		switch {
		case errors.Is(err, oauth.ErrInvalidToken):
			return nil, mcp.NewError("invalid_token", "authentication", "the access token is unknown, expired or revoked; refresh it or sign in again", nil)
		case err != nil:
			return nil, mcp.NewError("store_unavailable", "unavailable", "the account store is unavailable; try again shortly", nil)
		}
		return grant, nil
	}
	key, e := b.api.AuthenticateHeader(ctx, authorization)
	if e != nil {
		return nil, toolError(e)
	}
	return key, nil
}

func (b toolBackend) Catalogue(platform, service string) ([]byte, *mcp.Error) {
	doc, e := b.api.Catalogue(platform, service)
	if e != nil {
		return nil, toolError(e)
	}
	return doc, nil
}

func (b toolBackend) Extract(ctx context.Context, c mcp.Caller, platform, service string, args []byte) ([]byte, *mcp.Error) {
	svc, e := b.api.Service(platform, service)
	if e != nil {
		return nil, toolError(e)
	}
	m, e := api.ParseObject(args)
	if e != nil {
		return nil, toolError(e)
	}
	cc, e := api.TakeMaxAge(m)
	if e != nil {
		return nil, toolError(e)
	}
	if b.api.ExceedsSync(false, m) {
		// More than a synchronous call serves: an async run, followed
		// with get_run.
		doc, e := b.api.SubmitExtract(ctx, c.(store.Key), svc, m, cc)
		if e != nil {
			return nil, toolError(e)
		}
		return doc, nil
	}
	return runAnswer(b.api.ExtractWith(ctx, c.(store.Key), svc, m, cc))
}

func (b toolBackend) Search(ctx context.Context, c mcp.Caller, args []byte) ([]byte, *mcp.Error) {
	m, e := api.ParseObject(args)
	if e != nil {
		return nil, toolError(e)
	}
	cc, e := api.TakeMaxAge(m)
	if e != nil {
		return nil, toolError(e)
	}
	if b.api.ExceedsSync(true, m) {
		doc, e := b.api.SubmitSearch(ctx, c.(store.Key), m, cc)
		if e != nil {
			return nil, toolError(e)
		}
		return doc, nil
	}
	return runAnswer(b.api.SearchWith(ctx, c.(store.Key), m, cc))
}

func (b toolBackend) Run(ctx context.Context, c mcp.Caller, id string) ([]byte, *mcp.Error) {
	doc, e := b.api.RunJSON(ctx, nil, c.(store.Key), id)
	if e != nil {
		return nil, toolError(e)
	}
	return doc, nil
}

func (b toolBackend) Balance(ctx context.Context, c mcp.Caller) ([]byte, *mcp.Error) {
	return docAnswer(b.api.Balance(ctx, c.(store.Key)))
}

func (b toolBackend) Usage(ctx context.Context, c mcp.Caller, days string, given bool) ([]byte, *mcp.Error) {
	return docAnswer(b.api.Usage(ctx, c.(store.Key), days, given))
}

// runAnswer encodes a run as the extract and search routes answer it.
func runAnswer(run *runs.Run, e *api.Error) ([]byte, *mcp.Error) {
	if e != nil {
		return nil, toolError(e)
	}
	doc, err := api.AppendRun(nil, run)
	if err != nil {
		return nil, kindToolError(errkind.Internal, "rendering the run failed", map[string]any{"run_id": run.ID})
	}
	return doc, nil
}

// docAnswer encodes a document as the API answers it (no HTML escaping).
func docAnswer(v map[string]any, e *api.Error) ([]byte, *mcp.Error) {
	if e != nil {
		return nil, toolError(e)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, kindToolError(errkind.Internal, "rendering the response failed", nil)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
