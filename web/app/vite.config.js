// Builds the web pages into http/static/app, which the Go binary embeds
// (make web runs this through scripts/web.sh). The server serves
// index.html for every page route and the files of assets/ under
// /static/app/assets/.
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/static/app/',
  // JSX compiles to Preact's runtime (no Babel, no plugin needed).
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: '../../http/static/app',
    // scripts/web.sh clears the folder but keeps its committed README.md.
    emptyOutDir: false,
    // The Content-Security-Policy allows no inline script: no polyfill
    // snippet, and no source maps shipped in the binary.
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: 'es2022',
    rollupOptions: {
      output: {
        // Names without leading dots or underscores (go:embed skips those)
        // and without source paths.
        entryFileNames: 'assets/app-[hash].js',
        chunkFileNames: 'assets/c-[hash].js',
        assetFileNames: 'assets/a-[hash][extname]',
      },
    },
  },
});
