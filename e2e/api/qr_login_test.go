package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	qrcode "github.com/skip2/go-qrcode"

	"docflow"
	"docflow/e2e/e2etest"
	"docflow/internal/app/apptest"
)

type qrChallenge struct {
	ChallengeToken string    `json:"challenge_token"`
	ExpiresAt      time.Time `json:"expires_at"`
	QRURL          string    `json:"qr_url"`
	QRImageURL     string    `json:"qr_image_url"`
}

func newQRChallenge(t *testing.T, web *client) qrChallenge {
	t.Helper()
	var c qrChallenge
	raw := web.must(201, "POST", "/api/qr-auth/challenge", nil)
	if err := json.Unmarshal([]byte(raw), &c); err != nil || c.ChallengeToken == "" {
		t.Fatalf("challenge: %s", raw)
	}
	return c
}

func qrStatus(t *testing.T, web *client, token string) map[string]any {
	t.Helper()
	var m map[string]any
	json.Unmarshal([]byte(web.must(200, "GET", "/api/qr-auth/challenge/"+token, nil)), &m) //nolint:errcheck
	return m
}

var svgRun = regexp.MustCompile(`M(\d+) (\d+)h(\d+)v1h-\d+z`)

// svgModules reads the dark modules of the QR code's SVG.
func svgModules(t *testing.T, svg string) map[[2]int]bool {
	t.Helper()
	dark := map[[2]int]bool{}
	for _, m := range svgRun.FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.Atoi(m[1])
		y, _ := strconv.Atoi(m[2])
		n, _ := strconv.Atoi(m[3])
		for i := range n {
			dark[[2]int{x + i, y}] = true
		}
	}
	return dark
}

