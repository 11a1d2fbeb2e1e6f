package storetest

import (
	"errors"
	"testing"
	"time"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// memberSuites are the cases of store.Members.
var memberSuites = []suite{
	{"invites", testInvites},
	{"invite_expired", testInviteExpired},
	{"passwords", testPasswords},
	{"sessions", testSessions},
	{"activity", testActivity},
	{"list_runs", testListRuns},
}

func invite(account, email string, exp time.Time) store.Invite {
	return store.Invite{TokenHash: hashOf("inv " + email), AccountID: account, Email: email, CreatedAt: base, ExpiresAt: exp}
}

func testInvites(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(1))
	if err := s.CreateInvite(ctx(t), invite("nobody", "x@example.com", base.Add(time.Hour))); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("invite to an unknown account: %v, want ErrNotFound", err)
	}
	inv := invite("acme", "Alice@Example.com", base.Add(72*time.Hour))
	if err := s.CreateInvite(ctx(t), inv); err != nil {
		t.Fatalf("CreateInvite: %v", err)
	}
	if _, err := s.AcceptInvite(ctx(t), hashOf("wrong"), store.Member{ID: "mem_x", PasswordHash: "h"}, base); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown token: %v, want ErrNotFound", err)
	}
	m, err := s.AcceptInvite(ctx(t), inv.TokenHash, store.Member{ID: "mem_1", PasswordHash: "hash1"}, base.Add(time.Hour))
	if err != nil {
		t.Fatalf("AcceptInvite: %v", err)
	}
	if m.AccountID != "acme" || m.Email != "alice@example.com" || m.ID != "mem_1" {
		t.Errorf("member = %+v", m)
	}
	checkTime(t, "member created_at", m.CreatedAt, base.Add(time.Hour))
	if _, err := s.AcceptInvite(ctx(t), inv.TokenHash, store.Member{ID: "mem_2", PasswordHash: "h"}, base.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second use of an invite: %v, want ErrNotFound", err)
	}
	for _, email := range []string{"alice@example.com", "ALICE@example.COM"} {
		got, err := s.MemberByEmail(ctx(t), email)
		if err != nil || got.ID != "mem_1" || got.PasswordHash != "hash1" || got.AccountID != "acme" {
			t.Errorf("MemberByEmail(%q) = %+v, %v", email, got, err)
		}
	}
	if got, err := s.GetMember(ctx(t), "mem_1"); err != nil || got.Email != "alice@example.com" || got.PasswordHash != "hash1" {
		t.Errorf("GetMember = %+v, %v", got, err)
	}
	if _, err := s.MemberByEmail(ctx(t), "bob@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("MemberByEmail(unknown): %v, want ErrNotFound", err)
	}
	if _, err := s.GetMember(ctx(t), "mem_9"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetMember(unknown): %v, want ErrNotFound", err)
	}
	again := invite("acme", "alice@example.com", base.Add(72*time.Hour))
	again.TokenHash = hashOf("again")
	if err := s.CreateInvite(ctx(t), again); !errors.Is(err, store.ErrExists) {
		t.Errorf("invite of an existing member: %v, want ErrExists", err)
	}
}

func testInviteExpired(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(1))
	inv := invite("acme", "late@example.com", base.Add(time.Hour))
	if err := s.CreateInvite(ctx(t), inv); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcceptInvite(ctx(t), inv.TokenHash, store.Member{ID: "mem_1", PasswordHash: "h"}, base.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("accepting at expiry: %v, want ErrNotFound", err)
	}
	if _, err := s.MemberByEmail(ctx(t), "late@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an expired invite created a member: %v", err)
	}
	// Two invites of one email: the first accepted wins, the second finds the email taken.
	a, b := invite("acme", "two@example.com", base.Add(time.Hour)), invite("acme", "two@example.com", base.Add(time.Hour))
	b.TokenHash = hashOf("other")
	for _, inv := range []store.Invite{a, b} {
		if err := s.CreateInvite(ctx(t), inv); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AcceptInvite(ctx(t), a.TokenHash, store.Member{ID: "mem_a", PasswordHash: "h"}, base); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcceptInvite(ctx(t), b.TokenHash, store.Member{ID: "mem_b", PasswordHash: "h"}, base); !errors.Is(err, store.ErrExists) {
		t.Errorf("second invite of a member's email: %v, want ErrExists", err)
	}
}

