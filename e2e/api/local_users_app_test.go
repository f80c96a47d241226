package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	nethttp "net/http"
	"net/http/cookiejar"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"docflow/internal/app/apptest"
	"docflow/internal/testsupport/mailpit"
)

// client is one browser: a cookie jar against the app.
type client struct {
	t    *testing.T
	base string
	hc   *nethttp.Client
}

func newClient(t *testing.T, base string) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: base, hc: &nethttp.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse }}}
}

// do sends a JSON body (nil: none) and returns the status and body.
func (c *client) do(method, path string, body any, hdr ...string) (int, string) {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		r = bytes.NewReader(j)
	}
	req, _ := nethttp.NewRequest(method, c.base+path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (c *client) must(want int, method, path string, body any) string {
	c.t.Helper()
	status, b := c.do(method, path, body)
	if status != want {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, status, b, want)
	}
	return b
}

func (c *client) login(user, pw string) int {
	c.t.Helper()
	status, _ := c.do("POST", "/login", map[string]string{"username": user, "password": pw})
	return status
}

var resetLink = regexp.MustCompile(`(http://\S+)/reset-password\?token=([A-Za-z0-9_%-]+)`)

// TestLocalAccountsAndResetByMail: an admin creates a local user, who
// asks for a reset, reads the mail in a real SMTP server (Mailpit),
// follows the link, chooses a new password and signs in with it; the
// token does not work twice nor after its hour.
func TestLocalAccountsAndResetByMail(t *testing.T) {
	mp := mailpit.Start(t)
	var skew atomic.Int64
	a := apptest.New(t, apptest.Options{Role: "api", Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) },
		Env: map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true", "ADMIN_USERNAME": "admin",
			"ADMIN_PASSWORD": "admin-password", "SMTP_HOST": mp.SMTPHost, "SMTP_PORT": strconv.Itoa(mp.SMTPPort),
			"SMTP_USERNAME": "docflow", "SMTP_PASSWORD": "smtp-secret", "SMTP_FROM": "docflow <noreply@example.com>"}})
	admin := newClient(t, a.URL)
	if s := admin.login("admin", "admin-password"); s != 200 {
		t.Fatalf("admin sign-in: %d", s)
	}

	// Create, with every kind of bad input first.
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"email": "not-an-address", "username": "zoe", "password": "long enough"}, "email"},
		{map[string]any{"email": "Zoe <zoe@example.com>", "username": "zoe", "password": "long enough"}, "email"},
		{map[string]any{"email": "zoe@example.com", "username": " ", "password": "long enough"}, "username"},
		{map[string]any{"email": "zoe@example.com", "username": "zoe", "password": "short"}, "password"},
	} {
		status, b := admin.do("POST", "/api/admin/users/local", bad.body)
		if status != 422 || !strings.Contains(b, `"field":"`+bad.field+`"`) {
			t.Fatalf("create %v: %d %s, want 422 naming %s", bad.body, status, b, bad.field)
		}
	}
	body := admin.must(201, "POST", "/api/admin/users/local", map[string]any{"email": "zoe@example.com", "username": "zoë",
		"display_name": "Zoë Ünïcode 日本", "password": "first-password", "is_admin": false})
	var zoe struct {
		ID          int64  `json:"id"`
		Email       string `json:"email"`
		DisplayName string `json:"display_name"`
		IsActive    bool   `json:"is_active"`
	}
	json.Unmarshal([]byte(body), &zoe) //nolint:errcheck
	if zoe.ID == 0 || !zoe.IsActive || zoe.DisplayName != "Zoë Ünïcode 日本" || strings.Contains(body, "argon2") || strings.Contains(body, "password") {
		t.Fatalf("created: %s", body)
	}
	if s, b := admin.do("POST", "/api/admin/users/local", map[string]any{"email": "ZOE@example.com", "username": "other", "password": "long enough"}); s != 409 || !strings.Contains(b, "email taken") {
		t.Fatalf("taken e-mail: %d %s", s, b)
	}
	if list := admin.must(200, "GET", "/api/admin/users/local", nil); !strings.Contains(list, "zoe@example.com") || strings.Contains(list, "argon2") {
		t.Fatalf("list: %s", list)
	}
	id := "/api/admin/users/local/" + strconv.FormatInt(zoe.ID, 10)
	for _, r := range [][2]string{{"PATCH", "/api/admin/users/local/99999"}, {"DELETE", "/api/admin/users/local/99999"},
		{"POST", "/api/admin/users/local/99999/set-password"}, {"POST", "/api/admin/users/local/99999/send-password-reset"}} {
		var b any
		if r[0] != "DELETE" {
			b = map[string]any{"password": "long enough", "display_name": "x"}
		}
		if s, body := admin.do(r[0], r[1], b); s != 404 {
			t.Errorf("%s %s: %d %s, want 404", r[0], r[1], s, body)
		}
	}
	if s, _ := admin.do("POST", id+"/set-password", map[string]string{"password": "7chars!"}); s != 422 {
		t.Fatalf("short set-password: %d", s)
	}
	huge := `{"email":"x@example.com","username":"` + strings.Repeat("x", 12<<20) + `","password":"long enough"}`
	if s, _ := admin.do("POST", "/api/admin/users/local", huge); s != 413 {
		t.Fatalf("huge JSON: %d", s)
	}

	// The user signs in by user name or e-mail; it is no admin.
	user := newClient(t, a.URL)
	if s := user.login("ZOË", "first-password"); s != 200 {
		t.Fatalf("sign-in by user name: %d", s)
	}
	if s := newClient(t, a.URL).login("zoe@example.com", "first-password"); s != 200 {
		t.Fatalf("sign-in by e-mail: %d", s)
	}
	if s, _ := user.do("GET", "/api/admin/users/local", nil); s != 403 {
		t.Fatalf("a plain user reads the admin list: %d", s)
	}

	// Self-service reset through the mail.
	known := user.must(200, "POST", "/api/auth/request-password-reset", map[string]string{"email": "Zoe@Example.com"})
	unknown := user.must(200, "POST", "/api/auth/request-password-reset", map[string]string{"email": "nobody@example.com"})
	if known != unknown {
		t.Fatalf("answers differ: %s / %s", known, unknown)
	}
	subject, text := mp.WaitFor(t, "zoe@example.com", 1, 20*time.Second)
	m := resetLink.FindStringSubmatch(text)
	if subject != "Reset your docflow password" || m == nil || m[1] != a.URL {
		t.Fatalf("mail %q:\n%s", subject, text)
	}
	token := m[2]
	page := newClient(t, a.URL)
	status, html := page.do("GET", "/reset-password?token="+token, nil)
	if status != 200 || !strings.Contains(html, `name="token" value="`+token+`"`) || !strings.Contains(html, `autocomplete="new-password"`) || !strings.Contains(html, `name="viewport"`) || strings.Contains(html, "<script") || strings.Contains(html, "style=") {
		t.Fatalf("reset page: %d\n%s", status, html)
	}
	for _, bad := range []map[string]string{
		{"token": token, "new_password": "second-password", "new_password_confirm": "other-password"},
		{"token": token, "new_password": "short", "new_password_confirm": "short"},
	} {
		if s, b := page.do("POST", "/api/auth/reset-password", bad); s != 422 {
			t.Fatalf("reset %v: %d %s, want 422", bad, s, b)
		}
	}
	if s, b := page.do("POST", "/api/auth/reset-password", map[string]string{"token": "forged", "new_password": "second-password", "new_password_confirm": "second-password"}); s != 400 || !strings.Contains(b, "Invalid or expired reset token") {
		t.Fatalf("forged token: %d %s", s, b)
	}
	page.must(200, "POST", "/api/auth/reset-password", map[string]string{"token": token, "new_password": "second-password", "new_password_confirm": "second-password"})
	if s, _ := user.do("GET", "/api/files", nil); s != 401 {
		t.Fatalf("a session from before the reset still works: %d", s)
	}
	if s := newClient(t, a.URL).login("zoë", "first-password"); s != 401 {
		t.Fatalf("old password: %d", s)
	}
	if s := user.login("zoë", "second-password"); s != 200 {
		t.Fatalf("new password: %d", s)
	}
	if s, b := page.do("POST", "/api/auth/reset-password", map[string]string{"token": token, "new_password": "third-password", "new_password_confirm": "third-password"}); s != 400 {
		t.Fatalf("token used twice: %d %s", s, b)
	}

	// The admin sends a reset; after an hour its token is refused.
	if b := admin.must(200, "POST", id+"/send-password-reset", nil); strings.TrimSpace(b) != `{"sent":true}` {
		t.Fatalf("send-password-reset: %s", b)
	}
	_, text = mp.WaitFor(t, "zoe@example.com", 2, 20*time.Second)
	token2 := resetLink.FindStringSubmatch(text)[2]
	skew.Store(int64(61 * time.Minute))
	if s, b := page.do("POST", "/api/auth/reset-password", map[string]string{"token": token2, "new_password": "third-password", "new_password_confirm": "third-password"}); s != 400 {
		t.Fatalf("expired token: %d %s", s, b)
	}
	// The same through the page's form.
	req, _ := nethttp.NewRequest("POST", a.URL+"/reset-password", strings.NewReader("token="+token2+"&new_password=third-password&new_password_confirm=third-password"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := page.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	fb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(fb), "Invalid or expired reset token") {
		t.Fatalf("form with an expired token: %d %s", resp.StatusCode, fb)
	}

	// Forgot user name; nothing ever went to the unknown address.
	user.must(200, "POST", "/api/auth/forgot-username", map[string]string{"email": "zoe@example.com"})
	subject, text = mp.WaitFor(t, "zoe@example.com", 3, 20*time.Second)
	if subject != "Your docflow user name" || !strings.Contains(text, "zoë") {
		t.Fatalf("user name mail %q:\n%s", subject, text)
	}
	if n, _ := mp.Count("nobody@example.com"); n != 0 {
		t.Fatalf("%d mails to an unknown address", n)
	}

	// Admin rights, deactivation, deletion.
	admin.must(200, "PATCH", id, map[string]any{"is_admin": true, "display_name": nil})
	if s, _ := user.do("GET", "/api/admin/users/local", nil); s != 200 {
		t.Fatalf("is_admin gives admin rights: %d", s)
	}
	admin.must(200, "PATCH", id, map[string]any{"is_active": false})
	if s, _ := user.do("GET", "/api/files", nil); s != 401 {
		t.Fatalf("a deactivated account's session: %d", s)
	}
	if s := user.login("zoë", "second-password"); s != 401 {
		t.Fatalf("a deactivated account signed in: %d", s)
	}
	admin.must(204, "DELETE", id, nil)
	if s, _ := admin.do("DELETE", id, nil); s != 404 {
		t.Fatalf("deleted twice: %d", s)
	}

	log := admin.must(200, "GET", "/api/admin/audit-log?per_page=200", nil)
	for _, action := range []string{"login.succeeded", "login.failed", "local_user.create", "local_user.update", "local_user.delete",
		"local_user.send_password_reset", "password.reset", "password.reset_requested", "username.reminder_requested"} {
		if !strings.Contains(log, `"action":"`+action+`"`) {
			t.Errorf("audit log has no %s", action)
		}
	}
	if !strings.Contains(log, `"client_ip":"127.0.0.1"`) {
		t.Error("audit entries carry no client address")
	}
}
