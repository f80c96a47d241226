-- One user's listing (listvisible.go) reads their own files in order from
-- files_owner_created. An owner's files lie scattered across the heap
-- among everyone else's, so each row of a page cost a heap page of its
-- own: 28 buffers for a page of 25, against 2 for the single-user
-- listing, whose newest files lie together. Carrying the columns a
-- listing shows (summaryCols) in the index makes that half an index-only
-- scan: 4 buffers.
--
-- NOTE: no update becomes non-HOT through this: status, the one listed
-- column that changes often, is indexed already (files_status_created).

CREATE INDEX files_owner_created_cover ON files (owner_id, created_at DESC, id DESC)
    INCLUDE (original_filename, file_size, mime_type, status, task_id);
DROP INDEX files_owner_created;
ALTER INDEX files_owner_created_cover RENAME TO files_owner_created;
