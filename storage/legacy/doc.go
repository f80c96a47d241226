// Package legacy reads the original service's SQLite database file (its
// default store) for the database wizard's import, read only, through the
// pure-Go driver modernc.org/sqlite: no C toolchain, no cgo; and the
// files in its work folder, confined to that folder. It implements
// docflow.LegacySource; the original's PostgreSQL database is read by
// storage/postgres behind the same interface, and storage/postgres maps
// and writes what either reads.
//
// Its files:
//   - sqlite.go: Open, the tables with their row counts, columns and rows
//     in id order, and the engine's version.
//   - folder.go: Folder, the original's work folder on this machine: the
//     paths its records name found under it, any path leaving it refused.
//   - legacytest: the original's schema written out as DDL (SQLite and
//     PostgreSQL), a small database in it, and its work folder with the
//     files' contents, for tests.
package legacy
