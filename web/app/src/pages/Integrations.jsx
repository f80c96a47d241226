import { Placeholder } from '../components/placeholder.jsx';

export default function Integrations() {
  return <Placeholder title="Integrations" api="/api/integrations/" />;
}
