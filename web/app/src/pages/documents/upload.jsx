// Upload: a drop zone (and a file picker, for the keyboard) taking many
// files at once; each is sent to POST /api/ui-upload with its own progress
// bar, three at a time.
import { useRef, useState } from 'preact/hooks';
import { upload } from '../../lib/api.js';
import { bytes } from '../../lib/format.js';

const parallel = 3;
let nextID = 0;

export function Upload({ onUploaded }) {
  const [items, setItems] = useState([]);
  const [over, setOver] = useState(false);
  const input = useRef(null);
  const queue = useRef([]);
  const running = useRef(0);

  const update = (id, patch) => setItems((xs) => xs.map((x) => (x.id === id ? { ...x, ...patch } : x)));

  const pump = () => {
    while (running.current < parallel && queue.current.length > 0) {
      const item = queue.current.shift();
      running.current++;
      update(item.id, { state: 'sending' });
      const u = upload('/api/ui-upload', item.file, (sent, total) => update(item.id, { sent, total }));
      u.promise
        .then((r) => {
          const dup = r && r.status === 'duplicate';
          update(item.id, { state: dup ? 'duplicate' : 'done', sent: item.file.size, message: dup ? 'Already here: ' + ((r.duplicate_of && r.duplicate_of.original_filename) || '') : 'Uploaded' });
          onUploaded && onUploaded(r);
        })
        .catch((err) => update(item.id, { state: 'failed', message: err.detail || err.message }))
        .finally(() => {
          running.current--;
          pump();
        });
    }
  };

  const add = (fileList) => {
    const files = Array.from(fileList || []);
    if (files.length === 0) return;
    const fresh = files.map((file) => ({ id: ++nextID, file, name: file.name, size: file.size, sent: 0, total: file.size, state: 'waiting', message: '' }));
    setItems((xs) => [...fresh, ...xs.filter((x) => x.state === 'sending' || x.state === 'waiting' || x.state === 'failed').slice(0, 50)]);
    queue.current.push(...fresh);
    pump();
  };

  const onDrop = (e) => {
    e.preventDefault();
    setOver(false);
    add(e.dataTransfer && e.dataTransfer.files);
  };

  return (
    <section class="upload" aria-labelledby="h-upload">
      <h2 id="h-upload" class="sr">Upload</h2>
      <div
        class={over ? 'dropzone over' : 'dropzone'}
        id="dropzone"
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={onDrop}
      >
        <p>Drop files here to upload them, or</p>
        <label class="button" for="upload-input">Choose files</label>
        <input id="upload-input" ref={input} class="sr" type="file" multiple onChange={(e) => { add(e.currentTarget.files); e.currentTarget.value = ''; }} />
      </div>
      {items.length > 0 && (
        <ul class="uploads" aria-label="Uploads">
          {items.map((it) => (
            <li key={it.id} class={'upload-item ' + it.state}>
              <span class="upload-name">{it.name}</span>
              <progress max={it.total || 1} value={it.sent} aria-label={'Upload of ' + it.name}></progress>
              <span class="upload-state">{it.state === 'sending' ? `${bytes(it.sent)} of ${bytes(it.total)}` : it.state === 'waiting' ? 'Waiting' : it.message}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
