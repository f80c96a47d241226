package testbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Proc is a test server's running process, its output kept in
// <dir>/<name>.log.
type Proc struct {
	name    string
	logPath string
	log     *os.File
	cancel  context.CancelFunc
	exited  chan struct{}
}

// Launch starts bin with args, its output going to a log file in dir;
// setup, when not nil, adjusts the command first (working directory,
// environment). Stop ends it.
func Launch(name, dir, bin string, args []string, setup func(*exec.Cmd)) (*Proc, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	if setup != nil {
		setup(cmd)
	}
	p := &Proc{name: name, logPath: filepath.Join(dir, name+".log"), cancel: cancel, exited: make(chan struct{})}
	var err error
	if p.log, err = os.Create(p.logPath); err != nil {
		cancel()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		cancel()
		p.log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { cmd.Wait(); close(p.exited) }() //nolint:errcheck // its exit is reported through exited
	return p, nil
}

// Stop kills the process and waits for it.
func (p *Proc) Stop() {
	p.cancel()
	<-p.exited
	p.log.Close()
}

// WaitReady polls ready every 50 ms until it reports true. When the
// process exits first (the error then carries its log) or within does not
// suffice (where names what it is reached at), it stops the process and
// returns an error.
func (p *Proc) WaitReady(within time.Duration, where string, ready func() bool) error {
	deadline := time.Now().Add(within)
	for {
		if ready() {
			return nil
		}
		select {
		case <-p.exited:
			p.Stop()
			log, _ := os.ReadFile(p.logPath)
			return fmt.Errorf("%s exited: %s", p.name, strings.TrimSpace(string(log)))
		default:
		}
		if time.Now().After(deadline) {
			p.Stop()
			return fmt.Errorf("%s not ready on %s within %v", p.name, where, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
