// Package graphql is docflow's GraphQL API (POST /graphql), schema first:
// schema.graphql is the source of truth, and New binds the resolvers to
// it (graph-gophers/graphql-go). It is transport-free: the http package
// authenticates the request and calls Execute with the user, so GraphQL
// passes the same authentication, cross-site check and rate limit as
// every REST route.
//
// Reads go through the root package's interfaces (or ones declared here)
// and the root package's rules: documents are filtered by the file access
// rule's view filter (FileAccess.VisibleTo), one document is checked by
// FileAccess.Check, pipelines by MayReadOwned; settings, users and user
// are for administrators, and sensitive settings are never listed.
// Writes are handed to Writes, which the http package implements with
// the REST routes' own code.
//
// Files:
//   - schema.graphql: the schema.
//   - api.go: New, Execute, the limits, the user of a request, errors
//     as GraphQL errors (with the docflow code in their extensions).
//   - complexity.go: the cost of a query, checked before it runs.
//   - response.go: a response's JSON, its data as the executor wrote it.
//   - query.go: the spec's queries (documents, document, pipelines,
//     pipeline, settings, users, user) and the interfaces they read.
//   - document.go: the Document type and the batch loading of what its
//     documents are asked for (one statement per kind for a whole list);
//     a list reads brief records unless aiMetadata is asked for, into
//     arrays reused from one request to the next.
//   - search.go: search and similar.
//   - mutation.go: the mutations and Writes.
//   - types.go: the plain types' resolvers and the JSON scalar.
package graphql
