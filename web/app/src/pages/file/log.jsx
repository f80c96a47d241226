// The processing log: each step of the latest runs with its status and
// how long it took (from its first to its last entry; a step with one
// entry took until the next step's first).
import { date, ms } from '../../lib/format.js';

// stepsOf groups the chronological log into steps per task.
export function stepsOf(logs) {
  const steps = [];
  const byKey = new Map();
  for (const l of logs || []) {
    const key = (l.task_id || '') + '\u0000' + l.step_name;
    let s = byKey.get(key);
    if (!s) {
      s = { key, task: l.task_id, name: l.step_name, first: l.timestamp, last: l.timestamp, status: l.status, message: l.message, entries: 0 };
      byKey.set(key, s);
      steps.push(s);
    }
    s.last = l.timestamp;
    s.status = l.status;
    if (l.message) s.message = l.message;
    s.entries++;
  }
  steps.forEach((s, i) => {
    let end = Date.parse(s.last);
    if (s.entries === 1 && steps[i + 1] && steps[i + 1].task === s.task) end = Date.parse(steps[i + 1].first);
    s.duration = Math.max(0, end - Date.parse(s.first));
  });
  return steps;
}

export function ProcessingLog({ logs }) {
  const steps = stepsOf(logs);
  if (steps.length === 0) return <p class="muted">No processing steps recorded yet.</p>;
  return (
    <div class="table-wrap">
      <table class="log">
        <caption class="sr">Processing steps</caption>
        <thead>
          <tr><th scope="col">Step</th><th scope="col">Status</th><th scope="col" class="num">Took</th><th scope="col">Started</th><th scope="col">Message</th></tr>
        </thead>
        <tbody>
          {steps.map((s) => (
            <tr key={s.key}>
              <td>{s.name}</td>
              <td class={'status-' + s.status}>{s.status}</td>
              <td class="num">{ms(s.duration)}</td>
              <td>{date(s.first)}</td>
              <td class="msg">{s.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
