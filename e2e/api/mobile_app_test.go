package api_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/e2e/e2etest"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/internal/testsupport/oidcop"
)

// signInLikeTheApp is the app's sign-in: the system browser opens
// /login?mobile=1 with a PKCE challenge, the user signs in, the browser
// lands on docflow://callback?code=…, and the app exchanges the code.
func signInLikeTheApp(t *testing.T, base, user, password, device string) string {
	t.Helper()
	verifier, challenge := pkce(t)
	b := newBrowser(t)
	q := url.Values{"mobile": {"1"}, "redirect_uri": {"docflow://callback"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	if p := b.do("GET", base+"/login?"+q.Encode(), nil); p.Status != 200 {
		t.Fatalf("the app's sign-in page: %d %s", p.Status, p.Body)
	}
	form := url.Values{"username": {user}, "password": {password}}
	for k, v := range q {
		form[k] = v
	}
	code := codeOf(t, b.do("POST", base+"/login", form))
	app := &e2etest.Phone{T: t, Base: base}
	st, m, raw := app.Call("POST", "/api/mobile/token", map[string]string{"code": code, "code_verifier": verifier,
		"redirect_uri": "docflow://callback", "device_name": device})
	tok, _ := m["token"].(string)
	if st != 201 || !strings.HasPrefix(tok, docflow.TokenPrefix) {
		t.Fatalf("code exchange: %d %s", st, raw)
	}
	return tok
}

func randomName(prefix, ext string) string {
	b := make([]byte, 4)
	rand.Read(b) //nolint:errcheck
	return prefix + "-" + hex.EncodeToString(b) + "." + ext
}

// TestPhoneApp: the phone app's whole session against docflow, call for
// call as the app makes them: it signs in through the browser, registers
// for push (a token without the <kind>[…] form is 422), reads who it is,
// saves its language (an unknown one is 422), uploads a document and
// follows it as the app does (the list searched by file name, then the
// record until a terminal status).
func TestPhoneApp(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Env: map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true",
		"ADMIN_PASSWORD": "admin-password"}})
	a.LocalUser(t, "ann@example.com", false)
	app := &e2etest.Phone{T: t, Base: a.URL, Token: signInLikeTheApp(t, a.URL, "ann@example.com", apptest.Password("ann@example.com"), "Ann's iPhone")}

	// Push registration, with the bad tokens first.
	for _, bad := range []string{"not-a-push-token", "ExponentPushToken[]", "[abc]", "ExponentPushToken[abc", "Expo nent[abc]"} {
		st, _, raw := app.Call("POST", "/api/mobile/register-device", map[string]string{"push_token": bad,
			"device_name": "Ann's iPhone", "platform": "ios"})
		if st != 422 || !strings.Contains(raw, `"field":"push_token"`) {
			t.Fatalf("push token %q: %d %s, want 422 naming push_token", bad, st, raw)
		}
	}
	reg := map[string]string{"push_token": "ExponentPushToken[xk3Jd8aPq0v7Lm2Nw5Rt]", "device_name": "Ann's iPhone", "platform": "ios"}
	st, dev, raw := app.Call("POST", "/api/mobile/register-device", reg)
	if st != 201 || dev["platform"] != "ios" || dev["is_active"] != true {
		t.Fatalf("register-device: %d %s", st, raw)
	}
	// The app registers at every start: the same device again.
	if st, again, raw := app.Call("POST", "/api/mobile/register-device", reg); st != 201 || again["id"] != dev["id"] {
		t.Fatalf("register-device again: %d %s (first %v)", st, raw, dev["id"])
	}

	// Who am I.
	st, me, raw := app.Call("GET", "/api/mobile/whoami", nil)
	if st != 200 || me["owner_id"] != "ann@example.com" || me["email"] != "ann@example.com" || me["is_admin"] != false ||
		me["display_name"] != "ann@example.com" || me["preferred_language"] != nil ||
		me["avatar_url"] != docflow.GravatarURL("ann@example.com") {
		t.Fatalf("whoami: %d %s", st, raw)
	}

	// The language, fire-and-forget from the app.
	for _, bad := range []any{map[string]string{"language": "xx"}, map[string]string{"language": ""}, map[string]any{}, map[string]any{"language": 7}} {
		if st, _, raw := app.Call("POST", "/api/i18n/language", bad); st != 422 || !strings.Contains(raw, "language") {
			t.Fatalf("language %v: %d %s, want 422", bad, st, raw)
		}
	}
	if st, m, raw := app.Call("POST", "/api/i18n/language", map[string]string{"language": "de"}); st != 200 || m["preferred_language"] != "de" {
		t.Fatalf("language de: %d %s", st, raw)
	}
	if _, me, raw = app.Call("GET", "/api/mobile/whoami", nil); me["preferred_language"] != "de" {
		t.Fatalf("whoami after choosing de: %s", raw)
	}

	// Upload, then follow it as the app does: the list searched by the
	// file's name until the record shows up, then the record until its
	// status is terminal.
	name := randomName("phone-scan", "txt")
	if st, _, raw := app.Call("POST", "/api/ui-upload", e2etest.NewMultipart(t, name, "Invoice 2041 from the phone, total 12.50 EUR")); st != 200 {
		t.Fatalf("upload: %d %s", st, raw)
	}
	var fileID int64
	testsupport.WaitFor(t, 3*time.Minute, "the upload in GET /api/files?search=", func() bool {
		_, list, _ := app.Call("GET", "/api/files?search="+url.QueryEscape(name), nil)
		files, _ := list["files"].([]any)
		for _, f := range files {
			if f := f.(map[string]any); f["original_filename"] == name {
				fileID = int64(f["id"].(float64))
			}
		}
		return fileID != 0
	})
	var status string
	testsupport.WaitFor(t, 4*time.Minute, "a terminal status of the upload", func() bool {
		_, rec, _ := app.Call("GET", fmt.Sprintf("/api/files/%d", fileID), nil)
		ps, _ := rec["processing_status"].(map[string]any)
		status, _ = ps["status"].(string)
		return status == "completed" || status == "failed" || status == "duplicate"
	})
	if status != "completed" {
		_, _, raw := app.Call("GET", fmt.Sprintf("/api/files/%d", fileID), nil)
		t.Fatalf("the upload ended %s: %s", status, raw)
	}

	// Another user's token sees none of it.
	a.LocalUser(t, "bob@example.com", false)
	bob := &e2etest.Phone{T: t, Base: a.URL, Token: a.Token(t, "bob@example.com")}
	if _, list, _ := bob.Call("GET", "/api/files?search="+url.QueryEscape(name), nil); len(list["files"].([]any)) != 0 {
		t.Fatalf("bob finds ann's upload: %v", list)
	}
	if _, me, raw := bob.Call("GET", "/api/mobile/whoami", nil); me["owner_id"] != "bob@example.com" || me["preferred_language"] != nil {
		t.Fatalf("bob's whoami: %s", raw)
	}
}

