// Starts GraphiQL on the /graphql page: requests go to /graphql on this
// site with the browser's session cookie, as JSON (which the cross-site
// check expects).
(function () {
  "use strict";
  var root = document.getElementById("graphiql");
  var fetcher = GraphiQL.createFetcher({ url: "/graphql", fetch: function (url, init) {
    init = init || {};
    init.credentials = "same-origin";
    return window.fetch(url, init);
  } });
  var query = "# docflow's GraphQL API: the documents you may see, newest first.\n" +
    "{\n  documents(limit: 10) {\n    id\n    originalFilename\n    documentTitle\n    processingStatus { status }\n  }\n}\n";
  ReactDOM.createRoot(root).render(React.createElement(GraphiQL, { fetcher: fetcher, defaultQuery: query }));
})();
