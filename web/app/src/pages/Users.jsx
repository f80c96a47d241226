import { Placeholder } from '../components/placeholder.jsx';

export default function Users() {
  return <Placeholder title="Users" api="/api/admin/users" />;
}
