package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Proc is one docflow process of the deployment (broker, api, worker),
// started again after each kill with the same arguments and environment.
// Its output, across every start, is appended to one log file.
type Proc struct {
	Name string
	bin  string
	args []string
	env  []string
	log  string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	starts  int
	stopped bool // paused with SIGSTOP
	held    bool // a fault holds it: the supervisor leaves it alone
	exits   int  // runs that ended on their own (not by the driver)
	ending  bool // the driver is ending the current run
}

func newProc(name, bin, logDir string, env []string, args ...string) *Proc {
	return &Proc{Name: name, bin: bin, args: args, env: env, log: filepath.Join(logDir, name+".log")}
}

// Start starts the process; it must not be running.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	p.starts++
	fmt.Fprintf(out, "\n==== start %d at %s ====\n", p.starts, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: a signal to the driver's terminal does not
	// reach it, and the driver decides how each process ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		if !p.ending {
			p.exits++
		}
		p.mu.Unlock()
		close(exited)
	}()
	p.cmd, p.exited, p.stopped, p.ending = cmd, exited, false, false
	return nil
}

// hold marks the process held by a fault (true) or free again.
func (p *Proc) hold(on bool) {
	p.mu.Lock()
	p.held = on
	p.mu.Unlock()
}

// Exits counts the runs of the process that ended on their own.
func (p *Proc) Exits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exits
}

// supervise starts the process again when it has exited on its own (as
// a service manager would), unless a fault holds it.
func (p *Proc) supervise() error {
	p.mu.Lock()
	idle := p.exited != nil && !p.held
	if idle {
		select {
		case <-p.exited:
		default:
			idle = false
		}
	}
	p.mu.Unlock()
	if !idle {
		return nil
	}
	return p.Start()
}

// Pid is the running process's id (0 when none runs).
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether the process has been started and not exited.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Signal sends sig to the running process.
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%s is not running", p.Name)
	}
	if sig == syscall.SIGSTOP {
		p.stopped = true
	} else if sig == syscall.SIGCONT {
		p.stopped = false
	}
	return p.cmd.Process.Signal(sig)
}

// Kill ends the process with SIGKILL and waits for it to be gone.
func (p *Proc) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	p.mu.Lock()
	p.ending = true
	p.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// Stop ends the process with SIGTERM (SIGKILL after grace) and waits.
func (p *Proc) Stop(grace time.Duration) {
	p.mu.Lock()
	cmd, exited, stopped := p.cmd, p.exited, p.stopped
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	p.mu.Lock()
	p.ending = true
	p.mu.Unlock()
	if stopped {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// Exited is closed when the current run of the process ends.
func (p *Proc) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// waitFor polls cond every 100 ms until it holds or ctx or within ends.
func waitFor(ctx context.Context, within time.Duration, what string, cond func() bool) error {
	end := time.Now().Add(within)
	for !cond() {
		if time.Now().After(end) {
			return fmt.Errorf("%s: not after %v", what, within)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}
