-- The document an Idempotency-Key's request recorded, written with the
-- document in one transaction while the key is still 'running': a process
-- killed between that commit and storing its answer leaves a key that
-- knows its document, and the client's retry is answered with it instead
-- of taking the upload in twice. No foreign key: a deleted document frees
-- the key for a new request.
ALTER TABLE idempotency_keys ADD COLUMN file_id BIGINT;
