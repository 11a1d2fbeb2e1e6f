package registry

import (
	"strings"
	"testing"
	"unicode/utf8"

	"socialrouter/services"
)

// FuzzMatchInput: a matched input is normalized idempotently, carries no
// surrounding space, respects max_length, and (for url-kind services) any
// scheme it gained is https://.
func FuzzMatchInput(f *testing.F) {
	reg, err := LoadFS(services.FS)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range reg.Services {
		for _, a := range s.Accepts {
			f.Add(s.Key, a.Example)
			f.Add(s.Key, " "+strings.TrimPrefix(a.Example, "https://")+"\t")
			f.Add(s.Key, a.Example+"/../x?y=1#z")
		}
	}
	f.Add("pro_net/post.search", strings.Repeat("é", 86))
	f.Add("pro_net/profile.info", "HTTPS://WWW.LinkedIn.COM/in/Ann")
	f.Add("maps/place.info", "ChIJN1t_tDeuEmsRUsoyG83frY4")
	f.Fuzz(func(t *testing.T, key, in string) {
		var svc *Service
		for _, s := range reg.Services {
			if s.Key == key {
				svc = s
			}
		}
		if svc == nil {
			return
		}
		n, ok := svc.MatchInput(in)
		if !ok {
			return
		}
		if n != strings.TrimSpace(n) || n == "" {
			t.Fatalf("normalized %q has surrounding space or is empty", n)
		}
		again, ok2 := svc.MatchInput(n)
		if !ok2 || again != n {
			t.Fatalf("normalization not idempotent: %q → %q → %q (%v)", in, n, again, ok2)
		}
		fits := false
		for _, a := range svc.Accepts {
			if a.re.MatchString(n) && (a.MaxLength == 0 || utf8.RuneCountInString(n) <= a.MaxLength) {
				fits = true
			}
		}
		if !fits {
			t.Fatalf("%q accepted but matches no accept as normalized", n)
		}
		if svc.InputKind == KindURL && n != strings.TrimSpace(in) && !strings.HasPrefix(n, "https://") && n != lowerAuthority(strings.TrimSpace(in)) {
			t.Fatalf("%q normalized to %q without https://", in, n)
		}
	})
}