// TestQRLogin: a signed-in browser makes a challenge whose QR code
// carries docflow://qr-login?token=…&server=BASE_URL; the phone claims
// it (no credentials but the challenge) for a token of the browser's
// user, once: a second claim, a racing one, an unknown challenge and one
// older than five minutes are refused; the browser reads the status;
// the challenge is kept hashed in PostgreSQL, so another api process
// answers the claim.
func TestQRLogin(t *testing.T) {
	t.Parallel()
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	env := map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true", "ADMIN_PASSWORD": "admin-password"}
	a := apptest.New(t, apptest.Options{Role: "api", Env: env, Now: now})
	a.LocalUser(t, "ann@example.com", false)
	a.LocalUser(t, "bob@example.com", false)
	web := newClient(t, a.URL)
	if st := web.login("ann@example.com", apptest.Password("ann@example.com")); st != 200 {
		t.Fatalf("sign in: %d", st)
	}
	other := newClient(t, a.URL)
	if st := other.login("bob@example.com", apptest.Password("bob@example.com")); st != 200 {
		t.Fatalf("sign in bob: %d", st)
	}
	nobody := &e2etest.Phone{T: t, Base: a.URL}

	// Only a browser session makes challenges.
	if st, _, raw := (&e2etest.Phone{T: t, Base: a.URL, Token: a.Token(t, "ann@example.com")}).Call("POST", "/api/qr-auth/challenge", nil); st != 401 {
		t.Fatalf("challenge with a bearer token: %d %s", st, raw)
	}
	if st, _, raw := nobody.Call("POST", "/api/qr-auth/challenge", nil); st != 401 {
		t.Fatalf("challenge without credentials: %d %s", st, raw)
	}

	c := newQRChallenge(t, web)
	want := "docflow://qr-login?token=" + url.QueryEscape(c.ChallengeToken) + "&server=" + url.QueryEscape(a.URL)
	if c.QRURL != want || c.ExpiresAt.Sub(time.Now()) < 4*time.Minute || c.ExpiresAt.Sub(time.Now()) > 6*time.Minute {
		t.Fatalf("challenge %+v, want qr_url %s expiring in 5 minutes", c, want)
	}
	if st := qrStatus(t, web, c.ChallengeToken); st["status"] != "pending" {
		t.Fatalf("status before the claim: %v", st)
	}
	if st, raw := other.do("GET", "/api/qr-auth/challenge/"+c.ChallengeToken, nil); st != 404 {
		t.Fatalf("another user's challenge: %d %s", st, raw)
	}

	// The QR code, drawn by docflow, encodes exactly qr_url.
	svg := web.must(200, "GET", c.QRImageURL, nil)
	code, err := qrcode.New(c.QRURL, qrcode.Medium)
	if err != nil {
		t.Fatal(err)
	}
	dark := svgModules(t, svg)
	bm := code.Bitmap()
	for y, row := range bm {
		for x, on := range row {
			if dark[[2]int{x, y}] != on {
				t.Fatalf("the SVG's module (%d,%d) is %v, the code of qr_url has %v", x, y, dark[[2]int{x, y}], on)
			}
		}
	}
	if !strings.HasPrefix(svg, "<svg") || len(dark) == 0 {
		t.Fatalf("not an SVG QR code: %.200s", svg)
	}

	// Stored by hash only.
	sum := sha256.Sum256([]byte(c.ChallengeToken))
	var n int
	if err := a.DB.Pool.QueryRow(t.Context(), `SELECT count(*) FROM qr_challenges WHERE token_hash = $1`, hex.EncodeToString(sum[:])).Scan(&n); err != nil || n != 1 {
		t.Fatalf("challenge rows by hash: %d %v", n, err)
	}
	if err := a.DB.Pool.QueryRow(t.Context(), `SELECT count(*) FROM qr_challenges q WHERE strpos(q::text, $1) > 0`, c.ChallengeToken).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the plain challenge is stored: %d %v", n, err)
	}

	// Bad claims.
	for _, bad := range []map[string]any{{}, {"challenge_token": ""}, {"challenge_token": c.ChallengeToken, "device_name": "a\x02"}} {
		if st, _, raw := nobody.Call("POST", "/api/qr-auth/claim", bad); st != 422 {
			t.Fatalf("claim %v: %d %s, want 422", bad, st, raw)
		}
	}
	if st, _, raw := nobody.Call("POST", "/api/qr-auth/claim", map[string]string{"challenge_token": "not-a-challenge"}); st != 401 ||
		!strings.Contains(raw, "Unknown QR code") {
		t.Fatalf("unknown challenge: %d %s", st, raw)
	}

	// The claim, as the app makes it, on another api process.
	b := apptest.New(t, apptest.Options{Role: "api", Env: env, Now: now, DB: a.DB})
	st, tok, raw := (&e2etest.Phone{T: t, Base: b.URL}).Call("POST", "/api/qr-auth/claim",
		map[string]string{"challenge_token": c.ChallengeToken, "device_name": "Ann's Pixel"})
	token, _ := tok["token"].(string)
	if st != 201 || !strings.HasPrefix(token, docflow.TokenPrefix) || tok["name"] != "Mobile App – Ann's Pixel" || tok["token_id"] == nil {
		t.Fatalf("claim: %d %s", st, raw)
	}
	if st, me, raw := (&e2etest.Phone{T: t, Base: a.URL, Token: token}).Call("GET", "/api/mobile/whoami", nil); st != 200 || me["owner_id"] != "ann@example.com" {
		t.Fatalf("whoami with the claimed token: %d %s", st, raw)
	}
	if s := qrStatus(t, web, c.ChallengeToken); s["status"] != "claimed" || s["device_name"] != "Ann's Pixel" {
		t.Fatalf("status after the claim: %v", s)
	}
	if err := a.DB.Pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE action = $1 AND actor = $2 AND detail LIKE $3`,
		docflow.AuditTokenCreate, "ann@example.com", "%Mobile App – Ann's Pixel%").Scan(&n); err != nil || n != 1 {
		t.Fatalf("audit entries of the claimed token: %d %v", n, err)
	}

	// Claimed twice.
	if st, _, raw := nobody.Call("POST", "/api/qr-auth/claim", map[string]string{"challenge_token": c.ChallengeToken}); st != 401 ||
		!strings.Contains(raw, "used already") {
		t.Fatalf("second claim: %d %s", st, raw)
	}
	if st, _ := web.do("GET", c.QRImageURL, nil); st != 404 {
		t.Fatalf("the QR code of a claimed challenge: %d", st)
	}

	// Phones racing for one code: one wins.
	c2 := newQRChallenge(t, web)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := a.URL
			if i%2 == 1 {
				base = b.URL
			}
			if st, _, _ := (&e2etest.Phone{T: t, Base: base}).Call("POST", "/api/qr-auth/claim", map[string]string{"challenge_token": c2.ChallengeToken,
				"device_name": fmt.Sprintf("phone %d", i)}); st == 201 {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d racing claims won, want 1", wins.Load())
	}

	// Five minutes.
	c3 := newQRChallenge(t, web)
	skew.Store(int64(docflow.QRChallengeTTL + time.Second))
	if st, _, raw := nobody.Call("POST", "/api/qr-auth/claim", map[string]string{"challenge_token": c3.ChallengeToken}); st != 401 ||
		!strings.Contains(raw, "expired") {
		t.Fatalf("claim after five minutes: %d %s", st, raw)
	}
	if s := qrStatus(t, web, c3.ChallengeToken); s["status"] != "expired" {
		t.Fatalf("status after five minutes: %v", s)
	}
}
