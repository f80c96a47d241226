-- The storage_provider filter matches the kinds of destination a document
-- was delivered to (local, webdav, s3…), which send_to_destinations
-- records; a document delivered to several has several. The single
-- storage_provider column, which nothing wrote, goes.
ALTER TABLE files ADD COLUMN IF NOT EXISTS storage_providers TEXT[] NOT NULL DEFAULT '{}';

-- Deliveries recorded before: the local folder, or an integration by id.
UPDATE files f SET storage_providers = d.providers
FROM (
    SELECT file_id, array_agg(DISTINCT provider ORDER BY provider) AS providers
    FROM (SELECT d.file_id, COALESCE(lower(i.integration_type), d.destination) AS provider
          FROM deliveries d LEFT JOIN integrations i ON i.id::text = d.destination
          WHERE d.status = 'delivered') x
    GROUP BY file_id
) d
WHERE f.id = d.file_id;

UPDATE files SET storage_providers = array_append(storage_providers, lower(storage_provider))
    WHERE storage_provider IS NOT NULL AND storage_provider <> ''
      AND NOT lower(storage_provider) = ANY(storage_providers);

ALTER TABLE files DROP COLUMN IF EXISTS storage_provider;

CREATE INDEX IF NOT EXISTS files_storage_providers ON files USING GIN (storage_providers);
