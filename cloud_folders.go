package docflow

// CloudFolder is one folder the cloud folder browser lists
// (POST /api/<provider>/list-folders).
type CloudFolder struct {
	Name string
	// Path is what the browser sends back as path to list this folder's
	// own folders: a path for Dropbox and OneDrive, the folder's id for
	// Google Drive (which has no paths).
	Path string
	ID   string
	// ChildCount is how many items the folder holds, where the provider
	// says (OneDrive); -1 when it does not.
	ChildCount int64
}

// CloudFolderPage is one answer of the cloud folder browser: the folders
// directly inside Path, and whether the provider holds more entries than
// it returned.
type CloudFolderPage struct {
	Folders []CloudFolder
	Path    string
	HasMore bool
}

// AuditFileSendToCloud is the audit action of POST /send_to_<provider>/:
// a document queued for one of its caller's cloud destinations.
const AuditFileSendToCloud = "file.send_to_cloud"
