package registry

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"socialrouter/caddymodule/credits"
)

// The declarations under services/ are the product: these tests hold them
// to SPEC.md ("Services, inputs, options and offers"), transcribed below row
// by row, so a change of a price, an order, a format or an option is a
// deliberate edit of both.

var (
	declOnce sync.Once
	declReg  *Registry
	declErr  error
)

// declared loads services/ once for every test of the package.
func declared(t *testing.T) *Registry {
	t.Helper()
	declOnce.Do(func() { declReg, declErr = LoadFS(svcFS) })
	if declErr != nil {
		t.Fatalf("loading svcFS: %v", declErr)
	}
	return declReg
}

type specOffer struct {
	id        string
	price     string // price_per_record, exact decimal
	maxInputs int
	target    string
	params    map[string]string
	// implements lists the declared options the offer honours.
	implements []string
}

type specOption struct {
	name, typ string
	values    []string
	format    string
	def       any // nil: no default
}

type specService struct {
	key        string
	kind       string
	extract    bool
	search     bool
	accepts    int
	limitScope string
	record     string
	options    []specOption
	offers     []specOffer
}

var hashtagOptions = []specOption{
	{name: "sortingOrder", typ: "string"},
	{name: "videoType", typ: "string"},
	{name: "lengthFilter", typ: "string"},
	{name: "isHD", typ: "boolean"},
	{name: "hasSubtitles", typ: "boolean"},
	{name: "hasCC", typ: "boolean"},
	{name: "is3D", typ: "boolean"},
	{name: "isLive", typ: "boolean"},
	{name: "is4K", typ: "boolean"},
	{name: "is360", typ: "boolean"},
	{name: "hasLocation", typ: "boolean"},
	{name: "isHDR", typ: "boolean"},
	{name: "isVR180", typ: "boolean"},
}

func optionNames(opts []specOption) []string {
	var out []string
	for _, o := range opts {
		out = append(out, o.name)
	}
	return out
}

