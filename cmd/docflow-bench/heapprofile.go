package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// heapProfiler saves heap profiles of a server started with
// DEBUG_PPROF_ADDR=addr into dir, so that a soak can say what grew.
type heapProfiler struct {
	addr, dir string
}

// save writes the server's heap profile, after a collection (gc=1, so
// that only live memory is counted), to dir/heap-<label>.pb.gz and
// returns its path.
func (h heapProfiler) save(ctx context.Context, label string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := nethttp.NewRequestWithContext(ctx, "GET", "http://"+h.addr+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		return "", err
	}
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("heap profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("heap profile: %s", resp.Status)
	}
	if err := os.MkdirAll(h.dir, 0o750); err != nil {
		return "", err
	}
	path := filepath.Join(h.dir, "heap-"+label+".pb.gz")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, io.LimitReader(resp.Body, 256<<20)); err != nil {
		f.Close()
		return "", fmt.Errorf("heap profile: %w", err)
	}
	return path, f.Close()
}

// diff prints where the live heap grew from the profile at a to the one
// at b (go tool pprof's top entries of the difference), and the command
// that shows more. Without a go command it prints only the command.
func (h heapProfiler) diff(r *Report, section, a, b string) {
	cmdline := fmt.Sprintf("go tool pprof -sample_index=inuse_space -top -diff_base %s %s", a, b)
	infoLine(r, section, "heap growth, start to end", cmdline)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-sample_index=inuse_space", "-top", "-nodecount=15", "-diff_base", a, b).Output()
	if err != nil {
		infoLine(r, section, "heap growth", fmt.Sprintf("not computed: %v", err))
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		infoLine(r, section, "", sc.Text())
	}
}
