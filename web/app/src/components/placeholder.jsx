// Placeholder: a page whose screen is not written yet; it links the API
// routes that manage the same things meanwhile.
import { Page } from './page.jsx';

export function Placeholder({ title, api }) {
  return (
    <Page title={title}>
      <p>This page is not available yet. The API manages it: <code>{api}</code> (see <a href="/docs">the API reference</a>).</p>
    </Page>
  );
}