// specServices is SPEC's table of services, one row per service, plus the
// search type video_net/video.search and the offer-less micro_net/post.info.
var specServices = []specService{
	{
		key: "pro_net/profile.posts", kind: "url", extract: true, accepts: 2, limitScope: "per_input", record: "#ProPost",
		offers: []specOffer{
			{id: "source_b/pro_net", price: "0.001725", maxInputs: 1000, target: "gd_lyy3tktm25m4avu764",
				params: map[string]string{"type": "discover_new", "discover_by": "profile_url"}},
			{id: "source_a/actor_1", price: "0.007705", maxInputs: 1000, target: "apimaestro~linkedin-profile-posts"},
		},
	},
	{
		key: "pro_net/post.likes", kind: "url", extract: true, accepts: 2, limitScope: "per_input", record: "#ProPostReaction",
		offers: []specOffer{
			{id: "source_a/actor_1", price: "0.0069", maxInputs: 1000, target: "apimaestro~linkedin-post-reactions"},
		},
	},
	{
		key: "pro_net/profile.info", kind: "url", extract: true, accepts: 1, limitScope: "per_call", record: "#ProProfile",
		options: []specOption{{name: "includeEmail", typ: "boolean", def: true}},
		offers: []specOffer{
			{id: "source_b/pro_net", price: "0.001725", maxInputs: 1000, target: "gd_l1viktl72bvl7bjuj0"},
			{id: "source_a/actor_1", price: "0.0069", maxInputs: 1, target: "dev_fusion~linkedin-profile-scraper", implements: []string{"includeEmail"}},
		},
	},
	{
		key: "pro_net/post.search", kind: "query", extract: true, accepts: 1, limitScope: "per_input", record: "#ProPostSearchResult",
		offers: []specOffer{
			{id: "source_a/actor_2", price: "0.00276", maxInputs: 50, target: "apimaestro~linkedin-posts-search-scraper-no-cookies"},
		},
	},
	{
		key: "pro_net/company.info", kind: "url", extract: true, accepts: 1, limitScope: "per_call", record: "#CompanyInfo",
		offers: []specOffer{
			{id: "source_b/pro_net", price: "0.001725", maxInputs: 1000, target: "gd_l1vikfnt1wgvvqz95w"},
		},
	},
	{
		key: "maps/place.search", kind: "query", extract: true, search: true, accepts: 1, limitScope: "per_input", record: "#PlaceSearchResult",
		offers: []specOffer{
			{id: "source_a/actor_3", price: "0.00552", maxInputs: 100, target: "compass~crawler-google-places"},
		},
	},
	{
		key: "maps/place.info", kind: "url", extract: true, accepts: 2, limitScope: "per_call", record: "#PlaceInfo",
		offers: []specOffer{
			{id: "source_b/maps", price: "0.001725", maxInputs: 1000, target: "gd_m8ebnr0q2qlklc02fz"},
			{id: "source_a/actor_3", price: "0.00828", maxInputs: 100, target: "compass~google-maps-extractor"},
		},
	},
	{
		key: "video_net/video.transcript", kind: "url", extract: true, accepts: 3, limitScope: "per_call", record: "#VideoTranscript",
		offers: []specOffer{
			{id: "source_a/actor_4", price: "0.00552", maxInputs: 100, target: "streamers~youtube-transcript-scraper"},
		},
	},
	{
		key: "video_net/channel.videos", kind: "url", extract: true, accepts: 4, limitScope: "per_input", record: "#ChannelVideo",
		options: []specOption{{name: "sortVideosBy", typ: "string"}},
		offers: []specOffer{
			{id: "source_a/actor_4", price: "0.00552", maxInputs: 100, target: "streamers~youtube-channel-scraper", implements: []string{"sortVideosBy"}},
		},
	},
	{
		key: "video_net/channel.shorts", kind: "url", extract: true, accepts: 4, limitScope: "per_input", record: "#ChannelShort",
		options: []specOption{{name: "sortVideosBy", typ: "string"}},
		offers: []specOffer{
			{id: "source_a/actor_4", price: "0.00552", maxInputs: 100, target: "streamers~youtube-shorts-scraper", implements: []string{"sortVideosBy"}},
		},
	},
	{
		key: "video_net/playlist.videos", kind: "url", extract: true, accepts: 1, limitScope: "per_input", record: "#PlaylistVideo",
		offers: []specOffer{
			{id: "source_a/actor_4", price: "0.00552", maxInputs: 100, target: "streamers~youtube-playlist-scraper"},
		},
	},
	{
		key: "video_net/hashtag.videos", kind: "url", extract: true, accepts: 1, limitScope: "per_input", record: "#HashtagVideo",
		options: hashtagOptions,
		offers: []specOffer{
			{id: "source_a/actor_4", price: "0.00552", maxInputs: 100, target: "streamers~youtube-hashtag-scraper", implements: optionNames(hashtagOptions)},
		},
	},
	{
		key: "video_net/video.search", kind: "query", extract: false, search: true, accepts: 1, limitScope: "per_input", record: "#VideoSearchResult",
		offers: []specOffer{
			{id: "source_a/actor_4", price: "0.00552", maxInputs: 100, target: "streamers~youtube-scraper"},
		},
	},
	{
		key: "photo_net/profile.search", kind: "query", extract: true, accepts: 1, limitScope: "per_input", record: "#PhotoProfile",
		offers: []specOffer{
			{id: "source_b/photo_net", price: "0.001725", maxInputs: 100, target: "gd_l1vikfch901nx3by4",
				params: map[string]string{"type": "discover_new", "discover_by": "user_name"}},
			{id: "source_a/actor_5", price: "0.0069", maxInputs: 1, target: "apify~instagram-search-scraper"},
		},
	},
	{
		key: "photo_net/profile.info", kind: "url", extract: true, accepts: 1, limitScope: "per_call", record: "#PhotoProfile",
		offers: []specOffer{
			{id: "source_b/photo_net", price: "0.001725", maxInputs: 1000, target: "gd_l1vikfch901nx3by4"},
			{id: "source_a/actor_5", price: "0.0069", maxInputs: 100, target: "apify~instagram-profile-scraper"},
		},
	},
	{
		key: "ephemeral_net/post.info", kind: "url", extract: true, accepts: 1, limitScope: "per_call", record: "#EphemeralPostInfo",
		offers: []specOffer{
			{id: "source_b/ephemeral_net", price: "0.001725", maxInputs: 1000, target: "gd_ma0ydx431w6stl16ge"},
		},
	},
	{
		key: "social_net/event.info", kind: "url", extract: true, accepts: 1, limitScope: "per_call", record: "#EventInfo",
		offers: []specOffer{
			{id: "source_b/social_net", price: "0.001725", maxInputs: 1000, target: "gd_m14sd0to1jz48ppm51"},
		},
	},
	{
		key: "forum_net/subreddit.posts", kind: "url", extract: true, accepts: 1, limitScope: "per_input", record: "#ForumPost",
		options: []specOption{
			{name: "sort", typ: "enum", values: []string{"hot", "new", "top", "rising"}},
			{name: "postedAfter", typ: "date", format: "YYYY-MM-DD"},
		},
		offers: []specOffer{
			{id: "source_a/actor_6", price: "0.00276", maxInputs: 10, target: "trudax~reddit-scraper-lite", implements: []string{"sort"}},
			{id: "source_a/actor_7", price: "0.00552", maxInputs: 10, target: "trudax~reddit-scraper", implements: []string{"sort", "postedAfter"}},
		},
	},
	{
		key: "micro_net/post.info", kind: "url", extract: true, accepts: 1, limitScope: "per_call", record: "#MicroPostInfo",
	},
}

