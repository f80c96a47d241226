package graphql

import (
	"encoding/json"
	"fmt"

	gqlgo "github.com/graph-gophers/graphql-go"

	"docflow"
)

// This file is the resolvers of the plain types (records read as they
// are) and the JSON scalar.

type statusResolver struct{ s docflow.ProcessingStatus }

func (r *statusResolver) Status() string    { return r.s.Status }
func (r *statusResolver) LastStep() string  { return r.s.LastStep }
func (r *statusResolver) HasErrors() bool   { return r.s.HasErrors }
func (r *statusResolver) TotalSteps() int32 { return int32(r.s.TotalSteps) }

type logResolver struct{ l *docflow.ProcessingLog }

func (r *logResolver) ID() int32             { return int32(r.l.ID) }
func (r *logResolver) TaskID() string        { return r.l.TaskID }
func (r *logResolver) StepName() string      { return r.l.StepName }
func (r *logResolver) Status() string        { return r.l.Status }
func (r *logResolver) Message() string       { return r.l.Message }
func (r *logResolver) Timestamp() gqlgo.Time { return gqlgo.Time{Time: r.l.Timestamp} }

type shareResolver struct{ s *docflow.Share }

func (r *shareResolver) ID() int32                { return int32(r.s.ID) }
func (r *shareResolver) FileID() int32            { return int32(r.s.FileID) }
func (r *shareResolver) OwnerID() string          { return r.s.OwnerID }
func (r *shareResolver) SharedWithUserID() string { return r.s.SharedWithUserID }
func (r *shareResolver) Role() string             { return r.s.Role }
func (r *shareResolver) CreatedAt() gqlgo.Time    { return gqlgo.Time{Time: r.s.CreatedAt} }
func (r *shareResolver) UpdatedAt() gqlgo.Time    { return gqlgo.Time{Time: r.s.UpdatedAt} }

type commentResolver struct{ c *docflow.Comment }

func commentResolvers(cs []*docflow.Comment) []*commentResolver {
	out := make([]*commentResolver, len(cs))
	for i, c := range cs {
		out[i] = &commentResolver{c}
	}
	return out
}

func (r *commentResolver) ID() int32             { return int32(r.c.ID) }
func (r *commentResolver) FileID() int32         { return int32(r.c.FileID) }
func (r *commentResolver) UserID() string        { return r.c.UserID }
func (r *commentResolver) ParentID() *int32      { return int32Ptr(r.c.ParentID) }
func (r *commentResolver) Body() string          { return r.c.Body }
func (r *commentResolver) IsResolved() bool      { return r.c.IsResolved }
func (r *commentResolver) CreatedAt() gqlgo.Time { return gqlgo.Time{Time: r.c.CreatedAt} }
func (r *commentResolver) UpdatedAt() gqlgo.Time { return gqlgo.Time{Time: r.c.UpdatedAt} }
func (r *commentResolver) Replies() []*commentResolver {
	return commentResolvers(r.c.Replies)
}

func (r *commentResolver) Mentions() []string {
	if r.c.Mentions == nil {
		return []string{}
	}
	return r.c.Mentions
}

type pipelineResolver struct{ p *docflow.Pipeline }

func (r *pipelineResolver) ID() int32             { return int32(r.p.ID) }
func (r *pipelineResolver) OwnerID() *string      { return r.p.OwnerID }
func (r *pipelineResolver) Name() string          { return r.p.Name }
func (r *pipelineResolver) Description() string   { return r.p.Description }
func (r *pipelineResolver) IsDefault() bool       { return r.p.IsDefault }
func (r *pipelineResolver) IsActive() bool        { return r.p.IsActive }
func (r *pipelineResolver) CreatedAt() gqlgo.Time { return gqlgo.Time{Time: r.p.CreatedAt} }
func (r *pipelineResolver) UpdatedAt() gqlgo.Time { return gqlgo.Time{Time: r.p.UpdatedAt} }
func (r *pipelineResolver) Steps() []*stepResolver {
	out := make([]*stepResolver, len(r.p.Steps))
	for i, s := range r.p.Steps {
		out[i] = &stepResolver{s}
	}
	return out
}

type stepResolver struct{ s *docflow.PipelineStep }

func (r *stepResolver) ID() int32        { return int32(r.s.ID) }
func (r *stepResolver) Position() int32  { return int32(r.s.Position) }
func (r *stepResolver) StepType() string { return r.s.StepType }
func (r *stepResolver) Label() string    { return r.s.Label }
func (r *stepResolver) Enabled() bool    { return r.s.Enabled }
func (r *stepResolver) Config() *JSON {
	if r.s.Config == nil {
		return nil
	}
	return &JSON{r.s.Config}
}

type settingResolver struct{ s *docflow.Setting }

func (r *settingResolver) Key() string         { return r.s.Key }
func (r *settingResolver) Value() string       { return r.s.Value }
func (r *settingResolver) Source() string      { return r.s.Source }
func (r *settingResolver) Category() string    { return r.s.Category }
func (r *settingResolver) Description() string { return r.s.Description }
func (r *settingResolver) Type() string        { return r.s.Type }
func (r *settingResolver) UpdatedAt() *gqlgo.Time {
	if r.s.UpdatedAt == nil {
		return nil
	}
	return &gqlgo.Time{Time: *r.s.UpdatedAt}
}

type userResolver struct{ p *docflow.UserProfile }

func (r *userResolver) UserID() string           { return r.p.UserID }
func (r *userResolver) DisplayName() *string     { return r.p.DisplayName }
func (r *userResolver) SubscriptionTier() string { return r.p.SubscriptionTier }
func (r *userResolver) IsBlocked() bool          { return r.p.IsBlocked }
func (r *userResolver) DocumentCount() int32     { return int32(r.p.DocumentCount) }
func (r *userResolver) DailyUploadLimit() *int32 {
	if r.p.DailyUploadLimit == nil {
		return nil
	}
	n := int32(*r.p.DailyUploadLimit)
	return &n
}

func (r *userResolver) LastUpload() *gqlgo.Time {
	if r.p.LastUpload == nil {
		return nil
	}
	return &gqlgo.Time{Time: *r.p.LastUpload}
}

// JSON is the JSON scalar: any JSON value, in and out.
type JSON struct{ Value any }

// ImplementsGraphQLType binds JSON to the schema's scalar JSON.
func (JSON) ImplementsGraphQLType(name string) bool { return name == "JSON" }

// UnmarshalGraphQL takes the value as the request gave it (a literal or
// a variable's decoded JSON).
func (j *JSON) UnmarshalGraphQL(input any) error {
	j.Value = input
	return nil
}

// MarshalJSON writes the value as JSON.
func (j JSON) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(j.Value)
	if err != nil {
		return nil, fmt.Errorf("JSON scalar: %w", err)
	}
	return b, nil
}
