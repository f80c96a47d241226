import { Placeholder } from '../components/placeholder.jsx';

export default function Audit() {
  return <Placeholder title="Audit log" api="/api/admin/audit-log" />;
}