func TestDeclarationsMatchSpec(t *testing.T) {
	reg := declared(t)
	// SPEC's services must be present and exact; an operator's extra
	// services are theirs (TestEveryServiceFromItsDeclaration covers them).
	spec := map[string]bool{}
	for _, want := range specServices {
		spec[want.key] = true
	}
	for _, s := range reg.Services {
		if !spec[s.Key] {
			t.Logf("%s is declared beyond SPEC's table", s.Key)
		}
	}
	for _, want := range specServices {
		t.Run(want.key, func(t *testing.T) {
			platform, name, _ := strings.Cut(want.key, "/")
			s, ok := reg.Service(platform, name)
			if !ok {
				t.Fatalf("service %s is not declared", want.key)
			}
			if s.InputKind != want.kind {
				t.Errorf("input_kind = %s, want %s", s.InputKind, want.kind)
			}
			if s.Extract != want.extract || s.Search != want.search {
				t.Errorf("extract, search = %v, %v; want %v, %v", s.Extract, s.Search, want.extract, want.search)
			}
			if len(s.Accepts) != want.accepts {
				t.Errorf("%d accepted formats, want %d", len(s.Accepts), want.accepts)
			}
			if s.LimitScope != want.limitScope {
				t.Errorf("limit_scope = %s, want %s", s.LimitScope, want.limitScope)
			}
			if s.Record != want.record {
				t.Errorf("record = %s, want %s", s.Record, want.record)
			}
			if s.Description == "" {
				t.Error("no description")
			}

			if len(s.Options) != len(want.options) {
				t.Errorf("%d options, want %d", len(s.Options), len(want.options))
			}
			for i, wo := range want.options {
				if i >= len(s.Options) {
					break
				}
				o := s.Options[i]
				if o.Name != wo.name || o.Type != wo.typ {
					t.Errorf("option %d = %s %s, want %s %s", i, o.Name, o.Type, wo.name, wo.typ)
				}
				if !reflect.DeepEqual(o.Values, wo.values) {
					t.Errorf("option %s values = %v, want %v", o.Name, o.Values, wo.values)
				}
				if wo.format != "" && o.Format != wo.format {
					t.Errorf("option %s format = %q, want %q", o.Name, o.Format, wo.format)
				}
				if o.HasDefault != (wo.def != nil) || (wo.def != nil && o.Default != wo.def) {
					t.Errorf("option %s default = %v (set %v), want %v", o.Name, o.Default, o.HasDefault, wo.def)
				}
				if o.Description == "" {
					t.Errorf("option %s has no description", o.Name)
				}
			}

			if len(s.Offers) != len(want.offers) {
				t.Fatalf("%d offers, want %d", len(s.Offers), len(want.offers))
			}
			for i, wo := range want.offers {
				o := s.Offers[i]
				if o.ID != wo.id {
					t.Errorf("offer %d = %s, want %s (failover order)", i, o.ID, wo.id)
					continue
				}
				price, err := credits.Parse(wo.price)
				if err != nil {
					t.Fatal(err)
				}
				if o.Price != price {
					t.Errorf("%s price = %s, want %s", o.ID, o.Price, wo.price)
				}
				if o.MaxInputs != wo.maxInputs {
					t.Errorf("%s max_inputs = %d, want %d", o.ID, o.MaxInputs, wo.maxInputs)
				}
				if o.Target != wo.target {
					t.Errorf("%s target = %q, want %q", o.ID, o.Target, wo.target)
				}
				if len(o.Params) != len(wo.params) || (len(wo.params) > 0 && !reflect.DeepEqual(o.Params, wo.params)) {
					t.Errorf("%s params = %v, want %v", o.ID, o.Params, wo.params)
				}
				if len(o.Implements) != len(wo.implements) {
					t.Errorf("%s implements %v, want %v", o.ID, o.Implements, wo.implements)
				}
				for _, name := range wo.implements {
					if !o.Implements[name] {
						t.Errorf("%s does not implement %s", o.ID, name)
					}
				}
				if !o.Live() {
					t.Errorf("%s is not live", o.ID)
				}
				if o.Request == nil || o.Normalize == nil {
					t.Errorf("%s lacks a request or normalize program", o.ID)
				}
			}
		})
	}
}

