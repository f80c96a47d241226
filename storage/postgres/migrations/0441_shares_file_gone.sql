-- A share of a file deleted meanwhile is refused as the foreign key would
-- refuse it (23503, "file not found"), not by the NOT NULL of the date the
-- trigger could not find.
CREATE OR REPLACE FUNCTION shares_set_file_created_at() RETURNS trigger AS $$
BEGIN
    SELECT created_at INTO NEW.file_created_at FROM files WHERE id = NEW.file_id;
    IF NOT FOUND THEN
        RAISE foreign_key_violation USING MESSAGE = format('file %s not found', NEW.file_id);
    END IF;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;
