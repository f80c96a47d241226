package http

import (
	"context"
	"fmt"
	"sort"
	"testing"
)

// The @mentions of comments, in multi-user mode: the owner's (and an
// administrator's) give viewer access for as long as a comment mentions
// the user; anyone else's reach only who may already see the file.

// mentionEnv is a collabEnv with the users the mention tests name: alice
// owns the file, bob edits it, vic views it; carol, erin and dave have no
// access; sso@corp.example is a profile without a local account.
func mentionEnv(t *testing.T) (*collabEnv, int64, map[string]string) {
	ce := newCollabEnv(t, multiUser())
	ctx := context.Background()
	for _, u := range []string{"alice", "bob", "carol", "erin", "dave", "vic"} {
		ce.localUser(u+"@example.com", u)
	}
	ce.DB.Pool.Exec(ctx, `INSERT INTO user_profiles (user_id, display_name) VALUES ('sso@corp.example', 'S. So'), ('alice@example.com', 'Alice')`) //nolint:errcheck
	ce.DB.Pool.Exec(ctx, `INSERT INTO user_profiles (user_id, is_blocked) VALUES ('blocked@example.com', true)`)                                   //nolint:errcheck
	ce.DB.Pool.Exec(ctx, `INSERT INTO local_users (email, username, password_hash) VALUES ('blocked@example.com', 'blk', 'x')`)                    //nolint:errcheck
	tokens := map[string]string{}
	for _, u := range []string{"alice", "bob", "carol", "vic", "dave", "erin"} {
		tokens[u] = ce.token(u + "@example.com")
	}
	tokens["admin"] = ce.token("admin")
	f := ce.file("alice@example.com")
	base := fmt.Sprintf("/api/files/%d", f)
	ce.call("POST", base+"/shares", tokens["alice"], map[string]any{"shared_with_user_id": "bob@example.com", "role": "editor"}, 201)
	ce.call("POST", base+"/shares", tokens["alice"], map[string]any{"shared_with_user_id": "vic@example.com", "role": "viewer"}, 201)
	return ce, f, tokens
}

