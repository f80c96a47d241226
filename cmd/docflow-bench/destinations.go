package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/rs/zerolog"
	"github.com/studio-b12/gowebdav"

	"docflow"
	"docflow/integrations/desttest"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport/davserver"
	"docflow/internal/testsupport/versitygw"
	"docflow/storage/postgres"
	"docflow/streams"
)

// benchDestinations measures delivery to storage destinations against a
// local WebDAV server (rclone serve webdav) and a local S3 server
// (versitygw): 1,000 processed documents of 100 KB delivered by a worker
// (queued as send_to_destinations queues them, then sent by the
// integration's actor and recorded), beside the same client library
// uploading the same bytes directly, one after the other, as the
// integration's actor does; and the memory a 1 GiB delivery adds to the
// worker, for each.
func benchDestinations(ctx context.Context, r *Report, o *options) error {
	const section = "dest"
	docs := 1000
	if o.quick {
		docs = 300
	}
	const size = 100 << 10
	dir, err := os.MkdirTemp("", "docflow-bench-dest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, d := range []string{"rclone", "dav", "vgw", "s3"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o750); err != nil {
			return err
		}
	}
	dav, stopDAV, err := davserver.RunRclone(filepath.Join(dir, "rclone"), davserver.Options{Dir: filepath.Join(dir, "dav"), User: "u", Pass: "p"})
	if err != nil {
		return fmt.Errorf("dest bench: %w", err)
	}
	defer stopDAV()
	s3srv, stopS3, err := versitygw.Run(filepath.Join(dir, "vgw"), filepath.Join(dir, "s3"))
	if err != nil {
		return fmt.Errorf("dest bench: %w", err)
	}
	defer stopS3()
	s3c := awss3.New(awss3.Options{Region: versitygw.Region, BaseEndpoint: aws.String(s3srv.Endpoint), UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(versitygw.AccessKey, versitygw.SecretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		HTTPClient:                 &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 8}}})
	for _, b := range []string{"base", "docflow"} {
		if _, err := s3c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			return fmt.Errorf("dest bench: create bucket %s: %w", b, err)
		}
	}
	body := func(i int) []byte {
		b := make([]byte, size)
		rng := rand.NewChaCha8([32]byte{byte(i), byte(i >> 8), 7})
		rng.Read(b) //nolint:errcheck // never fails
		return b
	}

	// Baselines: the client libraries alone, one upload after the other.
	wd := gowebdav.NewClient(dav.URL, "u", "p")
	if err := wd.MkdirAll("/base", 0o755); err != nil {
		return fmt.Errorf("dest bench: %w", err)
	}
	t0 := time.Now()
	for i := range docs {
		if err := wd.Write(fmt.Sprintf("/base/doc-%d.pdf", i), body(i), 0o644); err != nil {
			return fmt.Errorf("dest bench: webdav baseline: %w", err)
		}
	}
	davBase := float64(docs) / time.Since(t0).Seconds()
	t0 = time.Now()
	for i := range docs {
		if _, err := s3c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("base"), Key: aws.String(fmt.Sprintf("doc-%d.pdf", i)),
			Body: bytes.NewReader(body(i))}); err != nil {
			return fmt.Errorf("dest bench: s3 baseline: %w", err)
		}
	}
	s3Base := float64(docs) / time.Since(t0).Seconds()

	// docflow: a worker with one WEBDAV and one S3 destination.
	log := zerolog.Nop()
	// NOTE: the outbox is published by the bench's own relay, started once
	// a run's tasks are queued: the figure is the rate of delivery, not
	// of queueing (send_to_destinations' part, in the pipeline's figures).
	a, err := apptest.Start(ctx, apptest.Options{Role: "worker", Log: &log, Workdir: filepath.Join(dir, "work"), ProductionTimings: true,
		NoRelay: true, Env: map[string]string{"INTEGRATION_ALLOWED_HOSTS": "127.0.0.1"}})
	if err != nil {
		return fmt.Errorf("dest bench: %w", err)
	}
	defer a.Close()
	cipher, err := postgres.NewCipher(apptestSecret)
	if err != nil {
		return err
	}
	store := postgres.NewIntegrationStore(a.DB, cipher)
	integrations := map[string]*docflow.Integration{}
	for typ, config := range map[string]map[string]any{
		docflow.IntegrationWebDAV: {"url": dav.URL, "path": "/docflow"},
		docflow.IntegrationS3:     {"endpoint": s3srv.Endpoint, "bucket": "docflow", "path_style": true},
	} {
		creds := map[string]string{"username": "u", "password": "p"}
		if typ == docflow.IntegrationS3 {
			creds = map[string]string{"access_key_id": versitygw.AccessKey, "secret_access_key": versitygw.SecretKey}
		}
		in := &docflow.Integration{OwnerID: "bench", Direction: docflow.DirectionDestination, IntegrationType: typ, Name: typ,
			Config: config, Credentials: creds}
		if err := store.CreateIntegration(ctx, in, true); err != nil {
			return err
		}
		integrations[typ] = in
	}
	files := make([]*docflow.File, docs)
	for i := range docs {
		if files[i], err = benchDestFile(ctx, a, fmt.Sprintf("doc-%d.pdf", i), bytes.NewReader(body(i))); err != nil {
			return err
		}
	}
	for _, typ := range []string{docflow.IntegrationWebDAV, docflow.IntegrationS3} {
		in := integrations[typ]
		rate, err := benchDestRun(ctx, a, in, files, "run-"+typ)
		if err != nil {
			return err
		}
		base := davBase
		if typ == docflow.IntegrationS3 {
			base = s3Base
		}
		r.Ratio(section, fmt.Sprintf("%d docs of 100 KB to %s (local %s)", docs, typ, map[string]string{
			docflow.IntegrationWebDAV: "rclone", docflow.IntegrationS3: "versitygw"}[typ]), rate, base, "docs/s", 0.5)
		infoLine(r, section, "  baseline: the client library uploading the same bytes", fmt.Sprintf("%12.0f docs/s", base))
	}

	// 1 GiB through each: the worker's memory above idle.
	big, err := benchDestFile(ctx, a, "big.pdf", desttest.NewBody(3, 1<<30))
	if err != nil {
		return err
	}
	for _, typ := range []string{docflow.IntegrationWebDAV, docflow.IntegrationS3} {
		idle := settledRSS()
		var peak atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := time.NewTicker(20 * time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tk.C:
					if n, err := searchSelfRSS(); err == nil && n > peak.Load() {
						peak.Store(n)
					}
				}
			}
		}()
		t0 := time.Now()
		_, err := benchDestRun(ctx, a, integrations[typ], []*docflow.File{big}, "big-"+typ)
		close(stop)
		wg.Wait()
		if err != nil {
			return err
		}
		took := time.Since(t0)
		r.AtMost(section, fmt.Sprintf("memory during a 1 GiB delivery to %s (RSS above idle)", typ),
			float64(peak.Load()-idle)/(1<<20), "MiB", 64)
		infoLine(r, section, "  its time", fmt.Sprintf("%12.1f s (%.0f MiB/s)", took.Seconds(), 1024/took.Seconds()))
	}
	return nil
}

