package http

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"docflow"
)

func TestCommentsThreadsAndAuthors(t *testing.T) {
	t.Parallel()
	ce := newCollabEnv(t, multiUser())
	alice, bob, carol := ce.token("alice"), ce.token("bob"), ce.token("carol")
	f, other := ce.file("alice"), ce.file("alice")
	base := fmt.Sprintf("/api/files/%d", f)
	ce.call("POST", base+"/shares", alice, map[string]any{"shared_with_user_id": "bob", "role": "editor"}, 201)
	ce.call("POST", base+"/shares", alice, map[string]any{"shared_with_user_id": "carol", "role": "viewer"}, 201)

	unicode := "Prüfung ✓ — 日本語 🙂 \"quoted\" <b>not html</b>\n\ttabbed"
	top := ce.call("POST", base+"/comments", alice, map[string]any{"body": unicode}, 201)
	if top["body"] != unicode || top["parent_id"] != nil || top["is_resolved"] != false || top["user_id"] != "alice" {
		t.Fatalf("comment %v", top)
	}
	topID := int64(top["id"].(float64))
	reply := ce.call("POST", base+"/comments", bob, map[string]any{"body": "a reply", "parent_id": topID}, 201)
	replyID := int64(reply["id"].(float64))
	ce.call("POST", base+"/comments", alice, map[string]any{"body": "reply to reply", "parent_id": replyID}, 201)
	ce.call("POST", base+"/comments", bob, map[string]any{"body": "second thread"}, 201)

	// A viewer reads but may not comment.
	resp, b := ce.do("GET", base+"/comments", carol, nil)
	ce.expect(resp, b, 200)
	var list struct {
		FileID   int64              `json:"file_id"`
		Comments []*docflow.Comment `json:"comments"`
		Total    int                `json:"total"`
	}
	decode(t, b, &list)
	if list.FileID != f || list.Total != 4 || len(list.Comments) != 2 || list.Comments[0].Body != unicode ||
		len(list.Comments[0].Replies) != 1 || len(list.Comments[0].Replies[0].Replies) != 1 ||
		list.Comments[1].Body != "second thread" || list.Comments[1].Replies == nil {
		t.Fatalf("thread %s", b)
	}
	ce.call("POST", base+"/comments", carol, map[string]any{"body": "may I?"}, 403)

	// Only the author edits or deletes; the owner and editors resolve.
	ce.call("PUT", fmt.Sprintf("%s/comments/%d", base, topID), bob, map[string]any{"body": "hijack"}, 403)
	ce.call("DELETE", fmt.Sprintf("%s/comments/%d", base, topID), bob, nil, 403)
	ce.call("PUT", fmt.Sprintf("%s/comments/%d", base, replyID), carol, map[string]any{"body": "x"}, 403)
	ed := ce.call("PUT", fmt.Sprintf("%s/comments/%d", base, topID), alice, map[string]any{"body": "edited"}, 200)
	if ed["body"] != "edited" {
		t.Fatalf("edit %v", ed)
	}
	r := ce.call("PATCH", fmt.Sprintf("%s/comments/%d/resolve", base, topID), bob, map[string]any{"is_resolved": true}, 200)
	if r["is_resolved"] != true {
		t.Fatalf("resolve %v", r)
	}
	r = ce.call("PATCH", fmt.Sprintf("%s/comments/%d/resolve", base, topID), alice, map[string]any{"is_resolved": false}, 200)
	if r["is_resolved"] != false {
		t.Fatalf("reopen %v", r)
	}
	ce.call("PATCH", fmt.Sprintf("%s/comments/%d/resolve", base, topID), carol, map[string]any{"is_resolved": true}, 403)
	ce.call("PATCH", fmt.Sprintf("%s/comments/%d/resolve", base, topID), alice, map[string]any{}, 422)
	ce.call("PATCH", fmt.Sprintf("%s/comments/%d/resolve", base, topID), alice, map[string]any{"is_resolved": "yes"}, 422)

	// Unknown comments, and comments of another file, are 404.
	ce.call("PUT", fmt.Sprintf("%s/comments/999999", base), alice, map[string]any{"body": "x"}, 404)
	ce.call("DELETE", fmt.Sprintf("%s/comments/999999", base), alice, nil, 404)
	ce.call("PATCH", fmt.Sprintf("%s/comments/999999/resolve", base), alice, map[string]any{"is_resolved": true}, 404)
	ce.call("PUT", fmt.Sprintf("/api/files/%d/comments/%d", other, topID), alice, map[string]any{"body": "x"}, 404)
	ce.call("GET", "/api/files/999999/comments", alice, nil, 404)
	// A parent must be a comment of the same file.
	resp, b = ce.do("POST", fmt.Sprintf("/api/files/%d/comments", other), alice, map[string]any{"body": "x", "parent_id": topID})
	ce.expect(resp, b, 422)
	if !strings.Contains(string(b), `"field":"parent_id"`) {
		t.Fatalf("parent error %s", b)
	}
	ce.call("POST", base+"/comments", alice, map[string]any{"body": "x", "parent_id": 999999}, 422)

	// Deleting a comment deletes its replies.
	ce.call("DELETE", fmt.Sprintf("%s/comments/%d", base, topID), alice, nil, 204)
	resp, b = ce.do("GET", base+"/comments", alice, nil)
	decode(t, b, &list)
	if list.Total != 1 || list.Comments[0].Body != "second thread" {
		t.Fatalf("after delete %s", b)
	}
}