// TestMobileGenerateToken: a signed-in browser makes a token for the app
// (201, named after the device, audited, listed with the user's tokens,
// working as a bearer token); a bearer token, no credentials, a
// cross-site page or a missing device name are refused.
func TestMobileGenerateToken(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true",
		"ADMIN_PASSWORD": "admin-password"}})
	a.LocalUser(t, "cat@example.com", false)
	web := newClient(t, a.URL)
	if st := web.login("cat@example.com", apptest.Password("cat@example.com")); st != 200 {
		t.Fatalf("sign in: %d", st)
	}
	body := map[string]string{"device_name": "Pixel 9"}

	raw := web.must(201, "POST", "/api/mobile/generate-token", body)
	var tok struct {
		Token     string    `json:"token"`
		TokenID   int64     `json:"token_id"`
		Name      string    `json:"name"`
		CreatedAt time.Time `json:"created_at"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal([]byte(raw), &tok); err != nil || !strings.HasPrefix(tok.Token, docflow.TokenPrefix) ||
		tok.TokenID == 0 || tok.Name != "Mobile App – Pixel 9" || tok.CreatedAt.IsZero() {
		t.Fatalf("generate-token: %s", raw)
	}
	app := &e2etest.Phone{T: t, Base: a.URL, Token: tok.Token}
	if st, me, raw := app.Call("GET", "/api/mobile/whoami", nil); st != 200 || me["owner_id"] != "cat@example.com" {
		t.Fatalf("whoami with the generated token: %d %s", st, raw)
	}
	if list := web.must(200, "GET", "/api/api-tokens/", nil); !strings.Contains(list, `"name":"Mobile App – Pixel 9"`) || strings.Contains(list, tok.Token) {
		t.Fatalf("the token list: %s", list)
	}
	var n int
	if err := a.DB.Pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE action = $1 AND actor = $2 AND detail LIKE $3`,
		docflow.AuditTokenCreate, "cat@example.com", "%Mobile App – Pixel 9%").Scan(&n); err != nil || n != 1 {
		t.Fatalf("audit entries of the token: %d %v", n, err)
	}

	// Refusals.
	if st, _, raw := app.Call("POST", "/api/mobile/generate-token", body); st != 401 && st != 403 {
		t.Fatalf("generate-token with a bearer token: %d %s", st, raw)
	}
	if st, _, raw := (&e2etest.Phone{T: t, Base: a.URL}).Call("POST", "/api/mobile/generate-token", body); st != 401 {
		t.Fatalf("generate-token without credentials: %d %s", st, raw)
	}
	if st, raw := web.do("POST", "/api/mobile/generate-token", body, "Origin", "https://evil.example"); st != 403 {
		t.Fatalf("generate-token from another site: %d %s", st, raw)
	}
	for _, bad := range []any{map[string]any{}, map[string]string{"device_name": "  "}, map[string]string{"device_name": "a\x01b"},
		map[string]string{"device_name": strings.Repeat("x", 201)}} {
		if st, raw := web.do("POST", "/api/mobile/generate-token", bad); st != 422 || !strings.Contains(raw, "device_name") {
			t.Fatalf("generate-token %v: %d %s, want 422 naming device_name", bad, st, raw)
		}
	}
}

