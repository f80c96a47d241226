import { Page } from '../components/page.jsx';

export default function NotFound() {
  return (
    <Page title="Not found">
      <p>There is no page at this address. <a href="/">Back to the documents</a>.</p>
    </Page>
  );
}
