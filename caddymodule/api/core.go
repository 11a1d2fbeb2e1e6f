package api

import (
	"encoding/json"

	"socialrouter/caddymodule/runs"
)

// The calls below, with Extract, Search, Service, AuthenticateHeader,
// RunJSON, Balance and Usage beside their handlers, are the API without
// its HTTP: a front-end such as the MCP endpoint authenticates and reads
// arguments its own way, then gets exactly the documents and errors /v1
// answers.

// Catalogue is the document of GET /v1/services (platform ""),
// /v1/services/{platform} (service "") or /v1/services/{platform}/{service},
// or their 404.
func (a *API) Catalogue(platform, service string) ([]byte, *Error) {
	switch {
	case platform == "":
		return a.Registry.CatalogueJSON(), nil
	case service == "":
		if _, ok := a.Registry.PlatformServices(platform); !ok {
			return nil, unknownPlatform(a.Registry, platform)
		}
		b, _ := a.Registry.PlatformJSON(platform)
		return b, nil
	}
	svc, apiErr := a.Service(platform, service)
	if apiErr != nil {
		return nil, apiErr
	}
	b, _ := a.Registry.EntryJSON(svc)
	return b, nil
}

// ParseObject decodes a request body as the extract and search routes do:
// one JSON object, or invalid_json.
func ParseObject(b []byte) (map[string]json.RawMessage, *Error) { return parseObject(b) }

// AppendRun appends a run as the extract and search routes answer it: the
// header as encoding/json writes it (runs.AppendRun, or encoding/json
// itself for what that leaves), the records as they are.
func AppendRun(dst []byte, run *runs.Run) ([]byte, error) {
	if out, ok := runs.AppendRun(dst, run, run.Data, false, "", ""); ok {
		return out, nil
	}
	hdr := *run
	hdr.Data = nil
	return runs.AppendJSON(dst, &hdr, run.Data)
}
