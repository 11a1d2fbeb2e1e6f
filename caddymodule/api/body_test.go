package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"socialrouter/caddymodule/registry"
	"socialrouter/services"
)

func loadRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	reg, err := registry.LoadFS(services.FS)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// FuzzParseExtract: any body either parses into inputs that each match an
// accepted format, with a limit in 1..250 and options the service declares,
// or is refused with a documented 4xx validation error — never a panic.
func FuzzParseExtract(f *testing.F) {
	reg := loadRegistry(f)
	for _, seed := range []string{
		`{"url": "https://www.linkedin.com/in/rbranson"}`,
		`{"urls": ["linkedin.com/in/a", "https://www.linkedin.com/in/b/"], "limit": 5}`,
		`{"url": "x", "options": {"includeEmail": false}}`,
		`{"urls": [], "provider": "source_a/actor_1"}`,
		`{"queries": ["a"]}`, `[]`, `null`, `{"limit": 1e400}`, `{"url": "https://www.linkedin.com/in/\u0000"}`,
	} {
		f.Add("pro_net/profile.info", seed)
		f.Add("forum_net/subreddit.posts", seed)
		f.Add("pro_net/post.search", seed)
	}
	f.Fuzz(func(t *testing.T, key, body string) {
		var svc *registry.Service
		for _, s := range reg.Services {
			if s.Key == key {
				svc = s
			}
		}
		if svc == nil {
			return
		}
		m, apiErr := parseObject([]byte(body))
		if apiErr != nil {
			if apiErr.Status != 400 || apiErr.Type != typeValidation {
				t.Fatalf("parseObject error %d %s", apiErr.Status, apiErr.Type)
			}
			return
		}
		out, apiErr := parseExtract(svc, m)
		if apiErr != nil {
			if apiErr.Status != 400 || apiErr.Type != typeValidation || apiErr.Code == "" || apiErr.Message == "" {
				t.Fatalf("undocumented refusal %+v", apiErr)
			}
			return
		}
		if out.Limit < 1 || out.Limit > 250 || len(out.Inputs) == 0 {
			t.Fatalf("accepted limit %d, %d inputs", out.Limit, len(out.Inputs))
		}
		for _, in := range out.Inputs {
			if n, ok := svc.MatchInput(in); !ok || n != in {
				t.Fatalf("accepted input %q does not match (normalization not idempotent: %q)", in, n)
			}
		}
		for k := range out.Options {
			if _, ok := svc.Option(k); !ok {
				t.Fatalf("undeclared option %q accepted", k)
			}
		}
		if _, err := json.Marshal(out.Options); err != nil {
			t.Fatal(err)
		}
	})
}

func TestParseExtract(t *testing.T) {
	reg := loadRegistry(t)
	svc, _ := reg.Service("pro_net", "profile.info")
	tests := []struct {
		name, body, code string
		inputs           []string
	}{
		{"single url", `{"url": " https://www.linkedin.com/in/rbranson "}`, "", []string{"https://www.linkedin.com/in/rbranson"}},
		{"scheme-less", `{"urls": ["www.linkedin.com/in/rbranson"]}`, "", []string{"https://www.linkedin.com/in/rbranson"}},
		{"both forms", `{"url": "a", "urls": ["b"]}`, "conflicting_input", nil},
		{"urls not array", `{"urls": "x"}`, "invalid_field", nil},
		{"urls null", `{"urls": null}`, "invalid_field", nil},
		{"a null url", `{"urls": ["https://www.linkedin.com/in/a", null]}`, "invalid_field", nil},
		{"url null", `{"url": null}`, "invalid_field", nil},
		{"url a number", `{"url": 5}`, "invalid_field", nil},
		{"unknown field", `{"url": "x", "typo": 1}`, "unknown_field", nil},
		{"queries on url kind", `{"queries": ["x"]}`, "wrong_input_field", nil},
		{"bad limit", `{"url": "https://www.linkedin.com/in/a", "limit": "5"}`, "invalid_limit", nil},
		{"provider pinned", `{"url": "https://www.linkedin.com/in/a", "provider": "source_a/actor_1"}`, "", []string{"https://www.linkedin.com/in/a"}},
		{"too many for the pin", `{"urls": ["https://www.linkedin.com/in/a", "https://www.linkedin.com/in/b"], "provider": "source_a/actor_1"}`, "too_many_inputs", nil},
		{"options null", `{"url": "https://www.linkedin.com/in/a", "options": null}`, "", []string{"https://www.linkedin.com/in/a"}},
		{"options not object", `{"url": "https://www.linkedin.com/in/a", "options": [1]}`, "invalid_option", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, apiErr := parseObject([]byte(tt.body))
			if apiErr != nil {
				t.Fatal(apiErr)
			}
			out, apiErr := parseExtract(svc, m)
			switch {
			case tt.code != "" && (apiErr == nil || apiErr.Code != tt.code):
				t.Fatalf("got %v, want %s", apiErr, tt.code)
			case tt.code == "" && apiErr != nil:
				t.Fatalf("refused: %v", apiErr)
			case tt.code == "" && (len(out.Inputs) != len(tt.inputs) || out.Inputs[0] != tt.inputs[0]):
				t.Fatalf("inputs %v, want %v", out.Inputs, tt.inputs)
			}
			if tt.code == "" && out.Options["includeEmail"] != true {
				t.Errorf("default of includeEmail not filled: %v", out.Options)
			}
		})
	}
}

