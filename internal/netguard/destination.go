package netguard

import (
	"errors"

	"docflow"
)

// DestFailure classes a failed connection of a destination client
// (docflow.DestinationError) with Describe's words as its reason: an
// address the allow-list refuses is DestForbidden (only an administrator
// can change that), anything else DestUnavailable (another attempt may
// get through). A DestinationError already in err's chain is returned as
// it is; nil stays nil.
func DestFailure(err error) error {
	if err == nil {
		return nil
	}
	var de *docflow.DestinationError
	if errors.As(err, &de) {
		return err
	}
	class := docflow.DestUnavailable
	if errors.Is(err, ErrPrivate) {
		class = docflow.DestForbidden
	}
	return docflow.DestFail(class, Describe(err), err)
}
