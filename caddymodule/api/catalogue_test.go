package api

import (
	"reflect"
	"strings"
	"testing"
)

// TestService pins the 404s of resolving a platform and service.
func TestService(t *testing.T) {
	a := newTestAPI(t, 0)
	tests := []struct {
		platform, name, code, message string
		available                     []string // available_services of an unknown_service
	}{
		{"pro_net", "profile.info", "", "", nil},
		{"mars_net", "x", "unknown_platform", "", nil},
		{"extract", "pro_net", "unknown_platform", `; an extraction takes both segments: POST /v1/extract/{platform}/{service}`, nil},
		{"pro_net", "profile.infp", "unknown_service", `unknown service "profile.infp" for platform pro_net; did you mean "profile.info"?`,
			[]string{"company.info", "post.likes", "post.search", "profile.info", "profile.posts"}},
		{"micro_net", "post.infp", "unknown_service", `unknown service "post.infp" for platform micro_net; did you mean "post.info"?; this platform has no callable services yet`,
			[]string{}},
		{"video_net", "video.search", "unknown_service", `video_net/video.search is a search type, not an extraction service: call POST /v1/search with a provider slug such as "source_a/video_net/video.search"`,
			[]string{"channel.shorts", "channel.videos", "hashtag.videos", "playlist.videos", "video.transcript"}},
		{"micro_net", "post.info", "service_not_available", "", nil},
	}
	for _, tt := range tests {
		svc, e := a.Service(tt.platform, tt.name)
		switch {
		case tt.code == "" && (e != nil || svc == nil || svc.Name != tt.name):
			t.Errorf("%s/%s: %v, %+v", tt.platform, tt.name, svc, e)
		case tt.code != "" && (e == nil || e.Code != tt.code || e.Status != 404):
			t.Errorf("%s/%s: %+v, want %s", tt.platform, tt.name, e, tt.code)
		case tt.message != "" && !strings.Contains(e.Message, tt.message):
			t.Errorf("%s/%s: message %q, want it to hold %q", tt.platform, tt.name, e.Message, tt.message)
		case tt.available != nil && !reflect.DeepEqual(e.Extra["available_services"], tt.available):
			t.Errorf("%s/%s: available_services %v, want %v", tt.platform, tt.name, e.Extra["available_services"], tt.available)
		}
	}
}
