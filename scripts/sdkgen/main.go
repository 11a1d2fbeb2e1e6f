// Command sdkgen regenerates the client libraries under sdk/ from the
// OpenAPI document the gateway serves (`make sdk`): sdk/openapi.json, the Go
// types and named service calls of sdk/go, and the named service calls of
// sdk/typescript (whose schema types openapi-typescript writes from the same
// sdk/openapi.json). The document comes from the declarations in services/
// exactly as the gateway renders it (registry.Load → OpenAPIJSON), or, with
// -url, from a running gateway's GET /v1/openapi.json.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"socialrouter/caddymodule/registry"
)

func main() {
	services := flag.String("services", "services", "directory of the CUE service declarations")
	url := flag.String("url", "", "read the document from this URL (a gateway's /v1/openapi.json) instead of -services")
	out := flag.String("out", ".", "repository root to write sdk/ under")
	flag.Parse()
	doc, err := fetchDocument(*services, *url)
	if err == nil {
		err = write(*out, doc)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdkgen:", err)
		os.Exit(1)
	}
}

// fetchDocument is the OpenAPI document of the declarations in dir, or the one
// served at url.
func fetchDocument(dir, url string) ([]byte, error) {
	if url == "" {
		r, err := registry.Load(dir)
		if err != nil {
			return nil, err
		}
		return r.OpenAPIJSON(), nil
	}
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

func write(root string, doc []byte) error {
	files, err := Generate(doc)
	if err != nil {
		return err
	}
	for name, b := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