func TestServiceWithoutOfferIsNotCallable(t *testing.T) {
	reg := declared(t)
	s, ok := reg.Service("micro_net", "post.info")
	if !ok {
		t.Fatal("micro_net/post.info is not declared")
	}
	if s.Callable() || len(s.LiveOffers()) != 0 {
		t.Errorf("micro_net/post.info is callable; it must answer service_not_available")
	}
	if _, listed := reg.EntryJSON(s); listed {
		t.Error("micro_net/post.info has a catalogue entry")
	}
}

// TestSearchTypes: the search types are exactly the services declared with
// search: true (SPEC's two among them, whatever an operator adds), and
// the provider slugs of POST /v1/search are their live offers'.
func TestSearchTypes(t *testing.T) {
	reg := declared(t)
	got := map[string]bool{}
	for _, s := range reg.SearchTypes() {
		got[s.Key] = true
	}
	wantSlugs := map[string]bool{}
	for _, s := range reg.Services {
		if got[s.Key] != s.Search {
			t.Errorf("%s: search: %v, listed as a search type: %v", s.Key, s.Search, got[s.Key])
		}
		if !s.Search {
			continue
		}
		for _, o := range s.LiveOffers() {
			wantSlugs[o.Source.ID+"/"+s.Key] = true
		}
	}
	for _, k := range []string{"video_net/video.search", "maps/place.search"} { // SPEC's
		if !got[k] {
			t.Errorf("search types %v lack SPEC's %s", got, k)
		}
	}
	slugs := reg.SearchSlugs()
	if !sort.StringsAreSorted(slugs) || len(slugs) != len(wantSlugs) {
		t.Errorf("search slugs %v, want the sorted %v", slugs, wantSlugs)
	}
	for _, sl := range slugs {
		if !wantSlugs[sl] {
			t.Errorf("search slug %s is no live offer of a search type", sl)
		}
	}
}

// TestExamplesMatchTheirPatterns: every example is a concrete input with the
// real host, accepted as is (already normalized).
func TestExamplesMatchTheirPatterns(t *testing.T) {
	reg := declared(t)
	for _, s := range reg.Services {
		for _, a := range s.Accepts {
			if strings.Contains(a.Example, "{") || strings.Contains(a.Example, "<") {
				t.Errorf("%s: example %q is not a concrete input", s.Key, a.Example)
			}
			if a.Format == "" || a.Pattern == "" {
				t.Errorf("%s: accept %q lacks a format or pattern", s.Key, a.Example)
			}
			if strings.Contains(a.Format, "_host}") {
				t.Errorf("%s: format %q kept a host placeholder", s.Key, a.Format)
			}
			if !a.re.MatchString(a.Example) {
				t.Errorf("%s: example %q does not match its own pattern %s", s.Key, a.Example, a.Pattern)
			}
			got, ok := s.MatchInput(a.Example)
			if !ok || got != a.Example {
				t.Errorf("%s: MatchInput(%q) = %q, %v", s.Key, a.Example, got, ok)
			}
		}
	}
}

