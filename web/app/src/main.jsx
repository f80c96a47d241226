// Entry point: mounts the application into #app (index.html).
import { render } from 'preact';
import { App } from './app.jsx';
import './styles.css';

render(<App />, document.getElementById('app'));
