package http

import (
	"context"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	qrcode "github.com/skip2/go-qrcode"
	"github.com/valyala/fasthttp"

	"docflow"
)

// QR login (decisions.md, "Mobile and QR login"): a signed-in browser
// asks for a challenge and shows it as a QR code carrying
// docflow://qr-login?token=<challenge>&server=<BASE_URL>; the phone that
// scans it claims the challenge once, within five minutes, and gets an
// API token of the browser's user; the page follows the challenge and
// says when a phone claimed it. Challenges live in PostgreSQL (by hash),
// so any api process answers either side.

// QRChallengeStore is what QR login asks of storage.
type QRChallengeStore interface {
	// CreateQRChallenge stores a new challenge.
	CreateQRChallenge(ctx context.Context, q docflow.QRChallenge) error
	// FindQRChallenge returns a challenge by its token's hash, or
	// ENOTFOUND.
	FindQRChallenge(ctx context.Context, tokenHash string) (*docflow.QRChallenge, error)
	// ClaimQRChallenge claims a pending, unexpired challenge at at, once
	// (claimed true); otherwise it returns the challenge as it is, or
	// ENOTFOUND.
	ClaimQRChallenge(ctx context.Context, tokenHash, deviceName string, at time.Time) (*docflow.QRChallenge, bool, error)
	// SetQRChallengeToken records the token the claim issued.
	SetQRChallengeToken(ctx context.Context, tokenHash string, tokenID int64) error
}

func (s *Server) mountQRLogin(h *mobileAppHandlers) {
	// The browser's side: a session specifically, as generate-token.
	browser := Route{Auth: AuthSession}
	s.Handle("POST", "/api/qr-auth/challenge", Route{Auth: AuthSession, Limit: LimitAuth}, h.qrChallenge, docQRChallenge)
	s.Handle("GET", "/api/qr-auth/challenge/{token}", browser, h.qrStatus, docQRStatus)
	s.Handle("GET", "/api/qr-auth/challenge/{token}/qr.svg", browser, h.qrImage, docQRImage)
	// The phone's side: the challenge is its credential.
	s.Handle("POST", "/api/qr-auth/claim", Route{Auth: AuthNone, Limit: LimitAuth}, h.qrClaim, docQRClaim)
	s.Handle("GET", "/qr-login", Route{Auth: AuthNone}, h.qrPage, docQRLoginPage)
}

// qrChallenge is POST /api/qr-auth/challenge: a new challenge of the
// session's user (201 {challenge_token, expires_at, qr_url, qr_image_url,
// server}); qr_url is what the QR code carries, qr_image_url the QR code
// as SVG.
func (h *mobileAppHandlers) qrChallenge(c *fasthttp.RequestCtx) error {
	token := randomToken()
	now := h.s.cfg.Now()
	q := docflow.QRChallenge{TokenHash: sha256Hex(token), UserID: h.s.tokenOwner(CurrentUser(c)), CreatedAt: now,
		ExpiresAt: now.Add(docflow.QRChallengeTTL)}
	if err := h.d.QR.CreateQRChallenge(RequestContext(c), q); err != nil {
		return err
	}
	server := h.s.BaseURL()
	writeJSON(c, fasthttp.StatusCreated, qrChallengeCreated{ChallengeToken: token, ExpiresAt: q.ExpiresAt,
		QRURL: docflow.QRLoginURL(token, server), QRImageURL: "/api/qr-auth/challenge/" + token + "/qr.svg",
		Server: server})
	return nil
}

var errQRUnknown = docflow.Errorf(docflow.ENOTFOUND, "Unknown QR login challenge")

// ownChallenge returns the challenge of the path's token if it is the
// session user's; another user's is as unknown.
func (h *mobileAppHandlers) ownChallenge(c *fasthttp.RequestCtx) (*docflow.QRChallenge, error) {
	token, _ := c.UserValue("token").(string)
	if token == "" || len(token) > 128 {
		return nil, errQRUnknown
	}
	q, err := h.d.QR.FindQRChallenge(RequestContext(c), sha256Hex(token))
	if err != nil {
		return nil, err
	}
	if q.UserID != h.s.tokenOwner(CurrentUser(c)) {
		return nil, errQRUnknown
	}
	return q, nil
}

// qrStatus is GET /api/qr-auth/challenge/{token}: {status: pending,
// claimed or expired, expires_at, claimed_at, device_name}, for the
// browser that made it.
func (h *mobileAppHandlers) qrStatus(c *fasthttp.RequestCtx) error {
	q, err := h.ownChallenge(c)
	if err != nil {
		return err
	}
	c.Response.Header.Set("Cache-Control", "no-store")
	writeJSON(c, fasthttp.StatusOK, qrChallengeStatus{Status: q.Status(h.s.cfg.Now()), ExpiresAt: q.ExpiresAt,
		ClaimedAt: q.ClaimedAt, DeviceName: q.DeviceName})
	return nil
}

// qrImage is GET /api/qr-auth/challenge/{token}/qr.svg: the QR code of a
// pending challenge, drawn here (no outside service).
func (h *mobileAppHandlers) qrImage(c *fasthttp.RequestCtx) error {
	q, err := h.ownChallenge(c)
	if err != nil {
		return err
	}
	if st := q.Status(h.s.cfg.Now()); st != docflow.QRPending {
		return docflow.Errorf(docflow.ENOTFOUND, "This QR login challenge is %s; ask for a new one", st)
	}
	token, _ := c.UserValue("token").(string)
	svg, err := qrSVG(docflow.QRLoginURL(token, h.s.BaseURL()))
	if err != nil {
		return err
	}
	c.Response.Header.SetContentType("image/svg+xml")
	c.Response.Header.Set("Cache-Control", "no-store")
	c.SetBodyString(svg)
	return nil
}