// inputCases are inputs beyond the examples: good ones with the form they
// normalize to, and bad ones each service must refuse.
var inputCases = []struct {
	key  string
	good map[string]string // input → normalized
	bad  []string
}{
	{
		key: "pro_net/profile.info",
		good: map[string]string{
			"www.linkedin.com/in/rbranson":                      "https://www.linkedin.com/in/rbranson",
			"linkedin.com/in/rbranson/":                         "https://linkedin.com/in/rbranson/",
			"  https://uk.linkedin.com/in/rbranson?trk=x  ":     "https://uk.linkedin.com/in/rbranson?trk=x",
			"http://www.linkedin.com/in/ricky-hoover-7388371b8": "http://www.linkedin.com/in/ricky-hoover-7388371b8",
			"HTTPS://WWW.LinkedIn.COM/in/RBranson":              "https://www.linkedin.com/in/RBranson",
			"WWW.LINKEDIN.COM/in/rbranson?X=Y":                  "https://www.linkedin.com/in/rbranson?X=Y",
		},
		bad: []string{"rbranson", "https://www.linkedin.com/company/kraft", "https://www.example.com/in/rbranson",
			"ftp://www.linkedin.com/in/rbranson", "https://www.linkedin.com/in/", ""},
	},
	{
		key: "pro_net/profile.posts",
		good: map[string]string{
			"www.linkedin.com/posts/jane_shipping-activity-7290111122223333444-AbCd": "https://www.linkedin.com/posts/jane_shipping-activity-7290111122223333444-AbCd",
		},
		bad: []string{"jane-example", "https://www.linkedin.com/company/kraft", "https://www.linkedin.com/feed/"},
	},
	{
		key: "pro_net/post.likes",
		good: map[string]string{
			"www.linkedin.com/posts/jane_shipping-activity-7290111122223333444-AbCd/": "https://www.linkedin.com/posts/jane_shipping-activity-7290111122223333444-AbCd/",
			" 7290111122223333444 ": "7290111122223333444",
		},
		bad: []string{"https://www.linkedin.com/posts/jane_shipping-our-new-api", "12345", "https://www.linkedin.com/in/rbranson",
			"activity-7290111122223333444"},
	},
	{
		key:  "pro_net/post.search",
		good: map[string]string{`"api gateway" AND jq`: `"api gateway" AND jq`, strings.Repeat("q", 85): strings.Repeat("q", 85)},
		bad:  []string{strings.Repeat("q", 86), "", "   ", "line\nbreak"},
	},
	{
		key: "pro_net/company.info",
		good: map[string]string{
			"linkedin.com/company/stalkit/about/": "https://linkedin.com/company/stalkit/about/",
		},
		bad: []string{"https://www.linkedin.com/in/rbranson", "kraft heinz", "https://www.linkedin.com/school/mit"},
	},
	{
		key:  "maps/place.search",
		good: map[string]string{"coffee shop near Chelsea, New York": "coffee shop near Chelsea, New York"},
		bad:  []string{"", "tab\there"},
	},
	{
		key: "maps/place.info",
		good: map[string]string{
			"www.google.com/maps/place/Kim's+Island/data=!4m7": "https://www.google.com/maps/place/Kim's+Island/data=!4m7",
			"https://maps.google.com/maps/place/Kim's+Island":  "https://maps.google.com/maps/place/Kim's+Island",
			"Https://Maps.Google.COM/maps/place/Kim's+Island":  "https://maps.google.com/maps/place/Kim's+Island",
		},
		bad: []string{"pizza", "https://www.google.com/maps/search/pizza", "https://www.bing.com/maps/place/x", "ChIJ", "https://www.google.com/MAPS/place/x"},
	},
	{
		key: "video_net/video.transcript",
		good: map[string]string{
			"youtube.com/watch?v=CW7gfrTlr0Y&t=10s":               "https://youtube.com/watch?v=CW7gfrTlr0Y&t=10s",
			"https://m.youtube.com/watch?feature=x&v=CW7gfrTlr0Y": "https://m.youtube.com/watch?feature=x&v=CW7gfrTlr0Y",
			"youtu.be/CW7gfrTlr0Y?si=abc":                         "https://youtu.be/CW7gfrTlr0Y?si=abc",
		},
		bad: []string{"CW7gfrTlr0Y", "https://www.youtube.com/@LofiGirl", "https://www.youtube.com/watch?v=short"},
	},
	{
		key: "video_net/channel.videos",
		good: map[string]string{
			"www.youtube.com/@LofiGirl/videos":   "https://www.youtube.com/@LofiGirl/videos",
			"https://www.youtube.com/@LofiGirl/": "https://www.youtube.com/@LofiGirl/",
		},
		bad: []string{"LofiGirl", "@LofiGirl", "https://www.youtube.com/watch?v=CW7gfrTlr0Y", "https://www.youtube.com/channel/notanid"},
	},
	{
		key:  "video_net/channel.shorts",
		good: map[string]string{"youtube.com/@NewbieStarTrek/shorts": "https://youtube.com/@NewbieStarTrek/shorts"},
		bad:  []string{"https://www.youtube.com/shorts/k86TWcdjQuM", "NewbieStarTrek"},
	},
	{
		key:  "video_net/playlist.videos",
		good: map[string]string{"www.youtube.com/playlist?list=PLexamplePlaylist000000000000000&si=x": "https://www.youtube.com/playlist?list=PLexamplePlaylist000000000000000&si=x"},
		bad:  []string{"https://www.youtube.com/watch?v=CW7gfrTlr0Y", "PLexamplePlaylist000000000000000"},
	},
	{
		key:  "video_net/hashtag.videos",
		good: map[string]string{"youtube.com/hashtag/stromae/": "https://youtube.com/hashtag/stromae/"},
		bad:  []string{"#stromae", "stromae", "https://www.youtube.com/results?search_query=stromae"},
	},
	{
		key:  "video_net/video.search",
		good: map[string]string{"lofi hip hop radio": "lofi hip hop radio"},
		bad:  []string{""},
	},
	{
		key: "photo_net/profile.info",
		good: map[string]string{
			"instagram.com/nasa/":                  "https://instagram.com/nasa/",
			"https://www.instagram.com/nasa?hl=en": "https://www.instagram.com/nasa?hl=en",
		},
		bad: []string{"nasa", "https://www.instagram.com/p/DNQuxufAih9/", "https://www.facebook.com/nasa"},
	},
	{
		key:  "photo_net/profile.search",
		good: map[string]string{"nasa": "nasa"},
		bad:  []string{"", " "},
	},
	{
		key:  "ephemeral_net/post.info",
		good: map[string]string{"snapchat.com/spotlight/W7_EDlXWTBiXAEEniNoMPwAAYbW9ra3djZ3dt": "https://snapchat.com/spotlight/W7_EDlXWTBiXAEEniNoMPwAAYbW9ra3djZ3dt"},
		bad:  []string{"https://www.snapchat.com/add/example_creator", "W7_EDlXWTBiXAEEniNoMPwAAYbW9ra3djZ3dt"},
	},
	{
		key:  "social_net/event.info",
		good: map[string]string{"m.facebook.com/events/1546764716269782/?ref=x": "https://m.facebook.com/events/1546764716269782/?ref=x"},
		bad:  []string{"https://www.facebook.com/events/abc", "https://www.facebook.com/techevents", "1546764716269782"},
	},
	{
		key: "forum_net/subreddit.posts",
		good: map[string]string{
			"reddit.com/r/golang/top/?t=week":   "https://reddit.com/r/golang/top/?t=week",
			"https://old.reddit.com/r/all":      "https://old.reddit.com/r/all",
			"https://www.reddit.com/r/popular/": "https://www.reddit.com/r/popular/",
		},
		bad: []string{"golang", "r/golang", "https://www.reddit.com/user/someone", "https://www.reddit.com/r/golang/comments/1abc/x",
			"https://www.reddit.com/r/golang/best"},
	},
	{
		key:  "micro_net/post.info",
		good: map[string]string{"twitter.com/example_user/status/1890000000000000000": "https://twitter.com/example_user/status/1890000000000000000"},
		bad:  []string{"https://x.com/example_user", "hello"},
	},
}

