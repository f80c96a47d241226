import { useRoute } from 'preact-iso';
import { Page } from '../components/page.jsx';

export default function File() {
  const { params } = useRoute();
  return <Page title={'Document ' + params.id}><p>Document.</p></Page>;
}
