package http

import "docflow"

// The documentation of the database wizard's routes (/openapi.json), with
// the shapes of their answers.

type databaseURL struct {
	URL string `json:"url" example:"postgresql://docflow:secret@db.example.com:5432/docflow"`
}

// migrationUnreachable is the answer of a migration whose source or target
// cannot be reached (as test-connection reports it).
type migrationUnreachable struct {
	Success      bool     `json:"success" doc:"Always false"`
	TablesCopied int      `json:"tables_copied"`
	RowsCopied   int      `json:"rows_copied"`
	Errors       []string `json:"errors" doc:"Why the database could not be reached"`
}

type migrationList struct {
	Migrations []migrationBody `json:"migrations"`
}

var databaseURLBody = databaseURLReq{}

var (
	docDatabaseBackends = Doc{
		Summary:   "The database back ends the wizard knows, with their URL forms",
		Tag:       "database",
		Responses: []Response{OK([]docflow.DatabaseBackend{})},
		Examples:  []Example{{Name: "backends", Summary: "Every back end"}},
	}
	docDatabaseBuildURL = Doc{
		Summary:   "Build a database URL from its parts",
		Tag:       "database",
		Body:      docflow.DatabaseURLParts{},
		Responses: []Response{OK(databaseURL{})},
	}
	docDatabaseTest = Doc{
		Summary:     "Connect to a database and report its server's version",
		Description: "A failure to connect is success false with the reason; only a URL of no known form is an error (422).",
		Tag:         "database",
		Body:        databaseURLBody,
		Responses:   []Response{OK(&docflow.ConnectionTest{})},
	}
	docDatabasePreview = Doc{
		Summary:     "List a database's tables with their row counts, before a migration",
		Description: "Failures to connect are reported as test-connection does.",
		Tag:         "database",
		Body:        databaseURLBody,
		Responses:   []Response{OK(&docflow.MigrationPreview{})},
	}
	docDatabaseMigrate = Doc{
		Summary:     "Start copying a database into docflow's",
		Description: "Answers 202 with the job; follow it at progress_url. A source or target out of reach answers 200 with success false.",
		Tag:         "database",
		Body:        docflow.MigrationRequest{},
		Responses: []Response{{Status: 202, Body: migrationBody{}, Doc: "The migration started"},
			{Status: 200, Body: migrationUnreachable{}, Doc: "A database is out of reach"}},
	}
	docDatabaseMigrations = Doc{
		Summary:   "The latest migrations",
		Tag:       "database",
		Responses: []Response{OK(migrationList{})},
		Examples:  []Example{{Name: "list", Summary: "Recent migrations"}},
	}
	docDatabaseMigration = Doc{
		Summary:   "One migration and its progress",
		Tag:       "database",
		Responses: []Response{OK(migrationBody{})},
		Errors:    []int{404},
	}
)