func testPasswords(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustMember(t, s, "acme", "mem_p", "p@example.com", "old")
	if err := s.SetPassword(ctx(t), "mem_p", "new"); err != nil {
		t.Fatal(err)
	}
	if m, err := s.GetMember(ctx(t), "mem_p"); err != nil || m.PasswordHash != "new" {
		t.Errorf("after SetPassword: %+v, %v", m, err)
	}
	if err := s.SetPassword(ctx(t), "mem_none", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetPassword(unknown): %v, want ErrNotFound", err)
	}
}

func testSessions(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustMember(t, s, "acme", "mem_s", "s@example.com", "h")
	now := time.Now().UTC() // badger expires entries by the wall clock
	mk := func(id string, created time.Time) store.Session {
		return store.Session{ID: id, MemberID: "mem_s", AccountID: "acme", CreatedAt: created, LastSeen: created,
			ExpiresAt: created.Add(24 * time.Hour), UserAgent: "test agent", IP: "127.0.0.1"}
	}
	one, two := mk("sess1", now), mk("sess2", now.Add(time.Minute))
	for _, ss := range []store.Session{one, two} {
		if err := s.CreateSession(ctx(t), ss); err != nil {
			t.Fatalf("CreateSession(%s): %v", ss.ID, err)
		}
	}
	got, err := s.GetSession(ctx(t), "sess1", now)
	if err != nil || got.MemberID != "mem_s" || got.AccountID != "acme" || got.UserAgent != "test agent" || got.IP != "127.0.0.1" {
		t.Fatalf("GetSession = %+v, %v", got, err)
	}
	checkTime(t, "session expires_at", got.ExpiresAt, now.Add(24*time.Hour))
	if _, err := s.GetSession(ctx(t), "sess1", now.Add(24*time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetSession at expiry: %v, want ErrNotFound", err)
	}
	if err := s.TouchSession(ctx(t), "sess1", now.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetSession(ctx(t), "sess1", now)
	checkTime(t, "touched last_seen", got.LastSeen, now.Add(5*time.Minute))
	list, err := s.ListSessions(ctx(t), "mem_s", now)
	if err != nil || len(list) != 2 || list[0].ID != "sess2" || list[1].ID != "sess1" {
		t.Fatalf("ListSessions = %+v, %v; want sess2, sess1", list, err)
	}
	if list, _ := s.ListSessions(ctx(t), "mem_s", now.Add(24*time.Hour+30*time.Second)); len(list) != 1 || list[0].ID != "sess2" {
		t.Errorf("ListSessions after sess1 expired = %+v, want sess2", list)
	}
	if err := s.DeleteSession(ctx(t), "sess1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx(t), "sess1"); err != nil {
		t.Errorf("deleting twice: %v", err)
	}
	if _, err := s.GetSession(ctx(t), "sess1", now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetSession after delete: %v, want ErrNotFound", err)
	}
	if list, _ := s.ListSessions(ctx(t), "mem_s", now); len(list) != 1 {
		t.Errorf("ListSessions after delete = %+v", list)
	}
	if err := s.TouchSession(ctx(t), "sess1", now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TouchSession(deleted): %v, want ErrNotFound", err)
	}
}

func testActivity(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	for i, a := range []string{"signed_in", "key_created", "limit_changed", "key_revoked"} {
		if err := s.AddActivity(ctx(t), store.Activity{AccountID: "acme", At: base.Add(time.Duration(i/2) * time.Minute), Member: "a@example.com", Action: a, Detail: "d"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddActivity(ctx(t), store.Activity{AccountID: "other", At: base, Member: "o", Action: "signed_in"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListActivity(ctx(t), "acme", 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"key_revoked", "limit_changed", "key_created"}
	if len(got) != len(want) {
		t.Fatalf("ListActivity = %+v, want %v", got, want)
	}
	for i, a := range got {
		if a.Action != want[i] || a.Member != "a@example.com" || a.AccountID != "acme" || a.Detail != "d" {
			t.Errorf("entry %d = %+v, want action %s", i, a, want[i])
		}
	}
	checkTime(t, "activity at", got[0].At, base.Add(time.Minute))
}

func testListRuns(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(100))
	mustAccount(t, s, "other", cr(100))
	mustKey(t, s, "k1", "acme")
	var ids []string
	for i := range 4 {
		r := newRun("acme", "k1", i+1)
		r.ID = "ext_0" + string(rune('a'+i)) // time-ordered, as ULIDs are
		r.CreatedAt = base.Add(time.Duration(i) * time.Hour)
		st := settlement(r, price, base)
		if i == 1 {
			r.Platform = "photo_net" // the same service name on another platform
		}
		if i == 2 {
			r.Status, r.Data, r.Service = runs.StatusFailed, nil, "company.people"
			r.Error = &runs.RunError{Code: "x", Type: "y", Message: "z"}
			st.Price = 0
		}
		mustSettle(t, s, st)
		ids = append(ids, r.ID)
	}
	mustSettle(t, s, settlement(newRun("other", "", 1), price, base))

	all, err := s.ListRuns(ctx(t), "acme", store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 || all[0].ID != ids[3] || all[3].ID != ids[0] {
		t.Fatalf("ListRuns = %+v, want 4 runs newest first", all)
	}
	top := all[0]
	if top.Status != "completed" || top.Service != "company.info" || top.Platform != "pro_net" || top.ServedBy != "source_b/pro_net" ||
		top.KeyID != "k1" || top.Records != 4 || top.CreditsUsed != 4*price {
		t.Errorf("summary = %+v", top)
	}
	checkTime(t, "summary created_at", top.CreatedAt, base.Add(3*time.Hour))
	cases := []struct {
		name string
		f    store.RunFilter
		want []string
	}{
		{"limit", store.RunFilter{Limit: 2}, []string{ids[3], ids[2]}},
		{"status", store.RunFilter{Status: "failed"}, []string{ids[2]}},
		{"service", store.RunFilter{Service: "company.info"}, []string{ids[3], ids[1], ids[0]}},
		{"platform and service", store.RunFilter{Platform: "pro_net", Service: "company.info"}, []string{ids[3], ids[0]}},
		{"platform", store.RunFilter{Platform: "photo_net"}, []string{ids[1]}},
		{"since", store.RunFilter{Since: base.Add(2 * time.Hour)}, []string{ids[3], ids[2]}},
		{"until", store.RunFilter{Until: base.Add(2 * time.Hour)}, []string{ids[1], ids[0]}},
		{"none", store.RunFilter{Service: "nothing"}, nil},
	}
	for _, c := range cases {
		got, err := s.ListRuns(ctx(t), "acme", c.f)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []string
		for _, r := range got {
			gotIDs = append(gotIDs, r.ID)
		}
		if len(gotIDs) != len(c.want) || (len(c.want) > 0 && gotIDs[0] != c.want[0] || len(c.want) > 0 && gotIDs[len(gotIDs)-1] != c.want[len(c.want)-1]) {
			t.Errorf("%s: ListRuns = %v, want %v", c.name, gotIDs, c.want)
		}
	}
	if got, err := s.ListRuns(ctx(t), "nobody", store.RunFilter{}); err != nil || len(got) != 0 {
		t.Errorf("ListRuns(unknown account) = %v, %v", got, err)
	}
}

// mustMember creates an account and a member of it through an invite.
func mustMember(t *testing.T, s store.Store, account, id, email, hash string) {
	t.Helper()
	mustAccount(t, s, account, cr(1))
	inv := invite(account, email, base.Add(time.Hour))
	if err := s.CreateInvite(ctx(t), inv); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcceptInvite(ctx(t), inv.TokenHash, store.Member{ID: id, PasswordHash: hash}, base); err != nil {
		t.Fatal(err)
	}
}
