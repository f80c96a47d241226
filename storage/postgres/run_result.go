package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// CompleteStep records a successful attempt: the step result, the log row,
// the file's changed fields, the embedding and deliveries, the end of the
// run when FinishRun is set, and msgs (the next task or the completion
// event). Nothing is written (Recorded false) when the caller no longer
// holds the step (recorded already, or its lease was taken over).
func (s *RunStore) CompleteStep(ctx context.Context, rec docflow.StepRecord, msgs ...docflow.OutboxMessage) (_ *docflow.RunWrite, err error) {
	defer mapDBError(&err)
	return s.recordStep(ctx, rec, msgs)
}

// RetryStep records a failed attempt that will be retried: the step waits
// in status retrying; msgs carries the delayed task.
func (s *RunStore) RetryStep(ctx context.Context, rec docflow.StepRecord, msgs ...docflow.OutboxMessage) (_ *docflow.RunWrite, err error) {
	defer mapDBError(&err)
	rec.Status, rec.FinishRun, rec.After = docflow.StepRetrying, "", nil
	return s.recordStep(ctx, rec, msgs)
}

// FailStep records the last failed attempt: the step, the run and the file
// become failed; msgs carries the dead letter and the failure event.
func (s *RunStore) FailStep(ctx context.Context, rec docflow.StepRecord, msgs ...docflow.OutboxMessage) (_ *docflow.RunWrite, err error) {
	defer mapDBError(&err)
	rec.Status, rec.FinishRun, rec.After = docflow.StepFailed, docflow.RunFailed, nil
	return s.recordStep(ctx, rec, msgs)
}

// fastEligible: the result changes nothing but the run (recordStepFast).
func fastEligible(rec docflow.StepRecord) bool {
	return rec.Embedding == nil && len(rec.Deliveries) == 0 && !fileChanged(rec)
}

func (s *RunStore) recordStep(ctx context.Context, rec docflow.StepRecord, msgs []docflow.OutboxMessage) (*docflow.RunWrite, error) {
	if fastEligible(rec) {
		return s.recordStepFast(ctx, rec, msgs)
	}
	var w *docflow.RunWrite
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var err error
		w, err = s.recordInTx(ctx, tx, rec, msgs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record step %s/%d: %w", rec.RunID, rec.Position, err)
	}
	return w, nil
}

