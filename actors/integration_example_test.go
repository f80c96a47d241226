package actors_test

import (
	"context"
	"fmt"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"docflow/actors"
)

// mailConfig is an integration's own configuration (what the settings of
// one configured mailbox would hold).
type mailConfig struct{ Host string }

// mailClient is its client: Connect and Close, then the integration's
// actions as methods.
type mailClient struct {
	cfg  mailConfig
	sent int
}

func (c *mailClient) Connect(context.Context) error { return nil }
func (c *mailClient) Close(context.Context) error   { return nil }

func (c *mailClient) Send(to string) error {
	c.sent++
	fmt.Printf("%s: mail %d to %s\n", c.cfg.Host, c.sent, to)
	return nil
}

// One actor per configured integration owns its client; callers address it
// by message only.
func ExampleSpawnIntegration() {
	e, _ := actor.NewEngine(actor.NewEngineConfig())
	pid, err := actors.SpawnIntegration(e, actors.IntegrationConfig[mailConfig, *mailClient]{
		Name:   "mail-support",
		Config: mailConfig{Host: "smtp.example.org"},
		New:    func(cfg mailConfig) (*mailClient, error) { return &mailClient{cfg: cfg}, nil },
		Rate:   rate.Every(10 * time.Millisecond), // the server's limit
		Log:    zerolog.Nop(),
	})
	if err != nil {
		panic(err)
	}
	send := func(to string) error {
		done := make(chan error, 1)
		e.Send(pid, &actors.Call[*mailClient]{
			Do:   func(_ context.Context, c *mailClient) error { return c.Send(to) },
			Done: func(err error) { done <- err },
		})
		return <-done
	}
	_ = send("ana@example.org")
	e.Send(pid, actors.IntegrationReconfigure[mailConfig]{Config: mailConfig{Host: "smtp2.example.org"}})
	_ = send("bo@example.org")
	<-e.Poison(pid).Done()
	// Output:
	// smtp.example.org: mail 1 to ana@example.org
	// smtp2.example.org: mail 1 to bo@example.org
}
