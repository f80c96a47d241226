package http

// The documentation of /graphql (/openapi.json): a generic GraphQL request
// and response over HTTP; the schema itself is GraphQL's (introspection,
// or GraphiQL at GET /graphql).

// graphqlRequest documents the body of POST /graphql.
type graphqlRequest struct {
	Query         string         `json:"query" openapi:"required" doc:"The GraphQL document to run" example:"{ __typename }"`
	OperationName *string        `json:"operationName" doc:"Which operation of the document to run, when it has several"`
	Variables     map[string]any `json:"variables" doc:"The operation's variables"`
	Extensions    map[string]any `json:"extensions" doc:"Ignored"`
}

// graphqlResponse documents the answer of POST /graphql.
type graphqlResponse struct {
	Data       any            `json:"data,omitempty" doc:"The result, shaped as the query asked; null when the request failed as a whole"`
	Errors     []graphqlError `json:"errors,omitempty" doc:"What went wrong, with where"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

type graphqlError struct {
	Message    string            `json:"message"`
	Locations  []graphqlLocation `json:"locations,omitempty"`
	Path       []any             `json:"path,omitempty" doc:"Field names and list indexes down to the failing field"`
	Extensions map[string]any    `json:"extensions,omitempty"`
}

type graphqlLocation struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

var (
	docGraphQL = Doc{
		Summary: "Run a GraphQL query or mutation",
		Description: "A standard GraphQL request over HTTP, run with the caller's rights (bearer token or session). " +
			"The answer is 200 whatever the GraphQL errors, which are listed in errors; the schema is available by introspection " +
			"and in GraphiQL at GET /graphql.",
		Tag:       "graphql",
		Body:      graphqlRequest{},
		Responses: []Response{OK(graphqlResponse{})},
		Examples: []Example{{Name: "typename", Summary: "The smallest query",
			Body: map[string]any{"query": "{ __typename }"}}},
	}
	docGraphiQL = Doc{
		Summary:   "GraphiQL, to write and run GraphQL queries in the browser",
		Tag:       "graphql",
		Responses: []Response{HTML("The page")},
	}
)
