import { Placeholder } from '../components/placeholder.jsx';

export default function Tokens() {
  return <Placeholder title="API tokens" api="/api/api-tokens/" />;
}