func TestCommentBodyLimits(t *testing.T) {
	t.Parallel()
	ce := newCollabEnv(t, multiUser())
	alice := ce.token("alice")
	base := fmt.Sprintf("/api/files/%d", ce.file("alice"))
	// Exactly 10,000 characters, many of them multi-byte, are kept exactly.
	full := strings.Repeat("é", 5000) + strings.Repeat("a", 4999) + "🙂"
	if utf8.RuneCountInString(full) != docflow.MaxCommentLength {
		t.Fatal("bad fixture")
	}
	c := ce.call("POST", base+"/comments", alice, map[string]any{"body": full}, 201)
	if c["body"] != full {
		t.Fatal("body not returned exactly")
	}
	for _, tc := range []struct {
		body  any
		field string
	}{
		{map[string]any{"body": full + "x"}, "body"},
		{map[string]any{"body": strings.Repeat("a", 10*1024+1)}, "body"},
		{map[string]any{"body": ""}, "body"},
		{map[string]any{"body": " \n\t "}, "body"},
		{map[string]any{}, "body"},
		{map[string]any{"body": 42}, "body"},
		{map[string]any{"body": "x", "parent_id": "one"}, "parent_id"},
		{map[string]any{"body": "x", "parent_id": 0}, "parent_id"},
		{`{"body": `, ""},
		{`"just a string"`, ""},
	} {
		resp, b := ce.do("POST", base+"/comments", alice, tc.body)
		ce.expect(resp, b, 422)
		if tc.field != "" && !strings.Contains(string(b), `"field":"`+tc.field+`"`) {
			t.Errorf("%.60v: %s does not name %s", tc.body, b, tc.field)
		}
	}
	ce.call("PUT", fmt.Sprintf("%s/comments/%d", base, int64(c["id"].(float64))), alice, map[string]any{"body": full + "x"}, 422)
}

func TestCommentMentionsOutsideMultiUserModeGrantNothing(t *testing.T) {
	t.Parallel()
	ce := newCollabEnv(t, map[string]string{"AUTH_ENABLED": "true"})
	ce.localUser("carol@example.com", "carol")
	f := ce.file("alice")
	c := ce.call("POST", fmt.Sprintf("/api/files/%d/comments", f), ce.token("alice"), map[string]any{"body": "hi @carol"}, 201)
	if fmt.Sprint(c["mentions"]) != "[carol@example.com]" {
		t.Fatalf("mentions %v", c["mentions"])
	}
	if n := countRows(ce.testEnv, `SELECT count(*) FROM shares`); n != 0 {
		t.Fatalf("%d shares", n)
	}
}