// benchDestFile stores a completed document of the bench's owner whose
// processed PDF is body.
func benchDestFile(ctx context.Context, a *apptest.App, name string, body interface{ Read([]byte) (int, error) }) (*docflow.File, error) {
	info, err := a.Blobs.Put(ctx, body, 0)
	if err != nil {
		return nil, err
	}
	owner := "bench"
	f := &docflow.File{OriginalFilename: name, OwnerID: &owner, ProcessedBlob: info.Key, OriginalBlob: info.Key,
		FileSize: info.Size, MimeType: "application/pdf"}
	err = a.DB.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type,
			owner_id, status, original_blob, processed_blob)
		VALUES ($1, $2, $2, $3, $4, $5, 'completed', $1, $1) RETURNING id, created_at`,
		info.Key, name, info.Size, f.MimeType, owner).Scan(&f.ID, &f.CreatedAt)
	return f, err
}

// benchDestRun queues the delivery of files to in alone (as
// send_to_destinations does, from 8 goroutines), then publishes the
// outbox and waits until every one is delivered; it returns the documents
// delivered per second from the publish on.
func benchDestRun(ctx context.Context, a *apptest.App, in *docflow.Integration, files []*docflow.File, run string) (float64, error) {
	// Only in is active for this run.
	if _, err := a.DB.Pool.Exec(ctx, `UPDATE integrations SET is_active = (id = $1) WHERE owner_id = 'bench'`, in.ID); err != nil {
		return 0, err
	}
	var next atomic.Int64
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) {
					return
				}
				if _, err := a.DestinationStore.EnqueueFileDeliveries(ctx, files[i], "bench", run, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	t0 := time.Now()
	relay, err := streams.NewRelay(streams.RelayConfig{Store: postgres.NewOutbox(a.DB), Publisher: a.Producer,
		PollInterval: 100 * time.Millisecond, Log: zerolog.Nop()})
	if err != nil {
		return 0, err
	}
	relay.Start()
	defer relay.Close()
	dest := strconv.FormatInt(in.ID, 10)
	deadline := time.Now().Add(30 * time.Minute)
	for {
		var delivered, failed int
		if err := a.DB.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'delivered' AND run_id = $2),
				count(*) FILTER (WHERE status = 'failed')
			FROM file_destinations WHERE destination = $1`, dest, run).Scan(&delivered, &failed); err != nil {
			return 0, err
		}
		if failed > 0 {
			return 0, fmt.Errorf("dest bench: %d deliveries to %s failed", failed, in.IntegrationType)
		}
		if delivered == len(files) {
			return float64(len(files)) / time.Since(t0).Seconds(), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("dest bench: %d of %d delivered to %s", delivered, len(files), in.IntegrationType)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