func TestInputMatching(t *testing.T) {
	reg := declared(t)
	seen := map[string]bool{}
	for _, tc := range inputCases {
		seen[tc.key] = true
		t.Run(tc.key, func(t *testing.T) {
			platform, name, _ := strings.Cut(tc.key, "/")
			s, ok := reg.Service(platform, name)
			if !ok {
				t.Fatalf("service %s is not declared", tc.key)
			}
			for in, want := range tc.good {
				if got, ok := s.MatchInput(in); !ok || got != want {
					t.Errorf("MatchInput(%q) = %q, %v; want %q, true", in, got, ok, want)
				}
			}
			for _, in := range tc.bad {
				if got, ok := s.MatchInput(in); ok {
					t.Errorf("MatchInput(%q) accepted it as %q", in, got)
				}
			}
		})
	}
	// A service without cases here is held to its declaration: each
	// accepted example, padded with spaces, normalizes to itself, and
	// neither an empty input nor another service's example of a different
	// input kind is taken for it.
	for _, s := range reg.Services {
		if seen[s.Key] {
			continue
		}
		t.Run(s.Key+" (from its accepts)", func(t *testing.T) {
			for _, a := range s.Accepts {
				if got, ok := s.MatchInput("  " + a.Example + " "); !ok || got != a.Example {
					t.Errorf("MatchInput(padded %q) = %q, %v", a.Example, got, ok)
				}
			}
			if got, ok := s.MatchInput(""); ok {
				t.Errorf("the empty input is accepted as %q", got)
			}
		})
	}
}