// recordInTx writes one attempt's outcome in tx; Recorded is false (and
// nothing is written) when the caller no longer holds the step.
func (s *RunStore) recordInTx(ctx context.Context, tx pgx.Tx, rec docflow.StepRecord, msgs []docflow.OutboxMessage) (*docflow.RunWrite, error) {
	if fastEligible(rec) {
		q, args, err := s.fastRecord(rec, msgs)
		if err != nil {
			return nil, err
		}
		return s.scanFastRecord(tx.QueryRow(ctx, q, args...))
	}
	w := &docflow.RunWrite{}
	err := func() error {
		finished := "finished_at = now()"
		if rec.Status == docflow.StepRetrying {
			finished = "finished_at = NULL"
		}
		var fileStatus string
		err := tx.QueryRow(ctx, `
			WITH s AS (
				UPDATE run_steps SET status=$5, message=$6, `+finished+`, lease_owner='', lease_until=NULL
				WHERE run_id=$1 AND position=$2 AND attempts=$3 AND lease_owner=$4 AND status='running'
				RETURNING run_id
			), l AS (
				INSERT INTO processing_logs (file_id, task_id, step_name, status, message)
				SELECT $7, $1, $8, $5, $6 FROM s
			)
			SELECT f.status FROM s, files f WHERE f.id = $7`,
			rec.RunID, rec.Position, rec.Attempt, rec.Worker, rec.Status, rec.Message, rec.FileID, rec.StepType).Scan(&fileStatus)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // not ours (any more): change nothing
		}
		if err != nil {
			return err
		}
		w.Recorded = true
		if err := saveFileChanges(ctx, tx, rec); err != nil {
			return err
		}
		if rec.Embedding != nil {
			if _, err := tx.Exec(ctx, `INSERT INTO file_embeddings (file_id, dimensions, model, vector, updated_at)
				VALUES ($1, $2, $3, $4, now()) ON CONFLICT (file_id) DO UPDATE
				SET dimensions=EXCLUDED.dimensions, model=EXCLUDED.model, vector=EXCLUDED.vector, updated_at=now()`,
				rec.FileID, len(rec.Embedding), rec.EmbeddingModel, rec.Embedding); err != nil {
				return fmt.Errorf("save embedding: %w", err)
			}
		}
		for _, d := range rec.Deliveries {
			if _, err := tx.Exec(ctx, `INSERT INTO deliveries (file_id, run_id, destination, status, remote_path, message)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id, destination) DO UPDATE
				SET status=EXCLUDED.status, remote_path=EXCLUDED.remote_path, message=EXCLUDED.message`,
				rec.FileID, rec.RunID, d.Destination, d.Status, d.RemotePath, d.Message); err != nil {
				return fmt.Errorf("save delivery: %w", err)
			}
		}
		if rec.FinishRun != "" || (rec.Status != docflow.StepSucceeded && rec.Status != docflow.StepSkipped) {
			if err := finishRun(ctx, tx, rec.RunID, rec.FileID, rec.FinishRun, rec.Message); err != nil {
				return err
			}
		}
		w.OutboxIDs, err = s.enqueue(ctx, tx, msgs)
		return err
	}()
	if err != nil {
		return nil, err
	}
	return w, nil
}

// recordStepFast is recordStep for a result that changes nothing but the
// run: one statement (an implicit transaction), one round trip.
func (s *RunStore) recordStepFast(ctx context.Context, rec docflow.StepRecord, msgs []docflow.OutboxMessage) (*docflow.RunWrite, error) {
	q, args, err := s.fastRecord(rec, msgs)
	if err != nil {
		return nil, fmt.Errorf("record step %s/%d: %w", rec.RunID, rec.Position, err)
	}
	w, err := s.scanFastRecord(s.db.Pool.QueryRow(ctx, q, args...))
	if err != nil {
		return nil, fmt.Errorf("record step %s/%d: %w", rec.RunID, rec.Position, err)
	}
	return w, nil
}

// fastRecordSQL records a step result that changes nothing but the run.
//
// NOTE: the runs row is rewritten only when the run ends or a step fails
// (retrying): a completed or skipped step's progress is its own
// finished_at, which stall detection reads (runProgress). Rewriting the run
// on every step moved its updated_at index entry each time.
var fastRecordSQL = `
		WITH s AS (
			UPDATE run_steps SET status=$5, message=$6, finished_at=CASE WHEN $5 = 'retrying' THEN NULL ELSE now() END,
				lease_owner='', lease_until=NULL
			WHERE run_id=$1 AND position=$2 AND attempts=$3 AND lease_owner=$4 AND status='running'
			RETURNING run_id
		), l AS (
			INSERT INTO processing_logs (file_id, task_id, step_name, status, message)
			SELECT $7, $1, $8, $5, $6 FROM s
		), r AS (
			UPDATE runs SET updated_at=now(),
				status = CASE WHEN $9 = '' THEN status ELSE $9 END,
				message = CASE WHEN $9 = '' THEN message ELSE $10 END,
				finished_at = CASE WHEN $9 = '' THEN finished_at ELSE now() END
			WHERE id=$1 AND ($9 <> '' OR $5 NOT IN ('completed', 'skipped')) AND EXISTS (SELECT 1 FROM s)
		), f AS (
			UPDATE files SET status=$9, updated_at=now()
			WHERE $9 <> '' AND id=$7 AND (task_id=$1 OR task_id='') AND EXISTS (SELECT 1 FROM s)
		), o AS (
			` + outboxInsert{at: 11, grace: 17, where: "EXISTS (SELECT 1 FROM s)", returning: true}.sql() + `
		)
		-- NOTE: set_config runs while the statement executes, before the
		-- outbox trigger fires at its end.
		SELECT (SELECT count(*) FROM s), (SELECT COALESCE(array_agg(id ORDER BY id), '{}') FROM o),
			set_config('docflow.outbox_quiet', $16, true)`

