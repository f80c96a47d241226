package docflow

import (
	"strings"
	"testing"
	"time"
)

func TestMobileProfileOf(t *testing.T) {
	de := "de"
	for _, c := range []struct {
		name                 string
		owner                string
		f                    ProfileFacts
		display, email, pict string
	}{
		{"local account", "ann@example.com", ProfileFacts{LocalEmail: "Ann@example.com", LocalName: "Ann"}, "Ann", "Ann@example.com", ""},
		{"profile name first", "ann@example.com", ProfileFacts{ProfileName: "Ann P.", LocalName: "Ann"}, "Ann P.", "ann@example.com", ""},
		{"sso picture", "sub-1", ProfileFacts{SSOEmail: "s@example.com", SSOPicture: "https://p.example/x.png"}, "sub-1", "s@example.com", "https://p.example/x.png"},
		{"nothing known", "admin", ProfileFacts{PreferredLanguage: &de}, "admin", "", ""},
	} {
		p := MobileProfileOf(c.owner, true, c.f)
		if p.OwnerID != c.owner || p.DisplayName != c.display || p.Email != c.email || !p.IsAdmin {
			t.Errorf("%s: %+v", c.name, p)
		}
		want := c.pict
		if want == "" {
			key := c.email
			if key == "" {
				key = c.owner
			}
			want = GravatarURL(key)
		}
		if p.AvatarURL != want {
			t.Errorf("%s: avatar %s, want %s", c.name, p.AvatarURL, want)
		}
	}
	if MobileProfileOf("admin", false, ProfileFacts{PreferredLanguage: &de}).PreferredLanguage != &de {
		t.Error("language lost")
	}
}

func TestGravatarURL(t *testing.T) {
	// SHA-256 of "test@example.com", as Gravatar documents hashing.
	u := GravatarURL("  Test@Example.com ")
	if !strings.HasPrefix(u, "https://www.gravatar.com/avatar/973dfe463ec85785f5f95af5ba3906eedb2d931c24e69824a89ea65dba4e813b?") {
		t.Fatal(u)
	}
}

func TestCheckPictureURL(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://lh3.example.com/a/photo.jpg": true, "http://intranet.example/p.png": true,
		"": false, "javascript:alert(1)": false, "data:image/png;base64,AAAA": false, "/relative.png": false,
		"https://user:pw@example.com/p.png": false, "https://example.com/" + strings.Repeat("a", 2100): false,
	} {
		if CheckPictureURL(u) != ok {
			t.Errorf("CheckPictureURL(%.60q) = %v", u, !ok)
		}
	}
}

func TestCheckLanguage(t *testing.T) {
	for _, l := range []string{"en", "de", "es", "fr", "it", " DE "} {
		if got, err := CheckLanguage(l); err != nil || got != strings.ToLower(strings.TrimSpace(l)) {
			t.Errorf("%q: %q %v", l, got, err)
		}
	}
	for _, l := range []string{"", "xx", "en-US", "german"} {
		if _, err := CheckLanguage(l); ErrorCode(err) != EINVALID {
			t.Errorf("%q accepted", l)
		}
	}
}

func TestQRChallengeStatus(t *testing.T) {
	now := time.Now()
	q := QRChallenge{ExpiresAt: now.Add(QRChallengeTTL)}
	if q.Status(now) != QRPending || q.Status(now.Add(QRChallengeTTL)) != QRExpired {
		t.Fatal("pending then expired")
	}
	q.ClaimedAt = &now
	if q.Status(now.Add(time.Hour)) != QRClaimed {
		t.Fatal("a claimed challenge stays claimed")
	}
	if got := QRLoginURL("a_b-c", "https://docs.example.com:8443"); got != "docflow://qr-login?token=a_b-c&server=https%3A%2F%2Fdocs.example.com%3A8443" {
		t.Fatal(got)
	}
}