// TestParseObjectDuplicateKey: a repeated key is invalid_json, at the top
// level and inside options, instead of the last one silently winning.
func TestParseObjectDuplicateKey(t *testing.T) {
	for _, body := range []string{
		`{"url":"nope","url":"https://www.linkedin.com/in/a"}`,
		`{"url":"https://www.linkedin.com/in/a","options":{"includeEmail":false,"includeEmail":true}}`,
	} {
		_, apiErr := parseObject([]byte(body))
		if apiErr == nil || apiErr.Status != 400 || apiErr.Code != "invalid_json" || !strings.Contains(apiErr.Message, "repeats the key") {
			t.Errorf("parseObject(%s) = %v, want 400 invalid_json naming the key", body, apiErr)
		}
	}
}

// FuzzParseChecked holds parseObject's one-pass reading of a valid object
// to encoding/json's: whatever parseChecked accepts, the decoder accepts
// with the same members, byte for byte.
func FuzzParseChecked(f *testing.F) {
	for _, seed := range []string{`{}`, `{"url": "https://x" , "limit":5}`, `{"options":{"a":[1, {"b":null}]},"urls":["\u00e9"]}`,
		`{"a":1,"a":2}`, `{"\u0061":1,"a":2}`, `[]`, `{"n":1e400}`, "{\"s\":\"\xff\"}", `{"a":{"b":1,"b":2}}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		b := bytes.TrimSpace([]byte(body))
		got, ok := parseChecked(b)
		if !ok {
			return
		}
		want, apiErr := parseDecoded(b)
		if apiErr != nil {
			t.Fatalf("parseChecked(%q) accepts what encoding/json refuses: %s", body, apiErr.Message)
		}
		if len(got) != len(want) {
			t.Fatalf("parseChecked(%q) = %d members, encoding/json %d", body, len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("parseChecked(%q)[%q] = %s, encoding/json %s", body, k, got[k], v)
			}
		}
	})
}

// BenchmarkParseObject reads make bench's N = 1 body both ways.
func BenchmarkParseObject(b *testing.B) {
	body := []byte(`{"url":"https://www.linkedin.com/in/rbranson"}`)
	b.Run("parseObject", func(b *testing.B) {
		for b.Loop() {
			if _, apiErr := parseObject(body); apiErr != nil {
				b.Fatal(apiErr.Message)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, apiErr := parseDecoded(body); apiErr != nil {
				b.Fatal(apiErr.Message)
			}
		}
	})
}

// FuzzFieldDecoders holds jsonString, jsonStrings and jsonNumber to
// json.Unmarshal into a string, a []string and a float64 on any input,
// valid JSON or not: the same verdict and the same value.
func FuzzFieldDecoders(f *testing.F) {
	for _, seed := range []string{`"https://x.example/a"`, `"a\"b"`, `"é"`, "\"\xff\"", "\"tab\there\"", `""`, `"`, `"a" "b"`,
		`["a","b"]`, ` [ "a" , "b" ] `, `[]`, `null`, ` null `, `[null]`, `["a",null]`, `["a",]`, `["a" "b"]`, `[1]`, `["a\u00e9"]`, `[""]`, `["a"],`,
		`5`, `-0.5e2`, `1e400`, `05`, `5.`, `"5"`, `12345678901234567890`, `0x10`, `+5`, `Inf`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		raw := json.RawMessage(in)
		var wp *string
		we := json.Unmarshal(raw, &wp)
		if we == nil && wp == nil {
			we = errors.New("null is no string")
		}
		if gs, ok := jsonString(raw); ok != (we == nil) || ok && gs != *wp {
			t.Fatalf("jsonString(%q) = %q, %v; encoding/json %v, %v", in, gs, ok, wp, we)
		}
		var wps []*string
		we = json.Unmarshal(raw, &wps)
		var wl []string
		if we == nil && wps != nil {
			wl = []string{}
			for _, p := range wps {
				if p == nil {
					we = errors.New("null entry")
					break
				}
				wl = append(wl, *p)
			}
		}
		gl, ok := jsonStrings(raw)
		if ok != (we == nil) || ok && ((gl == nil) != (wl == nil) || strings.Join(gl, "\x00") != strings.Join(wl, "\x00") || len(gl) != len(wl)) {
			t.Fatalf("jsonStrings(%q) = %q, %v; encoding/json %q, %v", in, gl, ok, wl, we)
		}
		var wf float64
		we = json.Unmarshal(raw, &wf)
		if gf, ok := jsonNumber(raw); ok != (we == nil) || ok && gf != wf {
			t.Fatalf("jsonNumber(%q) = %v, %v; encoding/json %v, %v", in, gf, ok, wf, we)
		}
	})
}