// qrSVG draws content as a QR code (error correction M, the standard
// quiet zone), one path of dark runs on white.
func qrSVG(content string) (string, error) {
	code, err := qrcode.New(content, qrcode.Medium)
	if err != nil {
		return "", fmt.Errorf("qr code: %w", err)
	}
	bm := code.Bitmap()
	n := len(bm)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" shape-rendering="crispEdges">`,
		n, n, n*8, n*8)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n)
	for y, row := range bm {
		for x := 0; x < len(row); {
			if !row[x] {
				x++
				continue
			}
			start := x
			for x < len(row) && row[x] {
				x++
			}
			fmt.Fprintf(&b, "M%d %dh%dv1h-%dz", start, y, x-start, x-start)
		}
	}
	b.WriteString(`"/></svg>`)
	return b.String(), nil
}

// qrClaim is POST /api/qr-auth/claim {challenge_token, device_name}: the
// phone's claim of a challenge it scanned. The first claim within five
// minutes gets an API token of the challenge's user, named "Mobile App –
// <device_name>", valid MOBILE_TOKEN_LIFETIME_DAYS (201 {token, token_id,
// name, created_at, expires_at}); an unknown, expired or used challenge
// is 401 with what to do.
func (h *mobileAppHandlers) qrClaim(c *fasthttp.RequestCtx) error {
	var req struct {
		ChallengeToken string  `json:"challenge_token"`
		DeviceName     *string `json:"device_name"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.ChallengeToken) == "" {
		return invalid("challenge_token", "challenge_token is required: the token of the scanned QR code")
	}
	device, err := deviceNameOf(req.DeviceName, "QR login")
	if err != nil {
		return err
	}
	if len(req.ChallengeToken) > 128 {
		return errQRClaimUnknown
	}
	ctx := RequestContext(c)
	hash := sha256Hex(req.ChallengeToken)
	q, claimed, err := h.d.QR.ClaimQRChallenge(ctx, hash, device, h.s.cfg.Now())
	if docflow.ErrorCode(err) == docflow.ENOTFOUND {
		return errQRClaimUnknown
	}
	if err != nil {
		return err
	}
	if !claimed {
		if q.ClaimedAt != nil {
			return errQRClaimUsed
		}
		return errQRClaimExpired
	}
	// The code was shown by a user who may have lost the right to sign
	// in since.
	st, err := h.s.auth.userState(ctx, q.UserID)
	if err != nil {
		return err
	}
	if !st.SignIn {
		return docflow.Errorf(docflow.EUNAUTHORIZED, "The account that showed this QR code may not sign in")
	}
	exp := h.s.mobileTokenExpiry()
	t, err := IssueToken(c, h.s.cfg.Tokens, q.UserID, mobileTokenName(device), &exp)
	if err != nil {
		return err
	}
	h.s.auditTokenCreate(c, t, q.UserID)
	if err := h.d.QR.SetQRChallengeToken(ctx, hash, t.ID); err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusCreated, mobileTokenAnswer(t))
	return nil
}

var (
	errQRClaimUnknown = docflow.Errorf(docflow.EUNAUTHORIZED, "Unknown QR code: open the QR login page in docflow and scan the code it shows")
	errQRClaimExpired = docflow.Errorf(docflow.EUNAUTHORIZED, "This QR code expired (codes last 5 minutes): show a new one and scan it")
	errQRClaimUsed    = docflow.Errorf(docflow.EUNAUTHORIZED, "This QR code was used already (each code signs in one phone): show a new one and scan it")
)

var qrPage = template.Must(template.New("qr").Parse(pageHead + `
<title>Sign in on your phone · docflow</title></head>
<body class="qr-login">` + pageBar + `
<main id="main">
<h1>Sign in on your phone</h1>
<p>Open the docflow app, choose <strong>Sign in with QR code</strong> and point the camera at this code. The code signs in one phone and lasts five minutes.</p>
<figure class="qr">
<img id="qr-code" alt="QR code for the docflow app" width="264" height="264" hidden>
<figcaption id="qr-status" role="status" aria-live="polite">Preparing a code…</figcaption>
</figure>
<p><button type="button" id="qr-new" hidden>Show a new code</button></p>
<p class="muted">Signed in as <strong>{{.Name}}</strong>. The phone gets an API token of yours, listed and revocable with your other tokens.</p>
</main>
<script src="/static/qr-login.js"></script>
</body></html>`))

type qrView struct {
	CanSignOut, CanSignIn bool
	Name                  string
}

// qrPage is GET /qr-login: the page of a signed-in browser that shows a
// QR code for the app (its script, static/qr-login.js, asks for the
// challenge and follows it); anyone else is sent to sign in first.
func (h *mobileAppHandlers) qrPage(c *fasthttp.RequestCtx) error {
	u := CurrentUser(c)
	if u == nil || u.SessionID == "" {
		c.Response.Header.Set("Location", "/login?next="+url.QueryEscape("/qr-login"))
		c.SetStatusCode(fasthttp.StatusSeeOther)
		return nil
	}
	return renderPage(c, qrPage, qrView{CanSignOut: true, Name: h.s.tokenOwner(u)})
}