// fastRecord returns the statement and arguments of recordStepFast.
func (s *RunStore) fastRecord(rec docflow.StepRecord, msgs []docflow.OutboxMessage) (string, []any, error) {
	a, err := outboxArrays(msgs)
	if err != nil {
		return "", nil, err
	}
	runMessage := rec.Message
	if rec.FinishRun == docflow.RunCompleted || rec.FinishRun == docflow.RunDuplicate {
		runMessage = ""
	}
	quiet := "off"
	if s.direct > 0 {
		quiet = "on"
	}
	return fastRecordSQL, []any{rec.RunID, rec.Position, rec.Attempt, rec.Worker, rec.Status, rec.Message, rec.FileID, rec.StepType,
		rec.FinishRun, runMessage, a.topics, a.keys, a.payloads, a.headers, a.avail, quiet, max(0, s.direct.Milliseconds())}, nil
}

func (s *RunStore) scanFastRecord(row pgx.Row) (*docflow.RunWrite, error) {
	var n int
	var ids []int64
	if err := row.Scan(&n, &ids, new(string)); err != nil {
		return nil, err
	}
	w := &docflow.RunWrite{Recorded: n == 1}
	if s.direct > 0 {
		w.OutboxIDs = ids
	}
	return w, nil
}

// CompleteSteps records several successful attempts (as CompleteStep
// each) in one transaction: one commit, and for results that change
// nothing but the run, one round trip for all of them. The answer holds one
// RunWrite per item, in order. On error nothing was written.
func (s *RunStore) CompleteSteps(ctx context.Context, items []docflow.StepCompletion) (_ []*docflow.RunWrite, err error) {
	defer mapDBError(&err)
	out := make([]*docflow.RunWrite, len(items))
	if len(items) == 0 {
		return out, nil
	}
	fast := true
	for _, it := range items {
		if !fastEligible(it.Record) {
			fast = false
			break
		}
	}
	// NOTE: rows are locked in (run, position) order, whatever order the
	// results came in, so that two batches cannot wait for each other.
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		ra, rb := items[order[a]].Record, items[order[b]].Record
		if ra.RunID != rb.RunID {
			return ra.RunID < rb.RunID
		}
		return ra.Position < rb.Position
	})
	if !fast {
		err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
			for _, i := range order {
				w, err := s.recordInTx(ctx, tx, items[i].Record, items[i].Msgs)
				if err != nil {
					return err
				}
				out[i] = w
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("record %d steps: %w", len(items), err)
		}
		return out, nil
	}
	// One statement for every result: one round trip, one executor start,
	// one outbox trigger, committed (synchronously) once.
	recs := make([]docflow.StepRecord, len(order))
	msgs := make([][]docflow.OutboxMessage, len(order))
	for k, i := range order {
		recs[k], msgs[k] = items[i].Record, items[i].Msgs
	}
	q, args, err := s.fastRecords(recs, msgs)
	if err != nil {
		return nil, fmt.Errorf("record %d steps: %w", len(items), err)
	}
	var recorded []int32
	var ids []int64
	if err := s.db.Pool.QueryRow(ctx, q, args...).Scan(&recorded, &ids, new(string)); err != nil {
		return nil, fmt.Errorf("record %d steps: %w", len(items), err)
	}
	// recorded holds the ordinals (from 1, in order) of the results
	// written; the outbox ids were drawn in message order, results in
	// order, so they split back by count.
	for k, i := range order {
		w := &docflow.RunWrite{}
		if len(recorded) > 0 && int(recorded[0]) == k+1 {
			recorded = recorded[1:]
			w.Recorded = true
			if s.direct > 0 {
				n := min(len(msgs[k]), len(ids))
				w.OutboxIDs, ids = ids[:n:n], ids[n:]
			}
		}
		out[i] = w
	}
	return out, nil
}

