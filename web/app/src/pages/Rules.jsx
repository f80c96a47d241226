import { Placeholder } from '../components/placeholder.jsx';

export default function Rules() {
  return <Placeholder title="Rules" api="/api/routing-rules, /api/classification-rules" />;
}
