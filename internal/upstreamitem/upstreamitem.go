// Package upstreamitem is what the two stand-ins for an upstream (the
// simulator and test mode's source clients) share about the items they
// answer: the inputs a request body names, and an item carrying the input
// it answers, as a dataset upstream echoes it.
package upstreamitem

import (
	"bytes"

	"github.com/tidwall/gjson"
)

// ArrayStrings returns the string values inside arrays of a request body
// (input[].url, startUrls[].url, profileUrls, usernames…): the inputs the
// call is about.
func ArrayStrings(v gjson.Result) []string {
	var out []string
	var walk func(v gjson.Result, inArray bool)
	walk = func(v gjson.Result, inArray bool) {
		switch {
		case v.IsArray():
			v.ForEach(func(_, e gjson.Result) bool { walk(e, true); return true })
		case v.IsObject():
			v.ForEach(func(_, e gjson.Result) bool { walk(e, inArray); return true })
		case v.Type == gjson.String && inArray:
			out = append(out, v.Str)
		}
	}
	walk(v, false)
	return out
}

// SetInput returns a copy of the JSON object item whose top-level "input"
// is input (JSON), so a record can be matched to the input it answers.
func SetInput(item, input []byte) []byte {
	v := gjson.GetBytes(item, "input")
	out := make([]byte, 0, len(item)+len(input)+10)
	if v.Exists() && v.Index > 0 {
		out = append(out, item[:v.Index]...)
		out = append(out, input...)
		return append(out, item[v.Index+len(v.Raw):]...)
	}
	out = append(out, `{"input":`...)
	out = append(out, input...)
	rest := bytes.TrimSpace(item[1:])
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}
