package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"docflow/internal/netguard"
)

// Postgres is a private PostgreSQL cluster for one chaos run: initdb into
// a folder of the run, its own port, started and stopped with pg_ctl, so
// that restarting it disturbs no other user of the machine's server.
type Postgres struct {
	Port int
	bin  string // folder of initdb, pg_ctl
	data string
	log  string
	as   string // the OS user the server runs as ("" = this one)
}

// startPostgres creates and starts the cluster under dir. Run as root, it
// runs as the postgres user (the server refuses root).
func startPostgres(ctx context.Context, dir string, port int) (*Postgres, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	p := &Postgres{Port: port, bin: bin, data: filepath.Join(dir, "pgdata"), log: filepath.Join(dir, "postgres.log")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root and no postgres user to run PostgreSQL as: %w", err)
		}
		p.as = "postgres"
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.MkdirAll(p.data, 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p.log, nil, 0o644); err != nil {
			return nil, err
		}
		for _, f := range []string{p.data, p.log} {
			if err := os.Chown(f, uid, gid); err != nil {
				return nil, err
			}
		}
	}
	if out, err := p.run(ctx, "initdb", "-D", p.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	// A test cluster: no fsync (a killed server loses nothing the OS
	// holds), room for every process's pool. synchronous_commit stays on:
	// off, a crash loses transactions whose commit was answered (the WAL
	// still in the server's memory), and the run would report the
	// documents of those answers as lost.
	conf := fmt.Sprintf(`
port = %d
listen_addresses = '127.0.0.1'
unix_socket_directories = '%s'
max_connections = 300
shared_buffers = 128MB
fsync = off
full_page_writes = off
`, port, p.data)
	f, err := os.OpenFile(filepath.Join(p.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString(conf)
	f.Close()
	if err != nil {
		return nil, err
	}
	return p, p.Start(ctx)
}

// pgBinDir finds the folder of PostgreSQL's server programs.
func pgBinDir() (string, error) {
	if path, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		dir := filepath.Dir(path)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) > 0 {
		return filepath.Dir(matches[len(matches)-1]), nil
	}
	return "", errors.New("PostgreSQL's server programs (initdb, pg_ctl) are not installed")
}

func (p *Postgres) run(ctx context.Context, prog string, args ...string) ([]byte, error) {
	name := filepath.Join(p.bin, prog)
	if p.as != "" {
		args = append([]string{"-u", p.as, "--", name}, args...)
		name = "runuser"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = os.TempDir()
	return cmd.CombinedOutput()
}

// URL is the connection URL of database name.
func (p *Postgres) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port, name)
}

// Start starts the server and waits until it accepts connections.
func (p *Postgres) Start(ctx context.Context) error {
	if out, err := p.run(ctx, "pg_ctl", "-D", p.data, "-l", p.log, "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("pg_ctl start: %w\n%s", err, out)
	}
	return nil
}

// Crash stops the server at once (immediate mode: no checkpoint, every
// connection cut, recovery on the next start), as a crash would.
func (p *Postgres) Crash(ctx context.Context) error {
	if out, err := p.run(ctx, "pg_ctl", "-D", p.data, "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	return nil
}

// Close stops the server.
func (p *Postgres) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = p.run(ctx, "pg_ctl", "-D", p.data, "-m", "fast", "-w", "stop")
}

// ClickHouse is a private ClickHouse server run by scripts/clickhouse.sh
// from a folder of the run, on ports of its own.
type ClickHouse struct {
	TCPPort int
	script  string
	env     []string
}

func startClickHouse(ctx context.Context, root, dir string, tcp, http int) (*ClickHouse, error) {
	c := &ClickHouse{TCPPort: tcp, script: filepath.Join(root, "scripts", "clickhouse.sh"),
		env: []string{"CLICKHOUSE_DIR=" + dir, fmt.Sprintf("CLICKHOUSE_TCP_PORT=%d", tcp), fmt.Sprintf("CLICKHOUSE_HTTP_PORT=%d", http)}}
	return c, c.Start(ctx)
}

func (c *ClickHouse) do(ctx context.Context, what string) error {
	cmd := exec.CommandContext(ctx, "bash", c.script, what)
	cmd.Env = append(os.Environ(), c.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("clickhouse.sh %s: %w\n%s", what, err, out)
	}
	return nil
}

// Start starts the server and waits until it answers.
func (c *ClickHouse) Start(ctx context.Context) error { return c.do(ctx, "start") }

// Stop stops the server.
func (c *ClickHouse) Stop(ctx context.Context) error { return c.do(ctx, "stop") }

// URL is docflow's CLICKHOUSE_URL for database db.
func (c *ClickHouse) URL(db string) string {
	return fmt.Sprintf("clickhouse://127.0.0.1:%d/%s", c.TCPPort, db)
}

// freePorts picks n free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var out []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// dialer makes the driver's own connections to the loopback servers it
// runs, through netguard like every connection of the module.
var dialer = netguard.Dialer{AllowPrivate: true, Timeout: 2 * time.Second}

// answers reports whether something accepts connections at addr.
func answers(ctx context.Context, addr string) bool {
	c, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// moduleRoot finds the folder of docflow's go.mod from dir upwards.
func moduleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module docflow\n") {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("not inside docflow's source tree (no go.mod of module docflow above)")
		}
		dir = up
	}
}
