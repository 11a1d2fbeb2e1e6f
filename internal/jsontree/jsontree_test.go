package jsontree

import (
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestCopy(t *testing.T) {
	in := map[string]any{"a": []any{map[string]any{"b": 1.0, "drop": true}}, "s": "x"}
	var seen int
	out := Copy(in, func(o map[string]any) {
		seen++
		delete(o, "drop")
	}).(map[string]any)
	want := map[string]any{"a": []any{map[string]any{"b": 1.0}}, "s": "x"}
	if !reflect.DeepEqual(out, want) || seen != 2 {
		t.Fatalf("Copy = %v after %d fixes, want %v after 2", out, seen, want)
	}
	out["a"].([]any)[0].(map[string]any)["b"] = 2.0
	if in["a"].([]any)[0].(map[string]any)["b"] != 1.0 {
		t.Error("the copy shares an object with the original")
	}
	if _, ok := in["a"].([]any)[0].(map[string]any)["drop"]; !ok {
		t.Error("fix changed the original")
	}
	if got := Copy(in, nil); !reflect.DeepEqual(got, in) {
		t.Errorf("Copy without fix = %v, want %v", got, in)
	}
}

func TestAppendAsMarshal(t *testing.T) {
	vals := []any{
		nil, true, false, "", "a<b>&c\u2028\u2029\x01\"\\\n\t é \xff", 0.0, -0.0, 1.0, 1.5, 1e-7, 1e21, 123456789.0, 1e20, -3.25e-9,
		0, -7, 1 << 60, []any{}, []any(nil), map[string]any{}, map[string]any(nil),
		map[string]any{"input": []any{map[string]any{"url": "https://www.linkedin.com/in/rbranson"}}},
		map[string]any{"b": 1, "a": []any{nil, "x", 2.5, map[string]any{"z": false, "é": "<", "A": []any{}}}, "": "empty"},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		vals = append(vals, randomTree(r, 4))
	}
	for _, v := range vals {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := Append([]byte("pre"), v)
		if !ok || string(got) != "pre"+string(want) {
			t.Errorf("Append(%#v) = %q, %v, want %q", v, got, ok, want)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(1), []any{1, int64(2)}, map[string]any{"a": map[string]string{}}, big.NewInt(1)} {
		if got, ok := Append([]byte("pre"), v); ok || string(got) != "pre" {
			t.Errorf("Append(%#v) = %q, %v, want \"pre\", false", v, got, ok)
		}
	}
}

func randomTree(r *rand.Rand, depth int) any {
	k := r.IntN(8)
	if depth == 0 {
		k = r.IntN(5)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return randomString(r)
	case 3:
		return math.Float64frombits(r.Uint64()>>2) * float64(1-2*r.IntN(2))
	case 4:
		return r.IntN(1<<20) - 1<<19
	case 5, 6:
		m := map[string]any{}
		for range r.IntN(5) {
			m[randomString(r)] = randomTree(r, depth-1)
		}
		return m
	}
	a := make([]any, r.IntN(5))
	for i := range a {
		a[i] = randomTree(r, depth-1)
	}
	return a
}

func randomString(r *rand.Rand) string {
	const chars = "ab<>&\"\\\n\x00\x1f é\u2028\xff\xc3"
	b := make([]byte, r.IntN(8))
	for i := range b {
		b[i] = chars[r.IntN(len(chars))]
	}
	return string(b)
}
