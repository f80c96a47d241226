// Package deps pins the module versions the project builds on, so that
// packages developed in parallel agree on one go.mod. It is removed once every
// dependency is imported by real code.
package deps

import (
	_ "code.dny.dev/ssrf"
	_ "github.com/ClickHouse/clickhouse-go/v2"
	_ "github.com/anthdm/hollywood/actor"
	_ "github.com/blevesearch/bleve/v2"
	_ "github.com/elastic/go-elasticsearch/v8"
	_ "github.com/fasthttp/router"
	_ "github.com/gabriel-vasile/mimetype"
	_ "github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/pdfcpu/pdfcpu/pkg/api"
	_ "github.com/rs/zerolog"
	_ "github.com/segmentio/kafka-go"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "github.com/valyala/fasthttp"
	_ "golang.org/x/crypto/bcrypt"
	_ "golang.org/x/crypto/hkdf"
)