// fastRecordsSQL is fastRecordSQL for many results at once; the outbox
// messages carry the ordinal of their result.
var fastRecordsSQL = `
		WITH i AS (
			SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[],
				$9::text[], $10::text[]) WITH ORDINALITY
				AS i(run_id, pos, attempt, worker, status, message, file_id, step_type, finish, run_message, n)
		), s AS (
			UPDATE run_steps rs SET status=i.status, message=i.message,
				finished_at=CASE WHEN i.status = 'retrying' THEN NULL ELSE now() END, lease_owner='', lease_until=NULL
			FROM i
			WHERE rs.run_id=i.run_id AND rs.position=i.pos AND rs.attempts=i.attempt AND rs.lease_owner=i.worker AND rs.status='running'
			RETURNING i.n, i.run_id, i.status, i.message, i.file_id, i.step_type, i.finish, i.run_message
		), l AS (
			INSERT INTO processing_logs (file_id, task_id, step_name, status, message)
			SELECT file_id, run_id, step_type, status, message FROM s ORDER BY n
		), r AS (
			UPDATE runs SET updated_at=now(),
				status = CASE WHEN s.finish = '' THEN runs.status ELSE s.finish END,
				message = CASE WHEN s.finish = '' THEN runs.message ELSE s.run_message END,
				finished_at = CASE WHEN s.finish = '' THEN runs.finished_at ELSE now() END
			FROM s WHERE runs.id = s.run_id AND (s.finish <> '' OR s.status NOT IN ('completed', 'skipped'))
		), f AS (
			UPDATE files SET status=s.finish, updated_at=now()
			FROM s WHERE s.finish <> '' AND files.id = s.file_id AND (files.task_id = s.run_id OR files.task_id = '')
		), o AS (
			` + outboxInsert{at: 12, item: 11, grace: 18, where: "m.item IN (SELECT n FROM s)", returning: true}.sql() + `
		)
		SELECT (SELECT COALESCE(array_agg(n::int ORDER BY n), '{}') FROM s), (SELECT COALESCE(array_agg(id ORDER BY id), '{}') FROM o),
			set_config('docflow.outbox_quiet', $17, true)`

// fastRecords returns the statement and arguments recording recs (each
// fastEligible) with their messages.
func (s *RunStore) fastRecords(recs []docflow.StepRecord, msgs [][]docflow.OutboxMessage) (string, []any, error) {
	n := len(recs)
	runIDs, workers, statuses, messages, types, finishes, runMessages :=
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	positions, attempts := make([]int32, n), make([]int32, n)
	fileIDs := make([]int64, n)
	var all []docflow.OutboxMessage
	var items []int32
	for k, rec := range recs {
		runIDs[k], positions[k], attempts[k], workers[k] = rec.RunID, int32(rec.Position), int32(rec.Attempt), rec.Worker
		statuses[k], messages[k], fileIDs[k], types[k], finishes[k] = rec.Status, rec.Message, rec.FileID, rec.StepType, rec.FinishRun
		runMessages[k] = rec.Message
		if rec.FinishRun == docflow.RunCompleted || rec.FinishRun == docflow.RunDuplicate {
			runMessages[k] = ""
		}
		for _, m := range msgs[k] {
			all = append(all, m)
			items = append(items, int32(k+1))
		}
	}
	a, err := outboxArrays(all)
	if err != nil {
		return "", nil, err
	}
	if items == nil {
		items = []int32{}
	}
	quiet := "off"
	if s.direct > 0 {
		quiet = "on"
	}
	return fastRecordsSQL, []any{runIDs, positions, attempts, workers, statuses, messages, fileIDs, types, finishes, runMessages,
		items, a.topics, a.keys, a.payloads, a.headers, a.avail, quiet, max(0, s.direct.Milliseconds())}, nil
}