// BenchmarkParseExtract validates make bench's N = 1 body for
// pro_net/profile.info, as a call does after reading it.
func BenchmarkParseExtract(b *testing.B) {
	reg := loadRegistry(b)
	svc, _ := reg.Service("pro_net", "profile.info")
	body := []byte(`{"url":"https://www.linkedin.com/in/rbranson","limit":1}`)
	for b.Loop() {
		m, apiErr := parseObject(body)
		if apiErr == nil {
			_, apiErr = parseExtract(svc, m)
		}
		if apiErr != nil {
			b.Fatal(apiErr.Message)
		}
	}
}

// TestParseObjectRefusals: a body that is not one JSON object in UTF-8 is
// 400 invalid_json with a message in the caller's terms: no Go type names,
// and no invalid UTF-8 silently rewritten to U+FFFD (and then routed,
// sent upstream and billed).
func TestParseObjectRefusals(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"array", `[]`, "must be a JSON object: got an array"},
		{"string", `"x"`, "must be a JSON object: got a string"},
		{"number", `42`, "must be a JSON object: got a number"},
		{"boolean", `true`, "must be a JSON object: got a boolean"},
		{"null", `null`, "must be a JSON object: got null"},
		{"truncated", `{"url":`, "must be a JSON object: the JSON text ends too early"},
		{"syntax", `{"url" 1}`, "after object key (at byte"},
		{"invalid UTF-8 in a string", "{\"query\":\"pizza \xff\"}", "not valid UTF-8"},
		{"invalid UTF-8 in a key", "{\"q\xc3\":\"pizza\"}", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, apiErr := parseObject([]byte(tt.body))
			if apiErr == nil || apiErr.Status != 400 || apiErr.Code != "invalid_json" || apiErr.Type != typeValidation {
				t.Fatalf("parseObject(%q) = %v, want 400 invalid_json", tt.body, apiErr)
			}
			if !strings.Contains(apiErr.Message, tt.want) {
				t.Errorf("message %q does not say %q", apiErr.Message, tt.want)
			}
			if strings.Contains(apiErr.Message, "Go value") || strings.Contains(apiErr.Message, "json.RawMessage") {
				t.Errorf("message %q names Go types", apiErr.Message)
			}
		})
	}
}

// TestMatchInputsSaysWhy: an input refused only for its length says so
// (pro_net/post.search takes queries of 85 characters at most), and the
// accepted formats carry their notes, where such limits are written.
func TestMatchInputsSaysWhy(t *testing.T) {
	reg := loadRegistry(t)
	tests := []struct {
		service, input string
		problem        string // want in invalid_inputs[0] and the message; "" for none
		ok             bool
	}{
		{"pro_net/post.search", strings.Repeat("a", 85), "", true},
		{"pro_net/post.search", strings.Repeat("é", 85), "", true},
		{"pro_net/post.search", strings.Repeat("a", 86), "longer than 85 characters", false},
		{"pro_net/post.search", " " + strings.Repeat("é", 86) + " ", "longer than 85 characters", false},
		{"pro_net/post.search", "   ", "", false},
		{"pro_net/company.info", "https://example.com/" + strings.Repeat("a", 100), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.service+"/"+tt.input, func(t *testing.T) {
			platform, name, _ := strings.Cut(tt.service, "/")
			svc, _ := reg.Service(platform, name)
			_, apiErr := matchInputs(svc, []string{tt.input})
			if tt.ok {
				if apiErr != nil {
					t.Fatalf("refused: %s", apiErr.Message)
				}
				return
			}
			if apiErr == nil || apiErr.Code != "invalid_input_format" {
				t.Fatalf("got %v, want invalid_input_format", apiErr)
			}
			b, _ := json.Marshal(apiErr.Extra)
			var extra struct {
				InvalidInputs []struct{ Problem string } `json:"invalid_inputs"`
				Accepts       []struct{ Note string }    `json:"accepts"`
			}
			if err := json.Unmarshal(b, &extra); err != nil {
				t.Fatal(err)
			}
			if got := extra.InvalidInputs[0].Problem; got != tt.problem {
				t.Errorf("problem %q, want %q", got, tt.problem)
			}
			if tt.problem != "" && !strings.Contains(apiErr.Message, tt.problem) {
				t.Errorf("message %q does not say %q", apiErr.Message, tt.problem)
			}
			for i, a := range svc.Accepts {
				if extra.Accepts[i].Note != a.Note {
					t.Errorf("accepts[%d].note = %q, want %q", i, extra.Accepts[i].Note, a.Note)
				}
			}
		})
	}
}
