package sdr

import (
	"context"
	"encoding/json"
	"net/http"
)

// SearchRequest is the body of POST /v1/search.
type SearchRequest struct {
	// Provider is the slug <source>/<platform>/<type>[:<tag>].
	Provider string   `json:"provider"`
	Queries  []string `json:"queries"`
	// Limit is the per-query cap; 0 is the default (100).
	Limit int `json:"limit,omitempty"`
	// Cursor is the Pagination.NextCursor of a previous search, for its next page.
	Cursor string `json:"cursor,omitempty"`
	// Fallback false attempts only the requested provider.
	Fallback *bool          `json:"fallback,omitempty"`
	Options  map[string]any `json:"options,omitempty"`
}

// Search calls POST /v1/search; its records are left as JSON (SearchAs
// decodes them into a record type).
func (c *Client) Search(ctx context.Context, req SearchRequest, opts ...CallOption) (*SearchRun[json.RawMessage], error) {
	return SearchAs[json.RawMessage](ctx, c, req, opts...)
}

// SearchAs calls POST /v1/search with its records typed T.
func SearchAs[T any](ctx context.Context, c *Client, req SearchRequest, opts ...CallOption) (*SearchRun[T], error) {
	return send[SearchRun[T]](ctx, c, http.MethodPost, "/v1/search", req, newCallConfig(opts))
}

// Balance is GET /v1/account/balance.
func (c *Client) Balance(ctx context.Context) (*Balance, error) {
	var b Balance
	return &b, c.get(ctx, "/v1/account/balance", &b)
}

// Services is the catalogue, GET /v1/services.
func (c *Client) Services(ctx context.Context) (*CatalogueList, error) {
	var l CatalogueList
	return &l, c.get(ctx, "/v1/services", &l)
}

// ServiceInfo describes a generated extract call (Services lists them).
type ServiceInfo struct {
	Platform, Service string // "pro_net", "company.info"
	Path              string // the path the call posts to
	Group             string // the field of Client.Extract: "ProNet"
	Method            string // the method of its platform's group: "CompanyInfo"
	InputField        string // "urls" or "queries"
	Record            string // the record type, "" when untyped
}
