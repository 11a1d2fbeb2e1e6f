package main

import (
	"bytes"
	"fmt"
	"go/format"
)

// goCallsSource renders the catalogue's services as named, typed calls of
// sdk/go: a request type per service, a group per platform, and the
// Extract struct of the client (client.Extract.ProNet.CompanyInfo).
func goCallsSource(svcs []service) ([]byte, error) {
	platforms, byPlatform := byPlatform(svcs)

	var b bytes.Buffer
	b.WriteString(header + "package sdr\n\nimport (\n\"context\"\n\"encoding/json\"\n)\n\nvar _ json.RawMessage\n\n")
	b.WriteString("// Extract holds the catalogue's extract services, a field per platform.\ntype Extract struct {\n")
	for _, p := range platforms {
		fmt.Fprintf(&b, "\t%s %sCalls\n", goName(p), goName(p))
	}
	b.WriteString("}\n\nfunc newExtract(c *Client) Extract {\n\treturn Extract{\n")
	for _, p := range platforms {
		fmt.Fprintf(&b, "\t\t%s: %sCalls{c},\n", goName(p), goName(p))
	}
	b.WriteString("\t}\n}\n\n")

	b.WriteString("// Services lists the catalogue's extract services as generated.\nvar Services = []ServiceInfo{\n")
	for _, s := range svcs {
		fmt.Fprintf(&b, "\t{Platform: %q, Service: %q, Path: %q, Group: %q, Method: %q, InputField: %q, Record: %q},\n",
			s.Platform, s.Name, s.Path, goName(s.Platform), goName(s.Name), s.InputField, s.Record)
	}
	b.WriteString("}\n\n")

	types := &goTypes{done: map[string]bool{}}
	for _, p := range platforms {
		group := goName(p) + "Calls"
		fmt.Fprintf(&b, "// %s holds the extract services of %s.\ntype %s struct{ c *Client }\n\n", group, p, group)
		for _, s := range byPlatform[p] {
			req := goName(p) + goName(s.Name) + "Request"
			rec := s.Record
			if rec == "" {
				rec = "json.RawMessage"
			}
			writeRequest(&b, types, req, s)
			m := goName(s.Name)
			comment(&b, "", fmt.Sprintf("%s calls POST %s synchronously (at most 250 records): %s", m, s.Path, s.Summary))
			fmt.Fprintf(&b, "func (g %s) %s(ctx context.Context, req %s, opts ...CallOption) (*Run[%s], error) {\n\treturn extract[%s](ctx, g.c, %q, req, opts)\n}\n\n", group, m, req, rec, rec, s.Path)
			comment(&b, "", fmt.Sprintf("%sAsync submits POST %s with Prefer: respond-async (up to 5,000 records) and returns the run's handle.", m, s.Path))
			fmt.Fprintf(&b, "func (g %s) %sAsync(ctx context.Context, req %s, opts ...CallOption) (*RunHandle[%s], error) {\n\treturn extractAsync[%s](ctx, g.c, %q, req, opts)\n}\n\n", group, m, req, rec, rec, s.Path)
		}
	}
	b.Write(types.out.Bytes())
	return format.Source(b.Bytes())
}

// writeRequest writes the request body type of a service: its input field
// in both forms, limit, provider and, when the service declares options,
// their struct.
func writeRequest(b *bytes.Buffer, types *goTypes, name string, s service) {
	single := map[string]string{"urls": "url", "queries": "query"}[s.InputField]
	fmt.Fprintf(b, "// %s is the body of POST %s; set %s or %s.\ntype %s struct {\n", name, s.Path, goName(s.InputField), goName(single), name)
	fmt.Fprintf(b, "\t%s []string `json:\"%s,omitempty\"`\n", goName(s.InputField), s.InputField)
	fmt.Fprintf(b, "\t%s string `json:\"%s,omitempty\"`\n", goName(single), single)
	b.WriteString("\t// Limit is the most records returned; 0 is the service's default.\n\tLimit int `json:\"limit,omitempty\"`\n")
	b.WriteString("\t// Provider pins one offer (no failover).\n\tProvider string `json:\"provider,omitempty\"`\n")
	if s.Options != nil {
		opt := name[:len(name)-len("Request")] + "Options"
		fmt.Fprintf(b, "\tOptions *%s `json:\"options,omitempty\"`\n", opt)
		types.named(opt, s.Options)
	}
	b.WriteString("}\n\n")
}
