-- Sharing, comments and annotations.
--
-- Deleting a comment deletes its replies (ON DELETE CASCADE on parent_id):
-- the cascade looks replies up by parent.
CREATE INDEX comments_parent ON comments (parent_id) WHERE parent_id IS NOT NULL;

-- The roles of the spec's table are the only ones a share may carry.
ALTER TABLE shares ADD CONSTRAINT shares_role CHECK (role IN ('viewer', 'editor'));
