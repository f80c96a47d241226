-- The viewer shares @mentions gave, and the comments whose mentions hold
-- them. Only a mention by someone who may share the file (its owner or an
-- administrator) gives access; the access lasts while a comment whose
-- mention granted it exists and still mentions the user. A share with
-- rows here is such a grant: when its last row goes (the comment is
-- deleted, or edited so that it no longer mentions the user), the share
-- goes too. A share the owner makes or changes through the shares API
-- loses its rows: it is the owner's from then on and stays.
CREATE TABLE IF NOT EXISTS share_mentions (
    share_id   BIGINT NOT NULL REFERENCES shares(id) ON DELETE CASCADE,
    comment_id BIGINT NOT NULL REFERENCES comments(id) ON DELETE CASCADE,
    PRIMARY KEY (share_id, comment_id)
);
CREATE INDEX IF NOT EXISTS share_mentions_comment ON share_mentions (comment_id);

-- Shares mentions gave before this migration, recognised by what the
-- grant wrote: a viewer share created in the comment's own transaction
-- (its created_at is the comment's updated_at at the time) and unchanged
-- since, for a user the comment mentions. A grant whose comment was edited
-- later is not recognised and stays as an ordinary share.
INSERT INTO share_mentions (share_id, comment_id)
    SELECT s.id, c.id
    FROM shares s
    JOIN comments c ON c.file_id = s.file_id AND s.shared_with_user_id = ANY (c.mentions) AND c.updated_at = s.created_at
    WHERE s.role = 'viewer' AND s.updated_at = s.created_at
ON CONFLICT DO NOTHING;
