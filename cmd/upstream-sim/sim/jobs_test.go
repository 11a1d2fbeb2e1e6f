package sim

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func ledgerOf(t *testing.T, url string) []LedgerEntry {
	t.Helper()
	st, body := request(t, http.MethodGet, url+"/_sim/ledger", "")
	if st != 200 {
		t.Fatalf("ledger: %d %s", st, body)
	}
	var out []LedgerEntry
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTimeScale: a 60 s job at scale 0.01 takes 0.6 s, and the run's
// waitForFinish holds for the scaled wait, not the real one.
func TestTimeScale(t *testing.T) {
	s, srv := start(t, Options{TimeScale: 0.01})
	_ = s.SetFault(Fault{Target: actorTarget, DurationS: 60})
	t0 := time.Now()
	st, body := post(t, srv.URL+"/v2/acts/"+actorTarget+"/runs", `{}`)
	if st != 201 {
		t.Fatalf("start: %d %s", st, body)
	}
	id := gjson.Get(body, "data.id").String()
	for {
		_, body = request(t, http.MethodGet, srv.URL+"/v2/actor-runs/"+id+"?waitForFinish=60", "")
		if gjson.Get(body, "data.status").String() == "SUCCEEDED" {
			break
		}
		if time.Since(t0) > 3*time.Second {
			t.Fatalf("run not finished after 3 s: %s", body)
		}
	}
	if d := time.Since(t0); d < 550*time.Millisecond || d > 1500*time.Millisecond {
		t.Errorf("a 60 s job at scale 0.01 took %v, want about 0.6 s", d)
	}
	e := ledgerOf(t, srv.URL)
	if len(e) != 1 || e[0].Running || e[0].RuntimeS < 55 || e[0].RuntimeS > 120 {
		t.Errorf("ledger %+v, want one finished run of about 60 upstream seconds", e)
	}
}

// TestLedgerRunsUntilAborted: a run that keeps running accrues runtime in
// the ledger until aborted; an actor that ignores maxItems collects more
// but is charged for maxItems only.
func TestLedgerRunsUntilAborted(t *testing.T) {
	s, srv := start(t, Options{TimeScale: 0.01})
	_ = s.SetFault(Fault{Target: postsTarget, KeepRunning: true, Times: 1})
	_, body := post(t, srv.URL+"/v2/acts/"+postsTarget+"/runs", `{}`)
	id := gjson.Get(body, "data.id").String()
	time.Sleep(50 * time.Millisecond)
	e := ledgerOf(t, srv.URL)
	if len(e) != 1 || !e[0].Running || e[0].RuntimeS < 4 {
		t.Fatalf("ledger %+v, want a running run accruing runtime", e)
	}
	st, body := post(t, srv.URL+"/v2/actor-runs/"+id+"/abort", ``)
	if st != 200 || gjson.Get(body, "data.status").String() != "ABORTED" {
		t.Fatalf("abort: %d %s", st, body)
	}
	rt := ledgerOf(t, srv.URL)[0].RuntimeS
	time.Sleep(30 * time.Millisecond)
	if e := ledgerOf(t, srv.URL)[0]; e.Running || !e.Aborted || e.RuntimeS != rt {
		t.Errorf("after abort: %+v, want aborted with its runtime frozen at %v", e, rt)
	}

	_ = s.SetFault(Fault{Target: postsTarget, Items: 9, IgnoreMaxItems: true})
	_, body = post(t, srv.URL+"/v2/acts/"+postsTarget+"/runs?maxItems=3", `{}`)
	id, ds := gjson.Get(body, "data.id").String(), gjson.Get(body, "data.defaultDatasetId").String()
	request(t, http.MethodGet, srv.URL+"/v2/actor-runs/"+id+"?waitForFinish=60", "")
	_, items := request(t, http.MethodGet, srv.URL+"/v2/datasets/"+ds+"/items?clean=true&offset=2&limit=100", "")
	if n := len(gjson.Parse(items).Array()); n != 7 {
		t.Errorf("page from offset 2 has %d items, want 7 of 9 (maxItems ignored)", n)
	}
	if e := ledgerOf(t, srv.URL)[1]; e.Items != 9 || e.Charged != 3 || e.Delivered != 7 {
		t.Errorf("ledger %+v, want 9 items, 3 charged, 7 delivered", e)
	}
}

// TestAnswersPerInput: an unknown input is answered with a dead_page row,
// on both protocols; a known one with its records.
func TestAnswersPerInput(t *testing.T) {
	_, srv := start(t, Options{})
	_, body := post(t, srv.URL+"/datasets/v3/scrape?dataset_id="+companyTarget,
		`[{"url":"https://www.linkedin.com/company/acme"},{"url":"https://www.linkedin.com/company/does-not-exist"}]`)
	rows := gjson.Parse(body).Array()
	if len(rows) != 2 || rows[0].Get("error_code").Exists() || rows[1].Get("error_code").String() != "dead_page" ||
		rows[1].Get("input.url").String() != "https://www.linkedin.com/company/does-not-exist" {
		t.Errorf("scrape rows %s, want a record then a dead_page row for the unknown input", body)
	}
	st, body := post(t, srv.URL+"/v2/acts/"+actorTarget+"/run-sync-get-dataset-items",
		`{"profileUrls":["https://www.linkedin.com/in/does-not-exist"]}`)
	rows = gjson.Parse(body).Array()
	if st != 201 || len(rows) != 1 || rows[0].Get("error_code").String() != "dead_page" {
		t.Errorf("actor answered %d %s, want one dead_page row", st, body)
	}
}

// TestSnapshotDownloadForms: a download before the snapshot is ready is a
// status body, as 202 or 200; building_downloads keeps answering it after
// progress said ready.
func TestSnapshotDownloadForms(t *testing.T) {
	s, srv := start(t, Options{TimeScale: 0.001})
	for _, form := range []string{"202", "200"} {
		_ = s.SetFault(Fault{Target: companyTarget, DurationS: 10, NotReady: form, BuildingDownloads: 1})
		_, body := post(t, srv.URL+"/datasets/v3/trigger?dataset_id="+companyTarget, `[{"url":"u"}]`)
		id := gjson.Get(body, "snapshot_id").String()
		st, body := request(t, http.MethodGet, srv.URL+"/datasets/v3/snapshot/"+id, "")
		if form == "202" && st != 202 || form == "200" && st != 200 || gjson.Get(body, "status").String() == "" {
			t.Errorf("not ready (%s): %d %s", form, st, body)
		}
		time.Sleep(20 * time.Millisecond)
		_, body = request(t, http.MethodGet, srv.URL+"/datasets/v3/progress/"+id, "")
		if gjson.Get(body, "status").String() != "ready" {
			t.Fatalf("progress %s, want ready", body)
		}
		if _, body = request(t, http.MethodGet, srv.URL+"/datasets/v3/snapshot/"+id, ""); gjson.Get(body, "status").String() != "building" {
			t.Errorf("first download after ready %s, want building", body)
		}
		if st, body = request(t, http.MethodGet, srv.URL+"/datasets/v3/snapshot/"+id, ""); st != 200 || !gjson.Parse(body).IsArray() {
			t.Errorf("second download %d %s, want the rows", st, body)
		}
	}
}
