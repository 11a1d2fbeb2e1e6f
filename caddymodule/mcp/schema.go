package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"socialrouter/internal/jsontree"
)

// Tool schemas are cut from the registry's OpenAPI document, not generated
// a second time: a tool's input is the operation's request body (or its
// parameters as an object), its output the operation's 200 answer. The
// document's component refs are rewritten to the tool schema's own $defs,
// so each schema stands alone.

type obj = map[string]any

const componentPrefix = "#/components/schemas/"

// openapiDoc indexes an OpenAPI document by operationId.
type openapiDoc struct {
	ops     map[string]obj
	schemas obj
}

func parseOpenAPI(b []byte) (*openapiDoc, error) {
	var doc struct {
		Paths      map[string]map[string]obj `json:"paths"`
		Components struct {
			Schemas obj `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("decoding the OpenAPI document: %v", err)
	}
	d := &openapiDoc{ops: map[string]obj{}, schemas: doc.Components.Schemas}
	for _, methods := range doc.Paths {
		for _, op := range methods {
			if id, ok := op["operationId"].(string); ok {
				d.ops[id] = op
			}
		}
	}
	return d, nil
}

// op returns the operation with the given id.
func (d *openapiDoc) op(id string) (obj, error) {
	op, ok := d.ops[id]
	if !ok {
		return nil, fmt.Errorf("the OpenAPI document has no operation %q", id)
	}
	return op, nil
}

// result is the operation with the given id and its output schema.
func (d *openapiDoc) result(id string) (op, out obj, err error) {
	if op, err = d.op(id); err != nil {
		return nil, nil, err
	}
	if out, err = d.resultSchema(op); err != nil {
		return nil, nil, err
	}
	return op, out, nil
}

// runOperation is the input (request body) and output schemas of the
// run tool of the operation with the given id: its output is
// runResultSchema.
func (d *openapiDoc) runOperation(id string) (in, out obj, err error) {
	op, err := d.op(id)
	if err != nil {
		return nil, nil, err
	}
	if in, err = d.bodySchema(op); err != nil {
		return nil, nil, err
	}
	if out, err = d.runResultSchema(op); err != nil {
		return nil, nil, err
	}
	return in, out, nil
}

// paramsOperation is the input (parameters) and output schemas of the
// operation with the given id.
func (d *openapiDoc) paramsOperation(id string) (in, out obj, err error) {
	op, out, err := d.result(id)
	if err != nil {
		return nil, nil, err
	}
	return d.paramsSchema(op), out, nil
}

// bodySchema is the JSON request body schema of op.
func (d *openapiDoc) bodySchema(op obj) (obj, error) {
	s, ok := dig(op, "requestBody", "content", "application/json", "schema").(obj)
	if !ok {
		return nil, fmt.Errorf("operation %v has no JSON request body", op["operationId"])
	}
	return d.standalone(s), nil
}

// paramsSchema is an object schema of op's parameters: one property per
// parameter, required as the parameter is.
func (d *openapiDoc) paramsSchema(op obj) obj {
	props := obj{}
	required := []any{}
	params, _ := op["parameters"].([]any)
	for _, p := range params {
		p, _ := p.(obj)
		name, _ := p["name"].(string)
		s := obj{}
		if ps, ok := p["schema"].(obj); ok {
			for k, v := range ps {
				s[k] = v
			}
		}
		if desc, ok := p["description"].(string); ok {
			s["description"] = desc
		}
		props[name] = s
		if req, _ := p["required"].(bool); req {
			required = append(required, name)
		}
	}
	s := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return d.standalone(s)
}

// resultSchema is the 200 answer schema of op, as an object schema (MCP
// requires an outputSchema of type object).
func (d *openapiDoc) resultSchema(op obj) (obj, error) {
	s, ok := dig(op, "responses", "200", "content", "application/json", "schema").(obj)
	if !ok {
		return nil, fmt.Errorf("operation %v has no JSON 200 answer", op["operationId"])
	}
	out := d.standalone(s)
	out["type"] = "object"
	return out, nil
}

// runResultSchema is the output schema of a run tool: the operation's
// 200 answer (the completed run) or its 202 answer (the async run as it
// stands, status running), since a call asking more than a synchronous
// call serves runs asynchronously.
func (d *openapiDoc) runResultSchema(op obj) (obj, error) {
	ok, found := dig(op, "responses", "200", "content", "application/json", "schema").(obj)
	accepted, found2 := dig(op, "responses", "202", "content", "application/json", "schema").(obj)
	if !found || !found2 {
		return nil, fmt.Errorf("operation %v has no JSON 200 and 202 answers", op["operationId"])
	}
	out := d.standalone(obj{"anyOf": []any{ok, accepted}})
	out["type"] = "object"
	return out, nil
}

// standalone deep-copies s with every component ref rewritten to
// "#/$defs/<name>" and the referenced components, transitively, under
// $defs.
func (d *openapiDoc) standalone(s obj) obj {
	defs := obj{}
	var walk func(v any) any
	walk = func(v any) any {
		return jsontree.Copy(v, func(o obj) {
			if r, ok := o["$ref"].(string); ok {
				if name, ok := strings.CutPrefix(r, componentPrefix); ok {
					o["$ref"] = "#/$defs/" + name
					if _, done := defs[name]; !done {
						defs[name] = true // placeholder against cycles
						defs[name] = walk(d.schemas[name])
					}
				}
			}
		})
	}
	out := walk(s).(obj)
	if len(defs) > 0 {
		out["$defs"] = defs
	}
	return out
}

// dig follows keys through nested objects.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(obj)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