// TestInputsOfOneServiceDoNotCrossOver: an input of one service is refused by
// a sibling that takes another kind of page.
func TestInputsOfOneServiceDoNotCrossOver(t *testing.T) {
	reg := declared(t)
	refuse := map[string][]string{
		"pro_net/company.info":      {"pro_net/profile.info"},
		"pro_net/profile.info":      {"pro_net/company.info"},
		"video_net/playlist.videos": {"video_net/channel.videos", "video_net/video.transcript", "video_net/hashtag.videos"},
		"video_net/channel.videos":  {"video_net/playlist.videos", "video_net/video.transcript", "video_net/hashtag.videos"},
		"video_net/hashtag.videos":  {"video_net/playlist.videos", "video_net/video.transcript"},
	}
	for key, others := range refuse {
		p, n, _ := strings.Cut(key, "/")
		s, _ := reg.Service(p, n)
		for _, other := range others {
			op, on, _ := strings.Cut(other, "/")
			o, _ := reg.Service(op, on)
			for _, a := range o.Accepts {
				if _, ok := s.MatchInput(a.Example); ok {
					t.Errorf("%s accepts %s's example %q", key, other, a.Example)
				}
			}
		}
	}
}

func TestOptionValidation(t *testing.T) {
	reg := declared(t)
	raw := func(m map[string]any) map[string]json.RawMessage {
		out := map[string]json.RawMessage{}
		for k, v := range m {
			b, _ := json.Marshal(v)
			out[k] = b
		}
		return out
	}
	cases := []struct {
		key      string
		options  map[string]any
		problems int
		want     map[string]any
	}{
		{"pro_net/profile.info", nil, 0, map[string]any{"includeEmail": true}},
		{"pro_net/profile.info", map[string]any{"includeEmail": false}, 0, map[string]any{"includeEmail": false}},
		{"pro_net/profile.info", map[string]any{"includeEmail": "yes"}, 1, nil},
		{"pro_net/company.info", map[string]any{"anything": 1}, 1, nil},
		{"maps/place.info", map[string]any{"language": "en"}, 1, nil},
		{"photo_net/profile.info", map[string]any{"x": true}, 1, nil},
		{"forum_net/subreddit.posts", map[string]any{"sort": "new", "postedAfter": "2025-01-31"}, 0, map[string]any{"sort": "new", "postedAfter": "2025-01-31"}},
		{"forum_net/subreddit.posts", map[string]any{"sort": "best"}, 1, nil},
		{"forum_net/subreddit.posts", map[string]any{"postedAfter": "31/01/2025"}, 1, nil},
		{"video_net/hashtag.videos", map[string]any{"isHD": true, "sortingOrder": "date"}, 0, map[string]any{"isHD": true, "sortingOrder": "date"}},
		{"video_net/hashtag.videos", map[string]any{"isHD": "true"}, 1, nil},
		{"video_net/channel.videos", map[string]any{"sortVideosBy": "POPULAR"}, 0, map[string]any{"sortVideosBy": "POPULAR"}},
	}
	for _, tc := range cases {
		p, n, _ := strings.Cut(tc.key, "/")
		s, _ := reg.Service(p, n)
		got, problems := s.ValidateOptions(raw(tc.options))
		if len(problems) != tc.problems {
			t.Errorf("%s %v: problems %v, want %d", tc.key, tc.options, problems, tc.problems)
			continue
		}
		if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %v: options %v, want %v", tc.key, tc.options, got, tc.want)
		}
	}
}