// shareRoles reads who has which role on file f.
func (ce *collabEnv) shareRoles(f int64) string {
	ce.t.Helper()
	rows, err := ce.DB.Pool.Query(context.Background(), `SELECT shared_with_user_id || ':' || role FROM shares WHERE file_id=$1`, f)
	if err != nil {
		ce.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		rows.Scan(&s) //nolint:errcheck
		out = append(out, s)
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

// TestOwnerMentionsGrantViewerAccess: the owner's mentions give each
// mentioned user without access a viewer share, audited; existing shares
// and the owner are left alone; blocked and unknown names are no mentions.
func TestOwnerMentionsGrantViewerAccess(t *testing.T) {
	t.Parallel()
	ce, f, tok := mentionEnv(t)
	base := fmt.Sprintf("/api/files/%d", f)
	body := "@Carol and @sso@corp.example, see p. 2 (cc @bob, @nobody, @blk, @alice@example.com, @ghost@example.com). Mail me: x@y.org."
	c := ce.call("POST", base+"/comments", tok["alice"], map[string]any{"body": body}, 201)
	if got := fmt.Sprint(c["mentions"]); got != "[carol@example.com sso@corp.example bob@example.com alice@example.com]" {
		t.Fatalf("mentions %s", got)
	}
	if got := fmt.Sprint(c["not_notified"]); got != "[]" {
		t.Fatalf("not notified %s", got)
	}
	if got := ce.shareRoles(f); got != "[bob@example.com:editor carol@example.com:viewer sso@corp.example:viewer vic@example.com:viewer]" {
		t.Fatalf("shares %s", got)
	}
	ce.call("GET", base+"/comments", tok["carol"], nil, 200)
	ce.call("POST", base+"/comments", tok["carol"], map[string]any{"body": "thanks"}, 403)
	// An edit that mentions someone new grants them too; an administrator's
	// mention grants as the owner's does.
	ce.call("PUT", fmt.Sprintf("%s/comments/%d", base, int64(c["id"].(float64))), tok["alice"], map[string]any{"body": "now @erin and @carol"}, 200)
	ce.call("POST", base+"/comments", tok["admin"], map[string]any{"body": "@dave have a look"}, 201)
	if got := ce.shareRoles(f); got != "[bob@example.com:editor carol@example.com:viewer dave@example.com:viewer erin@example.com:viewer vic@example.com:viewer]" {
		t.Fatalf("shares after the edit and the admin's mention %s", got)
	}
	if n := countRows(ce.testEnv, `SELECT count(*) FROM audit_log WHERE action='share.create' AND detail LIKE '%mentioned in comment%'`); n != 4 {
		t.Fatalf("%d mention grants audited, want 4", n)
	}
}

// TestEditorMentionsNotifyOnlyReaders: an editor's mention reaches the
// users who may see the file (the owner, a viewer, an administrator) and
// grants nobody access; the others come back as not_notified, on a new
// comment and on an edit.
func TestEditorMentionsNotifyOnlyReaders(t *testing.T) {
	t.Parallel()
	ce, f, tok := mentionEnv(t)
	base := fmt.Sprintf("/api/files/%d", f)
	c := ce.call("POST", base+"/comments", tok["bob"], map[string]any{"body": "@carol @alice @vic @admin @bob @sso@corp.example please look"}, 201)
	if got := fmt.Sprint(c["mentions"]); got != "[alice@example.com vic@example.com bob@example.com]" {
		t.Fatalf("mentions %s", got)
	}
	if got := fmt.Sprint(c["not_notified"]); got != "[carol@example.com sso@corp.example]" {
		t.Fatalf("not notified %s", got)
	}
	ed := ce.call("PUT", fmt.Sprintf("%s/comments/%d", base, int64(c["id"].(float64))), tok["bob"], map[string]any{"body": "@erin @vic"}, 200)
	if fmt.Sprint(ed["mentions"]) != "[vic@example.com]" || fmt.Sprint(ed["not_notified"]) != "[erin@example.com]" {
		t.Fatalf("edited: mentions %v, not notified %v", ed["mentions"], ed["not_notified"])
	}
	if got := ce.shareRoles(f); got != "[bob@example.com:editor vic@example.com:viewer]" {
		t.Fatalf("an editor's mentions changed the shares: %s", got)
	}
	for _, u := range []string{"carol", "erin"} {
		ce.call("GET", base+"/shared-with", tok[u], nil, 403)
		ce.call("GET", base+"/comments", tok[u], nil, 403)
	}
	if n := countRows(ce.testEnv, `SELECT count(*) FROM audit_log WHERE action='share.create'`); n != 2 {
		t.Fatalf("%d shares audited, want the owner's two", n)
	}
}

// TestMentionGrantEndsWithItsComment: access a mention gave lasts while a
// comment whose mention gave it exists and still mentions the user; a
// share the owner made meanwhile stays.
func TestMentionGrantEndsWithItsComment(t *testing.T) {
	t.Parallel()
	ce, f, tok := mentionEnv(t)
	base := fmt.Sprintf("/api/files/%d", f)
	id := func(c map[string]any) int64 { return int64(c["id"].(float64)) }
	// Carol is mentioned by two comments, dave by a reply to the first,
	// erin by the second.
	c1 := ce.call("POST", base+"/comments", tok["alice"], map[string]any{"body": "@carol first"}, 201)
	ce.call("POST", base+"/comments", tok["alice"], map[string]any{"body": "@dave in a reply", "parent_id": id(c1)}, 201)
	c2 := ce.call("POST", base+"/comments", tok["alice"], map[string]any{"body": "@carol @erin second"}, 201)
	if got := ce.shareRoles(f); got != "[bob@example.com:editor carol@example.com:viewer dave@example.com:viewer erin@example.com:viewer vic@example.com:viewer]" {
		t.Fatalf("shares %s", got)
	}
	// The owner shares the file with erin herself: that share is hers to end.
	ce.call("POST", base+"/shares", tok["alice"], map[string]any{"shared_with_user_id": "erin@example.com", "role": "viewer"}, 201)

	// Deleting the first comment ends dave's access (its reply mentioned
	// him); carol's stays, the second comment still mentions her.
	ce.call("DELETE", fmt.Sprintf("%s/comments/%d", base, id(c1)), tok["alice"], nil, 204)
	if got := ce.shareRoles(f); got != "[bob@example.com:editor carol@example.com:viewer erin@example.com:viewer vic@example.com:viewer]" {
		t.Fatalf("shares after deleting the first comment %s", got)
	}
	ce.call("GET", base+"/shared-with", tok["dave"], nil, 403)
	// Edited so that it no longer mentions carol, the second comment ends
	// hers.
	ce.call("PUT", fmt.Sprintf("%s/comments/%d", base, id(c2)), tok["alice"], map[string]any{"body": "@erin second"}, 200)
	if got := ce.shareRoles(f); got != "[bob@example.com:editor erin@example.com:viewer vic@example.com:viewer]" {
		t.Fatalf("shares after the edit %s", got)
	}
	ce.call("GET", base+"/shared-with", tok["carol"], nil, 403)
	// Erin's share is the owner's now: deleting the comment leaves it.
	ce.call("DELETE", fmt.Sprintf("%s/comments/%d", base, id(c2)), tok["alice"], nil, 204)
	if got := ce.shareRoles(f); got != "[bob@example.com:editor erin@example.com:viewer vic@example.com:viewer]" {
		t.Fatalf("shares after deleting the second comment %s", got)
	}
	ce.call("GET", base+"/shared-with", tok["erin"], nil, 200)
	if n := countRows(ce.testEnv, `SELECT count(*) FROM audit_log WHERE action='share.delete' AND detail LIKE '%mention grant ended%'`); n != 2 {
		t.Fatalf("%d ended grants audited, want 2 (dave, carol)", n)
	}
}