// fileChanged reports whether the step changed a step-writable field.
func fileChanged(rec docflow.StepRecord) bool {
	if rec.Before == nil || rec.After == nil {
		return false
	}
	b, a := rec.Before, rec.After
	return a.ProcessedBlob != b.ProcessedBlob || !reflect.DeepEqual(a.DocumentTitle, b.DocumentTitle) ||
		a.OCRText != b.OCRText || !reflect.DeepEqual(a.OCRQualityScore, b.OCRQualityScore) ||
		!reflect.DeepEqual(a.AIMetadata, b.AIMetadata) || a.Language != b.Language ||
		!slices.Equal(a.StorageProviders, b.StorageProviders) || !reflect.DeepEqual(a.DuplicateOf, b.DuplicateOf)
}

// finishRun ends the run with status (nothing when ""), or just notes its
// progress, and gives the file the run's final status while the run is the
// file's current one.
func finishRun(ctx context.Context, tx pgx.Tx, runID string, fileID int64, status, message string) error {
	if status == "" {
		_, err := tx.Exec(ctx, `UPDATE runs SET updated_at=now() WHERE id=$1`, runID)
		return err
	}
	if status == docflow.RunCompleted {
		message = ""
	}
	if _, err := tx.Exec(ctx, `UPDATE runs SET status=$2, message=$3, finished_at=now(), updated_at=now() WHERE id=$1`,
		runID, status, message); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE files SET status=$3, updated_at=now() WHERE id=$1 AND (task_id=$2 OR task_id='')`,
		fileID, runID, status)
	return err
}

// saveFileChanges writes the step-writable fields that differ between
// rec.Before and rec.After.
func saveFileChanges(ctx context.Context, tx pgx.Tx, rec docflow.StepRecord) error {
	if rec.Before == nil || rec.After == nil {
		return nil
	}
	b, a := rec.Before, rec.After
	sets := ""
	args := []any{rec.FileID}
	set := func(col string, v any) {
		if sets != "" {
			sets += ", "
		}
		args = append(args, v)
		sets += col + "=$" + strconv.Itoa(len(args))
	}
	if a.ProcessedBlob != b.ProcessedBlob {
		set("processed_blob", a.ProcessedBlob)
	}
	if !reflect.DeepEqual(a.DocumentTitle, b.DocumentTitle) {
		set("document_title", a.DocumentTitle)
	}
	if a.OCRText != b.OCRText {
		set("ocr_text", a.OCRText)
	}
	if !reflect.DeepEqual(a.OCRQualityScore, b.OCRQualityScore) {
		set("ocr_quality_score", a.OCRQualityScore)
	}
	if !reflect.DeepEqual(a.AIMetadata, b.AIMetadata) {
		meta, err := json.Marshal(a.AIMetadata)
		if err != nil {
			return fmt.Errorf("ai_metadata: %w", err)
		}
		set("ai_metadata", meta) // the tags column follows by trigger
	}
	if a.Language != b.Language {
		set("language", a.Language)
	}
	if !slices.Equal(a.StorageProviders, b.StorageProviders) {
		set("storage_providers", providers(a.StorageProviders))
	}
	if !reflect.DeepEqual(a.DuplicateOf, b.DuplicateOf) {
		set("duplicate_of", a.DuplicateOf)
	}
	if sets == "" {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE files SET `+sets+`, updated_at=now() WHERE id=$1`, args...)
	if err != nil {
		return fmt.Errorf("save file %d: %w", rec.FileID, err)
	}
	return nil
}
