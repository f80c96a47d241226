package sftp

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/pkg/sftp"

	"docflow"
	"docflow/internal/netguard"
)

// Words of SFTP failures users see, beside netguard's classes: the
// client's own, and the names of the status codes the server answered
// (never its message text).
const (
	FailAuth      = "authentication failed (the server refused the username, password or key)"
	FailSubsystem = "the server does not offer SFTP to this account"
)

// statusWords are the SFTP status codes (draft-ietf-secsh-filexfer-13,
// 9.1) a refusal may carry: their class and the words shown.
var statusWords = map[uint32]struct {
	class docflow.DestinationFailure
	words string
}{
	2:  {docflow.DestForbidden, "no such file or folder (SSH_FX_NO_SUCH_FILE)"},
	3:  {docflow.DestForbidden, "permission denied (SSH_FX_PERMISSION_DENIED)"},
	4:  {docflow.DestUnavailable, "the server could not do it (SSH_FX_FAILURE)"},
	5:  {docflow.DestUnavailable, "the server did not understand a request (SSH_FX_BAD_MESSAGE)"},
	8:  {docflow.DestInvalid, "the server does not support an operation (SSH_FX_OP_UNSUPPORTED)"},
	10: {docflow.DestForbidden, "no such folder (SSH_FX_NO_SUCH_PATH)"},
	12: {docflow.DestForbidden, "the folder is read-only (SSH_FX_WRITE_PROTECT)"},
	14: {docflow.DestFull, "no space left on the server (SSH_FX_NO_SPACE_ON_FILESYSTEM)"},
	15: {docflow.DestFull, "quota exceeded (SSH_FX_QUOTA_EXCEEDED)"},
	19: {docflow.DestForbidden, "a part of the folder path is not a folder (SSH_FX_NOT_A_DIRECTORY)"},
	20: {docflow.DestInvalid, "the server refused the file name (SSH_FX_INVALID_FILENAME)"},
	24: {docflow.DestForbidden, "a folder is in the way of the file (SSH_FX_FILE_IS_A_DIRECTORY)"},
}

// classify turns an error of a connection or a request into a
// DestinationError: the server's SFTP status by its code's name, a
// refused login as DestAuth, a failed connection by netguard's words,
// and a failure of the document's own reader as what it is.
func classify(ctx context.Context, err error) error {
	var (
		de   *docflow.DestinationError
		st   *sftp.StatusError
		src  *sourceError
		sub  *subsystemError
		full errDiskFull
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		return err
	case errors.As(err, &src):
		return docflow.DestFail(docflow.DestUnavailable, "the document could not be read", err)
	case ctx.Err() != nil:
		return docflow.DestFail(docflow.DestUnavailable, netguard.Describe(ctx.Err()), err)
	case errors.Is(err, netguard.ErrPrivate):
		return docflow.DestFail(docflow.DestForbidden, netguard.FailPrivate, err)
	case strings.Contains(err.Error(), "ssh: unable to authenticate"):
		return docflow.DestFail(docflow.DestAuth, FailAuth, err)
	case errors.As(err, &sub) && netguard.Describe(sub.err) == netguard.FailOther:
		return docflow.DestFail(docflow.DestInvalid, FailSubsystem, err)
	case errors.As(err, &full):
		return docflow.DestFail(docflow.DestFull, "no space left on the server's disk (SSH_FX_FAILURE, and statvfs shows the disk full)", err)
	case errors.Is(err, os.ErrPermission):
		return docflow.DestFail(docflow.DestForbidden, statusWords[3].words, err)
	case errors.Is(err, os.ErrNotExist):
		return docflow.DestFail(docflow.DestForbidden, statusWords[2].words, err)
	case errors.As(err, &st):
		if w, ok := statusWords[st.Code]; ok {
			return docflow.DestFail(w.class, w.words, err)
		}
		return docflow.DestFail(docflow.DestUnavailable, "the server refused a request", err)
	}
	return docflow.DestFail(docflow.DestUnavailable, netguard.Describe(err), err)
}
