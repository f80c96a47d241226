import { Placeholder } from '../components/placeholder.jsx';

export default function Pipelines() {
  return <Placeholder title="Pipelines" api="/api/pipelines" />;
}
