package email_test

import (
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"docflow"
	"docflow/integrations/desttest"
	"docflow/internal/testsupport/mailpit"
	"docflow/internal/testsupport/testbin"
)

// TestContract runs the destination contract suite against Mailpit: what
// arrived is the attachment of the newest message to the recipient.
func TestContract(t *testing.T) {
	// No size bound, for the opt-in run with DESTTEST_LARGE_SIZE=1GiB.
	mp := mailpit.StartWith(t, mailpit.Options{MaxMessageMB: -1})
	const to = "contract@example.com"
	clientOf := func(in *docflow.Integration) func(testing.TB) docflow.DestinationClient {
		return func(t testing.TB) docflow.DestinationClient { return newClient(t, in, allowLoopback, nil) }
	}
	closed, err := testbin.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	unreachable := own(mp, to, nil)
	unreachable.Credentials["smtp_port"] = itoa(closed)
	auth := mailpit.StartWith(t, mailpit.Options{Users: map[string]string{"scanner@example.com": "right"}})
	picky := mailpit.StartWith(t, mailpit.Options{AllowedRecipients: `@example\.org$`})
	full := mailpit.StartWith(t, mailpit.Options{ChaosTriggers: "Recipient:452:100"})
	skip := map[string]string{"overwrite": "a sent e-mail cannot be replaced: a document delivered twice is mailed twice, " +
		"so the delivery engine sends a document to a destination once it succeeded there, never again"}
	if n, err := desttest.ParseSize(os.Getenv("DESTTEST_LARGE_SIZE")); err == nil && n > 100<<20 {
		skip["large"] = "Mailpit answers a message of several hundred MB with 451 4.3.5 (mail servers take tens of MB at most); " +
			"the client streams it all the same (the default size runs)"
	}
	desttest.Run(t, desttest.Target{
		New: clientOf(own(mp, to, nil)),
		List: func(t testing.TB) []string {
			msgs, err := mp.Messages()
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, m := range msgs {
				d, err := mp.Message(m.ID)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range d.Attachments {
					names = append(names, a.FileName)
				}
			}
			return names
		},
		Open: func(t testing.TB, remote string) io.ReadCloser {
			addr := strings.TrimPrefix(remote, "mailto:")
			msgs, _ := mp.Messages()
			n := 0
			for _, m := range msgs {
				for _, r := range m.To {
					if strings.EqualFold(r.Address, addr) {
						n++
					}
				}
			}
			d := latest(t, mp, addr, max(n, 1))
			return io.NopCloser(strings.NewReader(string(attachment(t, mp, d))))
		},
		Unreachable:    clientOf(unreachable),
		BadCredentials: clientOf(own(auth, to, nil)),
		Forbidden:      clientOf(own(picky, to, nil)),
		Full:           clientOf(own(full, to, nil)),
		Skip:           skip,
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
