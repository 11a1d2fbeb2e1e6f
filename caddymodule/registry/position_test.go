package registry

import (
	"strings"
	"testing"
)

// TestLoadErrorPositions: every refusal leads with the operator's
// file:line:column; a jq syntax error points at the offending token inside
// the CUE file, not at the field.
func TestLoadErrorPositions(t *testing.T) {
	multi := "\t\tnormalize: \"\"\"\n" +
		"\t\t\t{\n" +
		"\t\t\t\tsource: \"pro_net\",\n" +
		"\t\t\t\tname: .fullName | ]\n" +
		"\t\t\t}\n" +
		"\t\t\t\"\"\""
	cases := []struct {
		name, marker, replacement string
		want                      string // the message's start
		says                      string
	}{
		{"jq error in a multi-line program", `normalize:        "{source: \"pro_net\", name: .fullName}"`, multi,
			"services/x.cue:36:23: ", `unexpected token "]" (line 3, column 20 of the program)`},
		{"jq error after escapes in a one-line program", `normalize:        "{source: \"pro_net\", name: .fullName}"`,
			`		normalize:        "{source: \"pro_net\", name: .fullName | }"`,
			"services/x.cue:33:62: ", `unexpected token "}" (line 1, column 39 of the program)`},
		{"jq error in a program concatenated from literals", `normalize:        "{source: \"pro_net\", name: .fullName}"`,
			`		normalize:        "def f: .; " + "{source: \"pro_net\", name: .fullName | }"`,
			"services/x.cue:33:77: ", `unexpected token "}" (line 1, column 49 of the program)`},
		{"empty accepts", `accepts: [{`, `	accepts: [], _unused: [{`,
			"services/x.cue:8:2: ", `field services."pro_net/company.info".accepts: incompatible list lengths`},
		{"key and platform disagree", `platform:    "pro_net"`, `	platform:    "photo_net"`,
			"services/x.cue:4:15: ", `must be keyed "photo_net/company.info"`},
		{"field of the wrong type", `max_inputs:       1000`, `		max_inputs:       "x"`,
			"services/x.cue:23:21: ", `field services."pro_net/company.info".offers.0.max_inputs: conflicting values "x" and int`},
		{"unknown jq function", `normalize:        "{source: \"pro_net\", name: .fullName}"`,
			`		normalize:        "{source: \"pro_net\", name: .fullName | titlecase}"`,
			"services/x.cue:33:62: ", "function not defined: titlecase/0"},
		{"unknown jq variable", `normalize:        "{source: \"pro_net\", name: .fullName}"`,
			`		normalize:        "{source: \"pro_net\", name: .fullName, at: $nowish}"`,
			"services/x.cue:33:65: ", "variable not defined: $nowish"},
		{"platform typo", `platform:    "pro_net"`, `	platform:    "pronet"`,
			"services/x.cue:4:15: ", `"pronet" is not a platform: want one of pro_net, photo_net, micro_net, forum_net, social_net, shortvideo_net, video_net, pin_net, open_net, ephemeral_net, maps`},
		{"empty normalize", `normalize:        "{source: \"pro_net\", name: .fullName}"`, `		normalize:        ""`,
			"services/x.cue:33:21: ", "offer source_a/actor_1: normalize is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err, _ := loadWith(t, tc.marker, tc.replacement)
			if err == nil {
				t.Fatal("the declarations compiled; want an error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tc.want) {
				t.Errorf("error does not start with %q:\n%s", tc.want, msg)
			}
			if !strings.Contains(msg, tc.says) {
				t.Errorf("error does not say %q:\n%s", tc.says, msg)
			}
			if n := len(err.(*Error).Problems); n != 1 {
				t.Errorf("%d problems, want 1:\n%s", n, msg)
			}
		})
	}
}

// TestDuplicateDeclarationNamesBothFiles: a service declared in two files
// is refused even when both declarations are identical (CUE would merge
// them silently), naming both files.
func TestDuplicateDeclarationNamesBothFiles(t *testing.T) {
	_, err := LoadFiles(map[string][]byte{
		loadBaseFile:     []byte(loadBase),
		loadServiceFile:  []byte(loadService),
		"services/y.cue": []byte(loadService),
	})
	if err == nil {
		t.Fatal("a service declared twice compiled")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "services/y.cue:3:11: ") || !strings.Contains(msg, "services/x.cue:3:11") ||
		!strings.Contains(msg, `service pro_net/company.info is declared in two files`) {
		t.Errorf("duplicate declaration: %s", msg)
	}
}

func TestLiteralPos(t *testing.T) {
	file := []byte("a: \"x\\\"y z\"\nb: #\"p\\q\"#\nc: \"\"\"\n\t\tone\n\t\t two\n\t\t\"\"\"\n")
	cases := []struct {
		start     int
		want      string
		off       int
		line, col int
	}{
		{3, `x"y z`, 4, 1, 10},     // the z, after an escape
		{15, `p\q`, 2, 2, 8},       // raw string: no escapes
		{26, "one\n two", 5, 5, 4}, // "t" of two, indentation removed
	}
	for _, tc := range cases {
		p, ok := literalPos(file, tc.start, tc.want, tc.off)
		if !ok || p.line != tc.line || p.col != tc.col {
			t.Errorf("literal at %d offset %d: %d:%d (found %v), want %d:%d", tc.start, tc.off, p.line, p.col, ok, tc.line, tc.col)
		}
	}
	if _, ok := literalPos(file, 3, "something else", 0); ok {
		t.Error("a literal whose value is not the program was used")
	}
}
