// Comments: threads (a comment and its replies), a reply form per
// thread, resolve / reopen, delete by the author, and @mention completion.
import { useState } from 'preact/hooks';
import { api } from '../../lib/api.js';
import { date } from '../../lib/format.js';
import { session } from '../../lib/session.js';
import { useFetch } from '../../lib/use.js';
import { MentionInput } from '../../components/mention.jsx';
import { notify } from '../../components/notices.jsx';
import { Failure } from '../../components/page.jsx';

// Body renders a comment's text with its @mentions emphasised (as text).
function Body({ text }) {
  const parts = String(text).split(/(@[^\s@]+(?:@[^\s@]+)?)/g);
  return <p class="comment-body">{parts.map((p, i) => (i % 2 ? <strong key={i} class="mention-ref">{p}</strong> : p))}</p>;
}

function Composer({ fileID, parentID, onPosted, label }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const id = 'c-new-' + (parentID || 'top');
  const post = async (e) => {
    e.preventDefault();
    if (!text.trim()) return;
    setBusy(true);
    try {
      const c = await api.post(`/api/files/${fileID}/comments`, { body: text, parent_id: parentID || null });
      setText('');
      if (c && c.not_notified && c.not_notified.length) notify('Not notified (no access): ' + c.not_notified.join(', '), 'error');
      onPosted();
    } catch (err) {
      notify('The comment was not posted: ' + (err.detail || err.message), 'error');
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="composer" onSubmit={post}>
      <MentionInput id={id} label={label} value={text} onInput={setText} placeholder="Type @ to mention someone" rows={parentID ? 2 : 3} />
      <button type="submit" disabled={busy || !text.trim()}>{parentID ? 'Reply' : 'Comment'}</button>
    </form>
  );
}

function Comment({ c, fileID, reload, canComment, depth }) {
  const [replying, setReplying] = useState(false);
  const mine = c.user_id === session.id;
  const act = (fn, what) => async () => {
    try {
      await fn();
      reload();
    } catch (err) {
      notify(what + ' failed: ' + (err.detail || err.message), 'error');
    }
  };
  return (
    <li class={'comment' + (c.is_resolved ? ' resolved' : '')}>
      <article aria-label={'Comment by ' + c.user_id}>
        <header class="comment-head">
          <strong>{c.user_id}</strong> <span class="muted">{date(c.created_at)}</span>
          {c.is_resolved && <span class="chip">resolved</span>}
        </header>
        <Body text={c.body} />
        <div class="comment-actions">
          {canComment && depth === 0 && <button type="button" class="link" onClick={() => setReplying(!replying)} aria-expanded={replying ? 'true' : 'false'}>Reply</button>}
          {canComment && depth === 0 && (
            <button type="button" class="link" onClick={act(() => api.patch(`/api/files/${fileID}/comments/${c.id}/resolve`, { is_resolved: !c.is_resolved }), 'Resolving')}>
              {c.is_resolved ? 'Reopen' : 'Resolve'}
            </button>
          )}
          {mine && <button type="button" class="link" onClick={act(() => api.del(`/api/files/${fileID}/comments/${c.id}`), 'Deleting')}>Delete</button>}
        </div>
      </article>
      {c.replies && c.replies.length > 0 && (
        <ul class="replies">
          {c.replies.map((r) => <Comment key={r.id} c={r} fileID={fileID} reload={reload} canComment={canComment} depth={depth + 1} />)}
        </ul>
      )}
      {replying && <Composer fileID={fileID} parentID={c.id} label={'Reply to ' + c.user_id} onPosted={() => { setReplying(false); reload(); }} />}
    </li>
  );
}

export function Comments({ fileID, canComment }) {
  const list = useFetch(() => api.get(`/api/files/${fileID}/comments`), [fileID]);
  const comments = (list.data && list.data.comments) || [];
  return (
    <div>
      <Failure error={list.error} retry={list.reload} />
      {comments.length === 0 && !list.loading && <p class="muted">No comments yet.</p>}
      <ul class="comments">
        {comments.map((c) => <Comment key={c.id} c={c} fileID={fileID} reload={list.reload} canComment={canComment} depth={0} />)}
      </ul>
      {canComment && <Composer fileID={fileID} label="New comment" onPosted={list.reload} />}
    </div>
  );
}
