package app

import (
	"context"

	"docflow"
	"docflow/graphql"
	dfhttp "docflow/http"
	"docflow/storage/postgres"
	"docflow/streams"
)

// mountGraphQL serves /graphql: the executor reads the stores and writes
// through the REST routes' code (srv.GraphQLWrites), so it comes after
// the files and collaboration routes.
func (m *App) mountGraphQL(srv *dfhttp.Server, pipelines *postgres.PipelineStore) error {
	api, err := graphql.New(graphql.Deps{
		Settings: m.Settings, Files: m.Files, Comments: postgres.NewCommentStore(m.DB), Shares: postgres.NewShareStore(m.DB),
		Pipelines: pipelines, Profiles: postgres.NewProfileStore(m.DB, streams.EncodeEvent),
		Index: m.Index, Search: m.SearchStore, Writes: srv.GraphQLWrites(),
	})
	if err != nil {
		return err
	}
	srv.MountGraphQL(dfhttp.GraphQLDeps{Execute: func(ctx context.Context, dst []byte, u *docflow.User, query, op string, vars map[string]any) ([]byte, error) {
		return graphql.AppendResponse(dst, api.Execute(ctx, u, graphql.Request{Query: query, OperationName: op, Variables: vars}))
	}})
	return nil
}
