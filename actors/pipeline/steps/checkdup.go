package steps

import (
	"context"
	"fmt"

	"docflow"
)

// Originals finds the original of a file's content.
type Originals interface {
	// FindOriginal returns the oldest other non-duplicate file with the
	// hash, or ENOTFOUND.
	FindOriginal(ctx context.Context, hash string, except int64) (*docflow.File, error)
}

// CheckDuplicates is the check_duplicates step: a file whose content
// another file already has becomes a duplicate of it and its run ends
// there. With deduplication off (dedup returns false) the match is only
// logged and processing goes on.
func CheckDuplicates(originals Originals, dedup func() bool) docflow.Step {
	if originals == nil {
		panic("steps: CheckDuplicates needs Originals")
	}
	if dedup == nil {
		dedup = func() bool { return true }
	}
	return docflow.StepFunc{Name: docflow.StepCheckDuplicates, Fn: func(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
		f := in.File
		if f.FileHash == "" {
			return &docflow.StepResult{Skipped: true, Message: "No content hash recorded"}, nil
		}
		orig, err := originals.FindOriginal(ctx, f.FileHash, f.ID)
		if docflow.ErrorCode(err) == docflow.ENOTFOUND {
			return &docflow.StepResult{Message: "No duplicate found"}, nil
		} else if err != nil {
			return nil, fmt.Errorf("check duplicates: %w", err)
		}
		if orig.ID > f.ID && f.DuplicateOf == nil {
			// The other file came later: this one is the original.
			return &docflow.StepResult{Message: fmt.Sprintf("Original of file %d", orig.ID)}, nil
		}
		if !dedup() {
			return &docflow.StepResult{Message: fmt.Sprintf("Identical to file %d (%s); deduplication is off", orig.ID, orig.OriginalFilename)}, nil
		}
		id := orig.ID
		f.DuplicateOf = &id
		f.Status = docflow.StatusDuplicate
		return &docflow.StepResult{Stop: true, Message: fmt.Sprintf("Duplicate of file %d (%s)", orig.ID, orig.OriginalFilename)}, nil
	}}
}
