package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"docflow"
	"docflow/storage/postgres"
	"docflow/streams"
)

// Check is one invariant's result. Warn marks a finding that does not
// fail the run (OK stays true).
type Check struct {
	Name   string
	OK     bool
	Warn   bool
	Detail string
}

// checker checks the invariants of a quiescent deployment.
type checker struct {
	d       *Deployment
	db      *postgres.DB
	hc      *http.Client
	out     []outcome // every document the clients put in
	mails   int       // documents sent as mail attachments
	got     []received
	checks  []Check
	hookSub string // the webhook's subscriber name in event_deliveries
}

func (c *checker) add(name string, ok bool, format string, args ...any) {
	c.checks = append(c.checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
}

func (c *checker) count(ctx context.Context, sql string, args ...any) int {
	var n int
	if err := c.db.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return -1
	}
	return n
}

// quiescent reports whether nothing is left to do: every file and run
// finished, no delivery or outbox message pending.
func quiescent(ctx context.Context, db *postgres.DB) (bool, string) {
	var files, runs, dests, events, outbox int
	err := db.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM files WHERE status NOT IN ('completed', 'failed', 'duplicate')),
		(SELECT count(*) FROM runs WHERE status IN ('pending', 'processing')),
		(SELECT count(*) FROM file_destinations WHERE status IN ('queued', 'sending', 'retrying')),
		(SELECT count(*) FROM event_deliveries WHERE status NOT IN ('delivered', 'failed')),
		(SELECT count(*) FROM outbox WHERE sent_at IS NULL)`).Scan(&files, &runs, &dests, &events, &outbox)
	if err != nil {
		return false, err.Error()
	}
	s := fmt.Sprintf("%d files and %d runs unfinished, %d destination deliveries and %d event deliveries pending, %d outbox rows unsent",
		files, runs, dests, events, outbox)
	return files+runs+dests+events+outbox == 0, s
}

func (c *checker) run(ctx context.Context) []Check {
	c.terminal(ctx)
	c.documents(ctx)
	c.steps(ctx)
	c.deliveries(ctx)
	c.events(ctx)
	c.processed(ctx)
	c.blobs(ctx)
	c.api(ctx)
	return c.checks
}

// terminal: every file and every run has finished.
func (c *checker) terminal(ctx context.Context) {
	files := c.count(ctx, `SELECT count(*) FROM files WHERE status NOT IN ('completed', 'failed', 'duplicate')`)
	runs := c.count(ctx, `SELECT count(*) FROM runs WHERE status IN ('pending', 'processing')`)
	var byStatus []string
	rows, err := c.db.Pool.Query(ctx, `SELECT status, count(*) FROM files GROUP BY 1 ORDER BY 1`)
	if err == nil {
		for rows.Next() {
			var s string
			var n int
			_ = rows.Scan(&s, &n)
			byStatus = append(byStatus, fmt.Sprintf("%d %s", n, s))
		}
		rows.Close()
	}
	c.add("every document terminal", files == 0 && runs == 0, "%d files, %d runs not finished; files: %s", files, runs, strings.Join(byStatus, ", "))

	var failed []string
	rows, err = c.db.Pool.Query(ctx, `SELECT f.original_filename, COALESCE((SELECT l.step_name || ': ' || l.message FROM processing_logs l
		WHERE l.file_id = f.id AND l.status = 'failed' ORDER BY l.id DESC LIMIT 1), '') FROM files f WHERE f.status <> 'completed' ORDER BY f.id LIMIT 5`)
	if err == nil {
		for rows.Next() {
			var name, why string
			_ = rows.Scan(&name, &why)
			failed = append(failed, name+" ("+why+")")
		}
		rows.Close()
	}
	notDone := c.count(ctx, `SELECT count(*) FROM files WHERE status <> 'completed'`)
	c.add("every document completed", notDone == 0, "%d not completed%s", notDone, list(failed))
}

// documents: each document the clients put in is there exactly once.
func (c *checker) documents(ctx context.Context) {
	names := map[string]int{}
	rows, err := c.db.Pool.Query(ctx, `SELECT original_filename, count(*) FROM files GROUP BY 1`)
	if err != nil {
		c.add("no document lost", false, "%v", err)
		return
	}
	for rows.Next() {
		var n string
		var k int
		_ = rows.Scan(&n, &k)
		names[n] = k
	}
	rows.Close()
	var lost, doubled, unknown, gaveUp []string
	want := map[string]bool{}
	for _, o := range c.out {
		want[o.Name] = true
		switch {
		case o.GaveUp != "":
			gaveUp = append(gaveUp, fmt.Sprintf("%s: %s, %d in the database", o.Name, o.GaveUp, names[o.Name]))
		case names[o.Name] == 0:
			lost = append(lost, o.Name)
		}
	}
	for n, k := range names {
		if k > 1 {
			doubled = append(doubled, fmt.Sprintf("%s ×%d", n, k))
		}
		if !want[n] {
			unknown = append(unknown, n)
		}
	}
	sort.Strings(doubled)
	sort.Strings(unknown)
	acked := len(c.out) - len(gaveUp)
	c.add("no document lost", len(lost) == 0, "%d of %d acknowledged documents missing%s", len(lost), acked, list(lost))
	c.add("no document doubled", len(doubled) == 0 && len(unknown) == 0, "%d names twice or more%s; %d unknown names%s",
		len(doubled), list(doubled), len(unknown), list(unknown))
	c.add("every client request answered", len(gaveUp) == 0, "%d requests given up%s", len(gaveUp), list(gaveUp))
}

// archiveLog matches the log rows of deliveries to the LOCAL destination
// integration (configure names it): send_to_destinations logs its own
// result, and each delivery to an integration adds a row under the same
// step name when it ends.
const archiveLog = `(step_name = 'send_to_destinations' AND message LIKE 'Delivered to chaos archive%')`

// steps: each step's result recorded once, and every step of a completed
// run has one.
func (c *checker) steps(ctx context.Context) {
	twice := c.count(ctx, `SELECT count(*) FROM (SELECT task_id, step_name FROM processing_logs WHERE status = 'completed'
		AND NOT `+archiveLog+` GROUP BY 1, 2 HAVING count(*) > 1) d`)
	missing := c.count(ctx, `SELECT count(*) FROM runs r WHERE r.status = 'completed' AND
		(SELECT count(*) FROM run_steps s WHERE s.run_id = r.id AND s.status NOT IN ('completed', 'skipped')) > 0`)
	// Aggregated once per table and joined: processing_logs has no index
	// by run, so a subquery per run would scan it once per run.
	mismatch := c.count(ctx, `WITH l AS (SELECT task_id, count(DISTINCT step_name) AS n FROM processing_logs
			WHERE status = 'completed' AND NOT `+archiveLog+` GROUP BY task_id),
		s AS (SELECT run_id, count(*) AS n FROM run_steps WHERE status = 'completed' GROUP BY run_id)
		SELECT count(*) FROM runs r LEFT JOIN l ON l.task_id = r.id LEFT JOIN s ON s.run_id = r.id
		WHERE r.status = 'completed' AND coalesce(l.n, 0) <> coalesce(s.n, 0)`)
	runs := c.count(ctx, `SELECT count(*) FROM runs`)
	results := c.count(ctx, `SELECT count(*) FROM run_steps WHERE status = 'completed'`)
	c.add("each step's result recorded once", twice == 0 && missing == 0 && mismatch == 0,
		"%d runs, %d step results; %d steps recorded twice, %d completed runs with an unfinished step, %d whose logs and steps disagree",
		runs, results, twice, missing, mismatch)
}

// deliveries: each completed document is in each destination once, as
// its processed version, and nothing else is there.
func (c *checker) deliveries(ctx context.Context) {
	type doc struct {
		sum   string
		found int
	}
	want := map[string]*doc{} // processed blob → document
	rows, err := c.db.Pool.Query(ctx, `SELECT processed_blob FROM files WHERE status = 'completed'`)
	if err != nil {
		c.add("each delivery to a destination once", false, "%v", err)
		return
	}
	completed := 0
	for rows.Next() {
		var key string
		_ = rows.Scan(&key)
		completed++
		if key != "" {
			want[key] = &doc{sum: key}
		}
	}
	rows.Close()
	dests := c.count(ctx, `SELECT count(DISTINCT destination) FROM file_destinations`)
	notDelivered := c.count(ctx, `SELECT count(*) FROM file_destinations d JOIN files f ON f.id = d.file_id
		WHERE f.status = 'completed' AND d.status <> 'delivered'`)
	rowsPerFile := c.count(ctx, `SELECT count(*) FROM files f WHERE f.status = 'completed' AND
		(SELECT count(*) FROM file_destinations d WHERE d.file_id = f.id) <> 2`)
	loggedTwice := c.count(ctx, `SELECT count(*) FROM (SELECT task_id FROM processing_logs WHERE status = 'completed' AND `+archiveLog+`
		GROUP BY 1 HAVING count(*) > 1) d`)
	var extra, temps []string
	files := 0
	err = filepath.WalkDir(c.d.Dest, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if strings.HasPrefix(e.Name(), ".incoming-") {
			// integrations/local's temporary file, left by a delivery
			// killed before its rename: not a delivery, reported below.
			rel, _ := filepath.Rel(c.d.Dest, path)
			temps = append(temps, rel)
			return nil
		}
		files++
		sum, err := fileSum(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.d.Dest, path)
		if d := want[sum]; d != nil {
			d.found++
		} else {
			extra = append(extra, rel)
		}
		return nil
	})
	var wrong []string
	for key, d := range want {
		if d.found != 2 {
			wrong = append(wrong, fmt.Sprintf("%s… ×%d", key[:12], d.found))
		}
	}
	sort.Strings(extra)
	c.add("each delivery to a destination once", err == nil && dests == 2 && notDelivered == 0 && rowsPerFile == 0 && len(extra) == 0 && len(wrong) == 0 && loggedTwice == 0,
		"%d completed documents, %d destinations, %d files in the folders; %d deliveries of completed documents not delivered, %d documents without one delivery per destination, %d processed versions not found exactly once per destination%s, %d files that are no processed version%s, %d runs whose delivery was recorded twice%s",
		completed, dests, files, notDelivered, rowsPerFile, len(wrong), list(wrong), len(extra), list(extra), loggedTwice, errText(err))
	sort.Strings(temps)
	c.checks = append(c.checks, Check{Name: "no temporary file left in a destination", OK: true, Warn: len(temps) > 0,
		Detail: fmt.Sprintf("%d hidden .incoming-* files left by deliveries killed before their rename%s", len(temps), list(temps))})
}

// events: every document event written is delivered to the webhook, with
// its one id; no event is written twice under two ids.
func (c *checker) events(ctx context.Context) {
	type logical struct {
		name, task string
		file       int64
	}
	ids := map[string]logical{}
	byKey := map[logical]map[string]bool{}
	rows, err := c.db.Pool.Query(ctx, `SELECT payload FROM outbox WHERE topic = $1`, streams.TopicEvents)
	if err != nil {
		c.add("every event delivered at least once with one id", false, "%v", err)
		return
	}
	for rows.Next() {
		var b []byte
		_ = rows.Scan(&b)
		env, err := streams.DecodeEnvelope(b)
		if err != nil {
			continue
		}
		var ev streams.Event
		if json.Unmarshal(env.Data, &ev) != nil {
			continue
		}
		switch ev.Name {
		case docflow.EventDocumentUploaded, docflow.EventDocumentProcessed, docflow.EventDocumentFailed:
		default:
			continue
		}
		k := logical{name: ev.Name}
		if v, ok := ev.Data["file_id"].(float64); ok {
			k.file = int64(v)
		}
		if ev.Name != docflow.EventDocumentUploaded {
			k.task, _ = ev.Data["task_id"].(string)
		}
		ids[ev.ID] = k
		if byKey[k] == nil {
			byKey[k] = map[string]bool{}
		}
		byKey[k][ev.ID] = true
	}
	rows.Close()
	gotIDs := map[string]int{}
	gotKeys := map[logical]map[string]bool{}
	for _, r := range c.got {
		gotIDs[r.ID]++
		k := logical{name: r.Event, file: r.FileID, task: r.TaskID}
		if r.Event == docflow.EventDocumentUploaded {
			k.task = ""
		}
		if gotKeys[k] == nil {
			gotKeys[k] = map[string]bool{}
		}
		gotKeys[k][r.ID] = true
	}
	var missing, twoIDs []string
	for id, k := range ids {
		if gotIDs[id] == 0 {
			missing = append(missing, fmt.Sprintf("%s %s file %d", id, k.name, k.file))
		}
	}
	for k, set := range byKey {
		if len(set) > 1 {
			twoIDs = append(twoIDs, fmt.Sprintf("%s file %d run %s: %d ids written", k.name, k.file, k.task, len(set)))
		}
	}
	for k, set := range gotKeys {
		if len(set) > 1 && len(byKey[k]) <= 1 {
			twoIDs = append(twoIDs, fmt.Sprintf("%s file %d run %s: %d ids received", k.name, k.file, k.task, len(set)))
		}
	}
	repeats := 0
	for _, n := range gotIDs {
		repeats += n - 1
	}
	undelivered := c.count(ctx, `SELECT count(*) FROM event_deliveries WHERE subscriber = $1 AND status <> 'delivered'`, c.hookSub)
	sort.Strings(missing)
	sort.Strings(twoIDs)
	c.add("every event delivered at least once with one id", len(ids) > 0 && len(missing) == 0 && len(twoIDs) == 0 && undelivered == 0,
		"%d events written, %d deliveries received (%d repeats of an id); %d never received%s; %d events with more than one id%s; %d deliveries not delivered",
		len(ids), len(c.got), repeats, len(missing), list(missing), len(twoIDs), list(twoIDs), undelivered)
}

// processed: no completed file without its processed version on disk.
func (c *checker) processed(ctx context.Context) {
	var bad []string
	rows, err := c.db.Pool.Query(ctx, `SELECT original_filename, processed_blob FROM files WHERE status = 'completed'`)
	if err != nil {
		c.add("no completed file without its processed version", false, "%v", err)
		return
	}
	n := 0
	for rows.Next() {
		var name, key string
		_ = rows.Scan(&name, &key)
		n++
		if key == "" {
			bad = append(bad, name+": none recorded")
		} else if _, err := os.Stat(c.blobPath(key)); err != nil {
			bad = append(bad, name+": blob missing")
		}
	}
	rows.Close()
	c.add("no completed file without its processed version", len(bad) == 0, "%d completed files, %d without%s", n, len(bad), list(bad))
}

func (c *checker) blobPath(key string) string {
	return filepath.Join(c.d.Work, "blobs", key[:2], key[2:4], key)
}

// blobs: after a sweep, every stored blob is referenced and every
// referenced blob is stored. The blobs are aged first, so that the sweep
// judges each of them (the deployment is quiescent: nothing is being
// stored).
func (c *checker) blobs(ctx context.Context) {
	root := filepath.Join(c.d.Work, "blobs")
	old := time.Now().Add(-30 * 24 * time.Hour)
	var keys []string
	walk := func(fn func(path, key string)) error {
		keys = keys[:0]
		return filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			if name := e.Name(); len(name) == 64 {
				keys = append(keys, name)
				fn(path, name)
			}
			return nil
		})
	}
	if err := walk(func(path, _ string) { _ = os.Chtimes(path, old, old) }); err != nil {
		c.add("no blob left unreferenced after a sweep", false, "%v", err)
		return
	}
	before := len(keys)
	out, err := c.d.command(ctx, "sweep-blobs")
	if err != nil {
		c.add("no blob left unreferenced after a sweep", false, "docflow sweep-blobs: %v %s", err, out)
		return
	}
	stored := map[string]bool{}
	_ = walk(func(_, key string) { stored[key] = true })
	files := postgres.NewFileStore(c.db)
	used, err := files.BlobsInUse(ctx, keys)
	if err != nil {
		c.add("no blob left unreferenced after a sweep", false, "%v", err)
		return
	}
	var unref []string
	for _, k := range keys {
		if !used[k] {
			unref = append(unref, k[:12]+"…")
		}
	}
	var gone []string
	rows, err := c.db.Pool.Query(ctx, `SELECT b FROM (SELECT original_blob AS b FROM files UNION SELECT processed_blob FROM files
		UNION SELECT ai_metadata->>'metadata_sidecar' FROM files) k WHERE b IS NOT NULL AND b <> ''`)
	if err == nil {
		for rows.Next() {
			var k string
			_ = rows.Scan(&k)
			if !stored[k] {
				gone = append(gone, k[:min(12, len(k))]+"…")
			}
		}
		rows.Close()
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	c.add("no blob left unreferenced after a sweep", len(unref) == 0 && len(gone) == 0 && err == nil,
		"%d blobs before the sweep, %d after (sweep-blobs: %s); %d unreferenced left%s; %d referenced blobs missing%s%s",
		before, len(keys), lines[len(lines)-1], len(unref), list(unref), len(gone), list(gone), errText(err))
}

// api: the API's counts agree with the database.
func (c *checker) api(ctx context.Context) {
	want := c.count(ctx, `SELECT count(*) FROM files WHERE status = 'completed'`)
	var stats map[string]any
	var detail []string
	ok := true
	for _, base := range c.d.APIURLs {
		r, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/queue/stats", nil)
		resp, err := c.hc.Do(r)
		if err != nil {
			ok = false
			detail = append(detail, err.Error())
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(b, &stats); err != nil || resp.StatusCode != 200 {
			ok = false
			detail = append(detail, fmt.Sprintf("%s: %d %s", base, resp.StatusCode, b))
			continue
		}
		got, found := findNumber(stats, "completed")
		if !found || int(got) != want {
			ok = false
		}
		detail = append(detail, fmt.Sprintf("%s says %v completed", strings.TrimPrefix(base, "http://"), got))
	}
	c.add("the API agrees with the database", ok, "%d completed in the database; %s", want, strings.Join(detail, "; "))
}

// findNumber finds key's number anywhere in v.
func findNumber(v any, key string) (float64, bool) {
	switch t := v.(type) {
	case map[string]any:
		if n, ok := t[key].(float64); ok {
			return n, true
		}
		for _, x := range t {
			if n, ok := findNumber(x, key); ok {
				return n, true
			}
		}
	case []any:
		for _, x := range t {
			if n, ok := findNumber(x, key); ok {
				return n, true
			}
		}
	}
	return 0, false
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// list formats the first few items of a detail.
func list(items []string) string {
	if len(items) == 0 {
		return ""
	}
	more := ""
	if len(items) > 5 {
		more = fmt.Sprintf(" and %d more", len(items)-5)
		items = items[:5]
	}
	return " (" + strings.Join(items, "; ") + more + ")"
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return "; " + err.Error()
}
