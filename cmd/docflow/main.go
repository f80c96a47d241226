// Command docflow runs the document-processing service.
//
//	docflow serve     API, pipeline workers and outbox relay in one process
//	docflow api       the HTTP API only (stateless; scale behind a balancer)
//	docflow worker    pipeline workers only (join the Kafka consumer groups)
//	docflow broker    the embedded Kafka-protocol broker alone
//	docflow migrate   apply database migrations and exit
//	docflow reindex   rebuild the search index from the database
//	docflow sweep-blobs  remove stored files no record references
//	docflow version   print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Version is set at build time with -ldflags "-X main.Version=…".
var Version = "0.1.0-dev"

const usage = `docflow — document-processing service

Usage:
  docflow <command> [flags]

Commands:
  serve     run everything in one process: HTTP API, pipeline workers,
            outbox relay, and (when KAFKA_BROKERS is empty) the embedded broker
  api       run the HTTP API only
  worker    run pipeline workers only (needs KAFKA_BROKERS or a running broker)
  broker    run the embedded Kafka-protocol broker alone (for multi-process
            setups on one machine); prints its address
  migrate   apply pending database migrations and exit
  reindex   rebuild the search index from the database
  sweep-blobs  remove now the stored files no record references
               (serve, api and worker do it every BLOB_SWEEP_INTERVAL)
  version   print the version and exit

Run 'docflow <command> --help' for the flags of a command.

Configuration comes from environment variables (and, for most settings, the
settings API, which takes precedence). The essentials:
  LISTEN_ADDR     address to listen on            (default 127.0.0.1:8000)
  BASE_URL        public URL                      (default http://LISTEN_ADDR)
  DATABASE_URL    PostgreSQL URL; database created if missing
                  (default postgres://postgres@127.0.0.1:5432/docflow)
  WORKDIR         data directory                  (default ./data)
  KAFKA_BROKERS   comma-separated brokers; empty = embedded broker
  ELASTICSEARCH_URL  empty = embedded Bleve index
  CLICKHOUSE_URL  empty = metrics in PostgreSQL
  AUTH_ENABLED    require credentials             (default false)
  LOG_LEVEL       debug|info|warn|error           (default info)
  LOG_FORMAT      console|json                    (default console)
The full list with descriptions: docflow serve --settings
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "docflow:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "version", "--version":
		fmt.Fprintln(stdout, "docflow", Version)
		return nil
	case "serve", "api", "worker":
		return runService(ctx, cmd, rest, stdout, stderr)
	case "broker":
		return runBroker(ctx, rest, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, stdout, stderr)
	case "reindex":
		return runReindex(ctx, rest, stdout, stderr)
	case "sweep-blobs":
		return runSweepBlobs(ctx, rest, stdout, stderr)
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}
