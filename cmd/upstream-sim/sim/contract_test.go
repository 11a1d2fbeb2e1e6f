package sim

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// contract is a testdata/contract file: the documented exchanges of one
// upstream API, in order, each naming the documentation page it follows.
type contract struct {
	TimeScale float64        `json:"time_scale"`
	Steps     []contractStep `json:"steps"`
}

type contractStep struct {
	Doc    string          `json:"doc"`
	Fault  json.RawMessage `json:"fault"`
	WaitS  float64         `json:"wait_s"`
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Body   json.RawMessage `json:"body"`
	Status []int           `json:"status"`
	// Want maps a gjson path of the answer to its value, or to "string"
	// for any non-empty string.
	Want   map[string]string `json:"want"`
	Header map[string]string `json:"header"`
	Text   string            `json:"text"`
	// Save keeps answer values for later steps' {placeholders}.
	Save map[string]string `json:"save"`
	// Webhooks, if set, is a run start's ad-hoc webhook definitions: filled
	// ({callback} is the test's receiver), base64-encoded and sent as the
	// webhooks query parameter.
	Webhooks json.RawMessage `json:"webhooks"`
	// Callback, on a step without a method, expects the next request the
	// simulator sends to the receiver: its body (Want) and headers.
	Callback *struct {
		Want   map[string]string `json:"want"`
		Header map[string]string `json:"header"`
	} `json:"callback"`
}

// received is a callback the contract's receiver got.
type received struct {
	header http.Header
	body   []byte
}

// TestDocumentedContracts replays the upstreams' documented exchanges
// against the simulator: it must answer each as the documentation says.
func TestDocumentedContracts(t *testing.T) {
	files, _ := filepath.Glob("testdata/contract/*.json")
	if len(files) < 2 {
		t.Fatalf("contract fixtures missing: %v", files)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var c contract
			if err := json.Unmarshal(data, &c); err != nil {
				t.Fatal(err)
			}
			s, srv := start(t, Options{TimeScale: c.TimeScale})
			got := make(chan received, 16)
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- received{r.Header.Clone(), b}
			}))
			t.Cleanup(rcv.Close)
			vars := map[string]string{"actor": actorTarget, "dataset": companyTarget,
				"callback": rcv.URL + "/hook", "callback_q": url.QueryEscape(rcv.URL + "/hook")}
			fill := func(v string) string {
				for k, x := range vars {
					v = strings.ReplaceAll(v, "{"+k+"}", x)
				}
				return v
			}
			for i, st := range c.Steps {
				if st.Doc == "" {
					t.Fatalf("step %d names no documentation page", i)
				}
				if len(st.Fault) > 0 {
					var f Fault
					if err := json.Unmarshal([]byte(fill(string(st.Fault))), &f); err != nil {
						t.Fatal(err)
					}
					if err := s.SetFault(f); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(s.scaled(time.Duration(st.WaitS * float64(time.Second))))
				if st.Callback != nil && st.Method == "" {
					checkCallback(t, i, st, got, fill)
					continue
				}
				path := fill(st.Path)
				if len(st.Webhooks) > 0 {
					path += "&webhooks=" + url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(fill(string(st.Webhooks)))))
				}
				req, _ := http.NewRequest(st.Method, srv.URL+path, strings.NewReader(string(st.Body)))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				where := st.Method + " " + st.Path + " (" + st.Doc + ")"
				if !slices.Contains(st.Status, resp.StatusCode) {
					t.Fatalf("step %d %s: status %d, want %v: %s", i, where, resp.StatusCode, st.Status, body)
				}
				for path, want := range st.Want {
					got := gjson.GetBytes(body, path)
					switch want = fill(want); {
					case want == "string" && (got.Type != gjson.String || got.Str == ""):
						t.Errorf("step %d %s: %s = %s, want a string", i, where, path, got.Raw)
					case want != "string" && got.String() != want:
						t.Errorf("step %d %s: %s = %q, want %q: %s", i, where, path, got.String(), want, body)
					}
				}
				for h, want := range st.Header {
					if got := resp.Header.Get(h); got != want {
						t.Errorf("step %d %s: header %s = %q, want %q", i, where, h, got, want)
					}
				}
				if st.Text != "" && string(body) != st.Text {
					t.Errorf("step %d %s: body %q, want %q", i, where, body, st.Text)
				}
				for k, path := range st.Save {
					vars[k] = gjson.GetBytes(body, path).String()
				}
			}
		})
	}
}

// checkCallback waits for the next callback the receiver got and checks it
// against step i.
func checkCallback(t *testing.T, i int, st contractStep, got <-chan received, fill func(string) string) {
	t.Helper()
	var cb received
	select {
	case cb = <-got:
	case <-time.After(5 * time.Second):
		t.Fatalf("step %d (%s): no callback within 5 s", i, st.Doc)
	}
	for path, want := range st.Callback.Want {
		v := gjson.GetBytes(cb.body, path)
		switch want = fill(want); {
		case want == "string" && (v.Type != gjson.String || v.Str == ""):
			t.Errorf("step %d callback (%s): %s = %s, want a string: %s", i, st.Doc, path, v.Raw, cb.body)
		case want != "string" && v.String() != want:
			t.Errorf("step %d callback (%s): %s = %q, want %q: %s", i, st.Doc, path, v.String(), want, cb.body)
		}
	}
	for h, want := range st.Callback.Header {
		if v := cb.header.Get(h); v != fill(want) {
			t.Errorf("step %d callback (%s): header %s = %q, want %q", i, st.Doc, h, v, fill(want))
		}
	}
}
