// Package legacy reads the original service's SQLite database file (its
// default store) for the database wizard's import, read only, through the
// pure-Go driver modernc.org/sqlite: no C toolchain, no cgo. It implements
// docflow.LegacySource; the original's PostgreSQL database is read by
// storage/postgres behind the same interface, and storage/postgres maps
// and writes what either reads.
//
// Its files:
//   - sqlite.go: Open, the tables with their row counts, columns and rows
//     in id order, and the engine's version.
//   - legacytest: the original's schema written out as DDL (SQLite and
//     PostgreSQL), and a small database in it, for tests.
package legacy
