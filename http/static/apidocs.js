// The /docs page: Swagger UI (loaded before this file, built by make)
// renders this server's /openapi.json. Requests made with "Try it out" go
// to this server with the browser's session.
(function () {
  'use strict';
  function render() {
    if (typeof window.SwaggerUIBundle !== 'function') {
      return;
    }
    window.SwaggerUIBundle({
      url: '/openapi.json',
      dom_id: '#swagger-ui',
      deepLinking: true,
      docExpansion: 'none',
      defaultModelsExpandDepth: 0,
      // Offline: no call to the public validator badge.
      validatorUrl: null,
      withCredentials: true
    });
  }
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', render);
  } else {
    render();
  }
})();
