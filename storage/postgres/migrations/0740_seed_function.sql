-- What a fresh database holds before anyone uses it, as a function: the
-- system reset (storage/postgres/reset.go) empties every content table and
-- runs it again, so a reset database is the one a first start makes.
-- Idempotent: it adds only what is missing. Migration 0001 seeded the same
-- rows once; this migration does not call it, so an upgrade never brings
-- back a pipeline an administrator deleted. A new seed row goes here.
CREATE OR REPLACE FUNCTION docflow_seed() RETURNS void AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pipelines WHERE owner_id IS NULL AND name = 'Standard Processing Pipeline') THEN
        INSERT INTO pipelines (owner_id, name, description, is_default, is_active)
        VALUES (NULL, 'Standard Processing Pipeline',
                'Convert, deduplicate, OCR, extract metadata, classify, embed metadata, compute embedding, deliver.',
                NOT EXISTS (SELECT 1 FROM pipelines WHERE owner_id IS NULL AND is_default), TRUE);
        INSERT INTO pipeline_steps (pipeline_id, position, step_type, label, enabled, config)
        SELECT p.id, s.pos - 1, s.step_type, s.label, TRUE, '{}'
        FROM pipelines p,
             (VALUES (1, 'convert_to_pdf', 'Convert to PDF'),
                     (2, 'check_duplicates', 'Check duplicates'),
                     (3, 'ocr', 'OCR'),
                     (4, 'extract_metadata', 'Extract metadata'),
                     (5, 'classify', 'Classify'),
                     (6, 'embed_metadata', 'Embed metadata'),
                     (7, 'compute_embedding', 'Compute embedding'),
                     (8, 'send_to_destinations', 'Send to destinations')) AS s(pos, step_type, label)
        WHERE p.name = 'Standard Processing Pipeline' AND p.owner_id IS NULL;
    END IF;
END;
$$ LANGUAGE plpgsql;
