import { Page } from '../components/page.jsx';

export default function Documents() {
  return <Page title="Documents"><p>Documents.</p></Page>;
}