// TestWhoamiSSOPicture: an SSO user's avatar is the provider's picture
// claim; one whose provider sends none (or a picture that is no http(s)
// URL) gets the Gravatar-style URL of the verified address; the display
// name and e-mail are the provider's.
func TestWhoamiSSOPicture(t *testing.T) {
	t.Parallel()
	users := append([]oidcop.User{}, ssoUsers...)
	users[0].Picture = "https://pictures.example.com/ann.png"
	users[1].Picture = "javascript:alert(1)"
	e := newSSOEnvWith(t, ssoOpts{users: users})
	for _, c := range []struct{ user, owner, avatar string }{
		{"ann", "ann@example.com", "https://pictures.example.com/ann.png"},
		{"bob", "bob@example.com", docflow.GravatarURL("bob@example.com")},
	} {
		app := &e2etest.Phone{T: t, Base: e.app.URL, Token: e.mobileToken(c.user)}
		st, me, raw := app.Call("GET", "/api/mobile/whoami", nil)
		if st != 200 || me["owner_id"] != c.owner || me["email"] != c.owner || me["avatar_url"] != c.avatar {
			t.Fatalf("%s's whoami: %d %s, want avatar %s", c.user, st, raw, c.avatar)
		}
		if c.user == "ann" && (me["is_admin"] != true || me["display_name"] != "Ann Admin") {
			t.Fatalf("ann's whoami: %s", raw)
		}
	}
}
