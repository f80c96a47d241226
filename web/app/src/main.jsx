// Entry point: mounts the application into #app (index.html). The boot
// message index.html shows until the script runs is removed first: Preact
// renders beside what a container holds, so it would stay below every page.
import { render } from 'preact';
import { App } from './app.jsx';
import './styles.css';

const root = document.getElementById('app');
root.textContent = '';
render(<App />, root);
