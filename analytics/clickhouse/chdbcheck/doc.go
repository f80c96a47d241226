// Package chdbcheck runs the ClickHouse store's SQL (migrations, TTL, and
// every report query) on a current ClickHouse engine, embedded as chDB's
// libchdb.so. Its test builds only with the chdb tag, since loading the
// library fails without it; analytics/clickhouse's TestSQLOnCurrentEngine
// runs it when scripts/chdb.sh has fetched the library, and skips saying
// so otherwise.
package chdbcheck
