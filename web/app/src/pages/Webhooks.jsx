import { Placeholder } from '../components/placeholder.jsx';

export default function Webhooks() {
  return <Placeholder title="Webhooks" api="/api/webhooks/, /api/automation/hooks" />;
}
